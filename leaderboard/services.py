"""Aggregation: raw test results -> the read models of ``leaderboard.models``.

Every score row is computed by ``researchcodebench.scoring`` itself from ``SnippetResult`` objects, so the
portal's numbers are the core library's numbers by construction. The selectors recombine the per-paper
integer sums for subsets of papers (same integers, same float operations, same results).

Entry points:
- ``leaderboard_refresh_run(*, run)``: rebuild every read model row of one run (idempotent).
- ``leaderboard_refresh_global()``: rebuild the ``global`` contamination rows of every run when the set of
  scored models of its release moved that release's global cutoff (from ``RunSnippetScore``, no raw results).
- ``leaderboard_request_refresh(*, run_id)``: the debounced trigger used by the signal handlers.
- ``leaderboard_refresh_stale()``: re-aggregate runs whose result count moved since their last refresh
  (catches bulk inserts that send no signal).
- ``leaderboard_refresh_after_bulk_write()``: the synchronous refresh a bulk command asks for when it
  finishes (``contributions.signals.bulk_write_finished``), so its data is on the board when it returns.

Every entry point that writes is one transaction, and one at a time (``serialized``: a PostgreSQL advisory
lock; SQLite's write lock does the same): a reader never sees a run's rows deleted and not yet rebuilt,
and two workers aggregating runs of one release (which share ``SnippetStat`` rows and the ``global`` rows)
never interleave their delete-and-insert.
"""

from __future__ import annotations

import functools
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, F, Q, Sum
from django.utils import timezone

from contributions.models import Snippet, TaskVersion
from evaluation.models import Completion, EvaluationRun, TestResult
from leaderboard.cutoffs import (
    cutoff_text,
    global_selection,
    paper_dates,
    per_model_selection,
    release_global_selections,
)
from leaderboard.models import (
    Contamination,
    RunAggregation,
    RunErrorCount,
    RunPaperScore,
    RunScore,
    RunSnippetScore,
    SnippetStat,
)
from researchcodebench import scoring
from researchcodebench.scoring import combine_rates

PASS, FAIL, MISSING = "P", "F", "-"
#: the PostgreSQL advisory lock key of aggregation writes (any constant unique to this purpose)
AGGREGATION_LOCK_KEY = 0x52434241  # "RCBA"

P = ParamSpec("P")
R = TypeVar("R")


