"""Submitting a proposal and the life cycle of its revision's validation (``services/proposal_state.py`` has
the state machine).

Validation runs in the evaluation app (a Celery job, ``evaluation.services.validation``), which hears of a
submission through ``contributions.signals.revision_submitted`` and reports back through
``proposal_validation_start`` / ``_progress`` / ``_finish`` / ``_fail``. The watchdog
(``proposal_validation_watchdog``, run by the beat) fails a validation still running after twice its
limit, so nothing stays validating for ever.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from contributions.models import (
    Proposal,
    ProposalEvent,
    ProposalRevision,
)
from contributions.proposal_status import report_blocking, report_overridable
from contributions.selectors.proposals import latest_revision, latest_submitted_revision
from contributions.services.proposal_state import (
    EDITABLE_STATES,
    MAX_REASON,
    ProposalError,
    State,
    proposal_lock,
    proposal_transition,
    require_author,
    state_label,
)
from contributions.signals import revision_submitted

VStatus = ProposalRevision.ValidationStatus

#: the most progress entries a revision keeps (the newest)
MAX_PROGRESS_ENTRIES = 500


def _queue_validation(revision: ProposalRevision) -> None:
    revision_id, needs_gpu = revision.pk, revision.needs_gpu
    transaction.on_commit(
        lambda: revision_submitted.send(sender=ProposalRevision, revision_id=revision_id, needs_gpu=needs_gpu)
    )


@transaction.atomic
def proposal_submit(*, proposal: Proposal, by: Any) -> ProposalEvent:
    """draft | changes requested -> submitted: freeze the newest revision and queue its validation.

    The revision submitted is the one not yet submitted or, when the last validation could not run at
    all (infrastructure), the same revision again. Refused without a paper title, and for code whose
    snippets are not marked yet.
    """
    require_author(proposal, by, "submit")
    proposal = proposal_lock(proposal)
    if proposal.state not in EDITABLE_STATES:
        raise ProposalError(f"cannot submit a proposal that is {state_label(proposal.state)}")
    if not proposal.title:
        raise ProposalError("title: give the paper's title before submitting", field="title")
    revision = latest_revision(proposal)
    if revision is None:
        raise ProposalError("code: upload the task's code before submitting", field="code")
    if not (revision.manifest or {}).get("annotated_files"):
        raise ProposalError(
            "marks: mark the snippets on the code before submitting: it holds no paper2code tag yet",
            field="marks",
        )
    now = timezone.now()
    if revision.submitted_at is None:
        ProposalRevision.objects.filter(pk=revision.pk, submitted_at__isnull=True).update(submitted_at=now)
        revision.submitted_at = now
        reason = f"Revision {revision.number} submitted."
    elif revision.validation_status == VStatus.ERROR:
        reason = f"Revision {revision.number} submitted again: its validation could not run."
    else:
        raise ProposalError(
            f"code: revision {revision.number} was already submitted; upload a new revision", field="code"
        )
    ProposalRevision.objects.filter(pk=revision.pk).update(
        validation_status=VStatus.PENDING,
        validation_report={},
        validation_progress=[],
        validation_started_at=None,
        validation_finished_at=None,
        validation_deadline=None,
        validation_attempts=0,
    )
    event = proposal_transition(
        proposal=proposal,
        allowed=EDITABLE_STATES,
        to=State.SUBMITTED,
        actor=by,
        reason=reason,
        revision=revision,
        action="submit",
    )
    _queue_validation(revision)
    return event


def _validated_revision(revision: ProposalRevision) -> ProposalRevision:
    """``revision`` locked, checked to be the proposal's newest submitted revision."""
    revision = ProposalRevision.objects.select_for_update().select_related("proposal").get(pk=revision.pk)
    newest = latest_submitted_revision(revision.proposal)
    if revision.submitted_at is None or newest is None or newest.pk != revision.pk:
        raise ProposalError(f"{revision} is not the proposal's revision under validation")
    return revision


def _running_revision(revision: ProposalRevision) -> ProposalRevision:
    """``revision`` locked, checked to be under validation with its validation running."""
    revision = _validated_revision(revision)
    if revision.validation_status != VStatus.RUNNING:
        raise ProposalError(f"{revision}: its validation is not running (it is {revision.validation_status})")
    return revision


def _validation_move(
    revision: ProposalRevision,
    *,
    allowed: tuple[str, ...],
    to: str,
    reason: str,
    action: str,
    **validation: Any,
) -> ProposalEvent:
    """A transition the validation job makes (no actor) for ``revision``, after its ``validation`` fields
    (the status the transition records reads them; a refused transition rolls them back with it)."""
    ProposalRevision.objects.filter(pk=revision.pk).update(**validation)
    return proposal_transition(
        proposal=revision.proposal,
        allowed=allowed,
        to=to,
        actor=None,
        reason=reason,
        revision=revision,
        action=action,
    )


