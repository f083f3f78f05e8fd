"""Aggregation: raw test results -> the read models of ``leaderboard.models`` (docs/scoring.md#how-aggregation-runs).

Every score row is computed by ``researchcodebench.scoring`` itself from ``SnippetResult`` objects, so the
portal's numbers are the core library's numbers by construction. The selectors recombine the per-paper
integer sums for subsets of papers (same integers, same float operations, same results).

A verdict recorded one by one is applied as a delta (``leaderboard.increments``); the entry points here
rebuild, repair, and recompute what a delta cannot update:

- ``leaderboard_refresh_run(*, run)``: rebuild every read model row of one run (idempotent): the bulk and
  repair path, and the start of a run's deltas (its first verdict).
- ``leaderboard_refresh_release(*, release_id)``: the per-release background step: contamination selections
  moved by a new model or a catalogue change, then the bootstrap intervals of the runs whose verdicts
  changed since theirs were computed; records when it ran. ``leaderboard_request_release_refresh`` is
  its debounced trigger (task ``refresh_release`` on queue ``site``).
- ``leaderboard_rebuild(*, run_ids)``: the repair command's rebuild, one run per transaction.
- ``leaderboard_refresh_global()``: rebuild the ``global`` contamination rows of every run when the set of
  scored models of its release moved that release's global cutoff (from ``RunSnippetScore``, no raw results).
- ``leaderboard_request_refresh(*, run_id)``: the debounced whole-run refresh of a bulk write
  (``results_recorded``).
- ``leaderboard_sweep()``: the beat's safety net: re-aggregate runs whose result count moved since their last
  aggregation (bulk inserts send no signal) and run the step of releases left with stale intervals.
- ``leaderboard_refresh_after_bulk_write()``: the synchronous refresh a bulk command asks for when it
  finishes (``contributions.signals.bulk_write_finished``), so its data is on the board when it returns.

Locks. Whole-run rebuilds take the aggregation lock (a PostgreSQL advisory lock; SQLite's write lock does
the same) *exclusively*, each in one transaction: a reader never sees a run's rows deleted and not yet
rebuilt, and two rebuilds of runs of one release (which share ``SnippetStat`` rows and the ``global``
rows) never interleave their delete-and-insert. Row-level writers (a verdict's delta, the step's new
selections) take the run's row lock (``evaluation``'s ``run_lock``: a verdict's writer holds it already)
and then the aggregation lock *shared*, so they run side by side but never during a rebuild. Lock order:
run row, aggregation lock, read-model rows; a rebuild takes no run lock. Bootstrap intervals are computed
holding no lock and written only over the rows (and selections) they were computed for.
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import ParamSpec, TypeVar

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, F, Q, QuerySet, Sum
from django.utils import timezone

from contributions.models import Snippet, TaskVersion
from evaluation.models import Completion, EvaluationRun, LanguageModel
from evaluation.services.run_state import run_lock
from leaderboard.aggregates import (
    MISSING,
    PASS,
    Contribution,
    PaperRow,
    SnippetState,
    confirmation_fields,
    finite,
    interval,
    score_fields,
    snippet_state,
    solve_rate,
    stored_failures,
)
from leaderboard.cutoffs import (
    before_cutoff_selection,
    cutoff_text,
    global_selection,
    paper_dates,
    per_model_selection,
    release_global_selections,
)
from leaderboard.models import (
    Contamination,
    ReleaseAggregation,
    RunAggregation,
    RunErrorCount,
    RunPaperScore,
    RunScore,
    RunSnippetScore,
    ScoreMode,
    SnippetStat,
)
from leaderboard.scopes import META, release_scope, run_scopes, scopes_bump
from researchcodebench import scoring

#: the PostgreSQL advisory lock key of aggregation writes (any constant unique to this purpose)
AGGREGATION_LOCK_KEY = 0x52434241  # "RCBA"

P = ParamSpec("P")
R = TypeVar("R")


def aggregation_lock(*, shared: bool) -> None:
    """Take the aggregation lock until the current transaction ends: exclusive for a whole-run rebuild,
    shared for row-level writers (see the module docstring for the lock order). Re-entrant."""
    if connection.vendor == "postgresql":
        function = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT {function}(%s)", [AGGREGATION_LOCK_KEY])


def serialized(func: Callable[P, R]) -> Callable[P, R]:
    """Run ``func`` in one transaction holding the aggregation lock exclusively (re-entrant: nested entry
    points share the outer transaction and lock)."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with transaction.atomic():
            aggregation_lock(shared=False)
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