def serialized(func: Callable[P, R]) -> Callable[P, R]:
    """Run ``func`` in one transaction holding the aggregation lock (re-entrant: nested entry points
    share the outer transaction and lock)."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with transaction.atomic():
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_xact_lock(%s)", [AGGREGATION_LOCK_KEY])
            return func(*args, **kwargs)

    return wrapper


#: seconds between the first result of a burst and the aggregation that covers the whole burst
DEBOUNCE_S_DEFAULT = 5


def debounce_seconds() -> int:
    """``RCB_LEADERBOARD_DEBOUNCE_S`` (settings), default 5 s."""
    return int(getattr(settings, "RCB_LEADERBOARD_DEBOUNCE_S", DEBOUNCE_S_DEFAULT))


@dataclass(frozen=True)
class SnippetInfo:
    """What scoring needs to know about one snippet."""

    id: int
    name: str
    lines: int
    task_key: str
    paper_id: int
    paper_key: str
    #: False for a snippet not checked by its test (left out of the scores of releases that do not count it)
    checked: bool = True

    @property
    def score_key(self) -> str:
        """The snippet name inside its paper: the bare name when the task is named after the paper (the
        original layout, one task per paper), else ``task/name`` so that names stay unique per paper."""
        return self.name if self.task_key == self.paper_key else f"{self.task_key}/{self.name}"


def _expected_snippets(run: EvaluationRun) -> list[SnippetInfo]:
    """The snippets the run should have results for: its explicit task versions, else its release's, else
    the versions it has completions for."""
    versions = run.task_versions.all()
    if not versions.exists():
        if run.release_id is not None:
            versions = TaskVersion.objects.filter(release_entries__release_id=run.release_id)
        else:
            versions = TaskVersion.objects.filter(snippets__completions__run=run).distinct()
    rows = Snippet.objects.filter(task_version__in=versions).values_list(
        "id", "name", "lines", "task_version__task__key", "task_version__task__paper_id",
        "task_version__task__paper__key", "checked_by_test",
    )  # fmt: skip
    return [SnippetInfo(*row) for row in rows]


def scored_snippets(run: EvaluationRun, infos: Mapping[int, SnippetInfo]) -> set[int]:
    """The ids of ``infos`` that count in ``run``'s scores: all of them, unless the run's release leaves out
    snippets not checked by their test (``Release.counts_unchecked_snippets``)."""
    release = run.release if run.release_id is not None else None
    if release is None or release.counts_unchecked_snippets:
        return set(infos)
    return {sid for sid, info in infos.items() if info.checked}


def _finite(value: float) -> float | None:
    return None if value is None or math.isnan(value) else value


def results_from_verdicts(
    snippets: Mapping[int, SnippetInfo], verdicts: Mapping[int, str]
) -> list[scoring.SnippetResult]:
    """``SnippetResult`` objects from verdict strings (snippet id -> ``"PF-"``)."""
    out: list[scoring.SnippetResult] = []
    for snippet_id, text in verdicts.items():
        info = snippets[snippet_id]
        for idx, mark in enumerate(text):
            if mark != MISSING:
                out.append(
                    scoring.SnippetResult(
                        task=info.paper_key,
                        snippet=info.score_key,
                        lines=info.lines,
                        completion_idx=idx,
                        passed=mark == PASS,
                    )
                )
    return out


def _score_row(
    run: EvaluationRun,
    mode: str,
    results: Sequence[scoring.SnippetResult],
    expected: Mapping[tuple[str, str], int],
    selection: list[str] | None,
    memo: dict[tuple[str, ...] | None, scoring.ModelScore],
) -> RunScore:
    key = tuple(selection) if selection is not None else None
    if key not in memo:
        memo[key] = scoring.score_model(
            run.model.key, run.model.name, results, expected=expected, papers=selection
        )
    score = memo[key]
    return RunScore(
        run=run,
        mode=mode,
        selection=selection,
        line_mean=_finite(score.line.mean),
        line_std=_finite(score.line.std),
        line_rates=[_finite(v) for v in score.line.rates],
        task_mean=_finite(score.task.mean),
        task_std=_finite(score.task.std),
        task_rates=[_finite(v) for v in score.task.rates],
        ci_low=_finite(score.ci95[0]),
        ci_high=_finite(score.ci95[1]),
        snippets=score.snippets,
        lines=score.lines,
        expected_snippets=sum(1 for k in expected if selection is None or k[0] in set(selection)),
        coverage=score.coverage,
        papers=len(score.papers),
    )


@transaction.atomic
@serialized
def leaderboard_refresh_run(*, run: EvaluationRun, defer_shared: bool = False) -> RunScore:
    """Rebuild every read model row of ``run`` from its results of record; return its ``none`` score.

    Infrastructure-tier results never count against a model: they are left out of the scores (the
    snippet shows as untested, lowering coverage) and counted in ``RunErrorCount`` under their tier.
    Afterwards (unless ``defer_shared``: a bulk loader then calls ``leaderboard_refresh_global`` and
    ``snippet_stats_refresh`` once at the end) the global contamination rows of every run are brought up to date (the new run may move
    the global cutoff) and the ``SnippetStat`` rows of the run's snippets are recomputed.
    """
    run = EvaluationRun.objects.select_related("model", "release").get(pk=run.pk)
    expected_infos = _expected_snippets(run)
    raw = list(
        Completion.objects.filter(run=run, result__isnull=False).values_list(
            "snippet_id", "completion_idx", "result__passed", "result__tier", "result__category",
            "result__outcome",
        )
    )  # fmt: skip
    infos = {i.id: i for i in expected_infos}
    missing = {r[0] for r in raw} - set(infos)
    if missing:
        rows = Snippet.objects.filter(id__in=missing).values_list(
            "id", "name", "lines", "task_version__task__key", "task_version__task__paper_id",
            "task_version__task__paper__key", "checked_by_test",
        )  # fmt: skip
        infos.update({row[0]: SnippetInfo(*row) for row in rows})

    marks: dict[int, dict[int, str]] = defaultdict(dict)
    first_failure: dict[int, tuple[int, str]] = {}
    errors: Counter[tuple[str, str]] = Counter()
    for snippet_id, idx, passed, tier, category, outcome in raw:
        if tier == TestResult.Tier.INFRASTRUCTURE:
            errors[(category or outcome, TestResult.Tier.INFRASTRUCTURE)] += 1
            marks[snippet_id][idx] = MISSING
            continue
        marks[snippet_id][idx] = PASS if passed else FAIL
        if not passed:
            # A plain failure with no category was recorded without test output (e.g. published results).
            label = category or ("unclassified" if outcome == TestResult.Outcome.FAILED else outcome)
            errors[(label, TestResult.Tier.MODEL)] += 1
            if snippet_id not in first_failure or idx < first_failure[snippet_id][0]:
                first_failure[snippet_id] = (idx, label)
    verdicts = {
        sid: "".join(by_idx.get(i, MISSING) for i in range(max(by_idx) + 1)) for sid, by_idx in marks.items()
    }

    RunSnippetScore.objects.filter(run=run).delete()
    RunSnippetScore.objects.bulk_create(
        [
            RunSnippetScore(
                run=run,
                snippet_id=sid,
                paper_id=infos[sid].paper_id,
                lines=infos[sid].lines,
                verdicts=text,
                passed=text.count(PASS),
                tested=text.count(PASS) + text.count(FAIL),
                category=first_failure.get(sid, (0, ""))[1],
            )
            for sid, text in verdicts.items()
        ],
        batch_size=2000,
    )
    RunErrorCount.objects.filter(run=run).delete()
    RunErrorCount.objects.bulk_create(
        [RunErrorCount(run=run, category=c, tier=t, count=n) for (c, t), n in sorted(errors.items())]
    )

    # Snippets not checked by their test are shown (RunSnippetScore above) but not scored in a release that
    # does not count them (Release.counts_unchecked_snippets).
    counted = scored_snippets(run, infos)
    expected_infos = [i for i in expected_infos if i.id in counted]
    verdicts = {sid: text for sid, text in verdicts.items() if sid in counted}
    _write_paper_scores(run, expected_infos, infos, verdicts)
    results = results_from_verdicts(infos, verdicts)
    expected = {(i.paper_key, i.score_key): i.lines for i in expected_infos}
    dates = paper_dates()
    memo: dict[tuple[str, ...] | None, scoring.ModelScore] = {}
    RunScore.objects.filter(run=run).delete()
    RunScore.objects.bulk_create(
        [
            _score_row(run, Contamination.NONE, results, expected, None, memo),
            _score_row(
                run, Contamination.PER_MODEL, results, expected, per_model_selection(run.model, dates), memo
            ),
            _score_row(
                run,
                Contamination.GLOBAL,
                results,
                expected,
                release_global_selections([run.release_id], extra_cutoffs=[cutoff_text(run.model)])[
                    run.release_id
                ],
                memo,
            ),
        ]
    )
    if not defer_shared:
        leaderboard_refresh_global()
        snippet_stats_refresh(snippet_ids=set(verdicts) | {i.id for i in expected_infos})
    now = timezone.now()
    updated = RunAggregation.objects.filter(run=run).update(
        refreshed_at=now, results_seen=len(raw), refreshes=F("refreshes") + 1
    )
    if not updated:
        RunAggregation.objects.create(run=run, refreshed_at=now, results_seen=len(raw), refreshes=1)
    return RunScore.objects.get(run=run, mode=Contamination.NONE)


def _write_paper_scores(
    run: EvaluationRun,
    expected_infos: Sequence[SnippetInfo],
    infos: Mapping[int, SnippetInfo],
    verdicts: Mapping[int, str],
) -> None:
    width = max((len(t) for t in verdicts.values()), default=0)
    expected_per_paper: Counter[int] = Counter(i.paper_id for i in expected_infos)
    sums: dict[int, dict[str, list[int]]] = {}
    counts: dict[int, Counter[str]] = defaultdict(Counter)
    for sid, text in verdicts.items():
        info = infos[sid]
        acc = sums.setdefault(
            info.paper_id, {k: [0] * width for k in ("line_num", "line_den", "task_num", "task_den")}
        )
        tested_here = False
        for idx, mark in enumerate(text):
            if mark == MISSING:
                continue
            tested_here = True
            acc["line_den"][idx] += info.lines
            acc["task_den"][idx] += 1
            if mark == PASS:
                acc["line_num"][idx] += info.lines
                acc["task_num"][idx] += 1
                counts[info.paper_id]["passed"] += 1
            counts[info.paper_id]["results"] += 1
        if tested_here:
            counts[info.paper_id]["snippets"] += 1
            counts[info.paper_id]["lines"] += info.lines
    RunPaperScore.objects.filter(run=run).delete()
    rows = []
    for paper_id in sorted(set(sums) | set(expected_per_paper)):
        acc = sums.get(paper_id) or {k: [0] * width for k in ("line_num", "line_den", "task_num", "task_den")}
        line = combine_rates(acc["line_num"], acc["line_den"], acc["task_den"])
        rows.append(
            RunPaperScore(
                run=run,
                paper_id=paper_id,
                line_mean=_finite(line.mean),
                line_std=_finite(line.std),
                snippets=counts[paper_id]["snippets"],
                expected_snippets=expected_per_paper[paper_id],
                lines=counts[paper_id]["lines"],
                passed=counts[paper_id]["passed"],
                results=counts[paper_id]["results"],
                **acc,
            )
        )
    RunPaperScore.objects.bulk_create(rows)


@serialized
def leaderboard_refresh_global(*, cutoffs: Iterable[str | None] | None = None) -> int:
    """Bring every run's ``global`` row to the paper set of its release's global cutoff; return how many
    rows were rebuilt. A row whose stored selection already matches is left alone (the usual case).
    ``cutoffs`` replaces the models' cutoffs of every release (a benchmark of the rule itself)."""
    release_ids = set(
        RunScore.objects.filter(mode=Contamination.GLOBAL).values_list("run__release_id", flat=True)
    )
    if cutoffs is None:
        wanted = release_global_selections(release_ids)
    else:
        dates = paper_dates()
        wanted = {release_id: global_selection(cutoffs, dates) for release_id in release_ids}
    rebuilt = 0
    for release_id in sorted(release_ids, key=lambda r: (r is None, r or 0)):
        rebuilt += _refresh_global_rows(release_id, wanted[release_id])
    return rebuilt


