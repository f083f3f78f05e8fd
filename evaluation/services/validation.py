"""Validation of a contribution: a proposal revision's battery, run by the worker's shared runner.

The catalogue owns the proposal and its state machine (``contributions.services.proposal_state``; the
validation's moves are ``contributions.services.proposal_validation``); this module
only runs the battery (``researchcodebench.validation.validate_task``) through the same runner and sandbox
as model completions, so a task that validates green behaves the same when models are evaluated on it.

The battery runs in the task's own environment (docs/environments.md): a task that needs more than the
base has its requirements locked and its environment built (or reused) first, and the report's ``environment`` says which, how long the build took and
how much disk it holds of its own. A requirement that cannot be resolved or built fails the validation with
uv's reason naming the package, as any failure to run the battery does.

``revision_validate`` is idempotent: a duplicate message finds the proposal no longer submitted and does
nothing. Any failure to run the battery (a missing blob, a broken sandbox) is an infrastructure failure:
``proposal_validation_fail`` retries it a few times and then tells the author why. A worker that dies
mid-way leaves the proposal validating until the watchdog (``proposal_validation_watchdog``) fails it.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any

from django.conf import settings

from contributions.models import ProposalRevision
from contributions.services import (
    ProposalError,
    proposal_validation_fail,
    proposal_validation_finish,
    proposal_validation_progress,
    proposal_validation_start,
    proposal_validation_watchdog,
    validation_job_limits,
)
from contributions.task_folders import revision_task
from evaluation import dispatch
from researchcodebench import envs
from researchcodebench.pset import Task
from researchcodebench.validation import ValidationReport, validate_task

log = logging.getLogger(__name__)


def _progress_entry(data: dict[str, Any]) -> dict[str, Any]:
    # The final report is stored whole by proposal_validation_finish; the stream keeps only its stages.
    return {key: value for key, value in data.items() if key != "report"}


def task_environment_prepare(*, task: Task, runner: Any) -> str:
    """Lock ``task``'s requirements, build or reuse its environment, assign it to ``runner``; returns the
    line the report shows (environment id, lock hash, build time, own disk). Raises
    ``EnvironmentBuildError`` naming the package."""
    from evaluation.workspace import lock_environment, requirements_lock

    started = time.monotonic()
    try:
        needs = envs.task_requirements(task.root, manifest_requirements=task.manifest.requirements)
    except envs.RequirementsError as exc:
        raise envs.EnvironmentBuildError(package=None, reason=str(exc)) from exc
    if not needs.requirements:
        # Nothing beyond the base: the worker's own evaluation interpreter, as for unlocked versions.
        return f"{runner.environment.id} (the default evaluation environment: the task needs only the base)"
    lock = requirements_lock(needs.requirements)
    environment, built = lock_environment(lock)
    runner.assign_environment(task, environment)
    size_mb = envs.environment_size(built.path) / (1024 * 1024)
    what = ", ".join(needs.requirements) or "the base only"
    notes = "".join(f" Note: {note}" for note in needs.notes)
    return (
        f"{environment.id} (lock {lock.hash[:12]}: {what}, from {needs.source}; "
        f"{'built' if built.built else 'reused'} in {time.monotonic() - started:.1f} s, "
        f"{size_mb:.1f} MB of its own).{notes}"
    )


def _battery_run(*, revision: ProposalRevision, runner: Any) -> tuple[ValidationReport, str]:
    """The battery's report on ``revision``'s task, run in the task's own environment by ``runner`` (the
    worker's shared runner when None) within ``RCB_VALIDATION_LIMIT_S``, and the environment's line."""
    started = time.monotonic()
    if runner is None:
        from evaluation.workspace import shared_runner

        runner = shared_runner()
    deadline = started + settings.RCB_VALIDATION_LIMIT_S
    task = revision_task(revision=revision)
    environment = task_environment_prepare(task=task, runner=runner)
    report = validate_task(
        task,
        runner=runner,
        deadline=deadline,
        progress=lambda stage, data: proposal_validation_progress(
            revision=revision, stage=stage, data=_progress_entry(data)
        ),
    )
    return report, environment


def _validation_fail(*, revision: ProposalRevision, reason: str, outcome: str, retry: bool = True) -> str:
    """Fail the validation that could not run (``proposal_validation_fail``); returns ``outcome``, or
    "stale" when the proposal was no longer validating."""
    try:
        proposal_validation_fail(revision=revision, reason=reason, retry=retry)
    except ProposalError:
        return "stale"
    return outcome


def revision_validate(*, revision_id: int, runner: Any = None, job_id: str = "") -> str:
    """Validate revision ``revision_id`` if its proposal is waiting for it; returns what happened:
    "missing", "skipped" (not waiting: a duplicate message, a withdrawn proposal), "passed", "failed"
    (the report has errors), "error" (the battery could not run) or "stale" (the validation was
    failed by the watchdog or the proposal withdrawn while the battery ran).

    ``runner`` defaults to the worker's shared runner (``evaluation.workspace.shared_runner``). The battery
    ends by ``RCB_VALIDATION_LIMIT_S`` after the start, or earlier by its own budget
    (``researchcodebench.validation.battery_budget_s``); a job stopped by its Celery soft time limit
    (``validation_job_limits``) fails the validation as timed out, without retrying.
    """
    from celery.exceptions import SoftTimeLimitExceeded

    revision = ProposalRevision.objects.select_related("proposal").filter(pk=revision_id).first()
    if revision is None:
        return "missing"
    try:
        revision = proposal_validation_start(revision=revision, job_id=job_id)
    except ProposalError as exc:
        log.info("validation of revision %s skipped: %s", revision_id, exc)
        return "skipped"
    try:
        report, environment = _battery_run(revision=revision, runner=runner)
    except SoftTimeLimitExceeded:
        soft, _hard = validation_job_limits()
        reason = (
            f"it timed out: its job was stopped after {soft} s (RCB_VALIDATION_LIMIT_S); make the test faster"
        )
        return _validation_fail(revision=revision, reason=reason, retry=False, outcome="timed out")
    except Exception as exc:
        log.exception("validation of revision %s could not run", revision_id)
        return _validation_fail(revision=revision, reason=f"{type(exc).__name__}: {exc}", outcome="error")
    report = dataclasses.replace(report, environment=environment)
    try:
        proposal_validation_finish(revision=revision, report=report)
    except ProposalError as exc:
        log.info("validation of revision %s finished too late: %s", revision_id, exc)
        return "stale"
    return "passed" if report.ok else "failed"


def validations_watchdog(*, revoke: Any = None) -> dict[str, int]:
    """Beat: fail validations past their deadline, stop their jobs, re-send lost ones
    (``proposal_validation_watchdog``). ``revoke(job_id)`` stops a job (default: ``dispatch.job_stop``, which
    kills the worker process running it)."""
    revoke = revoke or dispatch.job_stop
    outcome = proposal_validation_watchdog()
    for job_id in outcome["jobs"]:
        try:
            revoke(job_id)
        except Exception:
            log.exception("could not stop validation job %s", job_id)
    return {kind: len(ids) for kind, ids in outcome.items()}
