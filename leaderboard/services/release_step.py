"""The per-release background step: what a verdict's delta cannot update (docs/scoring.md#how-aggregation-runs).

``leaderboard_refresh_release(*, release_id)``: contamination selections moved by a new model or a
catalogue change, then the bootstrap intervals of the runs whose verdicts changed since theirs were
computed; records when it ran. Its debounced trigger is ``scheduling.leaderboard_request_release_refresh``
(task ``leaderboard_refresh_release`` on queue ``site``). New selections are written like a delta (the
run's aggregation lock, then the aggregation lock shared: ``services.locks``); intervals are computed
holding no lock and written only over the rows (and selections) they were computed for.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from evaluation.models import EvaluationRun
from leaderboard.aggregates import (
    interval,
    score_fields,
)
from leaderboard.cutoffs import (
    paper_dates,
    release_global_selections,
)
from leaderboard.models import (
    Contamination,
    RunAggregation,
    RunPaperScore,
    RunScore,
    RunSnippetScore,
)
from leaderboard.scopes import run_scopes, scopes_bump
from leaderboard.services.locks import aggregation_lock, run_aggregation_lock
from leaderboard.services.markers import release_stamp, stale_runs
from leaderboard.services.rebuild import (
    cutoff_rows,
    rebuild_one,
    results_from_verdicts,
    scored_snippets,
    snippet_infos,
)


@dataclass(frozen=True)
class ReleaseRefresh:
    """What one per-release step did: score rows moved to a new contamination selection, and runs whose
    bootstrap intervals were recomputed."""

    reselected: int
    recomputed: int


def leaderboard_refresh_release(*, release_id: int | None) -> ReleaseRefresh:
    """The per-release step: what a verdict's delta cannot update, for the runs of ``release_id``.

    1. Contamination selections: the ``global`` rows whose stored selection is not the release's rule over
       its models' cutoffs now (a new model moved it), and the ``per-model`` and ``before-cutoff`` rows whose
       selection the model's cutoff and the catalogue's dates no longer give (or that a run scored before the
       mode existed lacks), are recombined exactly from the run's paper rows over the new
       selection (each run in its own transaction, like a delta); their intervals are then out of date.
    2. Bootstrap intervals of every run whose intervals are behind its verdicts (``RunAggregation``), computed
       holding no lock, and written only over rows whose selection is still the one they were computed for.
    3. ``ReleaseAggregation.computed_at``: when this ran (the board shows it).

    The release's marker is cleared first, so a verdict recorded during the step schedules the next one.
    Idempotent; two steps of one release at once only repeat each other's work.
    """
    release_stamp(release_id, scheduled=False)
    reselected = _reselect(release_id)
    stale = list(stale_runs(release_id).order_by("run_id").values_list("run_id", flat=True))
    recomputed = sum(_recompute_intervals(run_id) for run_id in stale)
    release_stamp(release_id, computed_at=timezone.now(), runs_recomputed=recomputed)
    return ReleaseRefresh(reselected=reselected, recomputed=recomputed)


def paper_rows(run_id: int) -> list[RunPaperScore]:
    """The run's ``RunPaperScore`` rows, each with its ``paper_key`` (what ``aggregates.score_fields``
    reads). One query."""
    return list(
        RunPaperScore.objects.filter(run_id=run_id).annotate(paper_key=F("paper__key")).order_by("pk")
    )


#: the ``RunScore`` fields a selection change or a delta rewrites (``score_fields``'s and the stamp)
RECOMBINED_FIELDS = (
    "line_mean", "line_std", "line_rates", "task_mean", "task_std", "task_rates", "snippets", "lines",
    "expected_snippets", "coverage", "papers", "passes_confirmed", "passes_unconfirmed", "passes_forged",
    "computed_at",
)  # fmt: skip


def _reselect(release_id: int | None) -> int:
    """Step 1 of ``leaderboard_refresh_release``; returns how many rows moved (or were added)."""
    wanted_global = release_global_selections([release_id])[release_id]
    dates = paper_dates()
    moved: dict[int, dict[str, list[str]]] = defaultdict(dict)
    in_release = RunScore.objects.filter(run__release_id=release_id)
    for run_id, selection in in_release.filter(mode=Contamination.GLOBAL).values_list("run_id", "selection"):
        if selection != wanted_global:
            moved[run_id][Contamination.GLOBAL] = wanted_global
    for run_id, mode, selection, wanted in cutoff_rows(in_release, dates):
        if selection != wanted:
            moved[run_id][mode] = wanted
    for run_id in sorted(moved):
        _reselect_run(run_id, moved[run_id])
    return sum(len(modes) for modes in moved.values())


@transaction.atomic
def _reselect_run(run_id: int, selections: Mapping[str, list[str]]) -> None:
    """Move the run's rows of these modes to these selections (adding a row a mode lacks); a run whose rows
    predate the deltas is rebuilt instead."""
    run_aggregation_lock(run_id)
    run = EvaluationRun.objects.filter(pk=run_id).first()
    if run is None:
        return
    if not RunAggregation.objects.filter(run_id=run_id, incremental=True).exists():
        rebuild_one(run_id=run_id)
        return
    aggregation_lock(shared=True)
    scopes_bump(run_scopes(release_id=run.release_id, model_id=run.model_id))
    papers = paper_rows(run_id)
    have = set(
        RunScore.objects.filter(run_id=run_id, mode__in=list(selections)).values_list("mode", flat=True)
    )
    RunScore.objects.bulk_create(
        [RunScore(run_id=run_id, mode=mode) for mode in selections if mode not in have]
    )
    rows = list(RunScore.objects.filter(run_id=run_id, mode__in=list(selections)).order_by("pk"))
    now = timezone.now()
    for row in rows:
        row.selection = selections[row.mode]
        for name, value in score_fields(papers, row.selection).items():
            setattr(row, name, value)
        row.ci_low = row.ci_high = None
        row.computed_at = now
    RunScore.objects.bulk_update(rows, [*RECOMBINED_FIELDS, "selection", "ci_low", "ci_high"])
    RunAggregation.objects.filter(run_id=run_id).update(changes=F("changes") + 1)


def _recompute_intervals(run_id: int) -> int:
    """Step 2 of ``leaderboard_refresh_release`` for one run: 1 when done, 0 when the run is gone.

    Reads the run's change count first and its verdicts after, so the intervals reflect at least that
    count; a delta committed meanwhile leaves the run behind again, for the next step.
    """
    changes = RunAggregation.objects.filter(run_id=run_id).values_list("changes", flat=True).first()
    run = EvaluationRun.objects.select_related("release").filter(pk=run_id).first()
    if changes is None or run is None:
        return 0
    verdicts = dict(
        RunSnippetScore.objects.filter(run_id=run_id).order_by().values_list("snippet_id", "verdicts")
    )
    infos = snippet_infos(verdicts)
    counted = scored_snippets(run, infos)
    results = results_from_verdicts(infos, {sid: text for sid, text in verdicts.items() if sid in counted})
    intervals: dict[tuple[str, ...] | None, tuple[float | None, float | None]] = {}
    for selection in (
        RunScore.objects.filter(run_id=run_id).order_by("pk").values_list("selection", flat=True)
    ):
        key = None if selection is None else tuple(selection)
        if key not in intervals:
            intervals[key] = interval(results, selection)
    _write_intervals(run, changes, intervals)
    return 1


@transaction.atomic
def _write_intervals(
    run: EvaluationRun,
    changes: int,
    intervals: Mapping[tuple[str, ...] | None, tuple[float | None, float | None]],
) -> None:
    """The run's intervals, each over the rows whose selection is still the one it was computed for, and
    its change count they reflect; moves the run's cache scopes."""
    now = timezone.now()
    for key, (low, high) in intervals.items():
        same = Q(selection__isnull=True) if key is None else Q(selection=list(key))
        RunScore.objects.filter(same, run_id=run.pk).update(ci_low=low, ci_high=high, computed_at=now)
    RunAggregation.objects.filter(run_id=run.pk, intervals_changes__lt=changes).update(
        intervals_changes=changes
    )
    scopes_bump(run_scopes(release_id=run.release_id, model_id=run.model_id))
