"""Notifications of the contribution workflow (``contributions/services/notifications.py``): each change of a
proposal's status notifies the author and the maintainers once, in the app and by mail, in the status's
words; the portal's own steps (waiting, validating, a retry) notify nobody, so a validation is told once, by
its outcome; drafts stay private, a failed transition notifies nobody, and only the recipient marks a
notification read."""

from __future__ import annotations

import pytest

from contributions.models import Notification, ProposalEvent
from contributions.selectors.notifications import notification_unread_count
from contributions.services import (
    ProposalError,
    notifications_mark_read,
    proposal_review,
    proposal_submit,
    proposal_validation_fail,
    proposal_validation_finish,
    proposal_validation_start,
    proposal_withdraw,
)
from tests.contributions.conftest import State
from tests.factories import UserFactory
from tests.factories.builders import proposal_draft, proposal_upload, proposal_validated, validation_report

pytestmark = pytest.mark.django_db


def test_a_validation_is_told_once_by_its_outcome_to_author_and_maintainers_in_app_and_by_mail(
    maintainer, mailoutbox, django_capture_on_commit_callbacks, settings
):
    settings.RCB_SITE_URL = "https://rcb.example.org/hub"
    author = UserFactory(email="author@example.org")
    proposal = proposal_draft(author)
    proposal_upload(proposal)
    revision = proposal.revisions.get()
    with django_capture_on_commit_callbacks(execute=True):
        proposal_submit(proposal=proposal, by=author)
        proposal_validation_start(revision=revision)
        # A validation that could not run and is tried again is the portal's business too.
        proposal_validation_fail(revision=revision, reason="sandbox unavailable")
        proposal_validation_start(revision=revision)
    assert (Notification.objects.count(), mailoutbox) == (0, [])
    with django_capture_on_commit_callbacks(execute=True):
        proposal_validation_finish(revision=revision, report=validation_report())
    outcome = proposal.events.get(to_state=State.READY_FOR_REVIEW)
    rows = {n.recipient_id: n.message for n in Notification.objects.filter(event=outcome)}
    assert set(rows) == {author.pk, maintainer.pk} and Notification.objects.count() == 2
    assert rows[author.pk].startswith(
        f"{proposal.task_key}: Ready for review. The maintainers' turn. Next step: Nothing to do: a maintainer "
        "reviews the proposal next."
    )
    assert rows[maintainer.pk].startswith(
        f"{proposal.task_key}: Ready for review. The maintainers' turn. Next step: Review it."
    )
    assert {tuple(m.to) for m in mailoutbox} == {(author.email,), (maintainer.email,)}
    for mail in mailoutbox:
        assert mail.subject == f"[ResearchCodeBench] {proposal.task_key}: Ready for review"
        assert f"Open the proposal: https://rcb.example.org/hub/contribute/{proposal.pk}/" in mail.body
        assert "moved" not in mail.body and "attempt" not in mail.body


def test_a_move_by_a_person_is_told_to_the_others_only(
    maintainer, mailoutbox, django_capture_on_commit_callbacks
):
    proposal = proposal_validated(author=UserFactory(email="author@example.org"))
    before = Notification.objects.count()
    with django_capture_on_commit_callbacks(execute=True):
        proposal_review(
            proposal=proposal, reviewer=maintainer, decision="reject", body="Not a research paper."
        )
    rows = list(Notification.objects.all()[: Notification.objects.count() - before])
    assert [n.recipient_id for n in rows] == [proposal.author_id]
    assert rows[0].message == (
        f"{proposal.task_key}: Rejected. Closed: nobody's turn. Next step: Nothing to do: the proposal was "
        f"rejected; the reason is in its history. Why: Not a research paper. (by {maintainer.get_username()})"
    )
    assert [m.to for m in mailoutbox] == [["author@example.org"]]


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
    assert notification_unread_count(user=proposal.author) == theirs.count() > 0
    assert (
        notifications_mark_read(user=maintainer, notification_ids=list(theirs.values_list("pk", flat=True)))
        == 0
    )
    assert notifications_mark_read(user=proposal.author) == theirs.count()
    assert notification_unread_count(user=proposal.author) == 0
