"""Metrics and contamination (docs/scoring.md), checked against the original's published results."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import pytest
import yaml

from researchcodebench.pset import normalise_date
from researchcodebench.scoring import (
    ModelInfo,
    Published,
    SnippetResult,
    bootstrap_ci,
    global_contamination_papers,
    line_rates,
    load_published,
    normalise_cutoff,
    original_global_cutoff,
    papers_after,
    papers_between,
    per_model_papers,
    per_paper,
    rates_from_totals,
    score_model,
    score_published,
    task_rates,
    undated_papers,
)

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
STATS = DATA / "overall_stats.json"
REGISTRY = DATA / "papers.yaml"


@pytest.fixture(scope="module")
def published():
    if not STATS.is_file():
        pytest.skip(f"{STATS} not present")
    return load_published(STATS)


@pytest.fixture(scope="module")
def registry_dates() -> dict:
    if not REGISTRY.is_file():
        pytest.skip(f"{REGISTRY} not present")
    return {
        str(e["id"]): normalise_date(e["first_commit_date"]) for e in yaml.safe_load(REGISTRY.read_text())
    }


def _r(task: str, snippet: str, lines: int, idx: int, passed: bool) -> SnippetResult:
    return SnippetResult(task=task, snippet=snippet, lines=lines, completion_idx=idx, passed=passed)


def test_line_and_task_rates_with_population_std_over_completions() -> None:
    results = [
        _r("p", "a", 3, 0, True),
        _r("p", "b", 1, 0, False),
        _r("p", "a", 3, 1, False),
        _r("p", "b", 1, 1, True),
    ]
    line = line_rates(results)
    assert line.rates == (75.0, 25.0) and line.mean == 50.0 and line.std == 25.0  # ddof=0
    task = task_rates(results)
    assert task.rates == (50.0, 50.0) and task.std == 0.0
    assert line_rates(results, snippets=[("p", "b")]).rates == (0.0, 100.0)


def test_rates_from_totals_per_index_equal_the_rates_of_the_results() -> None:
    results = [_r("p", f"s{i}", i % 7 + 1, i % 3, i % 4 == 0) for i in range(60)]
    lines: dict[int, tuple[int, int]] = {}
    counts: dict[int, tuple[int, int]] = {}
    for r in results:
        passed, total = lines.get(r.completion_idx, (0, 0))
        lines[r.completion_idx] = (passed + r.lines * r.passed, total + r.lines)
        passed, total = counts.get(r.completion_idx, (0, 0))
        counts[r.completion_idx] = (passed + r.passed, total + 1)
    assert rates_from_totals(lines) == line_rates(results)
    assert rates_from_totals(counts) == task_rates(results)
    assert math.isnan(rates_from_totals({0: (0, 0)}).mean)


def test_snippets_without_result_for_an_index_leave_its_denominator_like_the_original() -> None:
    results = [_r("p", "a", 3, 0, True), _r("p", "b", 1, 0, True), _r("p", "a", 3, 1, True)]
    assert line_rates(results).rates == (100.0, 100.0)
    score = score_model("m", "M", results[:1], expected={("p", "a"): 3, ("p", "b"): 1})
    assert score.coverage == 0.5 and score.snippets == 1 and score.line.mean == 100.0


def test_bootstrap_interval_is_deterministic_and_brackets_the_score() -> None:
    results = [_r("p", f"s{i}", i % 5 + 1, 0, i % 3 == 0) for i in range(40)]
    low, high = bootstrap_ci(results)
    assert (low, high) == bootstrap_ci(list(reversed(results)))
    assert low < line_rates(results).mean < high
    assert bootstrap_ci(results, seed=1) != (low, high)
    assert all(math.isnan(v) for v in bootstrap_ci([]))


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2024-7", dt.date(2024, 7, 1)),
        ("2024-07", dt.date(2024, 7, 1)),
        ("2024-11-17", dt.date(2024, 11, 17)),
        (None, None),
        ("null", None),
    ],
)
def test_normalises_mixed_cutoff_formats(raw: str | None, expected: dt.date | None) -> None:
    assert normalise_cutoff(raw) == expected


def test_rejects_unreadable_cutoff() -> None:
    with pytest.raises(ValueError, match="not YYYY-MM"):
        normalise_cutoff("July 2024")


def test_original_global_cutoff_compares_text_and_keeps_the_bug() -> None:
    assert original_global_cutoff(["2024-10", "2024-7", None]) == dt.date(2024, 7, 1)
    assert original_global_cutoff(["2024-11-17", "2024-06"]) == dt.date(2024, 11, 1)
    dates = {"early": "2024-08-15", "late": "2024-10-15"}
    assert global_contamination_papers(dates, ["2024-10", "2024-7"]) == ["early", "late"]
    assert global_contamination_papers(dates, ["2024-10", "2024-7"], rule="fixed") == ["late"]


def test_per_model_papers_uses_each_models_own_cutoff() -> None:
    dates = {"a": "2024-01-10", "b": "2024-09-01"}
    assert per_model_papers(dates, "2024-8") == ["b"]
    assert per_model_papers(dates, "2023-12") == ["a", "b"]
    assert per_model_papers(dates, None) is None


def test_both_rules_drop_papers_with_unknown_dates_even_without_a_known_cutoff() -> None:
    dates = {"dated": "2024-09-01", "undated": None, "blank": ""}
    # No model's cutoff is known: the global rule still keeps only what can be dated, as per-model does.
    assert global_contamination_papers(dates, [None, "null"]) == ["dated"]
    assert global_contamination_papers(dates, ["2024-01"]) == ["dated"]
    assert per_model_papers(dates, "2024-01") == ["dated"]
    assert undated_papers(dates) == ["undated", "blank"]


def test_papers_between_keeps_dated_papers_inside_the_window_bounds_included() -> None:
    dates = {"a": "2024-01-10", "b": "2024-09-01", "c": "2025-02-01", "x": None}
    assert papers_between(dates, dt.date(2024, 1, 10), dt.date(2024, 9, 1)) == ["a", "b"]
    assert papers_between(dates, dt.date(2024, 2, 1), None) == ["b", "c"]
    assert papers_between(dates, None, None) == ["a", "b", "c"]
    assert papers_after(dates, dt.date(2024, 9, 1)) == ["c"]


def test_recomputes_every_published_overall_score(published) -> None:
    assert len(published.models) == 32
    for key, results in published.results.items():
        expected = published.overall[key]
        line, task = line_rates(results), task_rates(results)
        assert line.mean == pytest.approx(expected["line_rates"]["mean"], abs=1e-6), key
        assert task.mean == pytest.approx(expected["task_rates"]["mean"], abs=1e-6), key
        assert line.std == pytest.approx(expected["line_rates"]["std"], abs=1e-6), key
        assert list(line.rates) == pytest.approx(expected["line_rates"]["rates"], abs=1e-6), key


def test_recomputes_every_published_problem_score(published) -> None:
    checked = 0
    for key, results in published.results.items():
        for paper, rates in per_paper(results).items():
            expected = published.problem_scores[paper][key]
            assert rates.mean == pytest.approx(expected["mean"], abs=1e-6), (paper, key)
            assert rates.std == pytest.approx(expected["std"], abs=1e-6), (paper, key)
            checked += 1
    assert checked == sum(len(scores) for scores in published.problem_scores.values()) == 20 * 32


def test_published_totals_and_ranking(published) -> None:
    scores = score_published(published)
    top = scores[0]
    assert top.key == "GEMINI_2_5_PRO_PREVIEW_05_06"
    assert (round(top.line.mean, 2), round(top.task.mean, 2)) == (37.34, 64.15)
    assert (top.snippets, top.lines, top.coverage) == (212, 1449, 1.0)
    by_key = {s.key: s for s in scores}
    assert round(by_key["O3_HIGH"].line.mean, 2) == 32.16
    assert round(by_key["OPENROUTER_O4_MINI_HIGH"].line.mean, 2) == 30.78
    assert round(by_key["OPENROUTER_MISTRAL_CODESTRAL_MAMBA"].line.mean, 2) == 0.76
    assert [s.line.mean for s in scores] == sorted((s.line.mean for s in scores), reverse=True)


def test_original_global_contamination_rule_keeps_13_papers(published, registry_dates) -> None:
    scores = score_published(published, contamination="global", registry_dates=registry_dates)
    gemini = next(s for s in scores if s.key == "GEMINI_2_5_PRO_PREVIEW_05_06")
    assert (len(gemini.papers), gemini.snippets) == (13, 143)
    assert (round(gemini.line.mean, 2), round(gemini.task.mean, 2)) == (33.30, 58.74)
    assert all(len(s.papers) == 13 for s in scores)


def test_per_model_contamination_differs_by_cutoff(published, registry_dates) -> None:
    scores = {
        s.key: s for s in score_published(published, contamination="per-model", registry_dates=registry_dates)
    }
    assert len(scores["GEMINI_2_5_PRO_PREVIEW_05_06"].papers) == 13  # cutoff 2025-01, the global one
    assert len(scores["O3_HIGH"].papers) == 20  # cutoff 2023-10: every paper is later


def test_model_with_unknown_cutoff_gets_no_per_model_score_and_valid_json() -> None:
    published = Published(
        models={"M": ModelInfo(key="M", name="M", knowledge_cutoff=None)},
        results={"M": (_r("p", "a", 2, 0, True),)},
        papers={"p": {"first_commit_date": "2025-01-01"}},
        overall={},
    )
    (score,) = score_published(published, contamination="per-model")
    assert score.snippets == 0 and score.coverage == 0.0
    assert score.to_dict()["scaled_pass_at_1"] is None and score.to_dict()["ci95"] == [None, None]
