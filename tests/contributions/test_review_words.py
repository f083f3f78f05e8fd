"""The proposal page in words, not identifiers (issue 22 item 5): the registry entry's ``extra`` keys as rows
of their own (License, Commit), rubric items by their labels in a refusal and a review, a review that asked
for changes without the rubric, line comments in the thread linked to their line, and a styled 403 for a
contributor who tries to review."""

from __future__ import annotations

import pytest

from contributions.models import Proposal
from contributions.services import comment_add, proposal_review
from tests.factories import MaintainerFactory
from tests.factories.builders import proposal_validated

pytestmark = pytest.mark.django_db


def page(client, proposal: Proposal) -> str:
    return client.get(f"/contribute/{proposal.pk}/").content.decode()


def section(html: str, ident: str) -> str:
    start = html.index(f'id="{ident}"')
    return html[start : html.index("</section>", start)]


def test_license_and_commit_are_rows_of_their_own_never_a_python_dict(client):
    proposal = proposal_validated(
        meta={"extra": {"license": "Apache-2.0", "code_commit": "abc1234", "license_text": None}}
    )
    client.force_login(proposal.author)

    paper = section(page(client, proposal), "paper")

    assert "<dt>License</dt><dd>Apache License 2.0</dd>" in paper
    assert "<dt>Commit</dt><dd>abc1234</dd>" in paper
    assert "Extra" not in paper and "{" not in paper and "None" not in paper


def test_an_approval_with_rubric_items_unchecked_names_them_in_words(client):
    proposal = proposal_validated()
    client.force_login(MaintainerFactory())

    refused = client.post(f"/contribute/{proposal.pk}/review/", {"decision": "approve"})

    html = refused.content.decode()
    assert refused.status_code == 400
    assert "The license allows redistribution" in html.split('id="review-form"')[1][:2000]
    assert (
        "license_redistribution" not in html.split("<main")[1].split("</form>")[0].split('class="rubric"')[0]
    )


def test_a_review_that_requests_changes_does_not_show_every_rubric_item_as_a_cross(client):
    proposal = proposal_validated()
    proposal_review(
        proposal=proposal, reviewer=MaintainerFactory(), decision="request_changes", body="Rename."
    )
    client.force_login(proposal.author)

    reviews = section(page(client, proposal), "reviews")

    assert "✗" not in reviews
    assert "Rubric not filled in" in reviews


def test_line_comments_are_in_the_thread_linked_to_their_line(client):
    proposal = proposal_validated()
    maintainer = MaintainerFactory()
    comment_add(proposal=proposal, author=maintainer, body="General remark.")
    line = comment_add(
        proposal=proposal, author=maintainer, body="Why this epsilon?", file="rmsnorm.py", line=46
    )
    client.force_login(proposal.author)

    html = page(client, proposal)
    thread = section(html, "thread")

    assert thread.index("General remark.") < thread.index("Why this epsilon?")
    assert '<a href="#f-rmsnorm.py-L46"><code>rmsnorm.py:46</code></a>' in thread
    assert f'id="thread-comment-{line.pk}"' in thread
    assert html.count(f'id="comment-{line.pk}"') == 1  # under its line, once


def test_a_contributor_who_tries_to_review_gets_a_page_saying_what_to_do(client):
    proposal = proposal_validated()
    client.force_login(proposal.author)

    for response in (client.get("/review/"), client.post(f"/contribute/{proposal.pk}/review/", {})):
        html = response.content.decode()
        assert response.status_code == 403
        assert "<h1>You cannot open this page</h1>" in html and 'href="/contribute/"' in html
        assert '<nav class="nav" aria-label="Main">' in html