def _validation_end(
    revision: ProposalRevision, *, to: str, reason: str, action: str, status: str, report: dict[str, Any]
) -> ProposalEvent:
    """validating -> ``to`` with the final ``status`` and ``report``; the watchdog stops watching it."""
    return _validation_move(
        revision,
        allowed=(State.VALIDATING,),
        to=to,
        reason=reason,
        action=action,
        validation_status=status,
        validation_report=report,
        validation_finished_at=timezone.now(),
        validation_deadline=None,
    )


def validation_job_limits() -> tuple[int, int]:
    """(soft, hard) Celery time limits of a validation job: the battery stops itself at
    ``RCB_VALIDATION_LIMIT_S`` (or earlier, by its own budget); the soft limit leaves it time to report,
    the hard one kills a job that ignores the soft one. The watchdog acts after the hard one."""
    limit = settings.RCB_VALIDATION_LIMIT_S
    return limit + VALIDATION_SOFT_GRACE_S, limit + VALIDATION_SOFT_GRACE_S + VALIDATION_HARD_GRACE_S


#: Seconds past ``RCB_VALIDATION_LIMIT_S`` before the soft, then the hard time limit of a validation job.
VALIDATION_SOFT_GRACE_S = 60


VALIDATION_HARD_GRACE_S = 30


@transaction.atomic
def proposal_validation_start(*, revision: ProposalRevision, job_id: str = "") -> ProposalRevision:
    """submitted -> validating: the validation job ``job_id`` has begun; sets the deadline the watchdog
    enforces (after the job's hard time limit, ``validation_job_limits``).

    Raises ``ProposalError`` when the proposal is not waiting for validation (a duplicate message, a
    withdrawn proposal): the job then does nothing.
    """
    revision = _validated_revision(revision)
    now = timezone.now()
    attempt = revision.validation_attempts + 1
    _validation_move(
        revision,
        allowed=(State.SUBMITTED,),
        to=State.VALIDATING,
        reason=f"Validating revision {revision.number}"
        + (f", try {attempt} of {settings.RCB_VALIDATION_ATTEMPTS}." if attempt > 1 else "."),
        action="start validating",
        validation_status=VStatus.RUNNING,
        validation_started_at=now,
        validation_finished_at=None,
        validation_deadline=now + timedelta(seconds=validation_job_limits()[1] + VALIDATION_HARD_GRACE_S),
        validation_job_id=(job_id or "")[:255],
        validation_attempts=attempt,
        validation_progress=[],
        validation_report={},
    )
    revision.refresh_from_db()
    return revision


@transaction.atomic
def proposal_validation_progress(
    *, revision: ProposalRevision, stage: str, data: Mapping[str, Any] | None = None
) -> bool:
    """Append a finished stage of the running validation to ``validation_progress`` (the page streams it).

    Returns False (and records nothing) when the revision's validation is no longer running, e.g. after
    the watchdog failed it. Keeps the newest ``MAX_PROGRESS_ENTRIES`` entries.
    """
    locked = ProposalRevision.objects.select_for_update().filter(pk=revision.pk).first()
    if locked is None or locked.validation_status != VStatus.RUNNING:
        return False
    try:
        payload = json.loads(json.dumps(dict(data or {}), default=str))
    except (TypeError, ValueError):
        payload = {"note": "progress data was not JSON"}
    entry = {"stage": str(stage)[:200], "at": timezone.now().isoformat(), "data": payload}
    progress = [*(locked.validation_progress or []), entry][-MAX_PROGRESS_ENTRIES:]
    ProposalRevision.objects.filter(pk=locked.pk).update(validation_progress=progress)
    revision.validation_progress = progress
    return True


def _report_dict(report: Any) -> dict[str, Any]:
    data = report.to_dict() if hasattr(report, "to_dict") else report
    if not isinstance(data, Mapping) or not isinstance(data.get("ok"), bool):
        raise ProposalError("a validation report must be a ValidationReport or a mapping with 'ok'")
    return json.loads(json.dumps(dict(data), default=str))


def finding_line(finding: Mapping[str, Any]) -> str:
    where = finding.get("file") or ""
    if where and finding.get("line"):
        where = f"{where}:{finding['line']}"
    text = str(finding.get("message") or finding.get("check") or "error")
    return f"{text} ({where})" if where else text


