"""A run's row lock and its counts: what every writer of a run's completions does first and last.

Every writer that touches a run's completions (``runs``, ``verdicts``, ``rejudge``) first locks the run row
with ``run_lock`` and ends with ``run_refresh``, so that the counts see every committed result and exactly
one writer finishes the run. Lock order is always run -> completion.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from decimal import Decimal

from django.db.models import Count, QuerySet, Sum
from django.utils import timezone

from evaluation.models import Completion, EvaluationRun, TestResult

Stage = Completion.Stage
ACTIVE_STAGES = (Stage.PENDING_GENERATION, Stage.GENERATING, Stage.PENDING_TEST, Stage.TESTING)


def _common_error(errors_text: Iterable[str]) -> str:
    counts = Counter(e.strip().splitlines()[0] for e in errors_text if e.strip())
    return counts.most_common(1)[0][0] if counts else "no reason recorded"


def run_lock(run_id: int) -> EvaluationRun:
    # FOR NO KEY UPDATE: it serialises the run's writers like FOR UPDATE, but does not block the key-share
    # lock an insert referencing the run takes (the leaderboard's aggregation inserting score rows), which
    # would otherwise deadlock with a writer that holds the run and waits for the aggregation's marker row.
    return EvaluationRun.objects.select_for_update(no_key=True).get(pk=run_id)


def _run_counts(run: EvaluationRun, *, stages: dict[str, int], outcomes: dict[str, int]) -> dict:
    """``EvaluationRun.counts`` from the items per stage and the verdicts per outcome."""
    total = sum(stages.values())
    counts = {outcome: outcomes.get(outcome, 0) for outcome in TestResult.Outcome.values}
    counts.update(
        total=total,
        expected=run.counts.get("expected", total),
        generated=sum(stages.get(s, 0) for s in (Stage.PENDING_TEST, Stage.TESTING, Stage.DONE)),
        tested=sum(outcomes.values()),
        generation_failed=stages.get(Stage.FAILED, 0),
        cancelled=stages.get(Stage.CANCELLED, 0),
        pending=sum(stages.get(s, 0) for s in ACTIVE_STAGES),
        stages={s: stages.get(s, 0) for s in Stage.values},
    )
    return counts


def _end_status(items: QuerySet[Completion], *, stages: dict[str, int], counts: dict) -> tuple[str, str]:
    """The status and reason of a run with nothing left to do: failed when every item failed generation,
    else finished, noting failed generations, infrastructure errors or that there was nothing to do."""
    total = counts["total"]
    failed = stages.get(Stage.FAILED, 0)
    if total and failed == total:
        reasons = items.filter(stage=Stage.FAILED).values_list("error", flat=True)
        return (
            EvaluationRun.Status.FAILED,
            f"all {total} completions failed generation: {_common_error(reasons)}",
        )
    notes = []
    if failed:
        reasons = items.filter(stage=Stage.FAILED).values_list("error", flat=True)
        notes.append(f"{failed} of {total} completions failed generation: {_common_error(reasons)}")
    if counts["infra_error"]:
        notes.append(f"{counts['infra_error']} infrastructure errors (not counted against the model)")
    if not total:
        notes.append("nothing to evaluate")
    return EvaluationRun.Status.FINISHED, "; ".join(notes)


def run_refresh(run: EvaluationRun) -> EvaluationRun:
    """Recompute counts, tokens and cost; move the status (finish the run when nothing is left to do).

    Precondition: the caller holds the run's row lock (``run_lock``) in the current transaction.
    """
    now = timezone.now()
    items = Completion.objects.filter(run=run)
    stages = {row["stage"]: row["n"] for row in items.values("stage").annotate(n=Count("id"))}
    outcomes = {
        row["outcome"]: row["n"]
        for row in TestResult.objects.filter(completion__run=run).values("outcome").annotate(n=Count("id"))
    }
    sums = items.aggregate(i=Sum("input_tokens"), o=Sum("output_tokens"), c=Sum("cost_usd"))
    counts = _run_counts(run, stages=stages, outcomes=outcomes)
    total, active = counts["total"], counts["pending"]
    run.counts = counts
    run.total_items = total
    run.input_tokens = sums["i"] or 0
    run.output_tokens = sums["o"] or 0
    run.cost_usd = sums["c"] or Decimal(0)
    fields = ["counts", "total_items", "input_tokens", "output_tokens", "cost_usd"]
    if not run.is_final:
        started = total - stages.get(Stage.PENDING_GENERATION, 0) - stages.get(Stage.PENDING_TEST, 0)
        if active == 0:
            run.status, run.status_reason = _end_status(items, stages=stages, counts=counts)
            run.finished_at = now
            fields += ["status", "status_reason", "finished_at"]
        elif started or run.status != EvaluationRun.Status.QUEUED:
            generating = stages.get(Stage.PENDING_GENERATION, 0) + stages.get(Stage.GENERATING, 0)
            run.status = EvaluationRun.Status.GENERATING if generating else EvaluationRun.Status.TESTING
            fields.append("status")
        if run.status != EvaluationRun.Status.QUEUED and run.started_at is None:
            run.started_at = now
            fields.append("started_at")
    run.save(update_fields=fields)
    return run
