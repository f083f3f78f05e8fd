"""Shared set-up of the run service tests (test_runs.py, test_verdicts.py): verdicts to record, a one-task
release, an uploaded run of it, and a test lease on one of its items."""

from __future__ import annotations

from pathlib import Path

from contributions.models import Release
from evaluation.models import Completion, EvaluationRun, LanguageModel
from evaluation.services import LeaseResult, Prediction, lease_acquire, run_create
from researchcodebench.runner import Verdict
from tests.evaluation.engine_helpers import import_release

PASSED = Verdict(outcome="passed", category="passed", tier="none", reason="passed")
FAILED = Verdict(
    outcome="failed", category="name", tier="model", reason="NameError: x", exception_type="NameError"
)
INFRA = Verdict(outcome="infra_error", category="sandbox_failure", tier="infrastructure", reason="bwrap died")


def rms_release(tmp_path: Path) -> Release:
    """The example task ``rmsnorm`` alone, as the release ``rms``."""
    return import_release(tmp_path, name="rms", task_ids=("rmsnorm",))


def take(completion: Completion, owner: str = "w1", seconds: int = 60) -> LeaseResult:
    """Take ``completion``'s test lease as ``owner``."""
    return lease_acquire(
        completion_id=completion.pk,
        owner=owner,
        stage_from=Completion.Stage.PENDING_TEST,
        stage_to=Completion.Stage.TESTING,
        seconds=seconds,
    )


def uploaded_run(model: LanguageModel, release: Release) -> EvaluationRun:
    """An uploaded run with one prediction (``pass``) per snippet of ``rms_release``."""
    names = list(release.task_versions.get().snippets.values_list("name", flat=True))
    return run_create(
        model=model,
        release=release,
        source="uploaded",
        verification="uploaded",
        predictions=[Prediction(task="rmsnorm", snippet=name, code="pass") for name in names],
    )
