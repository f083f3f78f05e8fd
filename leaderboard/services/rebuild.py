"""Whole-run rebuilds: raw test results -> the read models of ``leaderboard.models`` (docs/scoring.md#how-aggregation-runs).

Every score row is computed by ``researchcodebench.scoring`` itself from ``SnippetResult`` objects, so the
portal's numbers are the core library's numbers by construction. The selectors recombine the per-paper
integer sums for subsets of papers (same integers, same float operations, same results).

A verdict recorded one by one is applied as a delta (``services.increments``); the entry points here
rebuild and repair what a delta cannot update:

- ``leaderboard_refresh_run(*, run)``: rebuild every read model row of one run (idempotent): the bulk and
  repair path, and the start of a run's deltas (its first verdict).
- ``leaderboard_rebuild(*, run_ids)``: the repair command's rebuild, one run per transaction.
- ``leaderboard_refresh_global()``: rebuild the ``global`` contamination rows of every run when the set of
  scored models of its release moved that release's global cutoff (from ``RunSnippetScore``, no raw results).
- ``leaderboard_refresh_stale()`` / ``leaderboard_refresh_runs(*, runs)``: re-aggregate runs whose results
  moved without a signal, then the shared rows once.
- ``leaderboard_refresh_after_bulk_write()``: the synchronous refresh a bulk command asks for when it
  finishes (``contributions.signals.bulk_write_finished``), so its data is on the board when it returns.

Every entry point takes the aggregation lock exclusively (``locks.serialized``; the lock order is in
``services.locks``).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date

from django.db import transaction
from django.db.models import Count, F, Q, QuerySet, Sum
from django.utils import timezone

from contributions.models import Snippet, TaskVersion
from evaluation.models import Completion, EvaluationRun, LanguageModel
from leaderboard.aggregates import (
    MISSING,
    PASS,
    Contribution,
    PaperRow,
    SnippetState,
    confirmation_fields,
    finite,
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
    RunAggregation,
    RunErrorCount,
    RunPaperScore,
    RunScore,
    RunSnippetScore,
    ScoreMode,
    SnippetStat,
)
from leaderboard.scopes import META, run_scopes, scopes_bump
from leaderboard.services.locks import serialized
from leaderboard.services.markers import release_stamp, stale_runs
from researchcodebench import scoring


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
        if not stale_runs(release_id).exists():
            release_stamp(release_id, computed_at=now, runs_recomputed=0)


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
    for run_id, _mode, stored, wanted_selection in cutoff_rows(RunScore.objects.all(), dates):
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
        snippet_ids |= rebuild_one(run_id=run.pk)
        done.append(run.pk)
        release_ids.add(run.release_id)
    _refresh_shared(snippet_ids=snippet_ids, release_ids=release_ids)
    return done


@serialized
def rebuild_one(*, run_id: int) -> set[int]:
    return _rebuild_run(EvaluationRun.objects.select_related("model", "release").get(pk=run_id))


#: the modes whose selection follows the run's model's own cutoff and the catalogue's paper dates
CUTOFF_MODES = {
    ScoreMode.PER_MODEL.value: per_model_selection,
    ScoreMode.BEFORE_CUTOFF.value: before_cutoff_selection,
}


def cutoff_rows(
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
