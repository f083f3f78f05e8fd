"""Notifications of the contribution workflow (``contributions/services/notifications.py``): every transition
notifies the author and the maintainers in the app and by mail, drafts stay private, a failed transition
notifies nobody, and only the recipient marks a notification read."""

from __future__ import annotations

import pytest

from contributions import selectors
from contributions.models import Notification, ProposalEvent
from contributions.services import (
    ProposalError,
    notifications_mark_read,
    proposal_review,
    proposal_submit,
    proposal_validation_start,
    proposal_withdraw,
)
from tests.contributions.conftest import State
from tests.factories import UserFactory
from tests.factories.builders import proposal_draft, proposal_upload, proposal_validated

pytestmark = pytest.mark.django_db


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
