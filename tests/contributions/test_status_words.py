"""One status, one next step (issue 22 item 3), at the HTTP boundary: a proposal's state in words that agree
on every page (its header, its validation section, the author's list, the review queue), the next action on
the page (a new revision and a fix hint for a snippet its test does not check), live updates of the header
and of a run page's score, and the review queue's validation and waiting columns with readable filters."""

from __future__ import annotations

import re

import pytest

from contributions.models import Proposal
from contributions.services import (
    proposal_validation_finish,
    proposal_validation_start,
    revision_upload,
)
from researchcodebench.validation import Finding
from tests.factories import MaintainerFactory, example_upload
from tests.factories.builders import NOT_CHECKED, proposal_submitted, proposal_validated, validation_report

pytestmark = pytest.mark.django_db

State = Proposal.State
HTMX_POLL = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "validation-status"}
NEEDS_FIX = "Needs a fix: 1 snippet not checked by its test"


def text(html: str) -> str:
    """The words of a page, tags dropped and spaces collapsed."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def header(html: str) -> str:
    return text(html.split("<h1>", 1)[1].split("</h1>", 1)[0])


def flagged() -> Proposal:
    """A proposal whose validation found one snippet its test does not check (ready for review)."""
    proposal = proposal_validated(validation_report(NOT_CHECKED))
    assert proposal.state == State.READY_FOR_REVIEW
    return proposal


def test_a_flagged_proposal_says_needs_a_fix_everywhere_not_failed_beside_ready(client):
    proposal = flagged()
    client.force_login(proposal.author)
    html = client.get(f"/contribute/{proposal.pk}/").content.decode()
    assert NEEDS_FIX in header(html)
    validation = text(html.split('id="validation-status"', 1)[1].split("</section>", 1)[0])
    assert "Failed" not in validation and "errors" not in validation
    assert "1 snippet not checked by its test" in validation
    listed = text(client.get("/contribute/").content.decode())
    assert NEEDS_FIX in listed and "Ready for review" not in listed


def test_a_flagged_proposal_shows_its_author_the_next_step_a_fix_hint_and_a_new_revision(client):
    proposal = flagged()
    client.force_login(proposal.author)
    html = client.get(f"/contribute/{proposal.pk}/").content.decode()
    step = html.split('id="next-step"', 1)[1].split("</section>", 1)[0]
    assert "assert on the value the snippet computes" in step
    assert "compute rms" in step
    assert f'href="/contribute/{proposal.pk}/step/2/">Upload a new revision</a>' in step
    # The link works: the code step takes the upload, which takes revision 1 out of review.
    assert client.get(f"/contribute/{proposal.pk}/step/2/").status_code == 200
    revision_upload(proposal=proposal, by=proposal.author, intake_result=example_upload())
    proposal.refresh_from_db()
    assert proposal.state == State.CHANGES_REQUESTED
    assert proposal.revisions.count() == 2
    assert "Changes requested: revision 2 not submitted yet" in header(
        client.get(f"/contribute/{proposal.pk}/").content.decode()
    )


def test_a_maintainer_sees_the_same_words_and_a_review_next_step(client):
    proposal = flagged()
    client.force_login(MaintainerFactory())
    html = client.get(f"/contribute/{proposal.pk}/").content.decode()
    assert NEEDS_FIX in header(html)
    step = text(html.split('id="next-step"', 1)[1].split("</section>", 1)[0])
    assert "approve only with a reason for each unchecked snippet" in step and "Review it" in step


def test_failed_validation_says_so_with_its_error_count_and_a_hint(client):
    finding = Finding(check="timeout", severity="error", message="validation timed out")
    proposal = proposal_validated(validation_report(finding))
    assert proposal.state == State.CHANGES_REQUESTED
    client.force_login(proposal.author)
    html = client.get(f"/contribute/{proposal.pk}/").content.decode()
    assert "Validation failed: 1 error" in header(html)
    assert "Make the test faster" in html and "Upload a new revision" in html


def test_the_poll_updates_the_header_and_the_next_step_when_validation_ends(client):
    proposal = proposal_submitted()
    client.force_login(proposal.author)
    proposal_validation_start(revision=proposal.revisions.get())
    running = client.get(f"/contribute/{proposal.pk}/", **HTMX_POLL).content.decode()
    assert 'id="proposal-status" class="badge tone-info" hx-swap-oob="true">Validating<' in running
    proposal_validation_finish(revision=proposal.revisions.get(), report=validation_report(NOT_CHECKED))
    final = client.get(f"/contribute/{proposal.pk}/", **HTMX_POLL).content.decode()
    assert final.lstrip().startswith('<section id="validation-status"')
    badge = re.search(r'<span id="proposal-status"[^>]*hx-swap-oob="true"[^>]*>([^<]*)<', final)
    assert badge and badge.group(1) == NEEDS_FIX
    assert re.search(r'<section id="next-step"[^>]*hx-swap-oob="true"', final)
    assert "Upload a new revision" in final


def test_the_review_queue_shows_the_validation_outcome_and_waiting_time_per_row(client):
    green = proposal_validated()
    marked = flagged()
    client.force_login(MaintainerFactory())
    html = client.get("/review/").content.decode()
    head = text(html.split("<thead>", 1)[1].split("</thead>", 1)[0])
    assert "Validation" in head and "Waiting" in head
    rows = {
        int(m.group(1)): text(m.group(2))
        for m in re.finditer(r'<tr data-proposal="(\d+)"[^>]*>(.*?)</tr>', html, re.S)
    }
    assert "Ready for review" in rows[green.pk] and "Passed" in rows[green.pk]
    assert NEEDS_FIX in rows[marked.pk] and "Ready for review" not in rows[marked.pk]
    assert "min" in rows[green.pk]


def test_the_queue_state_checkboxes_sit_beside_their_labels():
    from pathlib import Path

    css = (Path(__file__).resolve().parents[2] / "static" / "css" / "review.css").read_text()
    rule = re.search(r"form\.filters \.choice label \{([^}]*)\}", css)
    assert rule and "display: inline" in rule.group(1)


def test_every_status_key_has_words_and_a_next_step():
    from contributions.proposal_status import NEXT_STEPS, STATUS_WORDS, status_of

    assert set(STATUS_WORDS) == set(NEXT_STEPS)
    for state in State.values:
        assert status_of(state=state, validation_status=None, report=None).key in STATUS_WORDS


def test_a_finished_run_page_poll_carries_the_score(client):
    from tests.factories import make_benchmark, make_run

    rel, snippets = make_benchmark({"alpha": (None, [3, 2])}, release="rcb-status")
    run = make_run(snippets, {"alpha": "P F"}, release=rel)
    fragment = client.get(f"/runs/{run.pk}/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="run-progress")
    html = fragment.content.decode()
    score = re.search(r'<div id="run-score" hx-swap-oob="true">(.*?)</div>', html, re.S)
    assert score and "no results yet" not in score.group(1) and "<strong>" in score.group(1)
