"""The contribution workflow at the service boundary: every transition allowed and refused (state and
permission), history rows, notifications (in-app and mail), approvals, revision immutability, diffs and the
validation watchdog. Validation reports here are built with the core's own report type; the battery itself
runs in tests/evaluation/test_validation_job.py."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.utils import timezone

from contributions import selectors
from contributions.models import Notification, Proposal, ProposalEvent, ProposalRevision, Review
from contributions.roles import is_maintainer, maintainers
from contributions.services import (
    ProposalError,
    comment_add,
    notifications_mark_read,
    proposal_create,
    proposal_mark_published,
    proposal_review,
    proposal_save_draft,
    proposal_submit,
    proposal_validation_fail,
    proposal_validation_finish,
    proposal_validation_progress,
    proposal_validation_start,
    proposal_validation_watchdog,
    proposal_withdraw,
    revision_create,
    validation_job_limits,
)
from contributions.services.proposals import RUBRIC_KEYS
from contributions.signals import revision_submitted
from contributions.task_folders import revision_task
from researchcodebench.validation import Finding
from tests.factories import (
    EXAMPLE_MANIFEST,
    ProposalFactory,
    TaskFactory,
    TaskVersionFactory,
    UserFactory,
    example_upload,
)
from tests.factories.builders import (
    NOT_CHECKED,
    proposal_draft,
    proposal_submitted,
    proposal_upload,
    proposal_validated,
    validation_report,
)

pytestmark = pytest.mark.django_db

State = Proposal.State
ALL_CHECKED = {key: True for key in RUBRIC_KEYS}

FLAKY = Finding(
    check="flaky", severity="error", message="reference passed 3 of 5 runs", file="paper2code_test.py"
)


@pytest.fixture
def queued(request):
    """The revision ids ``revision_submitted`` was sent for (the signal the evaluation app answers)."""
    sent: list[int] = []

    def listener(sender, *, revision_id, **kwargs):
        sent.append(revision_id)

    revision_submitted.connect(listener, weak=False, dispatch_uid="test-proposals-queued")
    request.addfinalizer(lambda: revision_submitted.disconnect(dispatch_uid="test-proposals-queued"))
    return sent


def make_maintainer():
    """A user holding the review permission directly (the "maintainers" group grants the same)."""
    user = UserFactory(email=f"maintainer{next(_keys)}@example.org")
    user.user_permissions.add(
        Permission.objects.get(content_type__app_label="contributions", codename="review_proposal")
    )
    return user


@pytest.fixture
def maintainer():
    return make_maintainer()


_keys = itertools.count()


def states(proposal: Proposal) -> list[tuple[str, str]]:
    return list(proposal.events.order_by("pk").values_list("from_state", "to_state"))


# ------------------------------------------------------------------------------------------- creation


def test_a_new_proposal_is_a_draft_with_its_creation_in_the_history():
    author = UserFactory()
    proposal = proposal_create(
        author=author,
        task_key="rmsnorm-2",
        meta={"title": "RMSNorm", "arxiv_abs": "https://arxiv.org/abs/1910.07467v2"},
    )
    assert proposal.state == State.DRAFT
    assert (proposal.title, proposal.arxiv_id, proposal.meta["id"]) == ("RMSNorm", "1910.07467", "rmsnorm-2")
    assert states(proposal) == [("", State.DRAFT)]
    assert proposal.events.get().actor == author


def test_refuses_a_task_key_that_is_not_a_slug_naming_the_field():
    with pytest.raises(ProposalError, match="not a slug") as caught:
        proposal_create(author=UserFactory(), task_key="../etc")
    assert caught.value.field == "task_key"


def test_refuses_a_task_key_another_open_proposal_uses_but_not_a_withdrawn_ones():
    first = proposal_draft(task_key="same-key")
    with pytest.raises(ProposalError, match="another open proposal"):
        proposal_create(author=UserFactory(), task_key="same-key")
    proposal_withdraw(proposal=first, by=first.author)
    assert proposal_create(author=UserFactory(), task_key="same-key").state == State.DRAFT


def test_refuses_the_key_of_a_benchmark_task_unless_the_author_is_a_maintainer(maintainer):
    TaskFactory(key="rmsnorm")
    with pytest.raises(ProposalError, match="already in the benchmark"):
        proposal_create(author=UserFactory(), task_key="rmsnorm")
    assert proposal_create(author=maintainer, task_key="rmsnorm").task_key == "rmsnorm"


def test_saves_draft_answers_per_step_and_remembers_the_furthest_step():
    proposal = proposal_draft()
    proposal_save_draft(proposal=proposal, by=proposal.author, step=2, data={"venue": "NeurIPS"})
    proposal_save_draft(proposal=proposal, by=proposal.author, step=1, data={"arxiv": "1910.07467"})
    proposal.refresh_from_db()
    assert proposal.draft == {"1": {"arxiv": "1910.07467"}, "2": {"venue": "NeurIPS"}}
    assert proposal.step == 2
    with pytest.raises(ProposalError, match="only the author"):
        proposal_save_draft(proposal=proposal, by=UserFactory(), step=3, data={})


# ------------------------------------------------------------------------------------------- revisions


def test_an_upload_replaces_the_revision_not_yet_submitted():
    first = proposal_upload(proposal_draft())
    second = proposal_upload(
        first.proposal, **{"rmsnorm.py": b"# changed\n" + example_upload().files["rmsnorm.py"]}
    )
    assert list(first.proposal.revisions.values_list("number", flat=True)) == [1]
    assert second.number == 1
    assert second.content_hash != first.content_hash
    assert not ProposalRevision.objects.filter(pk=first.pk).exists()


def test_refuses_a_manifest_naming_a_file_the_upload_does_not_have_naming_the_field():
    proposal = proposal_draft()
    with pytest.raises(ProposalError, match="'missing.py' is not a file of the upload") as caught:
        revision_create(
            proposal=proposal,
            by=proposal.author,
            intake_result=example_upload(),
            manifest={**EXAMPLE_MANIFEST, "context_files": ["missing.py"]},
        )
    assert caught.value.field == "context_files"
    with pytest.raises(ProposalError, match="hidden") as caught:
        revision_create(
            proposal=proposal,
            by=proposal.author,
            intake_result=example_upload(),
            manifest={**EXAMPLE_MANIFEST, "oracle_files": ["rmsnorm.py"]},
        )
    assert caught.value.field == "oracle_files"


def test_only_the_author_uploads_code():
    proposal = proposal_draft()
    with pytest.raises(ProposalError, match="only the author"):
        revision_create(
            proposal=proposal, by=UserFactory(), intake_result=example_upload(), manifest=EXAMPLE_MANIFEST
        )


def test_a_revision_is_a_task_folder_with_the_declared_manifest():
    revision = proposal_upload(proposal_draft())
    task = revision_task(revision=revision)
    assert task.id == revision.proposal.task_key
    assert task.manifest.oracle_files == ("rmsnorm_ref.py",)
    assert [s.name for s in task.snippets][:2] == [
        "root mean square",
        "partial rms over the first k features",
    ]
    assert not task.errors


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


def test_a_submitted_revision_is_immutable_and_a_new_upload_waits_for_changes_requested():
    proposal = proposal_submitted()
    with pytest.raises(ProposalError, match="cannot upload code to a proposal that is submitted"):
        proposal_upload(proposal)
    revision = proposal.revisions.get()
    proposal_validation_start(revision=revision)
    proposal_validation_finish(revision=revision, report=validation_report(FLAKY))
    second = proposal_upload(proposal, **{"paper2code_test.py": b"# steadier\n"})
    revision.refresh_from_db()
    assert (revision.number, second.number) == (1, 2)
    assert revision.files["paper2code_test.py"] != second.files["paper2code_test.py"]
    assert revision.submitted_at is not None


def test_a_resubmission_is_diffed_against_the_previous_revision():
    proposal = proposal_submitted()
    first = proposal.revisions.get()
    proposal_validation_start(revision=first)
    proposal_validation_finish(revision=first, report=validation_report(FLAKY))
    code = example_upload().files["rmsnorm.py"].replace(b"self.eps = eps", b"self.eps = float(eps)")
    second = proposal_upload(proposal, **{"rmsnorm.py": code, "NOTES.md": b"new\n"})
    proposal_submit(proposal=proposal, by=proposal.author)
    diff = selectors.revision_diff(revision=second)
    assert diff.previous == first
    assert (diff.added, diff.removed, diff.changed) == (("NOTES.md",), (), ("rmsnorm.py",))
    assert "-        self.eps = eps\n+        self.eps = float(eps)\n" in diff.text
    assert "+++ r2/rmsnorm.py" in diff.text and not diff.truncated
    assert selectors.revision_diff(revision=second, max_lines=3).truncated


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
    assert "not checked by the test: compute rms" in proposal.events.last().reason


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
    assert proposal.events.last().reason == "validation could not run: sandbox unavailable"
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
        "validation could not run: it timed out, running past its limit of 30 s (RCB_VALIDATION_LIMIT_S), "
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


# ------------------------------------------------------------------------------------------- review


def test_a_maintainer_approves_a_green_proposal(maintainer):
    proposal = proposal_validated()
    review = proposal_review(proposal=proposal, reviewer=maintainer, decision="approve", rubric=ALL_CHECKED)
    proposal.refresh_from_db()
    assert proposal.state == State.APPROVED
    assert review.revision == proposal.revisions.get() and review.rubric == ALL_CHECKED
    assert proposal.events.last().actor == maintainer


def test_nobody_approves_their_own_proposal():
    author = make_maintainer()
    proposal = proposal_submitted()
    Proposal.objects.filter(pk=proposal.pk).update(author=author)
    proposal.refresh_from_db()
    revision = proposal.revisions.get()
    proposal_validation_start(revision=revision)
    proposal_validation_finish(revision=revision, report=validation_report())
    with pytest.raises(ProposalError, match="own proposal"):
        proposal_review(proposal=proposal, reviewer=author, decision="approve", rubric=ALL_CHECKED)
    assert not Review.objects.exists()


def test_only_maintainers_review():
    proposal = proposal_validated()
    with pytest.raises(ProposalError, match="only maintainers"):
        proposal_review(proposal=proposal, reviewer=UserFactory(), decision="approve", rubric=ALL_CHECKED)


def test_approval_needs_every_rubric_item_checked(maintainer):
    proposal = proposal_validated()
    with pytest.raises(ProposalError, match="unchecked: license_redistribution") as caught:
        proposal_review(
            proposal=proposal,
            reviewer=maintainer,
            decision="approve",
            rubric={**ALL_CHECKED, "license_redistribution": False},
        )
    assert caught.value.field == "rubric"


def test_approval_of_a_snippet_not_checked_by_the_test_needs_a_reason_of_substance(maintainer):
    """Issue 18 item 5: a reason picked from the list and a written explanation of at least 40 characters;
    "ok" is not one."""
    proposal = proposal_validated(validation_report(NOT_CHECKED))
    with pytest.raises(ProposalError, match="accept each snippet .*: compute rms"):
        proposal_review(proposal=proposal, reviewer=maintainer, decision="approve", rubric=ALL_CHECKED)
    for given, refusal in (
        ({"reason": "covered", "explanation": "ok"}, "at least 40 characters"),
        ("the call is checked through the output of forward()", "pick why 'compute rms' may stay unchecked"),
        ({"reason": "because", "explanation": "x" * 60}, "one of setup, covered, equivalent"),
    ):
        with pytest.raises(ProposalError, match=refusal) as caught:
            proposal_review(
                proposal=proposal,
                reviewer=maintainer,
                decision="approve",
                rubric=ALL_CHECKED,
                overrides={"compute rms": given},
            )
        assert caught.value.field == "snippet_overrides"
    given = {
        "reason": "covered",
        "explanation": "the call is checked through the output of forward() in every test",
    }
    review = proposal_review(
        proposal=proposal,
        reviewer=maintainer,
        decision="approve",
        rubric=ALL_CHECKED,
        overrides={"compute rms": given},
    )
    proposal.refresh_from_db()
    assert proposal.state in (State.APPROVED, State.PUBLISHED)
    assert review.snippet_overrides == {"compute rms": given}


def test_a_review_is_only_possible_while_ready_for_review(maintainer):
    proposal = proposal_submitted()
    with pytest.raises(ProposalError, match="only one that is ready for review"):
        proposal_review(proposal=proposal, reviewer=maintainer, decision="approve", rubric=ALL_CHECKED)


def test_the_number_of_approvals_required_is_a_setting(settings):
    settings.RCB_APPROVALS_REQUIRED = 2
    first, second = make_maintainer(), make_maintainer()
    proposal = proposal_validated()
    proposal_review(proposal=proposal, reviewer=first, decision="approve", rubric=ALL_CHECKED)
    proposal.refresh_from_db()
    assert proposal.state == State.READY_FOR_REVIEW
    with pytest.raises(ProposalError, match="already approved"):
        proposal_review(proposal=proposal, reviewer=first, decision="approve", rubric=ALL_CHECKED)
    proposal_review(proposal=proposal, reviewer=second, decision="approve", rubric=ALL_CHECKED)
    proposal.refresh_from_db()
    assert proposal.state == State.APPROVED
    assert "2 of 2 approvals" in proposal.events.last().reason


def test_request_changes_and_reject_need_a_reason(maintainer):
    proposal = proposal_validated()
    with pytest.raises(ProposalError, match="give a reason"):
        proposal_review(proposal=proposal, reviewer=maintainer, decision="reject")
    proposal_review(
        proposal=proposal, reviewer=maintainer, decision="request_changes", body="name leaks the answer"
    )
    proposal.refresh_from_db()
    assert proposal.state == State.CHANGES_REQUESTED
    assert proposal.events.last().reason == "name leaks the answer"
    other = proposal_validated()
    proposal_review(proposal=other, reviewer=maintainer, decision="reject", body="license forbids it")
    other.refresh_from_db()
    assert other.state == State.REJECTED and other.is_final


def test_publishing_marks_an_approved_proposal_published(maintainer):
    proposal = proposal_validated()
    version = TaskVersionFactory()
    with pytest.raises(ProposalError, match="only one that is approved"):
        proposal_mark_published(proposal=proposal, by=maintainer, task_version=version)
    proposal_review(proposal=proposal, reviewer=maintainer, decision="approve", rubric=ALL_CHECKED)
    proposal_mark_published(proposal=proposal, by=maintainer, task_version=version)
    proposal.refresh_from_db()
    assert (proposal.state, proposal.published_version) == (State.PUBLISHED, version)


# ------------------------------------------------------------------------------------------- withdrawal


def test_the_author_withdraws_from_any_open_state_but_not_a_final_one(maintainer):
    proposal = proposal_validated()
    with pytest.raises(ProposalError, match="only the author"):
        proposal_withdraw(proposal=proposal, by=maintainer)
    proposal_withdraw(proposal=proposal, by=proposal.author, reason="found a bug")
    proposal.refresh_from_db()
    assert proposal.state == State.WITHDRAWN
    assert proposal.events.last().reason == "found a bug"
    with pytest.raises(ProposalError, match="cannot withdraw a proposal that is withdrawn"):
        proposal_withdraw(proposal=proposal, by=proposal.author)


def test_a_stale_copy_cannot_make_a_transition_twice():
    proposal = proposal_submitted()
    stale = Proposal.objects.get(pk=proposal.pk)
    proposal_withdraw(proposal=proposal, by=proposal.author)
    with pytest.raises(ProposalError, match="withdrawn"):
        proposal_submit(proposal=stale, by=stale.author)
    assert ProposalEvent.objects.filter(proposal=proposal, to_state=State.WITHDRAWN).count() == 1


# ------------------------------------------------------------------------------------------- notifications


def test_every_transition_notifies_author_and_maintainers_in_app_and_by_mail(
    maintainer, mailoutbox, django_capture_on_commit_callbacks
):
    author = UserFactory(email="author@example.org")
    proposal = proposal_draft(author)
    proposal_upload(proposal)
    with django_capture_on_commit_callbacks(execute=True):
        proposal_submit(proposal=proposal, by=author)
    # The author made the move: only the maintainers hear of it.
    submit_event = proposal.events.get(to_state=State.SUBMITTED)
    assert list(Notification.objects.filter(event=submit_event).values_list("recipient", flat=True)) == [
        maintainer.pk
    ]
    assert [m.to for m in mailoutbox] == [[maintainer.email]]
    assert "moved" in mailoutbox[0].subject and proposal.task_key in mailoutbox[0].subject
    revision = proposal.revisions.get()
    with django_capture_on_commit_callbacks(execute=True):
        proposal_validation_start(revision=revision)
    # The system made it: everyone hears.
    start_event = proposal.events.get(to_state=State.VALIDATING)
    recipients = set(Notification.objects.filter(event=start_event).values_list("recipient", flat=True))
    assert recipients == {author.pk, maintainer.pk}
    assert {tuple(m.to) for m in mailoutbox[1:]} == {(author.email,), (maintainer.email,)}


def test_maintainers_are_not_told_of_a_draft(maintainer):
    proposal = proposal_draft()
    proposal_withdraw(proposal=proposal, by=proposal.author)
    assert not Notification.objects.filter(recipient=maintainer).exists()


def test_a_failed_transition_leaves_no_history_and_no_notification(maintainer, mailoutbox):
    proposal = proposal_validated()
    before = (ProposalEvent.objects.count(), Notification.objects.count())
    with pytest.raises(ProposalError):
        proposal_review(proposal=proposal, reviewer=maintainer, decision="approve", rubric={})
    assert (ProposalEvent.objects.count(), Notification.objects.count()) == before


def test_notifications_are_marked_read_only_by_their_recipient(maintainer):
    proposal = proposal_validated()
    theirs = Notification.objects.filter(recipient=proposal.author)
    assert selectors.notification_unread_count(user=proposal.author) == theirs.count() > 0
    assert (
        notifications_mark_read(user=maintainer, notification_ids=list(theirs.values_list("pk", flat=True)))
        == 0
    )
    assert notifications_mark_read(user=proposal.author) == theirs.count()
    assert selectors.notification_unread_count(user=proposal.author) == 0


# ------------------------------------------------------------------------------------------- comments


def test_comments_anchor_to_a_file_and_line_of_the_revision(maintainer):
    proposal = proposal_validated()
    comment = comment_add(
        proposal=proposal, author=maintainer, body="why **eps**?", file="rmsnorm.py", line=3
    )
    assert (comment.revision, comment.file, comment.line) == (proposal.revisions.get(), "rmsnorm.py", 3)
    assert Notification.objects.filter(recipient=proposal.author, event=None).count() == 1
    with pytest.raises(ProposalError, match="has lines 1 to") as caught:
        comment_add(proposal=proposal, author=maintainer, body="x", file="rmsnorm.py", line=10_000)
    assert caught.value.field == "line"
    with pytest.raises(ProposalError, match="not a file of revision 1"):
        comment_add(proposal=proposal, author=maintainer, body="x", file="nope.py")
    with pytest.raises(ProposalError, match="only the author and maintainers"):
        comment_add(proposal=proposal, author=UserFactory(), body="spam")


# ------------------------------------------------------------------------------------------- selectors


def test_only_the_author_and_maintainers_see_a_proposal_and_maintainers_no_drafts(maintainer):
    proposal = proposal_draft()
    assert selectors.proposal_get_for_viewer(viewer=proposal.author, proposal_id=proposal.pk) == proposal
    for viewer in (maintainer, UserFactory()):
        with pytest.raises(Proposal.DoesNotExist):
            selectors.proposal_get_for_viewer(viewer=viewer, proposal_id=proposal.pk)
    with pytest.raises(Proposal.DoesNotExist):
        selectors.proposal_get_for_viewer(viewer=proposal.author, proposal_id="1 OR 1=1")
    proposal_upload(proposal)
    proposal_submit(proposal=proposal, by=proposal.author)
    assert selectors.proposal_get_for_viewer(viewer=maintainer, proposal_id=str(proposal.pk)) == proposal
    assert is_maintainer(maintainer) and list(maintainers()) == [maintainer]


def test_the_review_queue_lists_the_longest_waiting_first_with_filters():
    older, newer = proposal_validated(), proposal_validated()
    Proposal.objects.filter(pk=older.pk).update(state_changed_at=timezone.now() - timedelta(days=3))
    ProposalFactory()  # a draft is never listed
    assert list(selectors.proposal_review_queue()) == [Proposal.objects.get(pk=older.pk), newer]
    assert list(selectors.proposal_review_queue(waiting_longer_than=timedelta(days=1))) == [older]
    assert list(selectors.proposal_review_queue(states=[State.DRAFT])) == []
    row = selectors.proposal_review_queue(search="1910.07467").first()
    assert (row.revision_count, row.approvals) == (1, 0)
    assert selectors.proposal_waiting(Proposal.objects.get(pk=older.pk)) > timedelta(days=2)
