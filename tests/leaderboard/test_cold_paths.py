"""Issue 21, item 3: the shortcuts that make cold pages cheap give exactly what they replace.

- ``links.snippet_url`` builds thousands of links per page without resolving the route each time: the
  same string as ``reverse`` for every kind of snippet name, and ``reverse``'s refusal where the route
  does not take the arguments.
- ``selectors.common.paper_sums`` parses every run's per-paper lists in one go: the same sums as the
  rows themselves.
- ``serializers.rows_data`` skips DRF's per-field machinery for the big tables: the same JSON as the
  serializer, nulls and dates included.
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import NoReverseMatch, reverse
from django.utils.http import urlencode
from rest_framework.renderers import JSONRenderer

from leaderboard import serializers as s
from leaderboard.links import snippet_url
from leaderboard.models import RunPaperScore
from leaderboard.selectors.analyses import paper_scores_table, snippet_stats_table
from leaderboard.selectors.common import PaperSums, paper_sums
from leaderboard.services import leaderboard_refresh_run
from tests.factories import make_benchmark, make_run

NAMES = [
    "plain",
    "with spaces",
    "a/b/c",
    "naïve ünïcode é/ü",
    "100% sure",
    "q?x=1&y=2",
    "#fragment",
    "a,b;c=d",
    "tab\there",
    "plus+ and 'quotes' (parens)",
    "~tilde@at:colon",
    "[brackets] {braces}",
    "emoji 🎉",
    "back\\slash",
    "%2F already quoted",
]


@pytest.mark.parametrize("paper_key", ["paper-1", "p%", "pä", "p:q", "p~1"])
def test_snippet_urls_are_what_reverse_gives(paper_key):
    for name in NAMES:
        expected = reverse("leaderboard:snippet", args=[paper_key, name])
        assert snippet_url(paper_key, name) == expected
        assert snippet_url(paper_key, name, 7) == f"{expected}?{urlencode({'id': 7})}"


@pytest.mark.parametrize(("paper_key", "name"), [("a/b", "x"), ("", "x"), ("p", ""), ("p", "line\nbreak")])
def test_a_snippet_url_the_route_does_not_take_is_refused_like_reverse(paper_key, name):
    with pytest.raises(NoReverseMatch):
        reverse("leaderboard:snippet", args=[paper_key, name])
    with pytest.raises(NoReverseMatch):
        snippet_url(paper_key, name)


@pytest.fixture
def board(db):
    """Two runs on two papers, one undated, with passes, failures and untested indices."""
    release, snippets = make_benchmark({"p1": (dt.date(2024, 1, 1), [2, 3, 4]), "p2": (None, [4, 1])})
    for verdicts in ({"p1": "P F F", "p2": "F -"}, {"p1": "F - P", "p2": "P P"}):
        leaderboard_refresh_run(run=make_run(snippets, verdicts, release=release))
    return release


def test_paper_sums_are_the_stored_rows(board):
    rows = RunPaperScore.objects.order_by()
    sums = paper_sums(rows.values_list("run_id", flat=True).distinct())
    expected = sorted(PaperSums(*r) for r in rows.values_list(*PaperSums._fields))
    assert sorted(p for per_run in sums.values() for p in per_run) == expected
    assert all(p.run_id == run_id for run_id, per_run in sums.items() for p in per_run)
    assert paper_sums([]) == {}


def test_table_rows_render_as_the_serializer_renders_them(board):
    for serializer, rows in (
        (s.PaperTableRowSerializer, paper_scores_table()),
        (s.SnippetStatRowSerializer, snippet_stats_table()),
    ):
        assert rows
        render = JSONRenderer().render
        assert render(s.rows_data(serializer, rows)) == render(serializer(rows, many=True).data)
