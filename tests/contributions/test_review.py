"""Maintainers' reviews at the service boundary (``contributions/services/review.py``): who may review, the
rubric, accepting "not checked by the test" findings with a reason of substance, the number of approvals
required, and the reasons request changes and reject need."""

from __future__ import annotations

import pytest

from contributions.models import Proposal, Review
from contributions.services import (
    ProposalError,
    proposal_review,
    proposal_validation_finish,
    proposal_validation_start,
)
from tests.contributions.conftest import ALL_CHECKED, State, make_maintainer
from tests.factories import UserFactory
from tests.factories.builders import NOT_CHECKED, proposal_submitted, proposal_validated, validation_report

pytestmark = pytest.mark.django_db


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
    with pytest.raises(ProposalError, match="not checked: The license allows redistribution") as caught:
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
