"""One status, one next step (issue 22 item 3; issue 34 item 3), at the HTTP boundary: a proposal's state in
words that agree everywhere (its header and history for the author and the maintainers, its validation
section, the author's list, the review queue, the in-app notifications and the emails), each with whose turn
it is and the next step; one notification per change of status, with absolute links in emails; the next
action on the page (a new revision and a fix hint for a snippet its test does not check), live updates of
the header and of a run page's score, and the review queue's validation and waiting columns with readable
filters."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from html import unescape
from typing import Any

import pytest
from django.test import Client

from contributions.models import Notification, Proposal, ProposalEvent
from contributions.proposal_status import NEXT_STEPS, QUIET, validation_outcome
from contributions.services import (
    proposal_review,
    proposal_submit,
    proposal_validation_finish,
    proposal_validation_start,
    revision_upload,
)
from contributions.services.proposals import RUBRIC_KEYS
from researchcodebench.validation import Finding
from tests.factories import MaintainerFactory, UserFactory, example_upload
from tests.factories.builders import (
    NOT_CHECKED,
    proposal_draft,
    proposal_submitted,
    proposal_upload,
    proposal_validated,
    validation_report,
)

pytestmark = pytest.mark.django_db

State = Proposal.State
HTMX_POLL = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "validation-status"}
NEEDS_FIX = "Needs a fix: 1 snippet not checked by its test"


def text(html: str) -> str:
    """The words of a page, tags dropped, entities read and spaces collapsed."""
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


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
    assert "The author's turn." in step
    assert "approve only with a reason for each unchecked snippet" in step and "review it" in step


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


def test_every_status_key_has_words_whose_turn_and_a_next_step_for_each_side():
    from contributions.proposal_status import STATUS_WORDS, TURN_WORDS, TURNS, status_of

    assert set(STATUS_WORDS) == set(NEXT_STEPS) == set(TURNS)
    assert set(TURNS.values()) == set(TURN_WORDS) == {"author", "maintainers", "portal", ""}
    assert all(author and maintainers for author, maintainers in NEXT_STEPS.values())
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


# ------------------------------------------------- one proposal, one status everywhere (issue 34 item 3)

SITE = "https://rcb.example.org"
AUTHOR, MAINTAINERS, PORTAL, CLOSED = (
    "The author's turn",
    "The maintainers' turn",
    "The portal's turn",
    "Closed: nobody's turn",
)
#: what no notification, email or history row shows: the old log wording and the internal state keys
INTERNAL = re.compile(r"moved|attempt \d|ready_for_review|changes_requested|needs_fix|validation_failed|→")


def section(html: str, anchor: str) -> str:
    return text(html.split(f'id="{anchor}"', 1)[1].split("</section>", 1)[0])


def last_history_row(html: str) -> str:
    rows = re.findall(r"<tr data-status=[^>]*>(.*?)</tr>", html.split('id="history"', 1)[1], re.S)
    return text(rows[-1])


def queue_row(client: Client, proposal: Proposal) -> str:
    html = client.get("/review/", {"state": proposal.state}).content.decode()
    row = re.search(rf'<tr data-proposal="{proposal.pk}"[^>]*>(.*?)</tr>', html, re.S)
    assert row, f"proposal {proposal.pk} is not in the queue of {proposal.state}"
    return text(row.group(1))


class Journey:
    """One proposal followed through its statuses: the author's and a maintainer's browsers, and what each
    move told whom."""

    def __init__(self, maintainer: Any, mailoutbox: list, capture: Callable[..., Any]) -> None:
        self.author = UserFactory(email="author@example.org")
        self.maintainer = maintainer
        self.proposal = proposal_draft(self.author)
        self.mailoutbox = mailoutbox
        self.capture = capture
        self.as_author, self.as_maintainer = Client(), Client()
        self.as_author.force_login(self.author)
        self.as_maintainer.force_login(maintainer)

    def move(self, action: Callable[[], Any]) -> tuple[list[ProposalEvent], list[Notification], list]:
        """Run ``action`` (its on-commit work too: emails, publishing): the events, notifications and emails
        it made."""
        events, notes, mails = (
            self.proposal.events.count(),
            Notification.objects.count(),
            len(self.mailoutbox),
        )
        with self.capture(execute=True):
            action()
        self.proposal.refresh_from_db()
        made = list(self.proposal.events.order_by("pk"))[events:]
        return made, list(Notification.objects.order_by("pk"))[notes:], self.mailoutbox[mails:]

    def told(self, action: Callable[[], Any], label: str, turn: str) -> dict[int, str]:
        """Run ``action``, which gives the proposal the status ``label``: exactly one notification per
        recipient, for that change only, and one email each with an absolute link, all in the badge's words.
        Returns recipient id -> message."""
        events, notes, mails = self.move(action)
        told = [e for e in events if e.status not in QUIET]
        assert [e.status_label for e in told] == [label], [e.status_label for e in events]
        recipients = [n.recipient_id for n in notes]
        assert len(recipients) == len(set(recipients)) > 0 and {n.event_id for n in notes} == {told[0].pk}
        link = f"{SITE}/contribute/{self.proposal.pk}/"
        assert sorted(m.to[0] for m in mails) == sorted(
            u.email for u in (self.author, self.maintainer) if u.pk in recipients
        )
        for note in notes:
            step = NEXT_STEPS[told[0].status][0 if note.recipient_id == self.author.pk else 1]
            assert f"{self.proposal.task_key}: {label}. {turn}. Next step: {step}" in note.message
            assert not INTERNAL.search(note.message), note.message
            assert note.url == f"/contribute/{self.proposal.pk}/"
        for mail in mails:
            assert mail.subject == f"[ResearchCodeBench] {self.proposal.task_key}: {label}"
            assert f"Status: {label}\n{turn}.\nNext step: " in mail.body
            assert f"Open the proposal: {link}\n" in mail.body and 'href="/' not in mail.body
            assert not INTERNAL.search(mail.body), mail.body
        if self.author.pk in recipients:
            listed = text(self.as_author.get("/notifications/").content.decode())
            assert f"{label}. {turn}." in listed
        return {n.recipient_id: n.message for n in notes}

    def quiet(self, action: Callable[[], Any]) -> None:
        """Run ``action``, a step of the portal's that tells nobody."""
        _, notes, mails = self.move(action)
        assert (notes, mails) == ([], [])

    def shows(self, label: str, turn: str, *, queued: bool = True) -> None:
        """The author's page and history, the maintainer's page and the queue row agree on ``label`` and
        ``turn``, each page with its reader's next step."""
        author_html = self.as_author.get(f"/contribute/{self.proposal.pk}/").content.decode()
        assert label in header(author_html)
        key = self.proposal.events.order_by("pk").last().status
        author_step, maintainer_step = NEXT_STEPS[key]
        assert f"{label} {turn}. {author_step}" in section(author_html, "next-step")
        history = last_history_row(author_html)
        assert label in history and turn in history and not INTERNAL.search(history)
        if self.proposal.state == State.DRAFT:
            return
        maintainer_html = self.as_maintainer.get(f"/contribute/{self.proposal.pk}/").content.decode()
        assert label in header(maintainer_html)
        assert f"{label} {turn}. {maintainer_step}" in section(maintainer_html, "next-step")
        assert last_history_row(maintainer_html) == history
        if queued:
            row = queue_row(self.as_maintainer, self.proposal)
            assert label in row and turn in row and maintainer_step in row

    def validate(self, report: Any) -> tuple[Any, Any]:
        """Start the validation of the revision under review (quietly); returns it and ``report``."""
        revision = self.proposal.revisions.filter(submitted_at__isnull=False).order_by("-number").first()
        self.quiet(lambda: proposal_validation_start(revision=revision))
        self.shows("Validating", PORTAL)
        return revision, report


