"""The proposal page, the review queue and the notification list at the HTTP boundary: who may see what,
the validation report next to the code (file:line), comments anchored to a line, safe Markdown, the review
form's refusals (own proposal, unaccepted "not checked by the test" findings), notifications on every
transition, and the validation fragment that stops polling once the validation is final. Proposals move
through the real services; validation reports are built with the core's own report type."""

from __future__ import annotations

import re
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.utils import timezone
from pygments.formatters import HtmlFormatter

from contributions.markdown import render_markdown
from contributions.models import Notification, Proposal, Review
from contributions.services import (
    comment_add,
    proposal_review,
    proposal_submit,
    proposal_validation_finish,
    proposal_validation_progress,
    proposal_validation_start,
    revision_create,
)
from contributions.services.proposals import RUBRIC_KEYS
from researchcodebench.validation import Finding
from tests.factories import EXAMPLE_MANIFEST, MaintainerFactory, UserFactory, example_upload
from tests.factories.builders import (
    NOT_CHECKED,
    proposal_draft,
    proposal_submitted,
    proposal_validated,
    validation_report,
)

pytestmark = pytest.mark.django_db

State = Proposal.State
REPO = Path(__file__).resolve().parents[2]
RUBRIC_POST = {f"rubric_{key}": "on" for key in RUBRIC_KEYS}

XSS_PAYLOADS = [
    "<script>alert('xss')</script>",
    "<img src=x onerror=alert(1)>",
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    '<a href="javascript:alert(1)">x</a>',
    "<svg/onload=alert(1)>",
    "<iframe src=https://evil.example></iframe>",
    '![x](https://evil.example/x.png" onerror="alert(1))',
]
#: elements user text must never produce in a page
DANGEROUS_TAGS = frozenset({"script", "img", "svg", "iframe", "object", "embed", "style"})


