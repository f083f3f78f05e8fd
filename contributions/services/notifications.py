"""Notifications of proposal events: in-app rows and emails, to the author and the maintainers.

The one place a ``Notification`` is written or an email about a proposal is sent. The in-app rows are
written in the caller's transaction (they vanish with a rolled-back transition); the emails go out after
it commits, so nobody is told of a change that did not happen. A failing mail server is logged, never
raised: the transition has already happened.

What is told: each change of a proposal's status once, in ``proposal_status``'s words (the badge's label,
whose turn it is, the recipient's next step, and why), and each comment. The portal's own steps between a
submission and its validation's outcome (``proposal_status.QUIET``: waiting, validating, a retry) are in
the history but told to nobody: a validation is told once, by the status its outcome gives.

Recipients: the author and every maintainer (``contributions.roles.maintainers``), minus whoever caused the
event (nobody needs to be told what they just did). Maintainers hear of a proposal only once it has been
submitted: a draft is the author's business. Emails link to the proposal's page by its absolute address
(``RCB_SITE_URL`` before the path); the in-app rows by its path.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.core.mail import EmailMessage, mailers
from django.db import transaction
from django.urls import NoReverseMatch, reverse
from django.utils import timezone

from contributions.models import Comment, Notification, Proposal, ProposalEvent
from contributions.proposal_status import QUIET, ProposalStatus
from contributions.roles import maintainers

log = logging.getLogger(__name__)

#: the URL name of a proposal's page (built by the contribution pages; ``proposal_id`` keyword)
PROPOSAL_URL_NAME = "contributions:proposal_detail"
#: the longest reason quoted in a notification (the whole one is in the proposal's history)
MAX_QUOTED = 500


def proposal_url(proposal: Proposal) -> str:
    """The proposal's page (its path), or "" while no such page is routed."""
    try:
        return reverse(PROPOSAL_URL_NAME, kwargs={"proposal_id": proposal.pk})
    except NoReverseMatch:
        return ""


def absolute_url(path: str) -> str:
    """``path`` on the portal's public address (``RCB_SITE_URL``), for links that leave the site (emails)."""
    return f"{settings.RCB_SITE_URL.rstrip('/')}{path}"


def _was_submitted(proposal: Proposal) -> bool:
    return proposal.revisions.filter(submitted_at__isnull=False).exists()


def _recipients(*, proposal: Proposal, actor: Any, include_maintainers: bool) -> list[Any]:
    users = {proposal.author_id: proposal.author}
    if include_maintainers:
        users.update({user.pk: user for user in maintainers()})
    if actor is not None:
        users.pop(actor.pk, None)
    return [users[pk] for pk in sorted(users)]


def _quoted(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_QUOTED else text[: MAX_QUOTED - 1] + "…"


def _deliver(
    *,
    proposal: Proposal,
    event: ProposalEvent | None,
    recipients: Iterable[Any],
    subject: str,
    message: Callable[[Any], str],
    body: Callable[[Any], str],
) -> list[Notification]:
    """One in-app row per recipient (``message(user)``) and, after commit, one email per recipient with an
    address (``subject``; ``body(user)`` followed by the proposal's absolute address)."""
    url = proposal_url(proposal)
    recipients = list(recipients)
    rows = Notification.objects.bulk_create(
        [
            Notification(
                recipient=user, proposal=proposal, event=event, message=message(user)[:1000], url=url
            )
            for user in recipients
        ]
    )
    link = f"\n\nOpen the proposal: {absolute_url(url)}" if url else ""
    mails = [(user.email, f"{body(user)}{link}\n") for user in recipients if user.email]
    if mails:
        subject = f"[ResearchCodeBench] {proposal.task_key}: {subject}"[:200].replace("\n", " ")
        transaction.on_commit(lambda: _send_mail(subject=subject, mails=mails))
    return rows


def _send_mail(*, subject: str, mails: list[tuple[str, str]]) -> None:
    # One message per recipient: maintainers' addresses are not shown to authors, nor the other way round,
    # and each side reads its own next step.
    messages = [EmailMessage(subject=subject, body=body, to=[address]) for address, body in mails]
    try:
        mailers.default.send_messages(messages)
    except Exception:
        log.exception("could not send %d notification email(s): %s", len(messages), subject)


def _who(actor: Any) -> str:
    return actor.get_username() if actor is not None else "the portal"


def status_message(*, event: ProposalEvent, status: ProposalStatus, for_author: bool) -> str:
    """One line telling a recipient a proposal's new status: "<key>: <status>. <Whose turn>. Next step:
    <the recipient's step> Why: <reason> (by <who>)"."""
    text = (
        f"{event.proposal.task_key}: {status.label}. {status.turn_words}. "
        f"Next step: {status.step_for(author=for_author)}"
    )
    why = f" Why: {_quoted(event.reason)}" if event.reason else ""
    return f"{text}{why} (by {_who(event.actor)})"


def status_email(*, event: ProposalEvent, status: ProposalStatus, for_author: bool) -> str:
    """The body of the email telling a recipient a proposal's new status (the link follows it)."""
    proposal = event.proposal
    title = f"{proposal.title} ({proposal.task_key})" if proposal.title else proposal.task_key
    lines = [
        title,
        "",
        f"Status: {status.label}",
        f"{status.turn_words}.",
        f"Next step: {status.step_for(author=for_author)}",
    ]
    if event.reason:
        lines.append(f"Why: {event.reason}")
    lines.append(f"By: {_who(event.actor)}")
    return "\n".join(lines)


def notify_event(*, event: ProposalEvent, status: ProposalStatus) -> list[Notification]:
    """Notify the author and the maintainers (not the actor) of the status ``event`` gave its proposal, once
    each, in its words; nobody of a ``QUIET`` status. Emails after commit."""
    if status.key in QUIET:
        return []
    proposal = event.proposal
    rows = _recipients(
        proposal=proposal,
        actor=event.actor,
        include_maintainers=_was_submitted(proposal),
    )

    def is_author(user: Any) -> bool:
        return user.pk == proposal.author_id

    return _deliver(
        proposal=proposal,
        event=event,
        recipients=rows,
        subject=status.label,
        message=lambda user: status_message(event=event, status=status, for_author=is_author(user)),
        body=lambda user: status_email(event=event, status=status, for_author=is_author(user)),
    )


def notify_comment(*, comment: Comment) -> list[Notification]:
    """Tell the other side of a comment: the author of a maintainer's comment, the maintainers of the
    author's (once submitted)."""
    proposal = comment.proposal
    by_author = comment.author_id == proposal.author_id
    rows = _recipients(proposal=proposal, actor=comment.author, include_maintainers=by_author)
    where = f" on {comment.file}" + (f":{comment.line}" if comment.line else "") if comment.file else ""
    message = f"{comment.author.get_username()} commented{where} on {proposal.task_key}"
    return _deliver(
        proposal=proposal,
        event=None,
        recipients=rows,
        subject=message,
        message=lambda user: message,
        body=lambda user: f"{message}:\n\n{comment.body}",
    )


@transaction.atomic
def notifications_mark_read(*, user: Any, notification_ids: Iterable[int] | None = None) -> int:
    """Mark ``user``'s unread notifications (all, or those of ``notification_ids``) read; returns how many.

    Another user's notification ids are ignored, so a forged id marks nothing.
    """
    rows = Notification.objects.filter(recipient=user, read_at__isnull=True)
    if notification_ids is not None:
        rows = rows.filter(pk__in=list(notification_ids))
    return rows.update(read_at=timezone.now())