@transaction.atomic
def proposal_validation_finish(*, revision: ProposalRevision, report: Any) -> ProposalEvent:
    """validating -> ready for review (report ok, or only findings a maintainer may accept) or
    changes requested (any other error finding, listed in the reason).

    ``report`` is a ``researchcodebench.validation.ValidationReport`` or its ``to_dict()``.
    """
    data = _report_dict(report)
    revision = _running_revision(revision)
    overridable = report_overridable(data)
    blocking = report_blocking(data)
    if data["ok"] or not blocking:
        to = State.READY_FOR_REVIEW
        if data["ok"]:
            reason = f"Revision {revision.number} passed every check."
        else:
            names = ", ".join(sorted(overridable))
            reason = (
                f"Revision {revision.number} passed, but its test does not check: {names}. "
                "A maintainer may accept each with a written reason."
            )
    else:
        to = State.CHANGES_REQUESTED
        shown = "; ".join(finding_line(f) for f in blocking[:5])
        more = f"; and {len(blocking) - 5} more" if len(blocking) > 5 else ""
        errors = f"{len(blocking)} error{'' if len(blocking) == 1 else 's'}"
        reason = f"The validation of revision {revision.number} found {errors}: {shown}{more}"
    return _validation_end(
        revision,
        to=to,
        reason=reason,
        action="finish validating",
        status=VStatus.PASSED if data["ok"] else VStatus.FAILED,
        report=data,
    )


@transaction.atomic
def proposal_validation_fail(*, revision: ProposalRevision, reason: str, retry: bool = True) -> ProposalEvent:
    """The validation could not run (infrastructure, not the task's fault).

    With ``retry`` and fewer than ``RCB_VALIDATION_ATTEMPTS`` attempts: validating -> submitted and the
    job is queued again. Otherwise validating -> changes requested with "validation could not run:
    <reason>"; the author may submit the same revision again.
    """
    revision = _running_revision(revision)
    reason = (reason or "unknown error").strip()[:MAX_REASON]
    attempts = revision.validation_attempts
    if retry and attempts < settings.RCB_VALIDATION_ATTEMPTS:
        event = _validation_move(
            revision,
            allowed=(State.VALIDATING,),
            to=State.SUBMITTED,
            reason=f"The validation of revision {revision.number} could not run and will be tried again: {reason}",
            action="retry validating",
            validation_status=VStatus.PENDING,
            validation_deadline=None,
        )
        _queue_validation(revision)
        return event
    return _validation_end(
        revision,
        to=State.CHANGES_REQUESTED,
        reason=f"The validation of revision {revision.number} could not run: {reason}",
        action="fail validating",
        status=VStatus.ERROR,
        report={"ok": False, "error": reason, "findings": []},
    )


def proposal_validation_watchdog(*, now: Any = None) -> dict[str, list[Any]]:
    """Fail every validation running past its deadline; re-send the message of a long-submitted proposal.

    A validation past its deadline (its job's hard time limit has passed: the worker died, froze or the
    job ignored its limits) goes back to the author with the reason "validation timed out: ...". A proposal
    submitted longer than ``RCB_PENDING_RESEND_S`` ago whose job never started (a lost message) is queued
    again. Returns ``{"failed": [revision ids], "jobs": [their job ids, for the caller to stop],
    "resent": [revision ids]}``.
    """
    now = now or timezone.now()
    failed: list[int] = []
    jobs: list[str] = []
    overdue = ProposalRevision.objects.filter(
        validation_status=VStatus.RUNNING,
        validation_deadline__lt=now,
        proposal__state=State.VALIDATING,
    ).order_by("pk")
    for revision in overdue:
        job = revision.validation_job_id
        try:
            proposal_validation_fail(
                revision=revision,
                reason=(
                    f"it timed out, running past its limit of {settings.RCB_VALIDATION_LIMIT_S} s "
                    "(RCB_VALIDATION_LIMIT_S), and its job was stopped; make the test faster"
                ),
                retry=False,
            )
        except ProposalError:
            continue  # finished or failed by the job meanwhile
        failed.append(revision.pk)
        if job:
            jobs.append(job)
    resent: list[int] = []
    stale = now - timedelta(seconds=settings.RCB_PENDING_RESEND_S)
    waiting = ProposalRevision.objects.filter(
        validation_status=VStatus.PENDING,
        submitted_at__isnull=False,
        proposal__state=State.SUBMITTED,
        proposal__updated_at__lt=stale,
    ).order_by("pk")
    for revision in waiting:
        # updated_at marks the resend, so a worker-less site is sent one message per RCB_PENDING_RESEND_S.
        Proposal.objects.filter(pk=revision.proposal_id).update(updated_at=now)
        revision_submitted.send(
            sender=ProposalRevision, revision_id=revision.pk, needs_gpu=revision.needs_gpu
        )
        resent.append(revision.pk)
    return {"failed": failed, "jobs": jobs, "resent": resent}