def _refresh_global_rows(release_id: int | None, wanted: list[str]) -> int:
    """Rebuild the ``global`` rows of the runs of one release whose selection is not ``wanted``."""
    stale = list(
        RunScore.objects.filter(mode=Contamination.GLOBAL, run__release_id=release_id)
        .exclude(selection=wanted)
        .select_related("run__model", "run__release")
    )
    if not stale:
        return 0
    run_ids = [row.run_id for row in stale]
    by_run: dict[int, dict[int, str]] = defaultdict(dict)
    for run_id, sid, text in RunSnippetScore.objects.filter(run_id__in=run_ids).values_list(
        "run_id", "snippet_id", "verdicts"
    ):
        by_run[run_id][sid] = text
    expected_by_run = {row.run_id: _expected_snippets(row.run) for row in stale}
    snippet_ids = {sid for v in by_run.values() for sid in v} | {
        i.id for infos in expected_by_run.values() for i in infos
    }
    infos = {
        row[0]: SnippetInfo(*row)
        for row in Snippet.objects.filter(id__in=snippet_ids).values_list(
            "id", "name", "lines", "task_version__task__key", "task_version__task__paper_id",
            "task_version__task__paper__key", "checked_by_test",
        )
    }  # fmt: skip
    for row in stale:
        counted = scored_snippets(row.run, infos)
        expected = {
            (i.paper_key, i.score_key): i.lines for i in expected_by_run[row.run_id] if i.id in counted
        }
        verdicts = {sid: text for sid, text in by_run[row.run_id].items() if sid in counted}
        fresh = _score_row(
            row.run,
            Contamination.GLOBAL,
            results_from_verdicts(infos, verdicts),
            expected,
            wanted,
            {},
        )
        fresh.pk = row.pk
        fresh.save()
    return len(stale)


