"""Contamination, clearly (issue 22 item 7): the contamination page reads one release, papers with an
unknown date are left out by both rules alike (and the page says how many), and the paper-date window
filters the board, its API and its cache entries."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.core.cache import cache
from django.urls import reverse

from contributions.models import Paper
from evaluation.models import EvaluationRun
from leaderboard.selectors.analyses import contamination_overview
from leaderboard.selectors.board import LeaderboardFilters, leaderboard_rows
from leaderboard.services import leaderboard_refresh_run
from tests.factories import LanguageModelFactory, make_benchmark, make_run
from tests.leaderboard.test_pages import Page, assert_accessible, get

pytestmark = pytest.mark.django_db


def scored(run: EvaluationRun) -> EvaluationRun:
    leaderboard_refresh_run(run=run)
    return run


@pytest.fixture
def two_releases(db) -> dict:
    """The default release ``main`` (three dated papers, 2023 to 2025) and an older release ``examples``
    whose two papers have no known date, each with a scored run; ``main``'s model has a 2024-06 cutoff."""
    cache.clear()
    examples, ex_snippets = make_benchmark({"ex-a": (None, [1]), "ex-b": (None, [2])}, release="examples")
    main, snippets = make_benchmark(
        {
            "old": (dt.date(2023, 3, 1), [2]),
            "mid": (dt.date(2024, 9, 15), [3]),
            "new": (dt.date(2025, 2, 1), [5]),
        },
        release="main",
    )
    main.is_default = True
    main.save()
    model = LanguageModelFactory(key="M_MAIN", name="Main Model", knowledge_cutoff=dt.date(2024, 6, 1))
    run = scored(make_run(snippets, {"old": "P", "mid": "F", "new": "P"}, release=main, model=model))
    scored(make_run(ex_snippets, {"ex-a": "P", "ex-b": "F"}, release=examples, model__key="M_EX"))
    return {"main": main, "examples": examples, "run": run}


# --- the contamination page reads one release ------------------------------------------------------------


def test_contamination_page_of_the_default_release_lists_only_that_releases_papers(client, two_releases):
    html = get(client, reverse("leaderboard:contamination"))
    table = html[html.index('id="paper-dates"') :]
    assert all(f">{key}</a>" in table for key in ("old", "mid", "new"))
    # The other release's undated papers are not this release's: not listed, not counted.
    assert ">ex-a</a>" not in table and ">ex-b</a>" not in table
    assert "keeps 2 of 3 papers: mid, new." in html
    assert "Release <strong>main</strong>: 3 papers." in html
    data = contamination_overview()
    assert [p.key for p in data.papers] == ["old", "mid", "new"] and data.undated == ()


def test_contamination_page_of_another_release_lists_its_own_papers(client, two_releases):
    html = get(client, reverse("leaderboard:contamination"), release="examples")
    table = html[html.index('id="paper-dates"') :]
    assert ">ex-a</a>" in table and ">ex-b</a>" in table and ">old</a>" not in table
    assert "Release <strong>examples</strong>: 2 papers." in html


# --- unknown dates: the same under both rules, and said -------------------------------------------------


@pytest.fixture
def undated_release(db) -> dict:
    """One release with a dated and an undated paper; one model without a known cutoff, one with."""
    cache.clear()
    rel, snippets = make_benchmark(
        {"dated": (dt.date(2025, 1, 10), [2]), "undated": (None, [3])}, release="r"
    )
    blind = LanguageModelFactory(key="M_BLIND", name="Blind Model", knowledge_cutoff=None)
    known = LanguageModelFactory(key="M_KNOWN", name="Known Model", knowledge_cutoff=dt.date(2024, 6, 1))
    scored(make_run(snippets, {"dated": "P", "undated": "P"}, release=rel, model=blind))
    scored(make_run(snippets, {"dated": "F", "undated": "P"}, release=rel, model=known))
    return {"release": rel}


