"""The board (``leaderboard/selectors/board.py``) and its ranking rule (issue 12, item 1): runs are ranked only against runs of the same release, template
and paper setting; runs below full coverage are listed apart, never ranked; the global contamination rule
is the release's whatever the other filters; ranks come with the range the bootstrap intervals allow and
the neighbours they are tied with."""

from __future__ import annotations

import datetime as dt

import pytest

from contributions.models import Release
from leaderboard.selectors.board import ANY_RELEASE, LeaderboardFilters, leaderboard_rows
from leaderboard.services import leaderboard_refresh_run
from tests.factories import LanguageModelFactory, make_benchmark, make_run
from tests.leaderboard.test_pages import Page, get

pytestmark = pytest.mark.django_db

PAPERS = {"a": (dt.date(2024, 3, 1), [3, 2, 5, 4]), "b": (dt.date(2025, 2, 1), [6, 1, 2])}


def scored(run):
    leaderboard_refresh_run(run=run)
    return run


@pytest.fixture
def mixed_board():
    """Release r1: two complete runs with the paper, one without the paper of the same model, and a run
    that covers one snippet of seven and passes it (100.00 on what it covers)."""
    rel, snippets = make_benchmark(PAPERS, release="r1")
    strong = LanguageModelFactory(key="STRONG", name="Strong")
    weak = LanguageModelFactory(key="WEAK", name="Weak")
    scored(make_run(snippets, {"a": "P P F P", "b": "P F P"}, model=strong, release=rel))
    scored(make_run(snippets, {"a": "F P F F", "b": "F F P"}, model=weak, release=rel))
    scored(make_run(snippets, {"a": "F F F P", "b": "F F F"}, model=strong, release=rel, with_paper=False))
    scored(
        make_run(
            snippets, {"a": "P - - -", "b": "- - -"}, model__key="PARTIAL", model__name="Partial", release=rel
        )
    )
    return rel, snippets


def api_rows(client, query: str) -> list[dict]:
    response = client.get(f"/api/v1/leaderboard/{query}")
    assert response.status_code == 200, response.content
    return response.json()["results"]


def test_paper_both_ranks_each_setting_apart_and_never_ranks_a_partial_run_first(client, mixed_board):
    rows = api_rows(client, "?paper=any")
    shown = [(r["model"]["key"], r["with_paper"], r["rank"], r["incomplete"]) for r in rows]
    # With the paper first: its complete runs ranked, then the partial run, unranked; then without.
    assert shown == [
        ("STRONG", True, 1, False),
        ("WEAK", True, 2, False),
        ("PARTIAL", True, None, True),
        ("STRONG", False, 1, False),
    ]
    partial = rows[2]
    assert (
        partial["scaled_pass_at_1"] == 100.0
        and partial["snippets"] == 1
        and partial["expected_snippets"] == 7
    )


def test_a_partial_run_is_listed_apart_on_the_page_with_its_coverage(client, mixed_board):
    html = get(client, "/", paper="any")
    ranked = html[html.index('id="board-table"') : html.index('id="board-incomplete"')]
    apart = html[html.index('id="board-incomplete"') :]
    assert "Partial" not in ranked and "Strong" in ranked
    assert "Partial" in apart.split("</table>")[0] and "1/7" in apart and "14%" in apart
    assert "Ranking rule:" in html and "only against runs of the same release, prompt template" in html
    # Two groups, each with its heading: the same model appears once per group, never in one ranking.
    assert "Release r1, template rcb-v2, with paper" in html
    assert "Release r1, template rcb-v2, without paper" in html


def test_release_any_ranks_each_release_apart_and_the_default_board_shows_one_release(client, mixed_board):
    rel, _snippets = mixed_board
    other, snippets2 = make_benchmark({"c": (dt.date(2025, 5, 1), [2, 2])}, release="r2")
    Release.objects.update(is_default=False)
    Release.objects.filter(pk=rel.pk).update(is_default=True)
    strong = LanguageModelFactory._meta.model.objects.get(key="STRONG")
    scored(make_run(snippets2, {"c": "P F"}, model=strong, release=other))
    scored(make_run(snippets2, {"c": "P P"}, model__key="ONLY_R2", release=other))

    default = api_rows(client, "")
    assert {r["release"] for r in default} == {"r1"} and [r["model"]["key"] for r in default][:2] == [
        "STRONG",
        "WEAK",
    ]
    every = api_rows(client, f"?release={ANY_RELEASE}")
    assert [(r["release"], r["model"]["key"], r["rank"]) for r in every if not r["incomplete"]] == [
        ("r1", "STRONG", 1),
        ("r1", "WEAK", 2),
        ("r2", "ONLY_R2", 1),
        ("r2", "STRONG", 2),
    ]
    html = get(client, "/", release=ANY_RELEASE)
    assert (
        "Release r1, template rcb-v2, with paper" in html
        and "Release r2, template rcb-v2, with paper" in html
    )