#: the ``Snippet`` fields of a ``SnippetInfo``, in its order
SNIPPET_INFO_FIELDS = (
    "id", "name", "lines", "task_version__task__key", "task_version__task__paper_id",
    "task_version__task__paper__key", "checked_by_test",
)  # fmt: skip


def snippet_infos(snippet_ids: Iterable[int]) -> dict[int, SnippetInfo]:
    """``SnippetInfo`` of these snippets, by id (one query)."""
    rows = Snippet.objects.filter(id__in=list(snippet_ids)).values_list(*SNIPPET_INFO_FIELDS)
    return {row[0]: SnippetInfo(*row) for row in rows}


def _expected_snippets(run: EvaluationRun) -> list[SnippetInfo]:
    """The snippets the run should have results for: its explicit task versions, else its release's, else
    the versions it has completions for."""
    versions = run.task_versions.all()
    if not versions.exists():
        if run.release_id is not None:
            versions = TaskVersion.objects.filter(release_entries__release_id=run.release_id)
        else:
            versions = TaskVersion.objects.filter(snippets__completions__run=run).distinct()
    rows = Snippet.objects.filter(task_version__in=versions).values_list(*SNIPPET_INFO_FIELDS)
    return [SnippetInfo(*row) for row in rows]


def scored_snippets(run: EvaluationRun, infos: Mapping[int, SnippetInfo]) -> set[int]:
    """The ids of ``infos`` that count in ``run``'s scores: all of them, unless the run's release leaves out
    snippets not checked by their test (``Release.counts_unchecked_snippets``)."""
    release = run.release if run.release_id is not None else None
    if release is None or release.counts_unchecked_snippets:
        return set(infos)
    return {sid for sid, info in infos.items() if info.checked}


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
    papers: Sequence[PaperRow],
) -> RunScore:
    """The ``RunScore`` of ``mode`` over ``selection``: ``scoring.score_model`` of the results, and the
    confirmation counts of the run's paper rows ``papers`` (each with its ``paper_key``)."""
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
        line_mean=finite(score.line.mean),
        line_std=finite(score.line.std),
        line_rates=[finite(v) for v in score.line.rates],
        task_mean=finite(score.task.mean),
        task_std=finite(score.task.std),
        task_rates=[finite(v) for v in score.task.rates],
        ci_low=finite(score.ci95[0]),
        ci_high=finite(score.ci95[1]),
        snippets=score.snippets,
        lines=score.lines,
        expected_snippets=sum(1 for k in expected if selection is None or k[0] in set(selection)),
        coverage=score.coverage,
        papers=len(score.papers),
        **confirmation_fields(papers, selection),
    )


@transaction.atomic
@serialized
def leaderboard_refresh_run(
    *, run: EvaluationRun, defer_shared: bool = False, defer_global: bool = False
) -> RunScore:
    """Rebuild every read model row of ``run`` from its results of record; return its ``none`` score.

    Infrastructure-tier results never count against a model: they are left out of the scores (the
    snippet shows as untested, lowering coverage) and counted in ``RunErrorCount`` under their tier.
    Afterwards the ``SnippetStat`` rows of the run's snippets are recomputed and the global contamination
    rows of every run are brought up to date (the new run may move the global cutoff), unless
    ``defer_shared`` (a bulk loader then calls ``leaderboard_refresh_global`` and ``snippet_stats_refresh``
    once at the end) or ``defer_global`` (the first verdict of a run: the per-release step moves the other
    runs' rows, ``leaderboard_refresh_release``).
    """
    run = EvaluationRun.objects.select_related("model", "release").get(pk=run.pk)
    snippet_ids = _rebuild_run(run)
    if not defer_shared:
        snippet_stats_refresh(snippet_ids=snippet_ids)
        if not defer_global:
            leaderboard_refresh_global()
    return RunScore.objects.get(run=run, mode=Contamination.NONE)


