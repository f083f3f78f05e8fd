"""Aggregation: read models equal the core library's scoring for the same results, exactly (their exact
recombination over subsets of papers: ``selectors/test_common.py``); infrastructure failures never count;
results trigger one debounced refresh."""

from __future__ import annotations

import datetime as dt
import random

import pytest
from django.db import transaction

from evaluation.models import TestResult
from evaluation.signals import results_recorded
from leaderboard.models import RunAggregation, RunErrorCount, RunPaperScore, RunScore, ScoreMode, SnippetStat
from leaderboard.selectors.board import LeaderboardFilters, leaderboard_rows
from leaderboard.services import leaderboard_refresh_run, leaderboard_refresh_stale
from researchcodebench import scoring
from tests.factories import (
    CompletionFactory,
    LanguageModelFactory,
    TestResultFactory,
    make_benchmark,
    make_run,
    snippet_results,
)

pytestmark = pytest.mark.django_db

PAPERS = {
    "a": (dt.date(2024, 3, 1), [5, 1, 12, 3]),
    "b": (dt.date(2024, 11, 5), [2, 7]),
    "c": (dt.date(2025, 4, 2), [4, 4, 9]),
}


def random_verdicts(seed: int, n: int = 3) -> dict[str, str]:
    rng = random.Random(seed)
    return {
        paper: " ".join("".join(rng.choice("PPF-") for _ in range(n)) for _ in lines)
        for paper, (_date, lines) in PAPERS.items()
    }


def test_stored_scores_equal_core_scoring_exactly_for_every_mode():
    rel, snippets = make_benchmark(PAPERS)
    verdicts = random_verdicts(1)
    model = LanguageModelFactory(knowledge_cutoff=dt.date(2024, 6, 1))
    run = make_run(snippets, verdicts, model=model, release=rel)
    leaderboard_refresh_run(run=run)
    results = snippet_results(snippets, verdicts)
    expected = {(p, s.name): s.lines for p, ss in snippets.items() for s in ss}
    for mode, papers in (("none", None), ("per-model", ["b", "c"]), ("global", ["b", "c"])):
        core = scoring.score_model("k", "n", results, expected=expected, papers=papers)
        row = RunScore.objects.get(run=run, mode=mode)
        assert row.selection == papers
        assert (row.line_mean, row.line_std, tuple(row.line_rates)) == (
            core.line.mean,
            core.line.std,
            core.line.rates,
        )
        assert (row.task_mean, row.task_std, tuple(row.task_rates)) == (
            core.task.mean,
            core.task.std,
            core.task.rates,
        )
        assert (row.ci_low, row.ci_high) == core.ci95
        assert (row.snippets, row.lines, row.coverage) == (core.snippets, core.lines, core.coverage)
    core_papers = scoring.per_paper(results)
    for p in RunPaperScore.objects.filter(run=run).select_related("paper"):
        assert (p.line_mean, p.line_std) == (core_papers[p.paper.key].mean, core_papers[p.paper.key].std)


def test_infrastructure_failures_never_count_and_are_counted_apart():
    _rel, snippets = make_benchmark({"a": (dt.date(2025, 1, 1), [2, 6])})
    run = make_run(snippets, {"a": "P I"}, categories={"a": "logic"})
    score = leaderboard_refresh_run(run=run)
    assert score.line_mean == 100.0 and score.coverage == 0.5 and score.snippets == 1
    assert list(RunErrorCount.objects.filter(run=run).values_list("category", "tier", "count")) == [
        ("sandbox_failure", "infrastructure", 1)
    ]


def test_a_failure_recorded_without_a_category_counts_as_unclassified_not_as_its_outcome():
    _rel, snippets = make_benchmark({"a": (dt.date(2025, 1, 1), [2, 6, 3])})
    run = make_run(snippets, {"a": "F F P"}, categories={"a": ""})
    leaderboard_refresh_run(run=run)
    assert list(RunErrorCount.objects.filter(run=run).values_list("category", "tier", "count")) == [
        ("unclassified", "model", 2)
    ]


def test_snippet_stats_count_results_across_runs_split_by_paper_context():
    _rel, snippets = make_benchmark({"a": (dt.date(2025, 1, 1), [2, 6])})
    for verdicts, with_paper in (({"a": "PP F"}, True), ({"a": "P F"}, True), ({"a": "F F"}, False)):
        leaderboard_refresh_run(run=make_run(snippets, verdicts, with_paper=with_paper))
    first = SnippetStat.objects.get(snippet=snippets["a"][0])
    assert (first.runs, first.results, first.passed) == (3, 4, 3) and first.solve_rate == 75.0
    assert (first.with_paper_results, first.with_paper_passed) == (3, 3)
    assert (first.without_paper_results, first.without_paper_passed) == (1, 0)


