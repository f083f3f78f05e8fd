"""Snippet statistics (issue 22 item 8): per snippet, the solve rate across the board's models, its line
weight, its discrimination (Pearson's r between solving it and the model's overall Scaled Pass@1) and
whether it is never or always solved; sortable on the paper page and in the maintainers' curation view."""

from __future__ import annotations

import re
import statistics

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from leaderboard.selectors.board import leaderboard_rows
from leaderboard.services import leaderboard_refresh_run
from leaderboard.snippet_statistics import RunVerdicts, snippet_statistics
from tests.factories import LanguageModelFactory, MaintainerFactory, UserFactory, make_benchmark, make_run
from tests.leaderboard.test_pages import assert_accessible

pytestmark = pytest.mark.django_db

#: model key -> verdicts on alpha's five snippets (lines 3, 2, 5, 1, 2) and beta's two (lines 4, 1)
VERDICTS = {
    "m1": {"alpha": "P P P P F", "beta": "P P"},
    "m2": {"alpha": "P P F P F", "beta": "F P"},
    "m3": {"alpha": "P F F P F", "beta": "F F"},
    "m4": {"alpha": "F F F P F", "beta": "F F"},
}


@pytest.fixture
def board():
    rel, snippets = make_benchmark({"alpha": (None, [3, 2, 5, 1, 2]), "beta": (None, [4, 1])}, release="r1")
    for key, verdicts in VERDICTS.items():
        model = LanguageModelFactory(key=key, name=f"Model {key.upper()}")
        leaderboard_refresh_run(run=make_run(snippets, verdicts, release=rel, model=model))
    return rel, snippets


def overall() -> dict[str, float]:
    return {r.model.key: r.scaled_pass_at_1 for r in leaderboard_rows()}


def stat_rows(html: str, table: str) -> list[dict[str, str]]:
    """The rows of a table of snippet statistics: name, solve rate, discrimination and status cells."""
    body = re.search(rf'<table class="table stat-table" id="{table}">.*?</table>', html, flags=re.S).group(0)
    out = []
    for row in re.findall(r'<tr data-snippet="([^"]*)">(.*?)</tr>', body, flags=re.S):
        cells = {
            c: re.sub(r"<[^>]+>", "", v).strip()
            for c, v in re.findall(r'class="[^"]*c-(\w+)">(.*?)</td>', row[1], flags=re.S)
        }
        out.append({"name": row[0], **cells})
    return out


def test_statistics_are_the_solve_share_and_the_point_biserial_correlation_with_the_overall_score():
    runs = [
        RunVerdicts(1, 90.0, {10: "P", 11: "P", 12: "F"}),
        RunVerdicts(2, 60.0, {10: "P", 11: "F", 12: "F"}),
        RunVerdicts(3, 30.0, {10: "F", 11: "P", 12: "F", 13: "P"}),
        RunVerdicts(4, 10.0, {10: "F", 11: "-", 12: "F", 13: "PF"}),
    ]
    stats = snippet_statistics([(10, 4, 20), (11, 2, 20), (12, 1, 20), (13, 3, 20), (14, 5, 20)], runs)
    assert stats[10].solve_rate == 50.0 and stats[10].models == 4 and stats[10].solved == 2
    assert stats[10].discrimination == pytest.approx(statistics.correlation([1, 1, 0, 0], [90, 60, 30, 10]))
    assert stats[10].weight == 20.0 and stats[10].status == "mixed"
    # An untested index does not count; three models is the least a correlation is shown for.
    assert stats[11].models == 3 and stats[11].discrimination == pytest.approx(
        statistics.correlation([1, 0, 1], [90, 60, 30])
    )
    assert stats[12].status == "never" and stats[12].solve_rate == 0.0
    assert stats[12].discrimination is None and stats[12].discrimination_reason == "no model solved it"
    # Several completions: the run's share of passed results.
    assert stats[13].solve_rate == 75.0 and stats[13].discrimination is None
    assert stats[13].discrimination_reason == "fewer than 3 models tested it"
    assert stats[14].status == "untested" and stats[14].solve_rate is None and stats[14].models == 0


def test_paper_page_shows_each_snippets_statistics_over_the_boards_models(client, board):
    html = client.get(reverse("leaderboard:paper", args=["alpha"])).content.decode()
    assert_accessible(html)
    rows = stat_rows(html, "snippet-stats")
    assert [r["name"] for r in rows] == ["s0", "s1", "s2", "s3", "s4"]  # document order by default
    scores = overall()
    expected = statistics.correlation([1, 1, 1, 0], [scores[k] for k in ("m1", "m2", "m3", "m4")])
    assert rows[0]["solve"] == "75.0%" and rows[0]["disc"] == f"{expected:.2f}"
    assert rows[3]["status"] == "always solved" and rows[3]["disc"] == "none: every model solved it"
    assert rows[4]["status"] == "never solved" and rows[4]["disc"] == "none: no model solved it"
    assert '3 <span class="muted">(23.1%)</span>' in html  # s0: 3 of alpha's 13 lines