def _brings_a_new_choice(run: EvaluationRun) -> bool:
    """True when no other scored run has ``run``'s template, or none has its developer: the filters'
    choices (``selectors.board.filter_choices``, which leave out empty values) change when it joins the
    board. At most two queries."""
    scored = RunScore.objects.filter(mode=Contamination.NONE).exclude(run=run)

    def new(field: str, value: str) -> bool:
        return bool(value) and not scored.filter(**{field: value}).exists()

    return new("run__template", run.template) or new("run__model__developer", run.model.developer)


def _rebuild_run(run: EvaluationRun) -> set[int]:
    """Delete and recreate the rows of ``run`` (loaded with ``model`` and ``release``); return the ids of
    the snippets whose ``SnippetStat`` it may move (those it has verdicts for or should have).

    Moves the run's cache scopes, and the catalogue's when the run joining the board brings a new choice
    to the filters (a developer or a template no scored run had: ``filter_choices``).

    Precondition: the caller holds the aggregation lock exclusively.
    """
    new_choice = not RunScore.objects.filter(run=run).exists() and _brings_a_new_choice(run)
    scopes_bump(
        [*run_scopes(release_id=run.release_id, model_id=run.model_id), *([META] if new_choice else [])]
    )
    expected_infos = _expected_snippets(run)
    infos = {i.id: i for i in expected_infos}
    states, results_seen = _snippet_states(run, infos)
    _write_snippet_rows(run, infos, states)
    # Snippets not checked by their test are shown (RunSnippetScore above) but not scored in a release that
    # does not count them (Release.counts_unchecked_snippets).
    counted = scored_snippets(run, infos)
    scored_infos = [i for i in expected_infos if i.id in counted]
    scored = {sid: state for sid, state in states.items() if sid in counted}
    verdicts = {sid: state.verdicts for sid, state in scored.items()}
    papers = _write_paper_scores(run, scored_infos, infos, scored)
    _write_run_scores(run, scored_infos, results_from_verdicts(infos, verdicts), papers)
    # Every interval was just computed: the ones of the deltas so far included.
    done = {"refreshed_at": timezone.now(), "results_seen": results_seen, "incremental": True}
    updated = RunAggregation.objects.filter(run=run).update(
        refreshes=F("refreshes") + 1, intervals_changes=F("changes"), **done
    )
    if not updated:
        RunAggregation.objects.create(run=run, refreshes=1, **done)
    return set(states) | {i.id for i in expected_infos}


def _snippet_states(run: EvaluationRun, infos: dict[int, SnippetInfo]) -> tuple[dict[int, SnippetState], int]:
    """The run's ``RunSnippetScore`` rows to be, by snippet, from its results of record, and how many
    results there are; adds to ``infos`` the snippets it has results for beyond the expected ones."""
    raw = list(
        Completion.objects.filter(run=run, result__isnull=False).order_by().values_list(
            "snippet_id", "completion_idx", "result__passed", "result__tier", "result__category",
            "result__outcome", "result__confirmation",
        )
    )  # fmt: skip
    infos.update(snippet_infos({r[0] for r in raw} - set(infos)))
    by_snippet: dict[int, list[tuple[int, bool, str, str, str, str]]] = defaultdict(list)
    for snippet_id, *result in raw:
        by_snippet[snippet_id].append(tuple(result))
    return {sid: snippet_state(results) for sid, results in by_snippet.items()}, len(raw)


def _write_snippet_rows(
    run: EvaluationRun, infos: Mapping[int, SnippetInfo], states: Mapping[int, SnippetState]
) -> None:
    """The run's ``RunSnippetScore`` rows, and its ``RunErrorCount`` rows summed from their failures."""
    RunSnippetScore.objects.filter(run=run).delete()
    RunSnippetScore.objects.bulk_create(
        [
            RunSnippetScore(
                run=run,
                snippet_id=sid,
                paper_id=infos[sid].paper_id,
                lines=infos[sid].lines,
                verdicts=state.verdicts,
                passed=state.passed,
                tested=state.tested,
                category=state.category,
                failures=stored_failures(state.failures),
                confirmations=state.confirmations,
            )
            for sid, state in states.items()
        ],
        batch_size=2000,
    )
    errors = Counter(error for state in states.values() for error in state.errors())
    RunErrorCount.objects.filter(run=run).delete()
    RunErrorCount.objects.bulk_create(
        [RunErrorCount(run=run, category=c, tier=t, count=n) for (c, t), n in sorted(errors.items())]
    )


