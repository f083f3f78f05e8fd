"""The proposal state machine: its states and moves, the one lock and the one transition every move makes.

::

    draft ──submit──> submitted ──validation_start──> validating ──validation_finish──> ready_for_review
      ^                  ^  |                            |  |                              |  |  |
      |                  |  └─(watchdog resend)          |  └─validation_fail (retry)──> submitted
      |                  |                               └─finish (errors) / fail (final)─┐  |  |
      |                  └──────────submit (new revision)──── changes_requested <─────────┘  |  |
      |                                                          ^   review(request_changes)─┘  |
      |                                                          └── upload (author: revise) ───┘
    withdraw (author, from any state but published, rejected, withdrawn)  review(reject) ─> rejected
                                                     review(approve, enough approvals) ─> approved
                                                                 mark_published ─> published

``TRANSITIONS`` is that picture as data: the state each move goes to and the states it may start from.
Every move is ``proposal_transition``: one conditional update
(``Proposal.objects.filter(pk=..., state__in=...).update(...)``), so two requests (or a request and a
worker) never both make it; it writes a ``ProposalEvent`` (who, when, why, and the status it gave in
``proposal_status``'s words) and notifies the author and the maintainers of that status
(``notifications.notify_event``). A move that is not allowed from the current state, or not by this user,
raises ``ProposalError`` naming the rule (``state_label`` and ``states_label`` give the states' words);
``ProposalError.field`` names the form field at fault where there is one. ``proposal_lock`` locks the
proposal's row for the checks a move makes before it (revision numbering, counting reviews).

The moves themselves are the workflow's services, by stage: ``proposals`` (create, edit, withdraw,
mark published), ``revisions`` (upload, revise), ``proposal_validation`` (submit and the validation's life
cycle) and ``review``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils import timezone

from contributions.models import Proposal, ProposalEvent, ProposalRevision
from contributions.selectors.proposals import proposal_status
from contributions.services.notifications import notify_event

State = Proposal.State

#: the states in which the author edits the proposal (metadata, declarations) and submits it
EDITABLE_STATES: tuple[str, ...] = (State.DRAFT, State.CHANGES_REQUESTED)
#: the states in which the author uploads code; from ready for review the upload is a "revise" move
UPLOADABLE_STATES: tuple[str, ...] = (*EDITABLE_STATES, State.READY_FOR_REVIEW)
#: the states a proposal may still leave (withdrawing is allowed from each)
OPEN_STATES: tuple[str, ...] = tuple(s for s in State.values if s not in Proposal.FINAL_STATES)

#: Every move: the state it goes to -> the states it may start from (the picture above).
TRANSITIONS: Mapping[str, frozenset[str]] = {
    State.SUBMITTED: frozenset({*EDITABLE_STATES, State.VALIDATING}),
    State.VALIDATING: frozenset({State.SUBMITTED}),
    State.READY_FOR_REVIEW: frozenset({State.VALIDATING}),
    State.CHANGES_REQUESTED: frozenset({State.VALIDATING, State.READY_FOR_REVIEW}),
    State.APPROVED: frozenset({State.READY_FOR_REVIEW}),
    State.REJECTED: frozenset({State.READY_FOR_REVIEW}),
    State.PUBLISHED: frozenset({State.APPROVED}),
    State.WITHDRAWN: frozenset(OPEN_STATES),
}

MAX_TEXT = 20_000
MAX_REASON = 4000


class ProposalError(ValueError):
    """A proposal action that is not allowed; the message names the rule, ``field`` the form field at fault."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field

    @property
    def words(self) -> str:
        """The message for a person: without the leading ``field: `` key (the form shows the error at its
        field, by its label), as a sentence."""
        message = str(self)
        if self.field and message.startswith(f"{self.field}: "):
            message = message[len(self.field) + 2 :]
        return message[:1].upper() + message[1:]

    def words_away(self, label: str | None) -> str:
        """``words`` where they are shown away from their field (on the whole form, or on another field):
        after the field's ``label`` ("Test entry point: ..."), so they still say which answer is at fault."""
        words = self.words
        return f"{label}: {words[:1].lower()}{words[1:]}" if label else words


def state_label(state: str) -> str:
    """A state in the words of a refusal ("ready for review")."""
    return State(state).label.lower()


def states_label(states: tuple[str, ...] | list[str]) -> str:
    """Several states in the words of a refusal ("draft or changes requested")."""
    return " or ".join(state_label(s) for s in states)


def proposal_lock(proposal: Proposal) -> Proposal:
    """The proposal's row, locked for this transaction (revision numbering and reviews count under it)."""
    return Proposal.objects.select_for_update().get(pk=proposal.pk)


def require_author(proposal: Proposal, by: Any, action: str) -> None:
    """Refuse ``action`` ("edit", "submit"...) to anyone but the proposal's author."""
    if by is None or by.pk != proposal.author_id:
        raise ProposalError(f"only the author of a proposal can {action} it")


def bounded_text(value: str | None, *, field: str, required: bool = False, limit: int = MAX_TEXT) -> str:
    """``value`` stripped, refused (naming ``field``) when longer than ``limit`` or, if ``required``, empty."""
    text = (value or "").strip()
    if required and not text:
        raise ProposalError(f"{field}: give a reason", field=field)
    if len(text) > limit:
        raise ProposalError(f"{field}: at most {limit} characters (got {len(text)})", field=field)
    return text


def proposal_transition(
    *,
    proposal: Proposal,
    allowed: tuple[str, ...],
    to: str,
    actor: Any,
    reason: str = "",
    revision: ProposalRevision | None = None,
    action: str,
    **fields: Any,
) -> ProposalEvent:
    """Move ``proposal`` from one of ``allowed`` to ``to`` in one conditional update; record the status it
    gives (``selectors.proposals.proposal_status``) and notify of it.

    Precondition: whatever else the status depends on (the revision's validation fields, a new revision
    not submitted yet) is written before the call; ``allowed`` is within ``TRANSITIONS[to]`` (a move the
    state machine does not have is a ``ValueError``, a mistake of the caller).

    Raises ``ProposalError`` naming ``action`` and the current state when the proposal is in none of
    ``allowed`` (read again from the database: the caller's copy may be stale).
    """
    undrawn = set(allowed) - TRANSITIONS.get(to, frozenset())
    if undrawn:
        raise ValueError(f"the state machine has no move from {states_label(sorted(undrawn))} to {to}")
    current = (
        Proposal.objects.select_for_update().filter(pk=proposal.pk).values_list("state", flat=True).first()
    )
    now = timezone.now()
    moved = (
        Proposal.objects.filter(pk=proposal.pk, state__in=allowed).update(
            state=to, state_changed_at=now, updated_at=now, **fields
        )
        if current in allowed
        else 0
    )
    if not moved:
        where = state_label(current) if current else "deleted"
        raise ProposalError(
            f"cannot {action} a proposal that is {where} (only one that is {states_label(allowed)})"
        )
    from_state = current
    proposal.state = to
    proposal.state_changed_at = now
    for name, value in fields.items():
        setattr(proposal, name, value)
    # The status is read after the move: the caller has already written what it depends on (the revision's
    # validation, a new revision being prepared).
    status = proposal_status(proposal)
    event = ProposalEvent.objects.create(
        proposal=proposal,
        revision=revision,
        actor=actor,
        from_state=from_state,
        to_state=to,
        status=status.key,
        status_label=status.label[:200],
        reason=reason[:MAX_REASON],
    )
    notify_event(event=event, status=status)
    return event
