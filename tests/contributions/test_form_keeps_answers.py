"""A form that keeps what was typed (issue 22 item 4), at the HTTP boundary: the new-contribution form names
itself (``?form=``) so that Back, a reload or a second "Save and continue" on it opens the draft it created;
a history restore of any step gets the whole page from the saved draft; a task key the author already uses
links to the author's own draft; drafts are listed on /contribute/."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from contributions.models import Proposal
from tests.contributions.test_contribute_form import meta_answers, step
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

NEW = "/contribute/new/"


@pytest.fixture
def author(client):
    user = UserFactory()
    client.force_login(user)
    return user


def new_form_action(client) -> str:
    """The address the new-contribution form posts to (and names itself by)."""
    html = client.get(NEW).content.decode()
    match = re.search(r'<form method="post" action="([^"]+)"[^>]*data-replace-url="([^"]+)"', html)
    assert match, "the new form names itself"
    assert match.group(1) == match.group(2).replace("&amp;", "&")
    return match.group(1).replace("&amp;", "&")


def test_back_to_the_new_form_after_saving_opens_the_draft_with_its_answers(client, author):
    action = new_form_action(client)
    assert action.startswith(f"{NEW}?form=")
    assert client.post(action, meta_answers("rmsnorm")).status_code == 302
    proposal = Proposal.objects.get(author=author)
    back = client.get(action)
    assert back.status_code == 302 and back["Location"] == step(proposal, 1)
    page = client.get(back["Location"]).content.decode()
    assert 'value="rmsnorm-contrib"' in page and "Root Mean Square Layer Normalization" in page


def test_saving_the_new_form_again_updates_its_draft_instead_of_refusing_the_key(client, author):
    action = new_form_action(client)
    client.post(action, meta_answers("rmsnorm"))
    again = client.post(action, meta_answers("rmsnorm", venue="NeurIPS2019"))
    assert again.status_code == 302, again.content.decode()[:2000]
    proposal = Proposal.objects.get(author=author)
    assert again["Location"] == step(proposal, 2)
    assert proposal.meta["venue"] == "NeurIPS2019"


def test_a_history_restore_of_a_step_gets_the_whole_page(client, author):
    client.post(new_form_action(client), meta_answers("rmsnorm"))
    proposal = Proposal.objects.get(author=author)
    restore = {"HTTP_HX_REQUEST": "true", "HTTP_HX_HISTORY_RESTORE_REQUEST": "true"}
    html = client.get(step(proposal, 1), **restore).content.decode()
    assert "<html" in html and 'value="rmsnorm-contrib"' in html


def test_the_contribution_pages_keep_no_stale_copy_for_back(client, author):
    html = client.get(NEW).content.decode()
    assert 'hx-history="false"' in html
    assert '<script src="/static/js/contribute.js" defer></script>' in html


def test_a_key_the_author_already_uses_links_to_the_authors_own_draft(client, author):
    client.post(new_form_action(client), meta_answers("rmsnorm"))
    proposal = Proposal.objects.get(author=author)
    fresh = client.post(new_form_action(client), meta_answers("rmsnorm"))
    assert fresh.status_code == 400
    html = fresh.content.decode()
    assert "already uses" in html
    assert f'<a href="{step(proposal, 2)}">continue your draft' in html


def test_another_authors_key_links_to_nothing(client, author):
    other = UserFactory()
    client.force_login(other)
    client.post(new_form_action(client), meta_answers("rmsnorm"))
    client.force_login(author)
    html = client.post(new_form_action(client), meta_answers("rmsnorm")).content.decode()
    assert "already uses" in html and "continue your draft" not in html


def test_drafts_are_listed_on_the_contribute_page(client, author):
    client.post(new_form_action(client), meta_answers("rmsnorm"))
    proposal = Proposal.objects.get(author=author)
    html = client.get(reverse("contributions:contribute")).content.decode()
    assert "rmsnorm-contrib" in html and "Draft" in html
    assert f'href="{step(proposal, 2)}">Continue the draft' in html


def test_a_malformed_form_token_is_ignored(client, author):
    response = client.get(NEW, {"form": "<script>"})
    assert response.status_code == 200 and "<script>" not in response.content.decode().split("<main", 1)[1]