def test_one_proposal_shows_one_status_everywhere_from_draft_to_published(
    settings, maintainer, mailoutbox, django_capture_on_commit_callbacks
):
    settings.RCB_SITE_URL = SITE
    j = Journey(maintainer, mailoutbox, django_capture_on_commit_callbacks)
    proposal, author = j.proposal, j.author
    proposal_upload(proposal)
    j.shows("Draft", AUTHOR)

    # Submitted and validated: the portal's turn tells nobody; its outcome is told once, to both sides.
    j.quiet(lambda: proposal_submit(proposal=proposal, by=author))
    j.shows("Waiting for validation", PORTAL)
    revision, report = j.validate(validation_report(NOT_CHECKED))
    told = j.told(lambda: proposal_validation_finish(revision=revision, report=report), NEEDS_FIX, AUTHOR)
    assert set(told) == {author.pk, maintainer.pk}
    j.shows(NEEDS_FIX, AUTHOR)

    # A new revision: the maintainers are told the author is on it.
    revising = "Changes requested: revision 2 not submitted yet"
    told = j.told(lambda: proposal_upload(proposal), revising, AUTHOR)
    assert set(told) == {maintainer.pk}
    j.shows(revising, AUTHOR)
    j.quiet(lambda: proposal_submit(proposal=proposal, by=author))
    revision, report = j.validate(validation_report())
    told = j.told(
        lambda: proposal_validation_finish(revision=revision, report=report), "Ready for review", MAINTAINERS
    )
    assert set(told) == {author.pk, maintainer.pk}
    assert "Why: Revision 2 passed every check. (by the portal)" in told[author.pk]
    j.shows("Ready for review", MAINTAINERS)

    # The maintainer asks for changes through the page: the author is told, with the review's reason.
    def request_changes() -> None:
        response = j.as_maintainer.post(
            f"/contribute/{proposal.pk}/review/",
            {"decision": "request_changes", "body": "Rename `compute rms`."},
        )
        assert response.status_code == 302

    told = j.told(request_changes, "Changes requested", AUTHOR)
    assert set(told) == {author.pk}
    assert f"Why: Rename `compute rms`. (by {maintainer.get_username()})" in told[author.pk]
    j.shows("Changes requested", AUTHOR)

    # Revision 3, validated green, approved: approved and then published, each told once.
    proposal_upload(proposal)
    j.quiet(lambda: proposal_submit(proposal=proposal, by=author))
    revision, report = j.validate(validation_report())
    j.told(
        lambda: proposal_validation_finish(revision=revision, report=report), "Ready for review", MAINTAINERS
    )
    events, notes, mails = j.move(
        lambda: proposal_review(
            proposal=proposal,
            reviewer=maintainer,
            decision="approve",
            rubric=dict.fromkeys(RUBRIC_KEYS, True),
        )
    )
    assert [e.status_label for e in events] == ["Approved", "Published"], [e.reason for e in events]
    assert [(n.recipient_id, n.event_id) for n in notes] == [(author.pk, e.pk) for e in events]
    assert [m.subject.rsplit(": ", 1)[1] for m in mails] == ["Approved", "Published"]
    assert f"Approved. {PORTAL}." in notes[0].message and f"Published. {CLOSED}." in notes[1].message
    j.shows("Published", CLOSED)
    history = text(
        j.as_author.get(f"/contribute/{proposal.pk}/").content.decode().split('id="history"', 1)[1]
    )
    for label in (
        "Draft",
        "Waiting for validation",
        "Validating",
        NEEDS_FIX,
        revising,
        "Approved",
        "Published",
    ):
        assert label in history