def test_global_and_per_model_rules_both_drop_papers_with_an_unknown_date(undated_release):
    rows = leaderboard_rows(filters=LeaderboardFilters(contamination="global"))
    assert {r.selection for r in rows} == {("dated",)}
    per_model = {
        r.model.key: r for r in leaderboard_rows(filters=LeaderboardFilters(contamination="per-model"))
    }
    assert per_model["M_KNOWN"].selection == ("dated",)
    assert per_model["M_BLIND"].score.scaled_pass_at_1 is None


def test_global_rule_without_any_known_cutoff_keeps_only_dated_papers(db):
    cache.clear()
    rel, snippets = make_benchmark(
        {"dated": (dt.date(2025, 1, 10), [2]), "undated": (None, [3])}, release="r"
    )
    model = LanguageModelFactory(key="M_BLIND", knowledge_cutoff=None)
    scored(make_run(snippets, {"dated": "P", "undated": "F"}, release=rel, model=model))
    (row,) = leaderboard_rows(filters=LeaderboardFilters(contamination="global"))
    assert row.selection == ("dated",)
    assert row.score.scaled_pass_at_1 == pytest.approx(100.0)


def test_contamination_page_says_every_paper_is_dated_without_a_double_negative(client):
    cache.clear()
    rel, snippets = make_benchmark({"dated": (dt.date(2025, 1, 10), [2])}, release="r")
    scored(make_run(snippets, {"dated": "P"}, release=rel))

    html = get(client, reverse("leaderboard:contamination"))

    note = html[html.index('id="undated-rule"') :].split("</p>", 1)[0]
    assert "every one of these papers has a known first-commit date." in note
    assert "has no known" not in note


def test_contamination_page_states_the_unknown_date_rule_with_a_count(client, undated_release):
    html = get(client, reverse("leaderboard:contamination"))
    note = html[html.index('id="undated-rule"') :].split("</p>", 1)[0]
    assert "1 of 2 papers (undated) has no known first-commit date" in note
    assert "both rules (global and per model)" in note
    table = html[html.index('id="paper-dates"') :]
    assert "<td>unknown</td><td>no (date unknown)</td>" in table
    assert_accessible(html)


# --- the paper-date window ------------------------------------------------------------------------------


def test_date_window_scores_each_run_on_the_papers_inside_it(client, two_releases):
    rows = leaderboard_rows(filters=LeaderboardFilters(paper_from=dt.date(2024, 1, 1)))
    (row,) = rows
    assert row.selection == ("mid", "new")
    # mid (3 lines) failed, new (5 lines) passed: 5 of 8 lines.
    assert row.score.scaled_pass_at_1 == pytest.approx(62.5) and row.score.ci95 is None
    html = get(client, "/", paper_from="2024-01-01")
    assert Page(html).rows[0]["key"] == "M_MAIN"
    assert "62.50" in html
    summary = html[html.index('id="window-summary"') :].split("</p>", 1)[0]
    assert "2024-01-01 – (no end): 2 of the release&#x27;s 3 papers" in summary or (
        "2024-01-01 – (no end): 2 of the release's 3 papers" in summary
    )


def test_date_window_combines_with_the_contamination_rule(two_releases):
    filters = LeaderboardFilters(contamination="per-model", paper_to=dt.date(2024, 12, 31))
    (row,) = leaderboard_rows(filters=filters)
    assert row.selection == ("mid",)
    assert row.score.scaled_pass_at_1 == pytest.approx(0.0)


def test_date_window_leaves_out_papers_with_an_unknown_date(client, undated_release):
    rows = leaderboard_rows(filters=LeaderboardFilters(paper_from=dt.date(2000, 1, 1)))
    assert {r.selection for r in rows} == {("dated",)}
    html = get(client, "/", paper_from="2000-01-01")
    assert "1 paper with an unknown date is outside every window." in html


def _errors(html: str) -> str:
    """The words of the page's field errors."""
    return " ".join(re.findall(r'class="[^"]*error[^"]*"[^>]*>(.*?)</', html, re.S))


