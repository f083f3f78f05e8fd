"""The errors page starts on the release with test output (issue 34 item 6): the published results of a
paper hold verdicts only, whose failures would all be unclassified, and the page says so when it shows
such runs."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from contributions.services import release_set_default
from evaluation.models import EvaluationRun
from leaderboard.services import leaderboard_refresh_run
from tests.factories import make_benchmark, make_run
from tests.leaderboard.test_pages import assert_accessible, get

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_cache")]


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


@pytest.fixture
def releases():
    """Release "tested" with a run generated and tested by the portal, then release "imported" (the
    default, newer) holding only the paper's published verdicts."""
    tested, snippets = make_benchmark({"p1": (None, [1, 1])}, release="tested")
    leaderboard_refresh_run(
        run=make_run(
            snippets, {"p1": "F P"}, release=tested, model__name="Tested Model", categories={"p1": "syntax"}
        )
    )
    imported, snippets = make_benchmark({"p2": (None, [1, 1])}, release="imported")
    leaderboard_refresh_run(
        run=make_run(
            snippets,
            {"p2": "F F"},
            release=imported,
            source=EvaluationRun.Source.IMPORTED,
            model__name="Paper Model",
            categories={"p2": "unclassified"},
        )
    )
    release_set_default(release=imported)
    return tested, imported


def test_errors_page_starts_on_the_release_with_test_output(client, releases):
    html = get(client, reverse("leaderboard:errors"))

    assert re.search(r'<option value="tested" selected>', html)
    assert "Tested Model" in html and "Paper Model" not in html
    assert "Syntax" in _text(html) and "errors-without-output" not in html
    assert_accessible(html)


def test_errors_page_of_imported_runs_says_they_have_no_test_output_and_links_the_tested_release(
    client, releases
):
    html = get(client, reverse("leaderboard:errors") + "?release=imported")

    note = _text(
        re.search(r'<p class="note" role="status" id="errors-without-output">.*?</p>', html, re.S).group(0)
    )
    assert "These runs have no test output." in note
    assert "imported from the paper's published results" in note
    assert "“Unclassified (no test output)”" in note
    assert 'href="/errors/?release=tested"' in html
    assert_accessible(html)


def test_errors_page_stays_on_the_default_release_when_no_release_has_test_output(client):
    imported, snippets = make_benchmark({"p2": (None, [1])}, release="imported")
    leaderboard_refresh_run(
        run=make_run(snippets, {"p2": "F"}, release=imported, source=EvaluationRun.Source.IMPORTED)
    )

    html = get(client, reverse("leaderboard:errors"))

    assert "These runs have no test output." in _text(html)
    assert "has runs tested by the portal" not in html
