"""Approval queues evaluations (issue 11 item 8): publishing a task version queues a generated run of every
active portal-run model (managed by the maintainers) on it, and of no other model."""

from __future__ import annotations

import pytest

from contributions.models import Proposal, TaskVersion
from contributions.signals import task_version_published
from evaluation.models import Completion, EvaluationRun, LanguageModel
from tests.factories import LanguageModelFactory, MaintainerFactory, UserFactory
from tests.factories.builders import proposal_approved, proposal_validated

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
