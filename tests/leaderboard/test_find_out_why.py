"""Finding out why a model scores what it does (issue 12, item 4): model search, the comparison page, a
model's failed snippets as a named list anchored to its completions, the CSV exports linked from their
pages, run pages with their score and links, imported runs' fields, and the board's Date column."""

from __future__ import annotations

import csv
import io
import re
from html import unescape

import pytest
from django.urls import reverse
from django.utils import timezone

from contributions.models import TaskVersion
from evaluation.models import EvaluationRun
from evaluation.selectors.runs import PUBLISHED_RESULTS_ON
from leaderboard.services import leaderboard_refresh_run
from tests.factories import LanguageModelFactory, PaperFactory, make_benchmark, make_run
from tests.leaderboard.test_pages import assert_accessible, get

pytestmark = pytest.mark.django_db


def scored(run: EvaluationRun) -> EvaluationRun:
    leaderboard_refresh_run(run=run)
    return run


@pytest.fixture
def two_models():
    """Two models on one release: A solves s0 and fails s1 of p1; B the other way round (one of its two
    completions of s0 failing); both pass p2's snippet."""
    rel, snippets = make_benchmark({"p1": (None, [2, 3]), "p2": (None, [4])})
    a = scored(
        make_run(
            snippets, {"p1": "P F", "p2": "P"}, release=rel, model__key="alpha-1", model__name="Alpha One",
            model__developer="Acme", categories={"p1": "syntax"},
        )
    )  # fmt: skip
    b = scored(
        make_run(
            snippets, {"p1": "FP P", "p2": "PP"}, release=rel, n_completions=2, model__key="beta-2",
            model__name="Beta Two", model__developer="Bolt",
        )
    )  # fmt: skip
    return a, b, snippets


def hrefs(html: str) -> list[str]:
    return [unescape(h) for h in re.findall(r'href="([^"]*)"', html)]


# --- /papers/ links the portal's paper pages -----------------------------------------------------------


def test_paper_list_links_each_paper_to_its_portal_page(client):
    PaperFactory(key="nerf-x", title="A paper")
    html = get(client, reverse("leaderboard:papers"))
    assert reverse("leaderboard:paper", args=["nerf-x"]) in hrefs(html)


# --- model search --------------------------------------------------------------------------------------


def test_board_has_a_model_search_form_that_works_without_javascript(client, two_models):
    board = get(client, "/")
    form = re.search(r'<form class="model-search"[^>]*>', board)
    assert form and f'action="{reverse("leaderboard:model_search")}"' in form.group(0)
    assert 'method="get"' in form.group(0) and 'name="q"' in board

    page = get(client, reverse("leaderboard:model_search"), q="bolt")
    assert_accessible(page)
    assert reverse("leaderboard:model", args=["beta-2"]) in hrefs(page)
    assert reverse("leaderboard:model", args=["alpha-1"]) not in hrefs(page)


def test_model_search_matches_key_name_or_developer_and_says_when_nothing_matches(client, two_models):
    assert reverse("leaderboard:model", args=["alpha-1"]) in hrefs(get(client, "/models/", q="ALPHA-1"))
    assert reverse("leaderboard:model", args=["alpha-1"]) in hrefs(get(client, "/models/", q=" one "))
    nothing = get(client, "/models/", q="<script>")
    assert "No model matches “&lt;script&gt;”" in nothing


def test_model_search_answers_htmx_with_the_matches_only(client, two_models):
    response = client.get("/models/", {"q": "two"}, headers={"HX-Request": "true"})
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<div id="model-matches"') and "<html" not in html
    assert reverse("leaderboard:model", args=["beta-2"]) in hrefs(html)


# --- the comparison page -------------------------------------------------------------------------------


def test_compare_page_shows_per_paper_and_per_snippet_differences_linking_both_completions(
    client, two_models
):
    a, b, snippets = two_models
    html = get(client, reverse("leaderboard:compare"), models=["alpha-1", "beta-2"])
    assert_accessible(html)
    assert "Alpha One" in html and "Beta Two" in html
    # p1 differs (A: 40, B: 80 on average over its two completions); p2 does not.
    papers = re.search(r'<table class="table" id="compare-papers-table">.*?</table>', html, re.S).group(0)
    assert "p1" in papers and "p2" in papers
    assert "2 of 3 snippets differ" in html
    links = hrefs(html)
    s1 = snippets["p1"][1]
    # Each model's verdict on s1 links to that model's completion, anchored.
    assert any(h.endswith(f"#completion-{a.pk}-0") and f"id={s1.pk}" in h for h in links)
    assert any(h.endswith(f"#completion-{b.pk}-0") and f"id={s1.pk}" in h for h in links)
    rows = re.findall(r'<tr class="differs">.*?</tr>', html, re.S)
    assert len(rows) == 2 and all("differs" in r for r in rows)


def test_compare_page_names_an_unknown_model_and_asks_for_two(client, two_models):
    html = get(client, reverse("leaderboard:compare"), models=["alpha-1", "nope"])
    assert "No model is called “nope”" in unescape(html)
    one = get(client, reverse("leaderboard:compare"), models=["alpha-1"])
    assert "choose at least two models" in one


