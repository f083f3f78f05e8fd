"""Notifications of proposal events: in-app rows and emails, to the author and the maintainers.

The one place a ``Notification`` is written or an email about a proposal is sent. The in-app rows are
written in the caller's transaction (they vanish with a rolled-back transition); the emails go out after
it commits, so nobody is told of a change that did not happen. A failing mail server is logged, never
raised: the transition has already happened.

Recipients: the author and every maintainer (``contributions.roles.maintainers``), minus whoever caused the
event (nobody needs to be told what they just did). Maintainers hear of a proposal only once it has been
submitted: a draft is the author's business.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.core.mail import EmailMessage, mailers
from django.db import transaction
from django.urls import NoReverseMatch, reverse
from django.utils import timezone

from contributions.models import Comment, Notification, Proposal, ProposalEvent
from contributions.roles import maintainers

log = logging.getLogger(__name__)

#: the URL name of a proposal's page (built by the contribution pages; ``proposal_id`` keyword)
PROPOSAL_URL_NAME = "contributions:proposal_detail"


def proposal_url(proposal: Proposal) -> str:
    """The proposal's page, or "" while no such page is routed."""
    try:
        return reverse(PROPOSAL_URL_NAME, kwargs={"proposal_id": proposal.pk})
    except NoReverseMatch:
        return ""


def _was_submitted(proposal: Proposal) -> bool:
    return proposal.revisions.filter(submitted_at__isnull=False).exists()


def _recipients(*, proposal: Proposal, actor: Any, include_maintainers: bool) -> list[Any]:
    users = {proposal.author_id: proposal.author}
    if include_maintainers:
        users.update({user.pk: user for user in maintainers()})
    if actor is not None:
        users.pop(actor.pk, None)
    return [users[pk] for pk in sorted(users)]


def _deliver(
    *, proposal: Proposal, event: ProposalEvent | None, message: str, recipients: Iterable[Any]
) -> list[Notification]:
    url = proposal_url(proposal)
    recipients = list(recipients)
    rows = Notification.objects.bulk_create(
        [
            Notification(recipient=user, proposal=proposal, event=event, message=message[:1000], url=url)
            for user in recipients
        ]
    )
    addresses = [user.email for user in recipients if user.email]
    if addresses:
        subject = f"[ResearchCodeBench] {proposal.task_key}: {message}"[:200].replace("\n", " ")
        link = f"\n\n{settings.RCB_SITE_URL.rstrip('/')}{url}" if url else ""
        body = f"{message}{link}\n"
        transaction.on_commit(lambda: _send_mail(subject=subject, body=body, addresses=addresses))
    return rows


def _send_mail(*, subject: str, body: str, addresses: list[str]) -> None:
    # One message per recipient: maintainers' addresses are not shown to authors, nor the other way round.
    messages = [EmailMessage(subject=subject, body=body, to=[address]) for address in addresses]
    try:
        mailers.default.send_messages(messages)
    except Exception:
        log.exception("could not send %d notification email(s): %s", len(messages), subject)


def event_message(event: ProposalEvent) -> str:
    """One line telling what happened: '<actor> moved <key> to <state>: <reason>'."""
    who = event.actor.get_username() if event.actor is not None else "The portal"
    to_label = Proposal.State(event.to_state).label.lower()
    text = f"{who} moved {event.proposal.task_key} to {to_label}"
    return f"{text}: {event.reason}" if event.reason else text


def notify_event(*, event: ProposalEvent) -> list[Notification]:
    """Notify the author and the maintainers (not the actor) of a state change; emails after commit."""
    proposal = event.proposal
    rows = _recipients(
        proposal=proposal,
        actor=event.actor,
        include_maintainers=_was_submitted(proposal),
    )
    return _deliver(proposal=proposal, event=event, message=event_message(event), recipients=rows)


def notify_comment(*, comment: Comment) -> list[Notification]:
    """Tell the other side of a comment: the author of a maintainer's comment, the maintainers of the
    author's (once submitted)."""
    proposal = comment.proposal
    by_author = comment.author_id == proposal.author_id
    rows = _recipients(proposal=proposal, actor=comment.author, include_maintainers=by_author)
    where = f" on {comment.file}" + (f":{comment.line}" if comment.line else "") if comment.file else ""
    message = f"{comment.author.get_username()} commented{where} on {proposal.task_key}"
    return _deliver(proposal=proposal, event=None, message=message, recipients=rows)


@transaction.atomic
def notifications_mark_read(*, user: Any, notification_ids: Iterable[int] | None = None) -> int:
    """Mark ``user``'s unread notifications (all, or those of ``notification_ids``) read; returns how many.

    Another user's notification ids are ignored, so a forged id marks nothing.
    """
    rows = Notification.objects.filter(recipient=user, read_at__isnull=True)
    if notification_ids is not None:
        rows = rows.filter(pk__in=list(notification_ids))
    return rows.update(read_at=timezone.now())