def _write_run_scores(
    run: EvaluationRun,
    scored_infos: Sequence[SnippetInfo],
    results: Sequence[scoring.SnippetResult],
    papers: Sequence[PaperRow],
) -> None:
    """The run's ``RunScore`` rows (every ``ScoreMode``), each ``scoring.score_model`` over its selection of
    papers, with the confirmation counts of the run's paper rows ``papers`` in it."""
    expected = {(i.paper_key, i.score_key): i.lines for i in scored_infos}
    dates = paper_dates()
    global_papers = release_global_selections([run.release_id], extra_cutoffs=[cutoff_text(run.model)])
    selections = {
        Contamination.NONE: None,
        Contamination.PER_MODEL: per_model_selection(run.model, dates),
        Contamination.GLOBAL: global_papers[run.release_id],
        ScoreMode.BEFORE_CUTOFF: before_cutoff_selection(run.model, dates),
    }
    memo: dict[tuple[str, ...] | None, scoring.ModelScore] = {}
    RunScore.objects.filter(run=run).delete()
    RunScore.objects.bulk_create(
        [
            _score_row(run, mode, results, expected, selection, memo, papers)
            for mode, selection in selections.items()
        ]
    )


def _write_paper_scores(
    run: EvaluationRun,
    expected_infos: Sequence[SnippetInfo],
    infos: Mapping[int, SnippetInfo],
    states: Mapping[int, SnippetState],
) -> list[RunPaperScore]:
    """One ``RunPaperScore`` per paper with a scored verdict or an expected snippet: the sum of its
    snippets' contributions, every list as wide as the run's longest verdict string. Returns the rows,
    each with its ``paper_key``."""
    width = max((len(state.verdicts) for state in states.values()), default=0)
    expected_ids = {i.id for i in expected_infos}
    expected_per_paper: Counter[int] = Counter(i.paper_id for i in expected_infos)
    keys = {i.paper_id: i.paper_key for i in infos.values()}
    totals: dict[int, Contribution] = defaultdict(Contribution)
    for sid, state in states.items():
        info = infos[sid]
        totals[info.paper_id].add(
            Contribution.of_snippet(
                state.verdicts, info.lines, expected=sid in expected_ids, confirmations=state.confirmations
            )
        )
    RunPaperScore.objects.filter(run=run).delete()
    rows = []
    for paper_id in sorted(set(totals) | set(expected_per_paper)):
        total = totals[paper_id]
        total.widen(width)
        rows.append(
            RunPaperScore(
                run=run, paper_id=paper_id, expected_snippets=expected_per_paper[paper_id], **total.fields()
            )
        )
    RunPaperScore.objects.bulk_create(rows)
    for row in rows:
        row.paper_key = keys[row.paper_id]
    return rows


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
    infos = snippet_infos(snippet_ids)
    papers: dict[int, list[RunPaperScore]] = defaultdict(list)
    for paper in RunPaperScore.objects.filter(run_id__in=run_ids).annotate(paper_key=F("paper__key")):
        papers[paper.run_id].append(paper)
    scopes_bump(key for row in stale for key in run_scopes(release_id=release_id, model_id=row.run.model_id))
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
            papers[row.run_id],
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
                    solve_rate=solve_rate(row["n_passed"] or 0, row["n_results"] or 0),
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
    """Aggregate many runs, then the shared rows (global contamination, snippet stats) once, in one
    transaction."""
    snippet_ids: set[int] = set()
    release_ids: set[int | None] = set()
    for run in runs:
        run = EvaluationRun.objects.select_related("model", "release").get(pk=run.pk)
        snippet_ids |= _rebuild_run(run)
        release_ids.add(run.release_id)
    _refresh_shared(snippet_ids=snippet_ids, release_ids=release_ids)


