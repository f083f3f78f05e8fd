"""Maintainers' reviews of a proposal: approve, request changes, reject (``services/proposal_state.py`` has the
state machine).

Only maintainers review, never their own proposal; approving needs every rubric item checked and every
blocking finding of the validation report accepted (only "not checked by the test" findings can be
accepted, each with a written reason). When ``RCB_APPROVALS_REQUIRED`` maintainers have approved the
revision, the proposal is ``approved`` and publishing follows (``services.publishing``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.db import transaction

from contributions.models import (
    UNCHECKED_EXPLANATION_MIN,
    Proposal,
    ProposalRevision,
    Review,
    UncheckedReason,
)
from contributions.proposal_status import report_blocking, report_overridable
from contributions.roles import is_maintainer
from contributions.selectors.proposals import latest_submitted_revision
from contributions.services.proposal_state import (
    MAX_REASON,
    ProposalError,
    State,
    bounded_text,
    proposal_lock,
    proposal_transition,
    state_label,
    states_label,
)
from contributions.services.proposal_validation import finding_line
from contributions.services.proposals import RUBRIC, RUBRIC_KEYS

# Decisions that move the proposal at once, with the word their refusal uses.
_REVIEW_MOVES: dict[str, tuple[str, str]] = {
    Review.Decision.REQUEST_CHANGES: (State.CHANGES_REQUESTED, "request changes to"),
    Review.Decision.REJECT: (State.REJECTED, "reject"),
}


def _clean_rubric(rubric: Mapping[str, Any] | None) -> dict[str, bool]:
    rubric = dict(rubric or {})
    unknown = sorted(set(rubric) - set(RUBRIC_KEYS))
    if unknown:
        raise ProposalError(
            f"rubric: unknown item(s) {', '.join(unknown)} (items: {', '.join(RUBRIC_KEYS)})", field="rubric"
        )
    if not all(isinstance(v, bool) for v in rubric.values()):
        raise ProposalError("rubric: every item is checked (true) or not (false)", field="rubric")
    return {key: rubric.get(key, False) for key in RUBRIC_KEYS}


def _clean_overrides(
    overrides: Mapping[str, Any] | None, *, report: Mapping[str, Any]
) -> dict[str, dict[str, str]]:
    """snippet name -> {"reason": an ``UncheckedReason``, "explanation": at least
    ``UNCHECKED_EXPLANATION_MIN`` characters}: a reason of substance for each snippet accepted although its
    test does not check it (issue 18 item 5)."""
    overrides = dict(overrides or {})
    allowed = report_overridable(report)
    cleaned: dict[str, dict[str, str]] = {}
    reasons = ", ".join(UncheckedReason.values)
    for name, given in overrides.items():
        if name not in allowed:
            raise ProposalError(
                f"snippet_overrides: {name!r} has no 'not checked by the test' finding to accept",
                field="snippet_overrides",
            )
        given = given if isinstance(given, Mapping) else {"explanation": given}
        reason = given.get("reason")
        if reason not in UncheckedReason.values:
            raise ProposalError(
                f"snippet_overrides: pick why {name!r} may stay unchecked (one of {reasons})",
                field="snippet_overrides",
            )
        raw = given.get("explanation")
        text = bounded_text(raw if isinstance(raw, str) else "", field="snippet_overrides", limit=MAX_REASON)
        if len(text) < UNCHECKED_EXPLANATION_MIN:
            raise ProposalError(
                f"snippet_overrides: give a written reason for accepting {name!r}: explain it in at least "
                f"{UNCHECKED_EXPLANATION_MIN} characters (it is shown with the snippet on every public page)",
                field="snippet_overrides",
            )
        cleaned[name] = {"reason": reason, "explanation": text}
    return cleaned


@transaction.atomic
def proposal_review(
    *,
    proposal: Proposal,
    reviewer: Any,
    decision: str,
    rubric: Mapping[str, Any] | None = None,
    body: str = "",
    overrides: Mapping[str, Any] | None = None,
) -> Review:
    """A maintainer's review of the revision under review (the newest submitted one).

    Rules: only maintainers review, never their own proposal; only a proposal ready for review (a
    ``comment`` also while it is submitted, validating or changes were requested). ``request_changes``
    and ``reject`` need a reason (``body``). ``approve`` needs every rubric item checked and every
    error finding of the report accepted through ``overrides`` (snippet name -> {"reason": an
    ``UncheckedReason``, "explanation": a written one of at least ``UNCHECKED_EXPLANATION_MIN``
    characters}; only "not checked by the test" findings can be). With ``RCB_APPROVALS_REQUIRED`` distinct approvals of
    the revision the proposal moves to approved; publishing follows (``services.publishing``).
    """
    _require_reviewer(proposal=proposal, reviewer=reviewer, decision=decision)
    proposal = proposal_lock(proposal)
    revision = _revision_to_review(proposal, decision=decision)
    report = revision.validation_report or {}
    needs_reason = decision in (Review.Decision.REQUEST_CHANGES, Review.Decision.REJECT)
    text = bounded_text(body, field="body", required=needs_reason)
    if decision == Review.Decision.COMMENT and not text:
        raise ProposalError("body: write a comment", field="body")
    checked = _clean_rubric(rubric)
    accepted = _clean_overrides(overrides, report=report)
    if decision == Review.Decision.APPROVE:
        _require_approvable(revision=revision, reviewer=reviewer, rubric=checked, accepted=accepted)
    review = Review.objects.create(
        proposal=proposal,
        revision=revision,
        reviewer=reviewer,
        decision=decision,
        rubric=checked,
        body=text,
        snippet_overrides=accepted,
    )
    if decision == Review.Decision.APPROVE:
        _approve_if_enough(proposal=proposal, revision=revision, reviewer=reviewer)
    elif decision in _REVIEW_MOVES:
        to, action = _REVIEW_MOVES[decision]
        proposal_transition(
            proposal=proposal,
            allowed=(State.READY_FOR_REVIEW,),
            to=to,
            actor=reviewer,
            reason=text,
            revision=revision,
            action=action,
        )
    return review


def _require_reviewer(*, proposal: Proposal, reviewer: Any, decision: str) -> None:
    """Refuse a reviewer who is not a maintainer or is the author, and a decision that is not one."""
    if not is_maintainer(reviewer):
        raise ProposalError("only maintainers review proposals")
    if reviewer.pk == proposal.author_id:
        raise ProposalError("nobody reviews their own proposal")
    if decision not in Review.Decision.values:
        raise ProposalError(
            f"decision: {decision!r} is not one of {', '.join(Review.Decision.values)}", field="decision"
        )


def _revision_to_review(proposal: Proposal, *, decision: str) -> ProposalRevision:
    """The revision under review of the (locked) ``proposal``; refused unless its state allows ``decision``."""
    revision = latest_submitted_revision(proposal)
    reviewable = (
        (State.READY_FOR_REVIEW, State.SUBMITTED, State.VALIDATING, State.CHANGES_REQUESTED)
        if decision == Review.Decision.COMMENT
        else (State.READY_FOR_REVIEW,)
    )
    if proposal.state not in reviewable or revision is None:
        raise ProposalError(
            f"cannot {Review.Decision(decision).label.lower()} a proposal that is {state_label(proposal.state)} "
            f"(only one that is {states_label(reviewable)})"
        )
    return revision


def _require_approvable(
    *, revision: ProposalRevision, reviewer: Any, rubric: Mapping[str, bool], accepted: Mapping[str, Any]
) -> None:
    """Refuse an approval with a rubric item unchecked, a report error no review can accept, a "not
    checked by the test" finding not ``accepted``, or by a reviewer who already approved the revision."""
    labels = dict(RUBRIC)
    unchecked = [labels[key].rstrip(".") for key, value in rubric.items() if not value]
    if unchecked:
        raise ProposalError(
            f"rubric: check every item of the rubric before approving (not checked: {'; '.join(unchecked)})",
            field="rubric",
        )
    report = revision.validation_report or {}
    if not report.get("ok"):
        overridable = report_overridable(report)
        cannot = [finding_line(f) for f in report_blocking(report)]
        if not report or cannot:
            raise ProposalError(
                "the validation report has errors no review can accept: "
                + ("; ".join(cannot[:5]) or "there is no report")
            )
        missing = sorted(set(overridable) - set(accepted))
        if missing:
            raise ProposalError(
                "snippet_overrides: accept each snippet not checked by the test with a written reason: "
                + ", ".join(missing),
                field="snippet_overrides",
            )
    if revision.reviews.filter(reviewer=reviewer, decision=Review.Decision.APPROVE).exists():
        raise ProposalError(f"you already approved revision {revision.number}")


def _approve_if_enough(*, proposal: Proposal, revision: ProposalRevision, reviewer: Any) -> None:
    """With ``RCB_APPROVALS_REQUIRED`` distinct approvals of ``revision``, approve the proposal and publish
    it after commit."""
    approvals = (
        revision.reviews.filter(decision=Review.Decision.APPROVE).values("reviewer").distinct().count()
    )
    required = settings.RCB_APPROVALS_REQUIRED
    if approvals < required:
        return
    proposal_transition(
        proposal=proposal,
        allowed=(State.READY_FOR_REVIEW,),
        to=State.APPROVED,
        actor=reviewer,
        reason=f"revision {revision.number} approved ({approvals} of {required} approvals)",
        revision=revision,
        action="approve",
    )
    from contributions.services import publishing  # publishing builds on this module

    # Approval publishes at once, in its own transaction: a failure there keeps the approval.
    transaction.on_commit(
        lambda: publishing.proposal_publish_approved(proposal_id=proposal.pk, by_id=reviewer.pk)
    )