def test_rank_ranges_and_ties_follow_the_bootstrap_intervals(client):
    rel, snippets = make_benchmark(PAPERS, release="r1")
    for key, verdicts in {
        "M1": {"a": "PP PP PP PP", "b": "PP PP PF"},
        "M2": {"a": "PP PP PF PP", "b": "PP PF PP"},
        "M3": {"a": "FF PF FF PP", "b": "FF PP FF"},
        "M4": {"a": "FF FF FF FF", "b": "FF FF PF"},
    }.items():
        scored(make_run(snippets, verdicts, model__key=key, model__name=key, release=rel))
    rows = leaderboard_rows(filters=LeaderboardFilters())
    assert all(r.score.ci95 is not None for r in rows)
    for r in rows:
        lo, hi = r.score.ci95
        others = [o for o in rows if o.run_id != r.run_id]
        assert r.rank_low == 1 + sum(1 for o in others if o.score.ci95[0] > hi)
        assert r.rank_high == 1 + sum(1 for o in others if o.score.ci95[1] >= lo)
        assert set(r.tied_with) == {
            o.model.key for o in others if o.score.ci95[0] <= hi and o.score.ci95[1] >= lo
        }
        assert r.rank_low <= r.rank <= r.rank_high
    # Somewhere on this board two neighbours are indistinguishable and the page says so.
    tied = [r for r in rows if r.tied_with]
    assert tied and any(r.rank_low < r.rank_high for r in rows)
    html = get(client, "/")
    first = Page(html).rows[0]
    assert first["key"] == rows[0].model.key
    if rows[0].rank_low != rows[0].rank_high:
        assert f"{rows[0].rank_low}–{rows[0].rank_high}" in first["cells"][0]
    assert "≈" in html
    api = {r["model"]["key"]: r for r in api_rows(client, "")}
    assert all(
        (api[r.model.key]["rank_low"], api[r.model.key]["rank_high"], api[r.model.key]["tied_with"])
        == (r.rank_low, r.rank_high, list(r.tied_with))
        for r in rows
    )


def test_global_rule_is_the_releases_whatever_the_other_filters_keep(client):
    rel, snippets = make_benchmark(
        {"old": (dt.date(2024, 3, 1), [2, 3]), "mid": (dt.date(2024, 9, 1), [4, 1]), "new": (dt.date(2025, 3, 1), [2, 2])},
        release="r1",
    )  # fmt: skip
    open_model = LanguageModelFactory(key="OPEN", open_weights=True, knowledge_cutoff=dt.date(2024, 1, 1))
    closed = LanguageModelFactory(key="CLOSED", open_weights=False, knowledge_cutoff=dt.date(2024, 12, 1))
    verdicts = {"old": "P P", "mid": "F F", "new": "P F"}
    scored(make_run(snippets, verdicts, model=open_model, release=rel))
    scored(make_run(snippets, verdicts, model=closed, release=rel))
    everyone = {r["model"]["key"]: r for r in api_rows(client, "?contamination=global")}
    only_open = {r["model"]["key"]: r for r in api_rows(client, "?contamination=global&weights=open")}
    # The release's latest cutoff (December 2024) keeps only "new", for the open model too.
    assert everyone["OPEN"]["selection"] == only_open["OPEN"]["selection"] == ["new"]
    assert only_open["OPEN"]["scaled_pass_at_1"] == everyone["OPEN"]["scaled_pass_at_1"]
    assert only_open["OPEN"]["ci95"] == everyone["OPEN"]["ci95"] is not None


def test_published_global_score_of_deepseek_r1_does_not_move_with_the_weights_filter(client, published_board):
    full = {r["model"]["key"]: r for r in api_rows(client, "?contamination=global")}
    open_only = {r["model"]["key"]: r for r in api_rows(client, "?contamination=global&weights=open")}
    assert round(full["DEEPSEEK_R1"]["scaled_pass_at_1"], 2) == 14.90
    assert open_only["DEEPSEEK_R1"]["scaled_pass_at_1"] == full["DEEPSEEK_R1"]["scaled_pass_at_1"]
    assert len(open_only["DEEPSEEK_R1"]["selection"]) == 13


def test_published_board_keeps_its_order_and_shows_rank_ranges(client, published_board):
    rows = api_rows(client, "")
    assert len(rows) == 32 and rows[0]["model"]["key"] == "GEMINI_2_5_PRO_PREVIEW_05_06"
    assert round(rows[0]["scaled_pass_at_1"], 2) == 37.34 and rows[0]["rank"] == 1
    assert not any(r["incomplete"] for r in rows)
    assert all(r["rank_low"] <= r["rank"] <= r["rank_high"] for r in rows)
    # The two Gemini 2.5 Pro previews are statistically indistinguishable.
    assert rows[1]["model"]["key"] in rows[0]["tied_with"] and rows[0]["rank_high"] >= 2


def test_runs_on_no_release_are_ranked_only_against_runs_covering_the_same_thing(client):
    """Approval runs (issue 34 item 4) are on no release, each on the task it was queued for: with every
    release shown, two models' runs on one new task rank together, a run on another new task stands apart,
    and a model keeps its latest run per task rather than one run for all of them."""
    _rel, snippets = make_benchmark(PAPERS, release="r1")
    strong = LanguageModelFactory(key="STRONG", name="Strong")
    weak = LanguageModelFactory(key="WEAK", name="Weak")
    on_a = {"a": "P P F P"}
    scored(make_run(snippets, on_a, model=strong, release=None, label="new task a v1"))
    scored(make_run(snippets, {"a": "F P F F"}, model=weak, release=None, label="new task a v1"))
    scored(make_run(snippets, {"b": "F F F"}, model=strong, release=None, label="new task b v1"))

    every = api_rows(client, f"?release={ANY_RELEASE}")
    assert [(r["covers"], r["model"]["key"], r["rank"]) for r in every if r["release"] is None] == [
        ("new task a v1", "STRONG", 1),
        ("new task a v1", "WEAK", 2),
        ("new task b v1", "STRONG", 1),
    ]
    html = get(client, "/", release=ANY_RELEASE)
    assert "New task a v1 (not in a release), template rcb-v2, with paper" in html
    assert "New task b v1 (not in a release), template rcb-v2, with paper" in html