def test_paper_page_sorts_its_snippet_statistics_by_a_query_parameter_with_header_links(client, board):
    url = reverse("leaderboard:paper", args=["alpha"])
    html = client.get(url, {"snippet_sort": "-solve_rate", "paper": "any"}).content.decode()
    names = [r["name"] for r in stat_rows(html, "snippet-stats")]
    assert names == ["s3", "s0", "s1", "s2", "s4"]
    assert 'aria-sort="descending"' in html
    links = re.findall(r'<a class="sort" href="([^"#]+)#snippet-stats" hx-get="\1"', html)
    # The filters stay; the current column toggles its direction.
    assert "?paper=any&amp;snippet_sort=solve_rate" in links
    assert "?paper=any&amp;snippet_sort=-discrimination" in links
    html = client.get(url, {"snippet_sort": "-discrimination"}).content.decode()
    names = [r["name"] for r in stat_rows(html, "snippet-stats")]
    assert names[-2:] == ["s3", "s4"]  # no discrimination: last, in document order
    # A sort survives a filter change: the filters' form carries it.
    assert '<input type="hidden" name="snippet_sort" value="-discrimination" form="lb-filters">' in html


def test_paper_pages_statistics_move_with_a_new_run_on_the_board(client, board):
    rel, snippets = board
    url = reverse("leaderboard:paper", args=["alpha"])
    before = stat_rows(client.get(url).content.decode(), "snippet-stats")
    assert before[4]["status"] == "never solved"
    model = LanguageModelFactory(key="m5", name="Model M5")
    leaderboard_refresh_run(
        run=make_run(snippets, {"alpha": "P P P P P", "beta": "P P"}, release=rel, model=model)
    )
    after = stat_rows(client.get(url).content.decode(), "snippet-stats")
    assert after[4]["status"] == "sometimes solved" and after[4]["solve"] == "20.0%"


def test_curation_view_is_for_maintainers_only(client, board):
    url = reverse("leaderboard:snippet_curation")
    assert client.get(url).status_code == 302
    client.force_login(UserFactory())
    assert client.get(url).status_code == 403
    client.force_login(MaintainerFactory())
    assert client.get(url).status_code == 200


def test_curation_view_lists_every_snippet_across_papers_sortable_and_filterable(client, board):
    client.force_login(MaintainerFactory())
    url = reverse("leaderboard:snippet_curation")
    html = client.get(url).content.decode()
    assert_accessible(html)
    rows = stat_rows(html, "curation-table")
    assert [r["name"] for r in rows] == ["s0", "s1", "s2", "s3", "s4", "s0", "s1"]
    assert "Never solved: <strong>1</strong>" in html and "Always solved: <strong>1</strong>" in html
    assert 'href="/papers/beta/snippets/s1/?id=' in html  # each row links to its snippet page
    never = stat_rows(client.get(url, {"status": "never"}).content.decode(), "curation-table")
    assert [(r["name"], r["status"]) for r in never] == [("s4", "never solved")]
    html = client.get(url, {"sort": "-solve_rate", "paper": "beta"}).content.decode()
    beta = stat_rows(html, "curation-table")
    assert [(r["name"], r["solve"]) for r in beta] == [("s1", "50.0%"), ("s0", "25.0%")]
    assert "?paper=beta&amp;sort=solve_rate" in html  # the header keeps the filter, toggles the direction


def test_curation_and_paper_page_show_the_same_figures(client, board):
    paper = stat_rows(
        client.get(reverse("leaderboard:paper", args=["alpha"])).content.decode(), "snippet-stats"
    )
    client.force_login(MaintainerFactory())
    html = client.get(reverse("leaderboard:snippet_curation"), {"paper": "alpha"}).content.decode()
    assert stat_rows(html, "curation-table") == paper


def test_curation_views_queries_do_not_grow_with_the_number_of_models(client, board):
    rel, snippets = board
    client.force_login(MaintainerFactory())
    url = reverse("leaderboard:snippet_curation")

    def cold() -> int:
        cache.clear()
        with CaptureQueriesContext(connection) as ctx:
            assert client.get(url, {"sort": "-discrimination"}).status_code == 200
        return len(ctx.captured_queries)

    small = cold()
    for i in range(6):
        model = LanguageModelFactory(key=f"extra{i}")
        leaderboard_refresh_run(
            run=make_run(snippets, {"alpha": "P F P F P", "beta": "F P"}, release=rel, model=model)
        )
    assert cold() == small