def test_a_new_model_with_a_later_cutoff_moves_every_runs_global_row():
    rel, snippets = make_benchmark(PAPERS)
    early = make_run(
        snippets,
        random_verdicts(2),
        model=LanguageModelFactory(knowledge_cutoff=dt.date(2024, 1, 1)),
        release=rel,
    )
    leaderboard_refresh_run(run=early)
    assert RunScore.objects.get(run=early, mode="global").selection == ["a", "b", "c"]
    late = make_run(
        snippets,
        random_verdicts(3),
        model=LanguageModelFactory(knowledge_cutoff=dt.date(2024, 12, 1)),
        release=rel,
    )
    leaderboard_refresh_run(run=late)
    assert RunScore.objects.get(run=early, mode="global").selection == ["c"]
    rows = leaderboard_rows(filters=LeaderboardFilters(contamination="global"))
    assert {r.selection for r in rows} == {("c",)} and all(r.score.ci95 is not None for r in rows)


def test_original_text_comparison_bug_is_kept_for_the_global_rule():
    rel, snippets = make_benchmark(PAPERS)
    # As text "2024-7" > "2024-10", so the global cutoff is July 2024 although October is later.
    for raw, date in (("2024-7", dt.date(2024, 7, 1)), ("2024-10", dt.date(2024, 10, 1))):
        model = LanguageModelFactory(knowledge_cutoff=date, knowledge_cutoff_raw=raw)
        leaderboard_refresh_run(run=make_run(snippets, random_verdicts(4), model=model, release=rel))
    rows = leaderboard_rows(filters=LeaderboardFilters(contamination="global"))
    assert {r.selection for r in rows} == {("b", "c")}  # b (2024-11-05) is after July, would not be after Oct


def test_refresh_is_idempotent():
    _rel, snippets = make_benchmark(PAPERS)
    run = make_run(snippets, random_verdicts(5))
    first = leaderboard_refresh_run(run=run)
    second = leaderboard_refresh_run(run=run)
    assert (first.line_mean, first.ci_low) == (second.line_mean, second.ci_low)
    assert (
        RunScore.objects.filter(run=run).count() == len(ScoreMode)
        and RunAggregation.objects.get(run=run).refreshes == 2
    )


def test_stale_sweep_aggregates_runs_written_in_bulk_and_only_those():
    _rel, snippets = make_benchmark(PAPERS)
    run = make_run(snippets, random_verdicts(6))
    assert leaderboard_refresh_stale() == [run.pk]
    assert leaderboard_refresh_stale() == []
    assert RunScore.objects.filter(run=run, mode="none").exists()


def test_a_burst_of_results_schedules_one_refresh_after_commit(transactional_db, monkeypatch):
    from leaderboard import tasks

    sent: list[tuple] = []
    monkeypatch.setattr(
        tasks.leaderboard_refresh_run, "apply_async", lambda args, countdown: sent.append((args, countdown))
    )
    _rel, snippets = make_benchmark({"a": (dt.date(2025, 1, 1), [2, 6, 1])})
    run = make_run(snippets, {"a": "- - -"})
    with transaction.atomic():
        for snippet in snippets["a"]:
            TestResultFactory(completion=CompletionFactory(run=run, snippet=snippet))
        results_recorded.send(sender=TestResult, run_id=run.pk)
        assert sent == []  # nothing leaves before the results are committed
    assert len(sent) == 1 and sent[0][0] == [run.pk]
    # The task clears the marker first, aggregates, and a later result schedules again.
    assert tasks.leaderboard_refresh_run(run.pk) is True
    assert RunScore.objects.get(run=run, mode="none").line_mean == 100.0
    results_recorded.send(sender=TestResult, run_id=run.pk)
    assert len(sent) == 2