@serialized
def _refresh_shared(*, snippet_ids: set[int], release_ids: set[int | None]) -> None:
    """After whole-run rebuilds: the global rows of every run, the statistics of ``snippet_ids``, and the
    step's stamp of each release in ``release_ids`` whose every interval is now current."""
    leaderboard_refresh_global()
    snippet_stats_refresh(snippet_ids=snippet_ids)
    now = timezone.now()
    for release_id in release_ids:
        if not _stale_runs(release_id).exists():
            _stamp(release_id, computed_at=now, runs_recomputed=0)


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
    for run_id, _mode, stored, wanted_selection in _cutoff_rows(RunScore.objects.all(), dates):
        if stored != wanted_selection:
            wanted.add(run_id)
    refreshed = sorted(wanted)
    leaderboard_refresh_runs(runs=EvaluationRun.objects.filter(id__in=refreshed))
    return refreshed


def leaderboard_rebuild(*, run_ids: Iterable[int]) -> list[int]:
    """The repair path (``manage.py leaderboard_rebuild``): rebuild each run from its results of record,
    then the shared rows once (every run's global row, the statistics of the runs' snippets, the step's
    stamp of their releases); return the ids of the runs rebuilt.

    One transaction per run, so verdicts recorded meanwhile wait for one run's rebuild at most and then
    apply as deltas to the rebuilt rows; rebuilding every run of a large board never holds the lock for
    the whole of it.
    """
    done: list[int] = []
    snippet_ids: set[int] = set()
    release_ids: set[int | None] = set()
    for run in EvaluationRun.objects.filter(id__in=list(run_ids)).order_by("pk"):
        snippet_ids |= _rebuild_one(run_id=run.pk)
        done.append(run.pk)
        release_ids.add(run.release_id)
    _refresh_shared(snippet_ids=snippet_ids, release_ids=release_ids)
    return done


@serialized
def _rebuild_one(*, run_id: int) -> set[int]:
    return _rebuild_run(EvaluationRun.objects.select_related("model", "release").get(pk=run_id))


# --- the per-release background step ------------------------------------------------------------------


@dataclass(frozen=True)
class ReleaseRefresh:
    """What one per-release step did: score rows moved to a new contamination selection, and runs whose
    bootstrap intervals were recomputed."""

    reselected: int
    recomputed: int


def leaderboard_request_release_refresh(*, release_id: int | None) -> bool:
    """Ask for the per-release step of ``release_id`` (None: the runs of no release) in
    ``debounce_seconds()``; True when this call scheduled it.

    Debounce as ``leaderboard_request_refresh``: the release's marker flips from not scheduled to scheduled
    in one conditional update, and the step clears it before it starts, so a burst of verdicts schedules
    one step and a verdict recorded during a step schedules the next. Sent after the surrounding
    transaction commits.
    """
    from leaderboard.tasks import refresh_release

    now = timezone.now()
    marker = ReleaseAggregation.objects.filter(release_id=release_id)
    scheduled = marker.order_by("pk").values_list("scheduled", flat=True).first()
    if scheduled:  # the usual case during a burst: one read
        return False
    if scheduled is None:
        try:
            with transaction.atomic():
                ReleaseAggregation.objects.create(release_id=release_id, scheduled=True, requested_at=now)
        except IntegrityError:  # another request created it first, and scheduled the step
            return False
    elif not marker.filter(scheduled=False).update(scheduled=True, requested_at=now):
        return False
    scopes_bump([release_scope(release_id)])  # the board says a step is waiting
    countdown = debounce_seconds()
    transaction.on_commit(lambda: refresh_release.apply_async(args=[release_id], countdown=countdown))
    return True


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
    _stamp(release_id, scheduled=False)
    reselected = _reselect(release_id)
    stale = list(_stale_runs(release_id).order_by("run_id").values_list("run_id", flat=True))
    recomputed = sum(_recompute_intervals(run_id) for run_id in stale)
    _stamp(release_id, computed_at=timezone.now(), runs_recomputed=recomputed)
    return ReleaseRefresh(reselected=reselected, recomputed=recomputed)


