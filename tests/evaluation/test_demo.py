"""`load_demo`: the example tasks and the published results, loaded once however often it runs; with the
demo accounts, one proposal by the demo contributor validated green and waiting in the maintainer's review
queue."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command

from contributions.models import (
    Paper,
    Proposal,
    ProposalRevision,
    Release,
    Snippet,
)
from evaluation.models import EvaluationRun, LanguageModel
from evaluation.published_source import RELEASE_NAME
from tests.factories.builders import row_counts

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "pset"

pytestmark = pytest.mark.django_db


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


@pytest.mark.slow
@pytest.mark.skipif(not EXAMPLES.is_dir(), reason=f"{EXAMPLES} is not in this checkout")
def test_load_demo_with_accounts_puts_a_green_proposal_in_the_maintainers_review_queue_once(
    capsys, client, settings
):
    settings.RCB_VERDICT_CACHE = False
    call_command("load_demo", accounts=True)
    first = capsys.readouterr().out
    counts = row_counts()

    # The other proposals are the imported examples' approval records (published, by the operator).
    proposal = Proposal.objects.exclude(state=Proposal.State.PUBLISHED).get()
    assert proposal.task_key == "demo-label-smoothing"
    assert proposal.author.email == "contributor@example.org"
    assert proposal.state == Proposal.State.READY_FOR_REVIEW
    assert proposal.title == Paper.objects.get(key="label-smoothing").title
    revision = proposal.revisions.get()
    assert (revision.source, revision.origin) == ("archive", "demo-label-smoothing.zip")
    assert revision.validation_status == ProposalRevision.ValidationStatus.PASSED
    report = revision.validation_report
    assert report["ok"] is True
    assert [f for f in report["findings"] if f["severity"] == "error"] == []
    # A real battery ran: every snippet of the example went through the mutation check.
    assert {s["name"] for s in report["snippets"]} == set(
        Snippet.objects.filter(task_version__task__key="label-smoothing").values_list("name", flat=True)
    )
    assert [e.to_state for e in proposal.events.order_by("pk")] == [
        "draft",
        "submitted",
        "validating",
        "ready_for_review",
    ]
    assert "demo proposal: 'demo-label-smoothing' by contributor@example.org, ready for review" in first
    assert f"/contribute/{proposal.pk}/" in first

    # The printed credentials sign in through the real sign-in form.
    signed_in = client.post(
        "/accounts/login/", {"login": "maintainer@example.org", "password": "demo-maintainer-password"}
    )
    assert signed_in.status_code == 302
    queue = client.get("/review/")
    assert queue.status_code == 200
    assert f'href="/contribute/{proposal.pk}/"' in queue.content.decode()
    page = client.get(f"/contribute/{proposal.pk}/")
    assert page.status_code == 200
    assert "Ready for review" in page.content.decode()

    call_command("load_demo", accounts=True)
    second = capsys.readouterr().out
    assert row_counts() == counts
    assert "ready for review (created before)" in second
