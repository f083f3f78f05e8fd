"""The proposal state machine (``contributions/services/proposal_state.py``) and the services of
``contributions/services/proposals.py``: its moves as data, creating a proposal, its draft answers, withdrawal, marking it published, comments, and transitions that cannot happen
twice. The other stages have their own files: test_revisions, test_proposal_validation, test_review,
test_notifications, test_selectors."""

from __future__ import annotations

import pytest

from contributions.models import Notification, Proposal, ProposalEvent
from contributions.services import (
    ProposalError,
    comment_add,
    proposal_create,
    proposal_mark_published,
    proposal_review,
    proposal_save_draft,
    proposal_submit,
    proposal_withdraw,
)
from contributions.services.proposal_state import TRANSITIONS, proposal_transition
from tests.contributions.conftest import ALL_CHECKED, State, states
from tests.factories import TaskFactory, TaskVersionFactory, UserFactory
from tests.factories.builders import (
    NOT_CHECKED,
    proposal_draft,
    proposal_submitted,
    proposal_upload,
    proposal_validated,
    validation_report,
)

pytestmark = pytest.mark.django_db


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
    with pytest.raises(ProposalError, match="may hold only letters, digits, hyphens") as caught:
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


def test_the_history_records_each_status_in_the_words_of_the_badge():
    proposal = proposal_validated(validation_report(NOT_CHECKED))
    proposal_upload(proposal)  # from ready for review: the author replaces the revision under review
    assert list(proposal.events.order_by("pk").values_list("status", "status_label")) == [
        ("draft", "Draft"),
        ("waiting", "Waiting for validation"),
        ("validating", "Validating"),
        ("needs_fix", "Needs a fix: 1 snippet not checked by its test"),
        ("revising", "Changes requested: revision 2 not submitted yet"),
    ]


# ------------------------------------------------------------------------------------------- publishing


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


# ------------------------------------------------------------------------------------- the moves as data


def test_every_state_but_a_draft_is_reached_by_a_move_and_no_final_state_is_left():
    assert set(TRANSITIONS) == set(State.values) - {State.DRAFT}
    sources = set().union(*TRANSITIONS.values())
    assert not sources & set(Proposal.FINAL_STATES)


def test_a_move_the_state_machine_does_not_have_is_refused_before_the_database_is_touched():
    proposal = proposal_draft()

    with pytest.raises(ValueError, match="no move from draft to approved"):
        proposal_transition(
            proposal=proposal, allowed=(State.DRAFT,), to=State.APPROVED, actor=None, action="approve"
        )

    proposal.refresh_from_db()
    assert proposal.state == State.DRAFT
