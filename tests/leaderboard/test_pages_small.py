"""Leaderboard pages on small synthetic boards (no published data): coverage flags, the infrastructure tier,
the ablation pairs, the empty board, and the snippet page with real task files, code and diffs."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse

from contributions.services import task_version_import
from evaluation.models import EvaluationRun
from leaderboard.selectors.analyses import ablation_pairs, error_breakdown
from leaderboard.services import leaderboard_refresh_run
from researchcodebench.pset import read_pset
from tests.factories import (
    CompletionFactory,
    EvaluationRunFactory,
    LanguageModelFactory,
    TestResultFactory,
    make_benchmark,
    make_run,
)
from tests.leaderboard.test_pages import Page, assert_accessible, get

pytestmark = pytest.mark.django_db
REPO = Path(__file__).resolve().parents[2]


def scored(run: EvaluationRun) -> EvaluationRun:
    leaderboard_refresh_run(run=run)
    return run


def test_ablation_page_shows_pairs_and_per_snippet_rates(client):
    rel, snippets = make_benchmark({"p1": (None, [2, 3])})
    scored(
        make_run(
            snippets, {"p1": "P P"}, release=rel, with_paper=True, model__key="M_A", model__name="Model A"
        )
    )
    model_b = LanguageModelFactory(key="M_B")
    scored(make_run(snippets, {"p1": "F P"}, release=rel, with_paper=False, model=model_b))
    scored(make_run(snippets, {"p1": "P F"}, release=rel, with_paper=True, model=model_b))
    data = ablation_pairs()
    assert len(data.pairs) == 1
    html = get(client, reverse("leaderboard:ablation"))
    pair = data.pairs[0]
    assert (
        f"{pair.with_paper.scaled_pass_at_1:.2f}" in html
        and f"{pair.without_paper.scaled_pass_at_1:.2f}" in html
    )
    assert f"{pair.delta:.2f}" in html
    assert 'id="ablation-scatter"' in html and 'id="ablation-snippets"' in html
    assert "No with/without-paper pairs yet" not in html


def test_incomplete_coverage_is_flagged_not_silently_ranked(client):
    rel, snippets = make_benchmark({"p1": (None, [2, 3, 4])})
    scored(make_run(snippets, {"p1": "P P P"}, release=rel, model__name="Full Model"))
    scored(make_run(snippets, {"p1": "P - -"}, release=rel, model__name="Partial Model"))
    html = get(client, "/")
    assert "Incomplete coverage:" in html and "Partial Model 1/3" in html
    rows = Page(html).rows
    partial = next(r for r in rows if "Partial Model" in r["cells"][1])
    assert "partial" in partial["cells"][0] and "33%" in partial["cells"][7]
    assert '<tr class="incomplete"' in html


def test_errors_page_keeps_infrastructure_failures_apart(client):
    rel, snippets = make_benchmark({"p1": (None, [1, 1, 1, 1])})
    scored(make_run(snippets, {"p1": "F I I P"}, release=rel, model__name="Flaky Host"))
    html = get(client, reverse("leaderboard:errors"))
    data = error_breakdown()
    assert [(c.category, c.count) for c in data.categories] == [("logic", 1)]
    assert [(c.category, c.count) for c in data.infrastructure] == [("sandbox_failure", 2)]
    infra = html[html.index('id="infra-h"') :]
    assert "Sandbox failure" in infra and "2 infrastructure failures" in infra
    model_part = html[: html.index('id="infra-h"')]
    assert "Sandbox failure" not in model_part.split('id="per-model-h"')[0]


def test_board_starts_empty_with_guidance(client):
    html = get(client, "/")
    assert "No results yet" in html and "import_published" in html
    assert_accessible(html)


def test_snippet_page_shows_problem_reference_and_highlighted_escaped_diff(client):
    pset = read_pset(REPO / "examples" / "pset")
    version = task_version_import(task=pset.task("rmsnorm"))
    snippet = version.snippets.exclude(code="").order_by("ordinal").first()
    run = EvaluationRunFactory(
        model=LanguageModelFactory(name="<script>alert(1)</script>", key="EVIL"),
        source=EvaluationRun.Source.UPLOADED,
    )
    code = snippet.code.replace("\n", "\n# <b>changed</b>\n", 1)
    TestResultFactory(
        completion=CompletionFactory(run=run, snippet=snippet, code=code), outcome="failed", category="logic",
        exception_type="AssertionError", stdout_tail="ran 3 tests", stderr_tail="AssertionError: <mismatch>",
    )  # fmt: skip
    scored(run)
    url = reverse("leaderboard:snippet", args=[version.task.paper.key, snippet.name])
    html = get(client, url)
    assert_accessible(html)
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "TODO: Implement block" in html  # the masked file, built by researchcodebench.problems
    assert 'class="added"' in html and "&lt;b&gt;changed&lt;/b&gt;" in html
    assert '<span class="k">' in html or '<span class="n">' in html  # Pygments token classes
    assert "css/code.css" in html  # the Pygments stylesheet (static/css/code.css): no inline style, no nonce
    assert "AssertionError: &lt;mismatch&gt;" in html and "ran 3 tests" in html
    assert "1 line added, 0 removed" in html
    prompt = client.get(reverse("leaderboard:snippet_prompt", args=[version.task.paper.key, snippet.name]))
    assert prompt.status_code == 200 and prompt["Content-Type"].startswith("text/plain")
    assert "TODO: Implement block" in prompt.content.decode()


def test_snippet_urls_accept_names_with_spaces_commas_and_slashes(client):
    _rel, snippets = make_benchmark({"p1": (None, [1])})
    snippet = snippets["p1"][0]
    snippet.name = "scale, shift / bias"
    snippet.save()
    url = reverse("leaderboard:snippet", args=["p1", snippet.name])
    html = get(client, url)
    assert "Snippet “scale, shift / bias”" in html
