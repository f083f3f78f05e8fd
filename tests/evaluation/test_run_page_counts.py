"""The run page counts a run's verdicts in one pass (``evaluation.selectors.counts.run_counts``, issue 21): every figure equals
counting it on its own, and the page's queries do not grow with the run."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db import connection
from django.db.models import Q, Sum
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from evaluation.models import Completion, EvaluationRun, TestResult
from evaluation.selectors.counts import run_counts
from evaluation.selectors.integrity import run_rejudge_summary
from evaluation.selectors.runs import run_coverage, run_failures, run_progress, run_score, run_snippet_results
from researchcodebench.scoring import line_rates, task_rates
from researchcodebench.screen import CATEGORY as TAMPERING
from tests.factories import CompletionFactory, MaintainerFactory, make_benchmark, make_run

pytestmark = pytest.mark.django_db

Outcome = TestResult.Outcome
PAPERS = {"a": (dt.date(2024, 1, 1), [3, 2, 5]), "b": (dt.date(2025, 3, 1), [1, 4])}


@pytest.fixture
def benchmark():
    return make_benchmark(PAPERS)


def mixed_run(benchmark, verdicts: dict[str, str] | None = None) -> EvaluationRun:
    """A run with passes, failures, an infrastructure failure, harness tampering, a re-judged pass, an item
    that failed generation and one still waiting for a test."""
    release, snippets = benchmark
    run = make_run(
        snippets,
        verdicts or {"a": "PF FI PP", "b": "FP PF"},
        release=release,
        source=EvaluationRun.Source.GENERATED,
    )
    results = TestResult.objects.filter(completion__run=run)
    failed = results.filter(outcome=Outcome.FAILED).order_by("id")
    failed.filter(pk=failed[0].pk).update(category=TAMPERING)
    Completion.objects.filter(pk=failed[0].completion_id).update(error="harness tampering: m.py:3: use of x")
    passed = results.filter(outcome=Outcome.PASSED).order_by("id")
    passed.filter(pk=passed[0].pk).update(rejudge_requested_at=timezone.now(), rejudge_agreed=True)
    passed.filter(pk=passed[1].pk).update(rejudge_requested_at=timezone.now())
    CompletionFactory(
        run=run, snippet=snippets["b"][0], completion_idx=9, stage=Completion.Stage.FAILED, error="500 x3"
    )
    CompletionFactory(
        run=run, snippet=snippets["b"][1], completion_idx=9, stage=Completion.Stage.PENDING_TEST
    )
    return run


def test_run_counts_equal_counting_each_figure_on_its_own(benchmark):
    run = mixed_run(benchmark)
    counts = run_counts(run=run)
    items = Completion.objects.filter(run=run)
    results = TestResult.objects.filter(completion__run=run)

    def by(qs, field: str) -> dict[str, int]:
        return {v: qs.filter(**{field: v}).count() for v in qs.values_list(field, flat=True).distinct()}

    assert counts.stages == by(items, "stage")
    assert counts.outcomes == by(results, "outcome")
    errors = Q(stage=Completion.Stage.FAILED) | ~Q(error="") | Q(result__outcome=Outcome.INFRA_ERROR)
    assert counts.n_errors == items.filter(errors).count() == 3
    assert counts.n_failures == results.filter(passed=False).exclude(tier="infrastructure").count() == 4
    assert counts.n_tampering == results.filter(category=TAMPERING).count() == 1
    assert counts.n_rejudges == 2
    assert counts.open_passes == results.filter(outcome=Outcome.PASSED).exclude(rejudge_agreed=True).count()
    sums = items.aggregate(cost=Sum("cost_usd"), tin=Sum("input_tokens"), tout=Sum("output_tokens"))
    assert (counts.cost_usd, counts.input_tokens, counts.output_tokens) == (
        sums["cost"],
        sums["tin"],
        sums["tout"],
    )


def test_run_score_equals_the_core_rates_of_every_result(benchmark):
    run = mixed_run(benchmark, {"a": "PFP FIF PPF", "b": "FPP PFI"})
    score = run_score(run=run)
    results = run_snippet_results(run=run)
    assert score.scaled_pass_at_1 == line_rates(results).mean
    assert score.pass_at_1 == task_rates(results).mean
    assert score.results == len(results)


def test_run_without_items_counts_nothing_and_has_no_score(benchmark):
    run = make_run({}, {}, release=benchmark[0])
    counts = run_counts(run=run)
    assert counts.stages == counts.outcomes == {} and counts.cost_usd is None
    assert run_score(run=run).scaled_pass_at_1 is None
    assert run_failures(run=run) == ([], 0)
    assert run_rejudge_summary(run=run, viewer=AnonymousUser()).rows == []


def test_the_errors_list_is_the_first_failed_items_by_id_with_their_reasons(benchmark):
    run = mixed_run(benchmark)
    errors = run_progress(run=run).errors
    assert [e.completion_id for e in errors] == sorted(e.completion_id for e in errors)
    assert {e.reason for e in errors} == {"harness tampering: m.py:3: use of x", "sandbox_failure", "500 x3"}
    assert {e.outcome for e in errors} == {"failed", "infra_error", ""}


@pytest.mark.parametrize("maintainer", [False, True])
def test_the_run_page_reads_a_runs_verdicts_in_as_many_queries_whatever_its_size(
    client, benchmark, maintainer, settings
):
    settings.RCB_LIVE_FRESH_S = 0  # what building the page costs, not a visitor's shared copy
    small = mixed_run(benchmark)
    large = mixed_run(benchmark, {"a": "PFPFPF FIFPPF PPFPFF", "b": "FPPFPF PFIPFP"})
    if maintainer:
        client.force_login(MaintainerFactory())
    queries, verdict_reads = [], []
    for run in (small, large):
        client.get(f"/runs/{run.pk}/")  # sessions and permissions cached like a worker that has served
        with CaptureQueriesContext(connection) as captured:
            html = client.get(f"/runs/{run.pk}/").content.decode()
        queries.append(len(captured))
        verdict_reads.append(sum("evaluation_testresult" in q["sql"] for q in captured.captured_queries))
        assert "failed as harness tampering" in html and "failed completions" in html
    assert queries[0] == queries[1]
    # One pass for the counts, the recent results (throughput), the errors (ids, then the shown rows), the
    # re-judges and the failed snippets, and for maintainers the tampering list; one query per figure read
    # them 9 times here (11 with more errors and failures than the page shows).
    assert verdict_reads == ([7, 7] if maintainer else [6, 6])


@pytest.mark.parametrize("verdicts", [None, {"a": "PF -- P-", "b": "-- --"}])
def test_an_uploads_coverage_is_the_progress_figures_in_two_queries(benchmark, verdicts):
    """The upload's answer reads ``run_coverage``: the same items and coverage as ``run_progress``, whose
    queue position, throughput and errors it does not need."""
    run = mixed_run(benchmark, verdicts)
    progress = run_progress(run=run)
    with CaptureQueriesContext(connection) as queries:
        coverage = run_coverage(run=run)
    assert (coverage.items, coverage.covered_snippets, coverage.release_snippets) == (
        progress.total,
        progress.covered_snippets,
        progress.release_snippets,
    )
    assert len(queries.captured_queries) == 2