@serialized
def snippet_stats_refresh(*, snippet_ids: Iterable[int]) -> None:
    """Recompute ``SnippetStat`` for these snippets from ``RunSnippetScore`` (one grouped query)."""
    ids = sorted(set(snippet_ids))
    if not ids:
        return
    for start in range(0, len(ids), 5000):
        chunk = ids[start : start + 5000]
        agg = (
            RunSnippetScore.objects.filter(snippet_id__in=chunk, tested__gt=0)
            .values("snippet_id")
            .annotate(
                n_runs=Count("id"),
                n_results=Sum("tested"),
                n_passed=Sum("passed"),
                wp_results=Sum("tested", filter=Q(run__with_paper=True)),
                wp_passed=Sum("passed", filter=Q(run__with_paper=True)),
                np_results=Sum("tested", filter=Q(run__with_paper=False)),
                np_passed=Sum("passed", filter=Q(run__with_paper=False)),
            )
        )
        by_id = {row["snippet_id"]: row for row in agg}
        SnippetStat.objects.filter(snippet_id__in=chunk).delete()
        stats = []
        for sid in chunk:
            row = by_id.get(sid)
            if row is None:
                stats.append(SnippetStat(snippet_id=sid))
                continue
            stats.append(
                SnippetStat(
                    snippet_id=sid,
                    runs=row["n_runs"],
                    results=row["n_results"] or 0,
                    passed=row["n_passed"] or 0,
                    solve_rate=100 * row["n_passed"] / row["n_results"] if row["n_results"] else None,
                    with_paper_results=row["wp_results"] or 0,
                    with_paper_passed=row["wp_passed"] or 0,
                    without_paper_results=row["np_results"] or 0,
                    without_paper_passed=row["np_passed"] or 0,
                )
            )
        SnippetStat.objects.bulk_create(stats)