def test_email_links_are_absolute_on_the_default_site_address(
    maintainer, mailoutbox, django_capture_on_commit_callbacks
):
    from django.conf import settings

    assert settings.RCB_SITE_URL.startswith("http")
    proposal = proposal_submitted(UserFactory(email="author@example.org"))
    revision = proposal.revisions.get()
    proposal_validation_start(revision=revision)
    with django_capture_on_commit_callbacks(execute=True):
        proposal_validation_finish(revision=revision, report=validation_report())
    links = [line for mail in mailoutbox for line in mail.body.splitlines() if "/contribute/" in line]
    assert links and all(
        line == f"Open the proposal: {settings.RCB_SITE_URL}/contribute/{proposal.pk}/" for line in links
    )


def test_validation_outcome_of_several_unchecked_snippets_says_their_tests():
    second = replace(NOT_CHECKED, snippet="scale", message="snippet 'scale' is not checked by the test")
    report = validation_report(NOT_CHECKED, second).to_dict()

    outcome = validation_outcome(status="failed", report=report)

    assert outcome.label == "2 snippets not checked by their tests"


def test_a_count_agrees_with_its_words():
    from contributions.proposal_status import status_words

    assert status_words("needs_fix", 1)[0] == "Needs a fix: 1 snippet not checked by its test"
    assert status_words("needs_fix", 2)[0] == "Needs a fix: 2 snippets not checked by their test"
