"""Approval queues evaluations (issue 11 item 8): publishing a task version queues a generated run of every
active portal-run model (managed by the maintainers) on it, and of no other model."""

from __future__ import annotations

import re

import pytest

from contributions.models import Proposal, TaskVersion
from contributions.signals import task_version_published
from evaluation.models import Completion, EvaluationRun, LanguageModel
from leaderboard.services import leaderboard_refresh_run
from tests.factories import LanguageModelFactory, MaintainerFactory, UserFactory
from tests.factories.builders import make_benchmark, make_run, proposal_approved, proposal_validated

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def repo_dir(settings, tmp_path):
    settings.RCB_BENCHMARK_REPO = tmp_path / "benchmark.git"


def publish(capture) -> tuple[TaskVersion, object]:
    """Approve a green proposal of the example task (publishing follows the approval's commit)."""
    maintainer = MaintainerFactory()
    proposal = proposal_validated(task_key="rmsnorm-new", meta={"title": "RMSNorm"})
    proposal = proposal_approved(proposal, reviewer=maintainer, capture=capture)
    assert proposal.state == Proposal.State.PUBLISHED
    return proposal.published_version, maintainer


def test_approval_queues_every_active_portal_run_model_on_the_new_task_version(
    django_capture_on_commit_callbacks,
):
    portal = LanguageModelFactory(key="PORTAL", provider="openai", api_key_env="RCB_LLM_KEY_PORTAL")
    LanguageModelFactory(key="RETIRED", active=False)
    LanguageModelFactory(key="PAPER", management=LanguageModel.Management.PUBLISHED)
    LanguageModelFactory(key="MINE", self_reported=True, owner=UserFactory())

    version, maintainer = publish(django_capture_on_commit_callbacks)

    run = EvaluationRun.objects.get()
    assert run.model == portal
    assert list(run.task_versions.all()) == [version]
    assert (run.source, run.verification, run.status) == ("generated", "generated", "queued")
    assert run.requester == maintainer and run.label == "new task rmsnorm-new v1"
    snippets = version.snippets.count()
    assert snippets > 0
    assert Completion.objects.filter(run=run, stage=Completion.Stage.PENDING_GENERATION).count() == snippets
    assert set(Completion.objects.filter(run=run).values_list("snippet__task_version", flat=True)) == {
        version.pk
    }


def test_a_repeated_publication_message_queues_nothing_twice(django_capture_on_commit_callbacks):
    LanguageModelFactory(key="PORTAL")
    version, maintainer = publish(django_capture_on_commit_callbacks)
    assert EvaluationRun.objects.count() == 1
    task_version_published.send(sender=TaskVersion, task_version_id=version.pk, by_user_id=maintainer.pk)
    task_version_published.send(sender=TaskVersion, task_version_id=10**9, by_user_id=None)
    assert EvaluationRun.objects.count() == 1


def test_model_page_shows_a_queued_approval_run_as_queued_with_what_it_covers_not_as_zero(
    client, django_capture_on_commit_callbacks
):
    portal = LanguageModelFactory(key="PORTAL", name="Portal Model")
    release, snippets = make_benchmark({"p1": (None, [1, 1])})
    finished = make_run(snippets, {"p1": "P F"}, model=portal, release=release)
    leaderboard_refresh_run(run=finished)
    publish(django_capture_on_commit_callbacks)
    queued = EvaluationRun.objects.get(status=EvaluationRun.Status.QUEUED)
    leaderboard_refresh_run(run=queued)  # a score row of nothing judged yet

    html = client.get("/models/PORTAL/").content.decode()

    row = re.search(rf"<tr>\s*<td><a href=\"\?run={queued.pk}\">.*?</tr>", html, re.S).group(0)
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", row))
    assert "no release: new task rmsnorm-new v1" in text
    assert "Queued" in text and "queued: no score yet" in text and "0.00" not in text
    assert f"the page shows run {finished.pk}" in html

    shown = client.get(f"/models/PORTAL/?run={queued.pk}").content.decode()
    assert "not scored yet: the run is queued" in shown
