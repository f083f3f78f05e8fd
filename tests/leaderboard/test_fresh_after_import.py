"""Bulk import commands leave the board aggregated when they return: no worker, no beat, no sweep.

Nothing here starts a Celery worker, and the debounced refresh the per-result signals would schedule runs only
after a commit the test transaction never makes: whatever the API shows was aggregated by the command itself.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command

from evaluation.models import EvaluationRun, LanguageModel
from leaderboard.models import Contamination, RunScore
from leaderboard.services import leaderboard_refresh_stale

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "demo" / "rcb-2025-published.json.gz"
EXAMPLES = REPO / "examples" / "pset"
ORIGINAL = REPO.parent / "shared" / "data" / "overall_stats.json"
TOP_MODEL = "GEMINI_2_5_PRO_PREVIEW_05_06"

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def assert_published_board(client) -> None:
    data = client.get("/api/v1/leaderboard/").json()
    assert data["count"] == 32 and len(data["results"]) == 32
    top = data["results"][0]
    assert top["model"]["key"] == TOP_MODEL
    assert round(top["scaled_pass_at_1"], 2) == 37.34


@pytest.mark.skipif(not ORIGINAL.is_file(), reason=f"the original published results ({ORIGINAL}) are absent")
def test_import_published_on_an_empty_database_shows_all_32_models_with_no_worker(client, capsys):
    assert not EvaluationRun.objects.exists()

    call_command("import_published", str(ORIGINAL))

    assert "leaderboard: 32 runs aggregated" in capsys.readouterr().out
    assert_published_board(client)
    page = client.get("/")
    assert page.status_code == 200
    assert LanguageModel.objects.get(key=TOP_MODEL).name in page.content.decode()
    assert leaderboard_refresh_stale() == []  # nothing left for the five-minute sweep


def test_import_published_of_the_demo_fixture_leaves_the_board_aggregated(client, capsys):
    call_command("import_published", str(FIXTURE))
    assert "leaderboard: 32 runs aggregated" in capsys.readouterr().out
    assert_published_board(client)

    call_command("import_published", str(FIXTURE))
    # A repeated import changes nothing, so nothing is aggregated again.
    assert "leaderboard: 0 runs aggregated" in capsys.readouterr().out
    assert_published_board(client)


def test_import_pset_with_a_later_paper_moves_every_contamination_selection_before_returning(
    client, capsys, tmp_path, settings
):
    settings.RCB_BENCHMARK_REPO = tmp_path / "bench"
    call_command("import_published", str(FIXTURE))
    # A paper first committed after every model's cutoff belongs to both contamination selections of every
    # run with a known cutoff, although no run has results for it: the stored selections must follow.
    pset = tmp_path / "pset"
    shutil.copytree(EXAMPLES, pset)
    registry = yaml.safe_load((pset / "papers.yaml").read_text())
    registry[0]["first_commit_date"] = "2030-01-15"
    (pset / "papers.yaml").write_text(yaml.safe_dump(registry, sort_keys=False))
    later = registry[0]["id"]
    capsys.readouterr()

    call_command("import_pset", str(pset), "--release", "examples")

    assert "leaderboard: 32 runs aggregated" in capsys.readouterr().out
    data = client.get(f"/api/v1/leaderboard/?contamination={Contamination.PER_MODEL}").json()
    with_cutoff = [r for r in data["results"] if r["model"]["knowledge_cutoff"]]
    assert with_cutoff and all(later in r["selection"] for r in with_cutoff)
    # The global rule is one per release, over the release's own papers (docs/scoring.md#contamination):
    # the new release's paper neither joins nor moves the published release's selection.
    data = client.get(f"/api/v1/leaderboard/?contamination={Contamination.GLOBAL}").json()
    assert all(later not in r["selection"] and len(r["selection"]) == 13 for r in data["results"])
    assert leaderboard_refresh_stale() == []


def test_import_pset_without_results_to_move_aggregates_nothing(capsys, tmp_path, settings):
    settings.RCB_BENCHMARK_REPO = tmp_path / "bench"

    call_command("import_pset", str(EXAMPLES), "--release", "examples")

    assert "leaderboard: 0 runs aggregated" in capsys.readouterr().out
    assert not RunScore.objects.exists()