@pytest.mark.django_db(transaction=True)
def test_concurrent_aggregations_of_one_release_never_collide_and_end_as_a_serial_one():
    """Workers aggregate runs of one release at once (they share SnippetStat and the global rows): every
    refresh succeeds and the read models equal a serial aggregation. Without the aggregation lock these
    raced on the snippet stats' unique constraint and deadlocked (seen under bench/mixed_load.py)."""
    import threading

    from django.db import connection as main_connection
    from django.db import connections

    if main_connection.vendor != "postgresql":
        pytest.skip("needs concurrent writers: SQLite takes one writer at a time whatever the code does")
    rel, snippets = make_benchmark(PAPERS)
    runs = [make_run(snippets, random_verdicts(seed), release=rel) for seed in range(4)]
    errors: list[BaseException] = []
    start = threading.Barrier(len(runs) * 2)

    def refresh(run) -> None:
        try:
            start.wait(timeout=30)
            for _ in range(3):
                leaderboard_refresh_run(run=run)
        except BaseException as exc:  # noqa: BLE001  (reported by the assertion below)
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=refresh, args=(run,)) for run in runs for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    concurrent = {
        "stats": sorted(SnippetStat.objects.values_list("snippet_id", "runs", "results", "passed")),
        "scores": sorted(RunScore.objects.values_list("run_id", "mode", "line_mean", "task_mean")),
        "papers": sorted(RunPaperScore.objects.values_list("run_id", "paper_id", "line_num", "task_den")),
    }
    for run in runs:
        leaderboard_refresh_run(run=run)
    serial = {
        "stats": sorted(SnippetStat.objects.values_list("snippet_id", "runs", "results", "passed")),
        "scores": sorted(RunScore.objects.values_list("run_id", "mode", "line_mean", "task_mean")),
        "papers": sorted(RunPaperScore.objects.values_list("run_id", "paper_id", "line_num", "task_den")),
    }
    assert concurrent == serial
    assert RunAggregation.objects.filter(run__in=runs, refreshes__gte=6).count() == len(runs)


@pytest.mark.parametrize("counts", [False, True])
def test_a_snippet_not_checked_by_its_test_counts_only_in_a_release_that_counts_such_snippets(counts):
    """Issue 18 item 5: a blank answer must not earn an unchecked snippet's lines in a release cut now; the
    published benchmark's release (which counts them) keeps the paper's scoring. The snippet's verdicts
    are still shown (its per-snippet row stays)."""
    rel, snippets = make_benchmark({"a": (dt.date(2024, 3, 1), [5, 1, 12])})
    rel.counts_unchecked_snippets = counts
    rel.save()
    unchecked = snippets["a"][2]
    unchecked.checked_by_test = False
    unchecked.unchecked_reason = "setup"
    unchecked.save()
    run = make_run(snippets, {"a": "F P P"}, release=rel)
    leaderboard_refresh_run(run=run)
    row = RunScore.objects.get(run=run, mode="none")
    kept = snippets["a"] if counts else snippets["a"][:2]
    verdicts = {"a": "F P P" if counts else "F P"}
    core = scoring.score_model(
        "k",
        "n",
        snippet_results({"a": kept}, verdicts),
        expected={("a", s.name): s.lines for s in kept},
    )
    assert (row.line_mean, row.lines, row.snippets) == (core.line.mean, core.lines, core.snippets)
    assert row.line_mean == pytest.approx(100 * (13 if counts else 1) / (18 if counts else 6))
    from leaderboard.models import RunSnippetScore

    assert RunSnippetScore.objects.filter(run=run, snippet=unchecked).exists()


def test_a_maintainer_marks_a_known_weak_snippet_and_only_releases_that_leave_them_out_change():
    from django.core.management import CommandError, call_command

    published, snippets = make_benchmark({"a": (dt.date(2024, 3, 1), [5, 1])}, release="published")
    published.counts_unchecked_snippets = True
    published.save()
    kept = make_run(snippets, {"a": "F P"}, release=published)
    cut, other = make_benchmark({"b": (dt.date(2024, 3, 1), [2, 3])}, release="cut")
    moved = make_run(other, {"b": "P F"}, release=cut)
    leaderboard_refresh_run(run=kept)
    leaderboard_refresh_run(run=moved)
    before = {r.run_id: r.line_mean for r in RunScore.objects.filter(mode="none")}
    explanation = "the test compares only the final output, which never depends on this line"
    with pytest.raises(CommandError, match="at least 40 characters"):
        call_command("mark_snippet_unchecked", "b", "s0", "--reason", "covered", "--explanation", "weak")
    call_command("mark_snippet_unchecked", "a", "s1", "--reason", "covered", "--explanation", explanation)
    call_command("mark_snippet_unchecked", "b", "s0", "--reason", "covered", "--explanation", explanation)
    after = {r.run_id: r.line_mean for r in RunScore.objects.filter(mode="none")}
    assert after[kept.pk] == before[kept.pk] == pytest.approx(100 * 1 / 6)  # the paper's scoring stays
    assert (before[moved.pk], after[moved.pk]) == (pytest.approx(100 * 2 / 5), 0.0)
    marked = snippets["a"][1]
    marked.refresh_from_db()
    assert (marked.checked_by_test, marked.unchecked_reason, marked.unchecked_explanation) == (
        False,
        "covered",
        explanation,
    )