def test_bad_window_dates_are_reported_naming_the_field_and_the_board_still_shows(client, two_releases):
    html = get(client, "/", paper_from="2024-13-01", paper_to="soon")
    assert "Paper date from must be a date such as 2024-07-01, not “2024-13-01”" in html
    assert "Paper date to must be a date such as 2024-07-01, not “soon”" in html
    assert "paper_from" not in _errors(html) and "paper_to" not in _errors(html)
    assert Page(html).rows and 'id="window-summary"' not in html
    html = get(client, "/", paper_from="2025-01-01", paper_to="2024-01-01")
    assert "The paper-date window ends (2024-01-01) before it starts (2025-01-01)" in html
    assert "paper_to" not in _errors(html)
    assert "2025-01-01 – (no end)" in html
    assert 'name="paper_to" value=""' in html  # the control shows the bound that applies: none


def test_window_controls_work_without_javascript_and_offer_a_slider(client, two_releases):
    html = get(client, "/", paper_from="2024-09-01")
    page = assert_accessible(html)
    names = {c["name"] for c in page.controls}
    assert {"paper_from", "paper_to"} <= names
    assert 'type="date" name="paper_from" value="2024-09-01"' in html
    # The slider spans the release's papers by month (2023-03 .. 2025-02: 23 steps), hidden until JS runs.
    assert 'data-window-sliders data-start="2023-03" hidden' in html
    assert 'max="23" step="1" value="18" data-window-thumb="from"' in html
    assert 'value="23" data-window-thumb="to"' in html


def test_window_is_part_of_the_cache_key_and_a_date_edit_moves_it(client, two_releases):
    first = get(client, "/", paper_from="2024-01-01")
    assert "62.50" in first
    other = get(client, "/", paper_from="2025-01-01")
    assert "2 of the release" not in other and "1 of the release" in other
    # A paper's date moves in the catalogue: the stored page is not served again.
    Paper.objects.filter(key="mid").update(
        first_commit_date=dt.date(2023, 1, 1), updated_at=dt.datetime.now(dt.UTC)
    )
    again = get(client, "/", paper_from="2024-01-01")
    assert "1 of the release" in again and "100.00" in again


# --- the model page ---------------------------------------------------------------------------------------


def test_model_page_plots_its_score_on_papers_before_and_after_its_cutoff(client, two_releases):
    html = get(client, reverse("leaderboard:model", args=["M_MAIN"]))
    svg = html[html.index('id="model-cutoff-dates"') :].split("</svg>", 1)[0]
    # old (2023-03-01) passed: before the 2024-06 cutoff; mid failed and new passed: after it (5/8 lines).
    assert "old: 2023-03-01, 100.00" in svg and "mid: 2024-09-15, 0.00" in svg
    assert "Score before the cutoff: 100.00" in svg and "Score after the cutoff: 62.50" in svg
    assert "Knowledge cutoff (2024-06-01)" in svg


def test_model_page_without_a_cutoff_draws_no_dated_chart(client, undated_release):
    html = get(client, reverse("leaderboard:model", args=["M_BLIND"]))
    assert 'id="model-cutoff-dates"' not in html and "cutoff is unknown" in html


# --- the API ----------------------------------------------------------------------------------------------


def test_api_leaderboard_takes_the_window(client, two_releases):
    response = client.get(reverse("api-leaderboard"), {"paper_from": "2024-01-01"})
    assert response.status_code == 200
    (row,) = response.json()["results"]
    assert row["selection"] == ["mid", "new"] and row["scaled_pass_at_1"] == pytest.approx(62.5)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"paper_from": "2024-13-01"}, "paper_from"),
        ({"paper_to": "yesterday"}, "paper_to"),
        ({"paper_from": "2025-01-01", "paper_to": "2024-01-01"}, "paper_to"),
    ],
)
def test_api_answers_400_naming_the_bad_window_field(client, two_releases, params, field):
    response = client.get(reverse("api-leaderboard"), params)
    assert response.status_code == 400
    body = response.json()
    assert field in body and field in " ".join(body[field])


def test_openapi_schema_documents_the_window_parameters(client):
    response = client.get(reverse("api-schema"), {"format": "json"})
    assert response.status_code == 200
    schema = response.json()
    params = {p["name"]: p for p in schema["paths"]["/api/v1/leaderboard/"]["get"]["parameters"]}
    for name in ("paper_from", "paper_to"):
        assert params[name]["schema"] == {"type": "string", "format": "date"}
        assert "paper" in params[name]["description"]