def leaderboard_request_refresh(*, run_id: int) -> bool:
    """Ask for an aggregation of ``run_id`` in ``debounce_seconds()``; True when this call scheduled it.

    Debounce: the marker row's ``scheduled`` flag flips from false to true in one conditional update, so a
    burst of results schedules exactly one task; the task clears the flag *before* aggregating, so a result
    that lands during the aggregation schedules the next one (never lost, at worst one extra refresh).
    The task is sent after the surrounding transaction commits (its results are then visible).
    """
    from leaderboard.tasks import refresh_run

    RunAggregation.objects.get_or_create(run_id=run_id)
    flipped = RunAggregation.objects.filter(run_id=run_id, scheduled=False).update(
        scheduled=True, requested_at=timezone.now()
    )
    if not flipped:
        return False
    countdown = debounce_seconds()
    transaction.on_commit(lambda: refresh_run.apply_async(args=[run_id], countdown=countdown))
    return True


@serialized
def leaderboard_refresh_stale() -> list[int]:
    """Re-aggregate every run whose number of results of record differs from the last aggregation (a bulk
    insert sends no ``post_save``); return the ids of the runs refreshed."""
    stale = sorted(_runs_with_moved_results())
    leaderboard_refresh_runs(runs=EvaluationRun.objects.filter(id__in=stale))
    return stale


def _runs_with_moved_results() -> set[int]:
    """Runs whose number of results of record differs from the one their last aggregation saw."""
    counts = dict(
        EvaluationRun.objects.annotate(n=Count("completions__result")).filter(n__gt=0).values_list("id", "n")
    )
    seen = dict(RunAggregation.objects.values_list("run_id", "results_seen"))
    return {rid for rid, n in counts.items() if seen.get(rid) != n}


@serialized
def leaderboard_refresh_runs(*, runs: Iterable[EvaluationRun]) -> None:
    """Aggregate many runs, then the shared rows (global contamination, snippet stats) once."""
    snippet_ids: set[int] = set()
    for run in runs:
        leaderboard_refresh_run(run=run, defer_shared=True)
        snippet_ids.update(RunSnippetScore.objects.filter(run=run).values_list("snippet_id", flat=True))
    leaderboard_refresh_global()
    snippet_stats_refresh(snippet_ids=snippet_ids)


@serialized
def leaderboard_refresh_after_bulk_write() -> list[int]:
    """Bring every read model up to date now, without a worker; return the ids of the runs re-aggregated.

    A bulk write (an import command) bypasses the per-result signals, and may add papers or dates, which
    move the contamination selections of runs whose results did not change. So this re-aggregates the runs
    whose result count moved (``leaderboard_refresh_stale``'s rule) and the runs whose stored per-model
    selection is no longer the one the catalogue gives, then the shared rows once (the global selection,
    snippet stats). Cheap when nothing moved: a few grouped queries.
    """
    wanted = _runs_with_moved_results()
    dates = paper_dates()
    for row in RunScore.objects.filter(mode=Contamination.PER_MODEL).select_related("run__model"):
        if row.selection != per_model_selection(row.run.model, dates):
            wanted.add(row.run_id)
    refreshed = sorted(wanted)
    leaderboard_refresh_runs(runs=EvaluationRun.objects.filter(id__in=refreshed))
    return refreshed