class _Elements(HTMLParser):
    """Every element a browser would build from a page, with its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, attrs))


def dangerous(html: str) -> list[str]:
    """What in ``html`` would run script: dangerous elements, on* handlers, javascript:/data: URLs."""
    parser = _Elements()
    parser.feed(html)
    hits = []
    for tag, attrs in parser.found:
        if tag in DANGEROUS_TAGS:
            hits.append(f"<{tag}>")
        for name, value in attrs:
            if name.startswith("on"):
                hits.append(f"{tag} {name}=")
            if name in ("href", "src") and re.match(r"\s*(javascript|data|vbscript):", value or "", re.I):
                hits.append(f"{tag} {name}={value}")
    return hits


def page(client, proposal: Proposal, **params):
    return client.get(f"/contribute/{proposal.pk}/", params)


# ------------------------------------------------------------------------------------------- Markdown


@pytest.mark.parametrize("payload", XSS_PAYLOADS)
def test_markdown_renders_classic_xss_payloads_inert(payload):
    html = str(render_markdown(payload))
    assert dangerous(html) == [], html


def test_markdown_keeps_formatting_and_marks_links_nofollow():
    html = str(render_markdown("**bold** and [a link](https://example.org/x) and `code`"))
    assert "<strong>bold</strong>" in html
    assert '<a href="https://example.org/x" rel="nofollow noopener noreferrer">a link</a>' in html
    assert "<code>code</code>" in html


# --------------------------------------------------------------------------------------- review queue


def test_the_review_queue_sends_visitors_to_sign_in(client):
    response = client.get("/review/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_the_review_queue_is_forbidden_to_contributors(client):
    client.force_login(UserFactory())
    assert client.get("/review/").status_code == 403


def test_the_review_queue_lists_proposals_ready_for_review_oldest_first_with_waiting_time(client):
    newer = proposal_validated(meta={"title": "Newer paper"})
    older = proposal_validated(meta={"title": "Older paper"})
    Proposal.objects.filter(pk=older.pk).update(state_changed_at=timezone.now() - timedelta(days=3, hours=2))
    proposal_submitted(meta={"title": "Still validating"})
    client.force_login(MaintainerFactory())
    response = client.get("/review/")
    assert response.status_code == 200
    body = response.content.decode()
    assert body.index("Older paper") < body.index("Newer paper")
    assert "Still validating" not in body
    assert "3 d 2 h" in body
    assert f'href="/contribute/{newer.pk}/"' in body


def test_the_review_queue_filters_by_state_waiting_time_and_search(client):
    ready = proposal_validated(meta={"title": "Ready one"})
    waiting_long = proposal_validated(meta={"title": "Stale one"})
    Proposal.objects.filter(pk=waiting_long.pk).update(state_changed_at=timezone.now() - timedelta(days=10))
    pending = proposal_submitted(meta={"title": "Pending one"})
    client.force_login(MaintainerFactory())

    by_state = client.get("/review/", {"state": ["submitted"]}).content.decode()
    assert "Pending one" in by_state and "Ready one" not in by_state

    by_wait = client.get("/review/", {"waiting": "7"}).content.decode()
    assert "Stale one" in by_wait and "Ready one" not in by_wait

    by_search = client.get("/review/", {"q": ready.task_key}).content.decode()
    assert "Ready one" in by_search and "Stale one" not in by_search and pending.task_key not in by_search


def test_the_review_queue_answers_htmx_with_the_table_only_and_bad_filters_name_the_field(client):
    proposal_validated(meta={"title": "Ready one"})
    client.force_login(MaintainerFactory())
    fragment = client.get("/review/", {"q": "Ready"}, HTTP_HX_REQUEST="true").content.decode()
    assert fragment.lstrip().startswith('<section id="queue"') and "<html" not in fragment
    response = client.get("/review/", {"waiting": "-1", "state": ["nonsense"]})
    assert response.status_code == 400
    body = response.content.decode()
    assert "Ensure this value is greater than or equal to 0." in body
    assert "Select a valid choice. nonsense is not one of the available choices." in body


# -------------------------------------------------------------------------------------- proposal page


def test_the_proposal_page_is_for_its_author_and_maintainers_only(client):
    proposal = proposal_validated()
    assert page(client, proposal).status_code == 302  # visitors sign in first
    client.force_login(proposal.author)
    assert page(client, proposal).status_code == 200
    client.force_login(UserFactory())
    assert page(client, proposal).status_code == 404
    client.force_login(MaintainerFactory())
    assert page(client, proposal).status_code == 200


def test_a_draft_is_hidden_from_maintainers(client):
    proposal = proposal_draft()
    client.force_login(MaintainerFactory())
    assert page(client, proposal).status_code == 404


def test_the_page_shows_metadata_snippet_tree_code_lines_and_history(client):
    proposal = proposal_validated()
    client.force_login(proposal.author)
    body = page(client, proposal).content.decode()
    assert "Root Mean Square Layer Normalization" in body and "NeurIPS" in body
    # the snippet tree: nested snippets inside a collapsible <details>, each linked to its start line
    tree = body[body.index('class="snippet-tree"') :]
    assert '<li><a href="#f-rmsnorm.py-L27">root mean square</a>' in tree
    assert "<details open><summary>2 nested snippets</summary>" in tree
    assert '<a href="#f-rmsnorm.py-L29">partial rms over the first k features</a>' in tree
    # every line has its anchor, snippet lines are marked, and the line number prefills the comment form
    assert 'id="f-rmsnorm.py-L46" class="in-snippet"' in body
    assert "?revision=1&amp;file=rmsnorm.py&amp;line=46#comment-form" in body
    assert '<span class="k">def</span>' in body  # highlighted by Pygments
    # history: who, when, the status in the badge's words with whose turn, why
    history = body[body.index('id="history"') :]
    assert '<span class="badge tone-info">Validating</span>' in history
    assert '<span class="badge tone-ok">Ready for review</span>' in history
    assert "The maintainers&#x27; turn" in history and "Revision 1 passed every check." in history
    assert "→" not in history


def test_the_validation_report_lists_findings_by_check_with_file_line_next_to_the_code(client):
    proposal = proposal_validated(validation_report(NOT_CHECKED))
    client.force_login(MaintainerFactory())
    body = page(client, proposal).content.decode()
    validation = body[body.index('id="validation-status"') : body.index('id="code"')]
    assert "<h3>mutation" in validation
    assert 'href="?revision=1#f-rmsnorm.py-L45"><code>rmsnorm.py:45</code></a>' in validation
    # the same finding sits right under line 45 of the code
    row = body[body.index('id="f-rmsnorm.py-L45"') :]
    row = row[: row.index("</tr>", row.index('class="annotations"'))]
    assert "is not checked by the test" in row and "<code>rmsnorm.py:45</code>" in row


def test_each_snippet_shows_its_mutation_score(client):
    snippets = [
        {"name": "root mean square", "checked": True, "mutation_score": {"killed": 3, "total": 4}},
        {"name": "compute rms", "checked": False, "mutation_score": {"killed": 1, "total": 4}},
        {"name": "optional bias", "checked": True, "mutation_score": None},
    ]
    proposal = proposal_validated(validation_report(snippets=snippets))
    client.force_login(proposal.author)
    tree = page(client, proposal).content.decode()
    tree = tree[tree.index('class="snippet-tree"') :]
    first = tree[tree.index(">root mean square</a>") :]
    assert "checked by the test" in first[: first.index("</li>")] and "mutation score 3/4" in first[:400]
    second = tree[tree.index(">compute rms</a>") :]
    assert "not checked by the test" in second[:400] and "mutation score 1/4" in second[:400]
    third = tree[tree.index(">optional bias</a>") :]
    assert "mutation score" not in third[: third.index("</li>")]


def test_the_streamed_mutation_stage_names_the_snippets_mutation_score(client):
    proposal = proposal_submitted()
    revision = proposal.revisions.get()
    client.force_login(proposal.author)
    proposal_validation_start(revision=revision)
    snippet = {"name": "shift values", "checked": True, "mutation_score": {"killed": 4, "total": 4}}
    proposal_validation_progress(
        revision=revision, stage="mutation", data={"snippet": snippet, "findings": []}
    )
    body = client.get(f"/contribute/{proposal.pk}/").content.decode()
    assert "snippet &#x27;shift values&#x27;: checked by the test (mutation score 4/4)" in body


def test_annotation_errors_are_shown_at_their_line_before_validation(client):
    code = (
        example_upload()
        .files["rmsnorm.py"]
        .replace(
            b'        # </paper2code name="compute rms">\n', b'        # </paper2code name="compute rmz">\n'
        )
    )
    proposal = proposal_draft()
    revision_create(
        proposal=proposal,
        by=proposal.author,
        intake_result=example_upload(**{"rmsnorm.py": code}),
        manifest=EXAMPLE_MANIFEST,
    )
    client.force_login(proposal.author)
    body = page(client, proposal).content.decode()
    problems = body[body.index("<h3>Annotation problems</h3>") :]
    assert '<a class="loc" href="#f-rmsnorm.py-L47"><code>rmsnorm.py:47</code></a>' in problems
    assert "end tag for &quot;compute rmz&quot; has no matching open tag" in problems
    row = body[body.index('id="f-rmsnorm.py-L47"') : body.index('id="f-rmsnorm.py-L48"')]
    assert 'class="annotations"' in row and "has no matching open tag" in row


def test_a_resubmission_shows_its_diff_against_the_previous_revision(client):
    proposal = proposal_validated(
        validation_report(Finding(check="flaky", severity="error", message="reference passed 3 of 5"))
    )
    assert proposal.state == State.CHANGES_REQUESTED
    code = example_upload().files["rmsnorm.py"].replace(b"self.eps = eps", b"self.eps = float(eps)")
    revision_create(
        proposal=proposal,
        by=proposal.author,
        intake_result=example_upload(**{"rmsnorm.py": code}),
        manifest=EXAMPLE_MANIFEST,
    )
    proposal_submit(proposal=proposal, by=proposal.author)
    client.force_login(proposal.author)
    body = page(client, proposal).content.decode()
    assert "Changes since revision 1: 0 added, 0 removed, 1 changed" in body
    assert "-        self.eps = eps\n+        self.eps = float(eps)" in body


def test_the_author_sees_withdraw_and_new_revision_when_changes_are_requested(client):
    proposal = proposal_validated(
        validation_report(Finding(check="flaky", severity="error", message="reference passed 3 of 5"))
    )
    client.force_login(proposal.author)
    body = page(client, proposal).content.decode()
    assert f'href="/contribute/{proposal.pk}/step/2/">Upload a new revision</a>' in body
    response = client.post(f"/contribute/{proposal.pk}/withdraw/", {"reason": "found a bug"})
    assert response.status_code == 302
    proposal.refresh_from_db()
    assert proposal.state == State.WITHDRAWN
    assert proposal.events.last().reason == "found a bug"


def test_only_the_author_withdraws(client):
    proposal = proposal_validated()
    client.force_login(MaintainerFactory())
    client.post(f"/contribute/{proposal.pk}/withdraw/", {"reason": "no"})
    proposal.refresh_from_db()
    assert proposal.state == State.READY_FOR_REVIEW


# ------------------------------------------------------------------------------------------- comments


def test_a_comment_anchored_to_a_line_shows_under_that_line(client):
    proposal = proposal_validated()
    maintainer = MaintainerFactory()
    client.force_login(maintainer)
    response = client.post(
        f"/contribute/{proposal.pk}/comment/",
        {"body": "Why *this* epsilon?", "file": "rmsnorm.py", "line": "46"},
    )
    assert response.status_code == 302
    comment = proposal.comments.get()
    assert (comment.file, comment.line, comment.revision.number) == ("rmsnorm.py", 46, 1)
    assert response["Location"].endswith(f"#comment-{comment.pk}")
    body = page(client, proposal).content.decode()
    row = body[body.index('id="f-rmsnorm.py-L46"') : body.index('id="f-rmsnorm.py-L47"')]
    assert f'id="comment-{comment.pk}"' in row and "Why <em>this</em> epsilon?" in row


def test_a_general_comment_goes_to_the_thread_and_the_author_answers(client):
    proposal = proposal_validated()
    comment_add(proposal=proposal, author=MaintainerFactory(), body="Looks close.")
    client.force_login(proposal.author)
    assert client.post(f"/contribute/{proposal.pk}/comment/", {"body": "Thanks!"}).status_code == 302
    body = page(client, proposal).content.decode()
    thread = body[body.index('id="thread"') :]
    assert thread.index("Looks close.") < thread.index("Thanks!")


def test_a_comment_on_a_line_the_file_lacks_is_refused_naming_the_line(client):
    proposal = proposal_validated()
    client.force_login(proposal.author)
    response = client.post(
        f"/contribute/{proposal.pk}/comment/", {"body": "x", "file": "rmsnorm.py", "line": "999"}
    )
    assert response.status_code == 400
    assert "The file rmsnorm.py has lines 1 to" in response.content.decode()
    assert not proposal.comments.exists()


def test_another_contributor_cannot_comment(client):
    proposal = proposal_validated()
    client.force_login(UserFactory())
    assert client.post(f"/contribute/{proposal.pk}/comment/", {"body": "spam"}).status_code == 404
    assert not proposal.comments.exists()


@pytest.mark.parametrize("payload", XSS_PAYLOADS)
def test_xss_in_comments_review_bodies_and_titles_is_escaped(client, payload):
    proposal = proposal_validated(meta={"title": payload})
    maintainer = MaintainerFactory()
    comment_add(proposal=proposal, author=maintainer, body=payload)
    comment_add(proposal=proposal, author=maintainer, body=payload, file="rmsnorm.py", line=3)
    proposal_review(proposal=proposal, reviewer=maintainer, decision="comment", body=payload)
    client.force_login(maintainer)
    for response in (page(client, proposal), client.get("/review/"), client.get("/notifications/")):
        assert response.status_code == 200
        main = response.content.decode().split('<main id="main"', 1)[1]
        assert dangerous(main) == []


def test_a_hostile_file_name_is_escaped_in_the_code_viewer(client):
    name = "x<script>alert(1)</script>.py"
    proposal = proposal_draft()
    revision_create(
        proposal=proposal,
        by=proposal.author,
        intake_result=example_upload(**{name: b"print('hi')\n"}),
        manifest=EXAMPLE_MANIFEST,
    )
    client.force_login(proposal.author)
    body = page(client, proposal).content.decode()
    assert "x&lt;script&gt;alert(1)&lt;/script&gt;.py" in body
    assert "<script>alert(1)" not in body


# --------------------------------------------------------------------------------------------- review


def test_a_maintainer_cannot_approve_their_own_proposal(client):
    maintainer = MaintainerFactory()
    proposal = proposal_validated(author=maintainer)
    client.force_login(maintainer)
    assert 'id="review-form"' not in page(client, proposal).content.decode()
    response = client.post(f"/contribute/{proposal.pk}/review/", {"decision": "approve", **RUBRIC_POST})
    assert response.status_code == 400
    assert "nobody approves their own proposal" in response.content.decode()
    proposal.refresh_from_db()
    assert proposal.state == State.READY_FOR_REVIEW and not Review.objects.exists()


def test_contributors_cannot_review(client):
    proposal = proposal_validated()
    client.force_login(proposal.author)
    response = client.post(f"/contribute/{proposal.pk}/review/", {"decision": "approve", **RUBRIC_POST})
    assert response.status_code == 403
    assert not Review.objects.exists()


def test_approval_with_a_snippet_not_checked_is_refused_until_a_reason_is_written(client):
    proposal = proposal_validated(validation_report(NOT_CHECKED))
    assert proposal.state == State.READY_FOR_REVIEW
    client.force_login(MaintainerFactory())
    form = page(client, proposal).content.decode()
    assert "Why may “compute rms” stay unchecked" in form
    assert "It is checked through an enclosing or a later snippet" in form
    assert "at least 40 characters; shown with the snippet on every public page" in form

    refused = client.post(f"/contribute/{proposal.pk}/review/", {"decision": "approve", **RUBRIC_POST})
    assert refused.status_code == 400
    assert (
        "Accept each snippet not checked by the test with a written reason: compute rms"
        in refused.content.decode()
    )
    proposal.refresh_from_db()
    assert proposal.state == State.READY_FOR_REVIEW

    short = client.post(
        f"/contribute/{proposal.pk}/review/",
        {"decision": "approve", "override_reason_0": "covered", "override_0": "ok", **RUBRIC_POST},
    )
    assert short.status_code == 400 and "at least 40 characters" in short.content.decode()
    explanation = "forward() calls it, and every test checks forward's output against the reference"
    unchecked = client.post(
        f"/contribute/{proposal.pk}/review/",
        {"decision": "approve", "override_reason_0": "covered", "override_0": explanation},
    )
    assert unchecked.status_code == 400
    assert "Check every item of the rubric before approving" in unchecked.content.decode()
    assert "rubric:" not in unchecked.content.decode()

    accepted = client.post(
        f"/contribute/{proposal.pk}/review/",
        {"decision": "approve", "override_reason_0": "covered", "override_0": explanation, **RUBRIC_POST},
    )
    assert accepted.status_code == 302
    proposal.refresh_from_db()
    assert proposal.state in (State.APPROVED, State.PUBLISHED)
    review = proposal.reviews.get()
    assert review.snippet_overrides == {"compute rms": {"reason": "covered", "explanation": explanation}}
    assert all(review.rubric.values())


def test_request_changes_needs_a_reason_then_moves_the_proposal_and_notifies_the_author(client):
    proposal = proposal_validated()
    client.force_login(MaintainerFactory())
    refused = client.post(f"/contribute/{proposal.pk}/review/", {"decision": "request_changes", "body": ""})
    assert refused.status_code == 400 and "Give a reason" in refused.content.decode()

    response = client.post(
        f"/contribute/{proposal.pk}/review/", {"decision": "request_changes", "body": "Rename `compute rms`."}
    )
    assert response.status_code == 302
    proposal.refresh_from_db()
    assert proposal.state == State.CHANGES_REQUESTED

    client.force_login(proposal.author)
    notifications = client.get("/notifications/").content.decode()
    assert "Changes requested. The author&#x27;s turn. Next step: Read the review" in notifications
    assert "Why: Rename `compute rms`." in notifications
    assert f'href="/contribute/{proposal.pk}/"' in notifications
    assert " unread</span>" in client.get("/papers/").content.decode().split("Notifications", 1)[1][:100]
    body = page(client, proposal).content.decode()
    assert "<code>compute rms</code>" in body  # the review body rendered as Markdown


def test_a_rejection_records_the_reason_in_the_history(client):
    proposal = proposal_validated()
    client.force_login(MaintainerFactory())
    client.post(f"/contribute/{proposal.pk}/review/", {"decision": "reject", "body": "Not a research paper."})
    proposal.refresh_from_db()
    assert proposal.state == State.REJECTED
    history = page(client, proposal).content.decode().split('id="history"', 1)[1]
    assert '<span class="badge tone-bad">Rejected</span>' in history and "Not a research paper." in history


# -------------------------------------------------------------------------------------- notifications


def test_notifications_list_unread_first_and_mark_read_only_ones_own(client):
    proposal = proposal_validated()
    author = proposal.author
    comment_add(proposal=proposal, author=MaintainerFactory(), body="Why this epsilon?")
    rows = list(Notification.objects.filter(recipient=author).order_by("pk"))
    assert len(rows) >= 2
    Notification.objects.filter(pk=rows[-1].pk).update(read_at=timezone.now())
    client.force_login(author)
    body = client.get("/notifications/").content.decode()
    assert body.index(f'id="notification-{rows[0].pk}"') < body.index(f'id="notification-{rows[-1].pk}"')

    stranger_row = Notification.objects.create(recipient=UserFactory(), proposal=proposal, message="theirs")
    client.post("/notifications/read/", {"id": [str(rows[0].pk), str(stranger_row.pk)]})
    assert Notification.objects.get(pk=rows[0].pk).read_at is not None
    assert Notification.objects.get(pk=stranger_row.pk).read_at is None
    client.post("/notifications/read/", {"id": "not-a-number"})
    assert Notification.objects.filter(recipient=author, read_at__isnull=True).count() == len(rows) - 2
    client.post("/notifications/read/")
    assert not Notification.objects.filter(recipient=author, read_at__isnull=True).exists()


def test_the_nav_shows_the_unread_count(client):
    proposal = proposal_validated()
    unread = Notification.objects.filter(recipient=proposal.author, read_at__isnull=True).count()
    client.force_login(proposal.author)
    body = client.get("/papers/").content.decode()
    # The count's word is for screen readers (an aria-label on a <span> is not announced).
    assert f'<span class="badge count">{unread}<span class="visually-hidden"> unread</span></span>' in body


def test_notifications_need_sign_in(client):
    assert client.get("/notifications/").status_code == 302


# ----------------------------------------------------------------------------------- validation stream


def test_the_validation_fragment_polls_while_running_and_stops_when_final(client):
    proposal = proposal_submitted()
    revision = proposal.revisions.get()
    client.force_login(proposal.author)
    htmx = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "validation-status"}

    pending = client.get(f"/contribute/{proposal.pk}/", **htmx).content.decode()
    assert pending.lstrip().startswith('<section id="validation-status"')
    assert 'hx-trigger="every 2s"' in pending

    proposal_validation_start(revision=revision)
    proposal_validation_progress(revision=revision, stage="reference", data={"runs": 5})
    running = client.get(f"/contribute/{proposal.pk}/", **htmx).content.decode()
    assert 'hx-trigger="every 2s"' in running and "<strong>reference</strong>" in running

    proposal_validation_finish(revision=revision, report=validation_report())
    final = client.get(f"/contribute/{proposal.pk}/", **htmx).content.decode()
    assert "hx-trigger" not in final and "every check passed" in final


def test_streamed_stages_are_summarised_in_words_not_raw_records(client):
    proposal = proposal_submitted()
    revision = proposal.revisions.get()
    client.force_login(proposal.author)
    proposal_validation_start(revision=revision)
    runs = [{"outcome": "passed", "passed": True, "duration_s": 0.03}] * 4 + [
        {"outcome": "failed", "passed": False}
    ]
    proposal_validation_progress(revision=revision, stage="reference", data={"runs": runs, "timeout_s": 10.0})
    snippet = {"name": "shift values", "checked": False}
    proposal_validation_progress(
        revision=revision, stage="mutation", data={"snippet": snippet, "findings": [{}]}
    )
    page = client.get(f"/contribute/{proposal.pk}/").content.decode()
    assert "4 of 5 reference runs passed; timeout 10.0 s" in page
    assert "snippet &#x27;shift values&#x27;: NOT checked by the test; 1 finding" in page
    assert "&#x27;outcome&#x27;" not in page and "duration_s" not in page


def test_the_code_stylesheet_matches_the_installed_pygments():
    css = (REPO / "static" / "css" / "code.css").read_text()
    assert HtmlFormatter(style="default").get_style_defs(".hl") in css