def _stale_runs(release_id: int | None):
    """``RunAggregation`` rows of the release's runs whose intervals are behind their verdicts."""
    return RunAggregation.objects.filter(run__release_id=release_id, intervals_changes__lt=F("changes"))


@transaction.atomic
def _stamp(release_id: int | None, **fields: object) -> None:
    """Set ``fields`` of the release's marker (created if missing); moves the release's cache scope (the
    board shows when the step ran and whether one is waiting)."""
    scopes_bump([release_scope(release_id)])
    if ReleaseAggregation.objects.filter(release_id=release_id).update(**fields):
        return
    try:
        with transaction.atomic():
            ReleaseAggregation.objects.create(release_id=release_id, **fields)
    except IntegrityError:  # created meanwhile by a request
        ReleaseAggregation.objects.filter(release_id=release_id).update(**fields)


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


#: the modes whose selection follows the run's model's own cutoff and the catalogue's paper dates
CUTOFF_MODES = {
    ScoreMode.PER_MODEL.value: per_model_selection,
    ScoreMode.BEFORE_CUTOFF.value: before_cutoff_selection,
}


def _cutoff_rows(
    rows: QuerySet[RunScore], dates: Mapping[str, date | None]
) -> Iterator[tuple[int, str, list[str] | None, list[str]]]:
    """``(run, mode, stored selection, wanted selection)`` of every cutoff mode of the runs that have scores
    in ``rows``; a missing row (a run scored before its mode existed) has the stored selection None."""
    stored: dict[int, dict[str, list[str] | None]] = defaultdict(dict)
    models: dict[int, LanguageModel] = {}
    for row in rows.filter(mode__in=[Contamination.NONE, *CUTOFF_MODES]).select_related("run__model"):
        models[row.run_id] = row.run.model
        if row.mode in CUTOFF_MODES:
            stored[row.run_id][row.mode] = row.selection
    for run_id, model in models.items():
        for mode, rule in CUTOFF_MODES.items():
            yield run_id, mode, stored[run_id].get(mode), rule(model, dates)


def _reselect(release_id: int | None) -> int:
    """Step 1 of ``leaderboard_refresh_release``; returns how many rows moved (or were added)."""
    wanted_global = release_global_selections([release_id])[release_id]
    dates = paper_dates()
    moved: dict[int, dict[str, list[str]]] = defaultdict(dict)
    in_release = RunScore.objects.filter(run__release_id=release_id)
    for run_id, selection in in_release.filter(mode=Contamination.GLOBAL).values_list("run_id", "selection"):
        if selection != wanted_global:
            moved[run_id][Contamination.GLOBAL] = wanted_global
    for run_id, mode, selection, wanted in _cutoff_rows(in_release, dates):
        if selection != wanted:
            moved[run_id][mode] = wanted
    for run_id in sorted(moved):
        _reselect_run(run_id, moved[run_id])
    return sum(len(modes) for modes in moved.values())


@transaction.atomic
def _reselect_run(run_id: int, selections: Mapping[str, list[str]]) -> None:
    """Move the run's rows of these modes to these selections (adding a row a mode lacks); a run whose rows
    predate the deltas is rebuilt instead."""
    try:
        run = run_lock(run_id)
    except EvaluationRun.DoesNotExist:
        return
    if not RunAggregation.objects.filter(run_id=run_id, incremental=True).exists():
        _rebuild_one(run_id=run_id)
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


def leaderboard_sweep() -> list[int]:
    """The beat's safety net (task ``refresh_stale``): ``leaderboard_refresh_stale``, then the step of every
    release with a run whose intervals are behind its verdicts (a step request lost with a worker or the
    broker). Returns the ids of the runs re-aggregated."""
    refreshed = leaderboard_refresh_stale()
    behind = set(
        RunAggregation.objects.filter(intervals_changes__lt=F("changes")).values_list(
            "run__release_id", flat=True
        )
    )
    for release_id in sorted(behind, key=lambda r: (r is None, r or 0)):
        leaderboard_refresh_release(release_id=release_id)
    return refreshed
