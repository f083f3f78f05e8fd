"""A run's results for the read API."""

from __future__ import annotations

from django.db.models import Prefetch, QuerySet

from evaluation.models import Completion, EvaluationRun, TestResult


def run_result_list(*, run: EvaluationRun, outcome: str = "", paper: str = "") -> QuerySet[Completion]:
    """The completions of ``run`` with their verdict of record (``result``, absent until tested), by task,
    snippet and completion index; ``outcome`` and ``paper`` (a paper key) narrow it, empty = any.

    Only the columns the results table shows are read (a task version's files and a completion's answer are
    large), and the verdicts come in a second query for the page's completions only: joined, PostgreSQL
    hashed every verdict of the benchmark to find a page's hundred (420 ms at 600,000 verdicts)."""
    qs = (
        Completion.objects.filter(run=run)
        .select_related("snippet__task_version__task__paper")
        .only(
            "id", "run_id", "snippet_id", "completion_idx", "stage", "overlap_reference_tokens",
            "overlap_longest_run", "overlap_ngram_share", "near_verbatim", "snippet__name", "snippet__lines",
            "snippet__ordinal", "snippet__checked_by_test", "snippet__task_version__task__key",
            "snippet__task_version__task__paper__key",
        )
        .prefetch_related(
            Prefetch(
                "result",
                queryset=TestResult.objects.only(
                    "id", "completion_id", "outcome", "passed", "category", "tier", "exit_code", "duration_s"
                ),
            )
        )
        .order_by("snippet__task_version__task__key", "snippet__ordinal", "completion_idx", "id")
    )  # fmt: skip
    if outcome:
        qs = qs.filter(result__outcome=outcome)
    if paper:
        qs = qs.filter(snippet__task_version__task__paper__key=paper)
    return qs
