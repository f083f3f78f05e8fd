"""Numbers the HTML pages read from a query or form (a model page's ``run``, a snippet's ``id``, a proposal's
``revision`` and ``line``, the notifications to mark read) are ids or nothing: 5,000 digits, a superscript
digit, a negative or a fraction shows the page's default instead of a 500 (the API's bounds:
tests/config/test_api_bounds.py)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse

from contributions.params import MAX_DIGITS, optional_id
from leaderboard.services import leaderboard_refresh_run
from tests.factories import LanguageModelFactory, make_benchmark, make_run
from tests.factories.builders import proposal_validated

pytestmark = pytest.mark.django_db

BAD = ["9" * 5000, "1" + "0" * MAX_DIGITS, "²", "١", "-1", "1.5", " 5", "abc", ""]


def test_only_short_ascii_digits_are_ids():
    assert (
        optional_id("0") == 0 and optional_id("007") == 7 and optional_id("9" * MAX_DIGITS) == int("9" * 18)
    )
    assert [optional_id(raw) for raw in [*BAD, None]] == [None] * (len(BAD) + 1)


@pytest.mark.parametrize("raw", BAD)
def test_the_model_and_snippet_pages_show_their_default_for_a_bad_number(client, raw):
    _release, snippets = make_benchmark({"old": (dt.date(2024, 1, 1), [2])}, release="r1")
    model = LanguageModelFactory(key="GPT", developer="OpenAI")
    leaderboard_refresh_run(run=make_run(snippets, {"old": "P"}, model=model, release=_release))
    snippet = snippets["old"][0]
    model_page = client.get(reverse("leaderboard:model", args=["GPT"]), {"run": raw})
    assert model_page.status_code == 200
    snippet_page = client.get(reverse("leaderboard:snippet", args=["old", snippet.name]), {"id": raw})
    assert snippet_page.status_code == 200


@pytest.mark.parametrize("raw", BAD)
def test_the_proposal_page_and_the_notifications_take_no_bad_number(client, raw):
    proposal = proposal_validated()
    client.force_login(proposal.author)
    shown = client.get(f"/contribute/{proposal.pk}/", {"revision": raw, "file": "rmsnorm.py", "line": raw})
    assert shown.status_code == 200
    marked = client.post(reverse("contributions:notifications_read"), {"id": raw})
    assert marked.status_code == 302
