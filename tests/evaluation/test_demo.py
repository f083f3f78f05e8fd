"""`load_demo`: the example tasks and the published results, loaded once however often it runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command

from contributions.models import Paper, Release, ReleaseEntry, Snippet, Task, TaskVersion
from evaluation.models import Completion, EvaluationRun, LanguageModel, TestResult
from evaluation.services.published import RELEASE_NAME

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "pset"

pytestmark = pytest.mark.django_db


def row_counts() -> dict[str, int]:
    models = (
        Paper,
        Task,
        TaskVersion,
        Snippet,
        Release,
        ReleaseEntry,
        LanguageModel,
        EvaluationRun,
        Completion,
    )
    return {model.__name__: model.objects.count() for model in (*models, TestResult)}


@pytest.mark.skipif(not EXAMPLES.is_dir(), reason=f"{EXAMPLES} is not in this checkout")
def test_load_demo_twice_loads_examples_and_published_results_once(capsys, client):
    call_command("load_demo")
    first = capsys.readouterr().out
    counts = row_counts()

    call_command("load_demo")
    second = capsys.readouterr().out

    assert row_counts() == counts
    assert "examples: release 'demo' loaded" in first
    assert f"published results: release '{RELEASE_NAME}' loaded: 32 models, 32 runs" in first
    assert "examples: release 'demo' already loaded" in second
    assert f"release '{RELEASE_NAME}' already loaded" in second
    assert Release.objects.get(name="demo").entries.exists()
    assert Release.objects.get(is_default=True).name == RELEASE_NAME
    assert EvaluationRun.objects.filter(release__name=RELEASE_NAME).count() == 32
    assert "leaderboard: 32 runs aggregated" in first and "leaderboard: 0 runs aggregated" in second
    # The board is ready on first start, without a worker having run.
    board = client.get("/api/v1/leaderboard/").json()["results"]
    assert len(board) == 32
    assert board[0]["model"]["key"] == "GEMINI_2_5_PRO_PREVIEW_05_06"
    assert round(board[0]["scaled_pass_at_1"], 2) == 37.34


def test_load_demo_without_examples_still_loads_the_published_results(tmp_path, capsys):
    call_command("load_demo", examples=tmp_path / "absent")

    out = capsys.readouterr().out
    assert "not found; skipped" in out
    assert not Release.objects.filter(name="demo").exists()
    assert LanguageModel.objects.count() == 32
