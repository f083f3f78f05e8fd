"""Reads of proposals: the one access guard (``proposal_get_for_viewer``: every view and API uses it), a
viewer's own proposals, a proposal's revisions and status in the words every page shows
(``proposal_status``), its history, and the approval record of a published version."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import (
    Q,
    QuerySet,
)

from contributions.models import (
    Proposal,
    ProposalEvent,
    ProposalRevision,
    TaskVersion,
)
from contributions.proposal_status import (
    HistoryWords,
    ProposalStatus,
    ValidationOutcome,
    history_words,
    status_of,
    validation_outcome,
)
from contributions.roles import is_maintainer


def proposal_get_for_viewer(*, viewer: Any, proposal_id: Any) -> Proposal:
    """The proposal ``proposal_id`` if ``viewer`` may see it (its author, or a maintainer once it has left
    the draft state); ``Proposal.DoesNotExist`` otherwise, so a page answers 404 and never tells a
    stranger that the proposal exists. The one access guard of proposals: every view and API uses it."""
    try:
        pk = int(proposal_id)
    except (TypeError, ValueError):
        raise Proposal.DoesNotExist(f"no proposal {proposal_id!r}") from None
    if viewer is None or not viewer.is_authenticated:
        raise Proposal.DoesNotExist(f"no proposal {pk}")
    rows = Proposal.objects.select_related("author", "published_version")
    visible = Q(author=viewer)
    if is_maintainer(viewer):
        visible |= ~Q(state=Proposal.State.DRAFT)
    proposal = rows.filter(visible, pk=pk).first()
    if proposal is None:
        raise Proposal.DoesNotExist(f"no proposal {pk}")
    return proposal


def proposal_list_for_viewer(*, viewer: Any) -> QuerySet[Proposal]:
    """The viewer's own proposals, most recently changed first (none for an anonymous viewer)."""
    if viewer is None or not viewer.is_authenticated:
        return Proposal.objects.none()
    return Proposal.objects.filter(author=viewer).order_by("-updated_at", "-pk")


def proposal_open_for_key(*, author: Any, task_key: str, exclude: Proposal | None = None) -> Proposal | None:
    """``author``'s own open proposal (not published, rejected or withdrawn) for task ``task_key``, other
    than ``exclude``; None when there is none (or the key is another author's)."""
    if author is None or not author.is_authenticated:
        return None
    rows = Proposal.objects.filter(author=author, task_key=(task_key or "").strip()).exclude(
        state__in=Proposal.RELEASED_KEY_STATES
    )
    if exclude is not None:
        rows = rows.exclude(pk=exclude.pk)
    return rows.order_by("-pk").first()


@dataclass(frozen=True)
class HistoryRow:
    """A change of a proposal's status: the event (who, when, why, which revision) and the status it gave,
    in the words its badge showed then."""

    event: ProposalEvent
    status: HistoryWords


def proposal_history(*, proposal: Proposal) -> list[HistoryRow]:
    """Every change of a proposal's status, oldest first, with its actor, revision and status words."""
    events = proposal.events.select_related("actor", "revision").order_by("created_at", "pk")
    return [
        HistoryRow(
            event=event,
            status=history_words(key=event.status, label=event.status_label, state=event.to_state),
        )
        for event in events
    ]


def task_version_approval(*, task_version: TaskVersion) -> Proposal | None:
    """The approval record of a published version: the proposal that published it (an imported version's
    record has the operator as author), None for a version published before records were kept."""
    return (
        Proposal.objects.filter(published_version=task_version)
        .select_related("author")
        .order_by("-pk")
        .first()
    )


def proposal_approvers(*, proposal: Proposal) -> list[Any]:
    """The maintainers whose approvals moved ``proposal`` to approved (approvals of the revision named by
    its last move to approved), in the order they approved."""
    event = (
        proposal.events.filter(to_state=Proposal.State.APPROVED, revision__isnull=False)
        .order_by("-created_at", "-pk")
        .first()
    )
    if event is None:
        return []
    reviews = event.revision.reviews.filter(decision="approve").select_related("reviewer").order_by("pk")
    seen: dict[int, Any] = {}
    for review in reviews:
        seen.setdefault(review.reviewer_id, review.reviewer)
    return list(seen.values())


def latest_revision(proposal: Proposal) -> ProposalRevision | None:
    """The proposal's newest revision (submitted or not), or None before the first upload."""
    return proposal.revisions.order_by("-number").first()


def latest_submitted_revision(proposal: Proposal) -> ProposalRevision | None:
    """The newest submitted revision: the one validated and reviewed."""
    return proposal.revisions.filter(submitted_at__isnull=False).order_by("-number").first()


def proposal_status(proposal: Proposal) -> ProposalStatus:
    """The proposal's status in the words every page shows (``proposal_status.status_of``), from its state
    and the validation of its newest submitted revision (two queries)."""
    submitted = latest_submitted_revision(proposal)
    newest = latest_revision(proposal)
    revising = (
        newest.number
        if newest is not None and newest.submitted_at is None and submitted is not None
        else None
    )
    return status_of(
        state=proposal.state,
        validation_status=submitted.validation_status if submitted is not None else None,
        report=submitted.validation_report if submitted is not None else None,
        revising=revising,
    )


def revision_outcome(revision: ProposalRevision | None) -> ValidationOutcome:
    """The words of a revision's validation (``proposal_status.validation_outcome``); "Not submitted" for
    None or a revision not submitted."""
    if revision is None or revision.submitted_at is None:
        return validation_outcome(status=None, report=None)
    return validation_outcome(status=revision.validation_status, report=revision.validation_report)
