"""Submitting and the validation's life cycle at the service boundary
(``contributions/services/proposal_validation.py``): submit freezes the revision and queues its validation
after commit; reports move the proposal; infrastructure failures are retried; the watchdog fails overdue
validations and resends lost messages. Validation reports here are built with the core's own report type; the
battery itself runs in tests/evaluation/test_validation_job.py."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from contributions.models import ProposalRevision
from contributions.services import (
    ProposalError,
    proposal_submit,
    proposal_validation_fail,
    proposal_validation_finish,
    proposal_validation_progress,
    proposal_validation_start,
    proposal_validation_watchdog,
    validation_job_limits,
)
from tests.contributions.conftest import FLAKY, State, states
from tests.factories import UserFactory
from tests.factories.builders import (
    NOT_CHECKED,
    proposal_draft,
    proposal_submitted,
    proposal_upload,
    proposal_validated,
    validation_report,
)

pytestmark = pytest.mark.django_db


# ------------------------------------------------------------------------------------------- submission


def test_submit_freezes_the_revision_and_queues_its_validation_after_commit(
    queued, django_capture_on_commit_callbacks
):
    revision = proposal_upload(proposal_draft())
    proposal = revision.proposal
    with django_capture_on_commit_callbacks(execute=True):
        proposal_submit(proposal=proposal, by=proposal.author)
        assert queued == []  # not before the commit
    assert queued == [revision.pk]
    proposal.refresh_from_db()
    revision.refresh_from_db()
    assert proposal.state == State.SUBMITTED
    assert revision.submitted_at is not None
    assert states(proposal)[-1] == (State.DRAFT, State.SUBMITTED)


def test_submit_is_refused_without_code_for_others_and_twice():
    proposal = proposal_draft()
    with pytest.raises(ProposalError, match="upload the task's code") as caught:
        proposal_submit(proposal=proposal, by=proposal.author)
    assert caught.value.field == "code"
    proposal_upload(proposal)
    with pytest.raises(ProposalError, match="only the author"):
        proposal_submit(proposal=proposal, by=UserFactory())
    proposal_submit(proposal=proposal, by=proposal.author)
    with pytest.raises(ProposalError, match="cannot submit a proposal that is submitted"):
        proposal_submit(proposal=proposal, by=proposal.author)


# ------------------------------------------------------------------------------------------- validation


def test_a_green_report_makes_the_proposal_ready_for_review():
    proposal = proposal_validated()
    revision = proposal.revisions.get()
    assert proposal.state == State.READY_FOR_REVIEW
    assert revision.validation_status == ProposalRevision.ValidationStatus.PASSED
    assert revision.validation_report["ok"] is True
    assert states(proposal)[-2:] == [
        (State.SUBMITTED, State.VALIDATING),
        (State.VALIDATING, State.READY_FOR_REVIEW),
    ]
    assert proposal.events.last().actor is None


def test_an_error_finding_sends_the_proposal_back_with_the_finding_as_reason():
    proposal = proposal_validated(validation_report(FLAKY))
    assert proposal.state == State.CHANGES_REQUESTED
    assert "reference passed 3 of 5 runs (paper2code_test.py)" in proposal.events.last().reason
    assert proposal.revisions.get().validation_status == ProposalRevision.ValidationStatus.FAILED


def test_a_snippet_not_checked_by_the_test_goes_to_review_naming_the_snippet():
    proposal = proposal_validated(validation_report(NOT_CHECKED))
    assert proposal.state == State.READY_FOR_REVIEW
    assert "its test does not check: compute rms" in proposal.events.last().reason


def test_validation_start_is_refused_twice_so_a_duplicate_message_does_nothing():
    revision = proposal_submitted().revisions.get()
    proposal_validation_start(revision=revision)
    with pytest.raises(ProposalError, match="validating"):
        proposal_validation_start(revision=revision)
    assert revision.proposal.events.filter(to_state=State.VALIDATING).count() == 1


def test_validation_progress_streams_stages_while_running_only():
    revision = proposal_submitted().revisions.get()
    assert not proposal_validation_progress(revision=revision, stage="annotations", data={})
    proposal_validation_start(revision=revision)
    assert proposal_validation_progress(revision=revision, stage="annotations", data={"findings": []})
    assert proposal_validation_progress(revision=revision, stage="reference", data={"runs": 5})
    revision.refresh_from_db()
    assert [e["stage"] for e in revision.validation_progress] == ["annotations", "reference"]
    # The hard time limit of its job (600 + 60 + 30 s), then 30 s of grace for the watchdog.
    assert revision.validation_deadline - revision.validation_started_at == timedelta(seconds=720)


def test_an_infrastructure_failure_is_retried_then_returned_to_the_author(
    queued, settings, django_capture_on_commit_callbacks
):
    settings.RCB_VALIDATION_ATTEMPTS = 2
    proposal = proposal_submitted()
    revision = proposal.revisions.get()
    proposal_validation_start(revision=revision)
    with django_capture_on_commit_callbacks(execute=True):
        proposal_validation_fail(revision=revision, reason="sandbox unavailable")
    proposal.refresh_from_db()
    assert proposal.state == State.SUBMITTED and queued == [revision.pk]
    proposal_validation_start(revision=revision)
    proposal_validation_fail(revision=revision, reason="sandbox unavailable")
    proposal.refresh_from_db()
    revision.refresh_from_db()
    assert proposal.state == State.CHANGES_REQUESTED
    assert proposal.events.last().reason == "The validation of revision 1 could not run: sandbox unavailable"
    assert revision.validation_status == ProposalRevision.ValidationStatus.ERROR
    # The same revision may be submitted again: the failure was not the task's.
    proposal_submit(proposal=proposal, by=proposal.author)
    proposal.refresh_from_db()
    assert proposal.state == State.SUBMITTED


def test_the_watchdog_fails_a_validation_past_its_jobs_hard_limit_and_names_the_job(settings):
    settings.RCB_VALIDATION_LIMIT_S = 30
    soft, hard = validation_job_limits()
    assert (soft, hard) == (90, 120)
    revision = proposal_submitted().revisions.get()
    proposal_validation_start(revision=revision, job_id="job-123")
    assert proposal_validation_watchdog() == {"failed": [], "jobs": [], "resent": []}
    # Not before the hard limit has passed (and the grace after it).
    assert proposal_validation_watchdog(now=timezone.now() + timedelta(seconds=hard))["failed"] == []
    outcome = proposal_validation_watchdog(now=timezone.now() + timedelta(seconds=hard + 31))
    assert outcome["failed"] == [revision.pk] and outcome["jobs"] == ["job-123"]
    proposal = revision.proposal
    proposal.refresh_from_db()
    assert proposal.state == State.CHANGES_REQUESTED
    assert proposal.events.last().reason == (
        "The validation of revision 1 could not run: it timed out, running past its limit of 30 s "
        "(RCB_VALIDATION_LIMIT_S), "
        "and its job was stopped; make the test faster"
    )
    # The battery finishing afterwards changes nothing.
    with pytest.raises(ProposalError):
        proposal_validation_finish(revision=revision, report=validation_report())


def test_the_watchdog_resends_a_submission_whose_message_was_lost(queued, settings):
    revision = proposal_submitted().revisions.get()
    assert proposal_validation_watchdog()["resent"] == []
    later = timezone.now() + timedelta(seconds=settings.RCB_PENDING_RESEND_S + 1)
    assert proposal_validation_watchdog(now=later)["resent"] == [revision.pk]
    assert queued == [revision.pk]
    assert proposal_validation_watchdog(now=later)["resent"] == []  # once per interval
