"""The maintainers' review queue: proposals waiting for a review, longest waiting first, with their
statuses (``proposal_queue_rows``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db.models import (
    Count,
    JSONField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
)
from django.utils import timezone

from contributions.models import (
    Proposal,
    ProposalRevision,
)
from contributions.proposal_status import (
    ProposalStatus,
    ValidationOutcome,
    status_of,
    validation_outcome,
)

#: The states a maintainer's queue shows by default: waiting for a review.
QUEUE_DEFAULT_STATES = (Proposal.State.READY_FOR_REVIEW,)


def proposal_review_queue(
    *,
    states: tuple[str, ...] | list[str] | None = None,
    waiting_longer_than: timedelta | None = None,
    search: str = "",
) -> QuerySet[Proposal]:
    """Proposals for maintainers, longest waiting first, with ``revision_count`` and ``approvals``.

    ``states`` defaults to ready for review (drafts are never listed); ``waiting_longer_than`` keeps those
    whose state changed longer ago; ``search`` matches the task key, title or arXiv id. The waiting time
    of a row is ``proposal_waiting(proposal)``.
    """
    chosen = [s for s in (states or QUEUE_DEFAULT_STATES) if s != Proposal.State.DRAFT]
    rows = Proposal.objects.filter(state__in=chosen).select_related("author")
    if waiting_longer_than is not None:
        rows = rows.filter(state_changed_at__lte=timezone.now() - waiting_longer_than)
    term = (search or "").strip()
    if term:
        rows = rows.filter(
            Q(task_key__icontains=term) | Q(title__icontains=term) | Q(arxiv_id__icontains=term)
        )
    return rows.annotate(
        revision_count=Count("revisions", distinct=True),
        approvals=Count("reviews__reviewer", filter=Q(reviews__decision="approve"), distinct=True),
    ).order_by("state_changed_at", "pk")


def proposal_waiting(proposal: Proposal) -> timedelta:
    """How long the proposal has been in its current state."""
    return timezone.now() - proposal.state_changed_at


@dataclass(frozen=True)
class QueueRow:
    """A row of the review queue: the proposal (with ``revision_count`` and ``approvals``), its status, how
    its newest submitted revision's validation ended and how long it has waited in its state."""

    proposal: Proposal
    status: ProposalStatus
    validation: ValidationOutcome
    waiting: timedelta


def proposal_queue_rows(*, limit: int = 200, **filters: Any) -> list[QueueRow]:
    """The first ``limit`` rows of ``proposal_review_queue(**filters)`` with their statuses (one query)."""
    submitted = ProposalRevision.objects.filter(proposal=OuterRef("pk"), submitted_at__isnull=False).order_by(
        "-number"
    )
    rows = proposal_review_queue(**filters).annotate(
        v_status=Subquery(submitted.values("validation_status")[:1]),
        v_report=Subquery(submitted.values("validation_report")[:1], output_field=JSONField()),
        v_number=Subquery(submitted.values("number")[:1]),
        newest_number=Subquery(
            ProposalRevision.objects.filter(proposal=OuterRef("pk")).order_by("-number").values("number")[:1]
        ),
    )
    out = []
    for proposal in rows[:limit]:
        revising = (
            proposal.newest_number
            if proposal.v_number is not None and (proposal.newest_number or 0) > proposal.v_number
            else None
        )
        out.append(
            QueueRow(
                proposal=proposal,
                status=status_of(
                    state=proposal.state,
                    validation_status=proposal.v_status,
                    report=proposal.v_report,
                    revising=revising,
                ),
                validation=validation_outcome(status=proposal.v_status, report=proposal.v_report),
                waiting=proposal_waiting(proposal),
            )
        )
    return out