def test_compare_page_is_linked_from_the_board_and_the_model_page(client, two_models):
    assert reverse("leaderboard:compare") in [h.split("?")[0] for h in hrefs(get(client, "/"))]
    model = get(client, reverse("leaderboard:model", args=["alpha-1"]))
    assert f"{reverse('leaderboard:compare')}?models=alpha-1" in hrefs(model)


# --- a model's failed snippets ------------------------------------------------------------------------


def test_model_page_lists_failed_snippets_by_name_with_category_and_anchored_completion_link(
    client, two_models
):
    a, _b, snippets = two_models
    html = get(client, reverse("leaderboard:model", args=["alpha-1"]))
    table = re.search(r'<table class="table" id="failed-snippets">.*?</table>', html, re.S).group(0)
    s1 = snippets["p1"][1]
    assert ">s1<" in table and ">p1<" in table and "Syntax Errors" in table
    assert ">s0<" not in table  # passed: not a failure
    link = next(h for h in hrefs(table) if "#completion-" in h)
    assert link.endswith(f"#completion-{a.pk}-0") and f"id={s1.pk}" in link

    # The anchor exists on the snippet page, and the linked run's completion is open.
    snippet_page = get(client, link.split("#")[0])
    assert re.search(rf'<details class="completion" id="completion-{a.pk}-0"[^>]* open', snippet_page)


# --- CSV exports linked from their pages ---------------------------------------------------------------


def test_model_page_links_its_runs_and_its_results_as_csv(client, two_models):
    a, _b, snippets = two_models
    html = get(client, reverse("leaderboard:model", args=["alpha-1"]))
    links = hrefs(html)
    runs_csv = next(h for h in links if h.startswith(reverse("api-runs")) and "format=csv" in h)
    results_csv = next(
        h for h in links if h.startswith(reverse("api-run-results", args=[a.pk])) and "format=csv" in h
    )
    runs = list(csv.DictReader(io.StringIO(client.get(runs_csv).content.decode())))
    assert [r["model.key"] for r in runs] == ["alpha-1"]
    results = list(csv.DictReader(io.StringIO(client.get(results_csv).content.decode())))
    assert len(results) == 3  # every completion, not a first page


def test_run_page_shows_its_score_and_links_model_results_and_snippets(client):
    rel, snippets = make_benchmark({"p1": (None, [2, 3])})
    run = scored(make_run(snippets, {"p1": "P F"}, release=rel, model__key="m-1", model__name="Model One"))
    html = get(client, reverse("evaluation:run_detail", args=[run.pk]))
    assert re.search(r'id="run-score".*?<strong>40\.00</strong>', html, re.S)  # 2 of 5 lines
    links = hrefs(html)
    assert f"{reverse('leaderboard:model', args=['m-1'])}?run={run.pk}" in links
    assert any(h.startswith(reverse("api-run-results", args=[run.pk])) and "format=csv" in h for h in links)
    failed = snippets["p1"][1]
    assert any(
        h.startswith(reverse("leaderboard:snippet", args=["p1", "s1"])) and f"id={failed.pk}" in h
        and h.endswith(f"#completion-{run.pk}-0")
        for h in links
    )  # fmt: skip


# --- imported runs -------------------------------------------------------------------------------------


def test_imported_run_page_counts_its_release_snippets_and_shows_no_cost_or_throughput(client):
    rel, snippets = make_benchmark({"p1": (None, [2, 3]), "p2": (None, [1])})
    # The paper's tasks are catalogued without their files; the imported results still cover them.
    TaskVersion.objects.update(has_files=False)
    run = scored(
        make_run(
            snippets, {"p1": "P F", "p2": "P"}, release=rel, source=EvaluationRun.Source.IMPORTED,
            started_at=timezone.now(),
        )
    )  # fmt: skip
    html = get(client, reverse("evaluation:run_detail", args=[run.pk]))
    assert "3 of 3 snippets" in html and "of 0 snippets" not in html
    assert "$0.0000" not in html and "not recorded" in html
    assert "Throughput" not in html


# --- the Date column -----------------------------------------------------------------------------------


def test_board_date_is_when_results_were_produced_the_papers_publication_for_its_results(client):
    rel, snippets = make_benchmark({"p1": (None, [2])})
    scored(make_run(snippets, {"p1": "P"}, release=rel, source=EvaluationRun.Source.IMPORTED))
    html = get(client, "/")
    row = re.search(r"<tbody>.*?</tbody>", html, re.S).group(0)
    assert PUBLISHED_RESULTS_ON.date().isoformat() in row
    assert timezone.now().date().isoformat() not in row


def test_board_date_of_other_runs_is_when_they_finished(client):
    rel, snippets = make_benchmark({"p1": (None, [2])})
    finished = timezone.now().replace(year=2026, month=1, day=15)
    model = LanguageModelFactory()
    scored(make_run(snippets, {"p1": "P"}, release=rel, model=model, finished_at=finished))
    row = re.search(r"<tbody>.*?</tbody>", get(client, "/"), re.S).group(0)
    assert "2026-01-15" in row
