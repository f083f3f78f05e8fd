"""The analysis pages over the board's runs: error categories, contamination (cutoffs vs paper dates),
the paper-context ablation (with vs without the paper), and the per-paper and per-snippet export tables."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, replace
from datetime import date

from contributions.models import Paper, Release
from evaluation.models import EvaluationRun, TestResult
from leaderboard.cutoffs import global_selection, model_cutoff, release_cutoffs, release_paper_dates
from leaderboard.models import Contamination, RunErrorCount, RunPaperScore, RunScore, ScoreMode, SnippetStat
from leaderboard.selectors.board import LeaderboardFilters, board_scores
from leaderboard.selectors.common import (
    ErrorCountRow,
    ModelRef,
    Score,
    after_cutoff,
    error_rows,
    paper_sums,
    pass_rate,
    score_from_papers,
    score_from_row,
)
from researchcodebench import scoring

# --- errors page --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelErrors:
    run_id: int
    model: ModelRef
    counts: dict[str, int]  # model-tier category -> count
    infrastructure: dict[str, int]  # infrastructure-tier category -> count
    total: int  # model-tier failures


@dataclass(frozen=True)
class ErrorBreakdown:
    """Failures of the board's runs: ``categories`` (model tier, share = percent of all model-tier
    failures, largest first), ``infrastructure`` (never charged to models), ``per_model`` (same order as
    the leaderboard's default sort) and ``labels`` (category slug -> display name)."""

    categories: tuple[ErrorCountRow, ...]
    infrastructure: tuple[ErrorCountRow, ...]
    per_model: tuple[ModelErrors, ...]
    labels: dict[str, str]
    #: the names of the models whose run shown was imported from the paper's published results: verdicts
    #: without test output, so their failures can only be counted as unclassified
    without_output: tuple[str, ...] = ()


def error_breakdown(*, filters: LeaderboardFilters | None = None) -> ErrorBreakdown:
    """Error categories over the runs ``filters`` keep (the board's by default). Two queries."""
    filters = filters or LeaderboardFilters()
    board = board_scores(filters, Contamination.NONE)
    board.sort(key=lambda s: (s.line_mean is None, -(s.line_mean or 0), s.run.model.name))
    counts = list(
        RunErrorCount.objects.filter(run_id__in=[s.run_id for s in board]).values_list(
            "run_id", "category", "tier", "count"
        )
    )
    categories, infra = error_rows((c, t, n) for _r, c, t, n in counts)
    per_run: dict[int, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(dict))
    for run_id, c, t, n in counts:
        per_run[run_id][t][c] = n
    per_model = tuple(
        ModelErrors(
            run_id=s.run_id,
            model=ModelRef.of(s.run.model),
            counts=dict(per_run[s.run_id][TestResult.Tier.MODEL]),
            infrastructure=dict(per_run[s.run_id][TestResult.Tier.INFRASTRUCTURE]),
            total=sum(per_run[s.run_id][TestResult.Tier.MODEL].values()),
        )
        for s in board
    )
    labels = {r.category: r.label for r in (*categories, *infra)}
    return ErrorBreakdown(
        categories=categories,
        infrastructure=infra,
        per_model=per_model,
        labels=labels,
        without_output=tuple(
            s.run.model.name for s in board if s.run.source == EvaluationRun.Source.IMPORTED
        ),
    )


def release_with_test_output() -> str | None:
    """The name of the release the errors page starts on: the first, in the order that picks the default
    release (marked default, else the newest), with a finished run that holds test output (any run not
    imported from the paper's published results, which hold verdicts only); None when no release has one.
    One query."""
    tested = EvaluationRun.objects.filter(status=EvaluationRun.Status.FINISHED).exclude(
        source=EvaluationRun.Source.IMPORTED
    )
    return (
        Release.objects.filter(pk__in=tested.values("release_id"))
        .order_by("-is_default", "-created_at", "-pk")
        .values_list("name", flat=True)
        .first()
    )


# --- contamination page -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PaperDate:
    key: str
    title: str
    first_commit_date: date | None
    kept_by_global_rule: bool


@dataclass(frozen=True)
class ModelContamination:
    """One run's score on every paper (``full``), on the papers after its cutoff (``after``) and on/before
    it (``before``); ``after``/``before`` are None when the cutoff is unknown."""

    run_id: int
    model: ModelRef
    full: Score
    before: Score | None
    after: Score | None
    papers_after: int  # papers after the cutoff with at least one result


@dataclass(frozen=True)
class ContaminationOverview:
    """Cutoffs vs paper dates over the papers of the releases shown (``releases``: their names, "(none)"
    for runs of no release, whose papers are every paper). ``global_cutoff`` is the original rule's
    (latest cutoff compared as text), ``global_cutoff_fixed`` the same compared as dates; ``global_papers``
    the papers the original rule keeps for the models shown; ``undated`` the papers with no known first
    commit date, which neither rule keeps (``scoring.papers_after``)."""

    papers: tuple[PaperDate, ...]
    models: tuple[ModelContamination, ...]
    global_cutoff: date | None
    global_cutoff_fixed: date | None
    global_papers: tuple[str, ...]
    releases: tuple[str, ...] = ()
    undated: tuple[str, ...] = ()


def contamination_overview(*, filters: LeaderboardFilters | None = None) -> ContaminationOverview:
    """The contamination page over the runs ``filters`` keep (its ``contamination`` is ignored) and the
    papers of their releases (the default release's unless ``filters.release`` says otherwise). The global
    rule is that of those releases, over every model of the release whatever the other filters (as
    ``leaderboard_rows``). Each run's two sides are its stored ``per-model`` and ``before-cutoff`` rows (kept
    by the same deltas and per-release step as the board), read in one query; a run scored before the
    ``before-cutoff`` mode existed is split from its paper rows instead. Eight queries at most."""
    filters = replace(filters or LeaderboardFilters(), contamination=Contamination.NONE.value)
    board = board_scores(filters, Contamination.NONE)
    releases = {s.run.release_id for s in board}
    release_dates = release_paper_dates(releases)
    by_release = release_cutoffs(releases)
    cutoffs = [c for cs in by_release.values() for c in cs]
    kept = {k for r in releases for k in global_selection(by_release[r], release_dates[r])}
    shown = {k: d for dates in release_dates.values() for k, d in dates.items()}
    papers = list(Paper.objects.filter(key__in=list(shown)).order_by("first_commit_date", "key"))
    sides = _cutoff_sides([s.run_id for s in board], {p.pk: p.first_commit_date for p in papers})
    models = []
    for s in sorted(board, key=lambda s: (s.line_mean is None, -(s.line_mean or 0), s.run.model.name)):
        cutoff = model_cutoff(s.run.model)
        before, after = sides(s.run_id, cutoff)
        models.append(
            ModelContamination(
                run_id=s.run_id,
                model=ModelRef.of(s.run.model),
                full=score_from_row(s),
                before=before if cutoff else None,
                after=after if cutoff else None,
                papers_after=after.papers,
            )
        )
    return ContaminationOverview(
        papers=tuple(PaperDate(p.key, p.title, p.first_commit_date, p.key in kept) for p in papers),
        models=tuple(models),
        global_cutoff=scoring.original_global_cutoff(cutoffs),
        global_cutoff_fixed=scoring.fixed_global_cutoff(cutoffs),
        global_papers=tuple(sorted(kept)),
        releases=tuple(sorted({s.run.release.name if s.run.release_id else "(none)" for s in board})),
        undated=tuple(scoring.undated_papers({p.key: p.first_commit_date for p in papers})),
    )


def _cutoff_sides(run_ids: list[int], dates: dict[int, date | None]):
    """``sides(run_id, cutoff)`` -> (before, after) scores of a run: its stored rows when it has both, else
    recombined from its paper rows (``dates``: paper id -> first commit date). Two queries at most."""
    stored: dict[int, dict[str, RunScore]] = defaultdict(dict)
    for row in RunScore.objects.filter(
        run_id__in=run_ids, mode__in=[ScoreMode.BEFORE_CUTOFF, ScoreMode.PER_MODEL]
    ).order_by():
        stored[row.run_id][row.mode] = row
    unsplit = {r for r in run_ids if len(stored[r]) < 2}
    per_run = paper_sums(unsplit) if unsplit else {}

    def sides(run_id: int, cutoff: date | None) -> tuple[Score, Score]:
        if run_id not in unsplit:
            rows = stored[run_id]
            return score_from_row(rows[ScoreMode.BEFORE_CUTOFF]), score_from_row(rows[ScoreMode.PER_MODEL])
        split: dict[bool, list] = {True: [], False: []}
        for p in per_run[run_id]:
            side = after_cutoff(dates.get(p.paper_id), cutoff)
            if side is not None:
                split[side].append(p)
        return score_from_papers(split[False]), score_from_papers(split[True])

    return sides


# --- paper-context ablation ---------------------------------------------------------------------------


@dataclass(frozen=True)
class AblationPair:
    """The latest finished with-paper and without-paper runs of one model on one (release, template);
    ``delta`` = with - without (Scaled Pass@1 points)."""

    model: ModelRef
    release: str | None
    template: str
    with_paper_run_id: int
    without_paper_run_id: int
    with_paper: Score
    without_paper: Score
    delta: float | None


@dataclass(frozen=True)
class SnippetAblation:
    """Solve rate of one snippet across runs with the paper vs without it (both present)."""

    snippet_id: int
    paper_key: str
    name: str
    lines: int
    with_paper_solve_rate: float
    without_paper_solve_rate: float


@dataclass(frozen=True)
class Ablation:
    pairs: tuple[AblationPair, ...]  # largest delta first
    snippets: tuple[SnippetAblation, ...]  # largest with - without difference first


def ablation_pairs(*, filters: LeaderboardFilters | None = None) -> Ablation:
    """With-paper vs without-paper runs of the same model (``filters.with_paper`` is ignored). Two
    queries."""
    filters = replace(filters or LeaderboardFilters(), with_paper=None, contamination="none")
    board = board_scores(filters, Contamination.NONE)
    groups: dict[tuple, dict[bool, RunScore]] = defaultdict(dict)
    for s in board:
        groups[(s.run.model_id, s.run.release_id, s.run.template)][s.run.with_paper] = s
    pairs = []
    for both in groups.values():
        if True in both and False in both:
            w, wo = both[True], both[False]
            delta = (
                w.line_mean - wo.line_mean if w.line_mean is not None and wo.line_mean is not None else None
            )
            pairs.append(
                AblationPair(
                    model=ModelRef.of(w.run.model),
                    release=w.run.release.name if w.run.release_id else None,
                    template=w.run.template,
                    with_paper_run_id=w.run_id,
                    without_paper_run_id=wo.run_id,
                    with_paper=score_from_row(w),
                    without_paper=score_from_row(wo),
                    delta=delta,
                )
            )
    pairs.sort(key=lambda p: (p.delta is None, -(p.delta or 0), p.model.name))
    snippets = [
        SnippetAblation(
            snippet_id=sid,
            paper_key=pkey,
            name=name,
            lines=lines,
            with_paper_solve_rate=100 * wp / wr,
            without_paper_solve_rate=100 * np_ / nr,
        )
        for sid, pkey, name, lines, wp, wr, np_, nr in SnippetStat.objects.filter(
            with_paper_results__gt=0, without_paper_results__gt=0
        )
        .order_by("snippet_id")
        .values_list(
            "snippet_id", "snippet__task_version__task__paper__key", "snippet__name", "snippet__lines",
            "with_paper_passed", "with_paper_results", "without_paper_passed", "without_paper_results",
        )
    ]  # fmt: skip
    snippets.sort(key=lambda s: -(s.with_paper_solve_rate - s.without_paper_solve_rate))
    return Ablation(pairs=tuple(pairs), snippets=tuple(snippets))


# --- export tables ------------------------------------------------------------------------------------


# Not frozen: a frozen dataclass's __init__ sets each field through object.__setattr__, and this table has a
# row per (run, paper), 10,000 at the benchmark's size; nothing hashes or changes these rows.
@dataclass(slots=True)
class PaperTableRow:
    run_id: int
    model_key: str
    model_name: str
    paper_key: str
    first_commit_date: date | None
    after_cutoff: bool | None
    scaled_pass_at_1: float | None
    scaled_pass_at_1_std: float | None
    snippets: int
    expected_snippets: int
    lines: int


def paper_scores_table(*, filters: LeaderboardFilters | None = None) -> list[PaperTableRow]:
    """Per (run, paper) scores of the board's runs (the paper's heatmap; ``problem_scores``), by paper,
    then model name, then run. Two queries."""
    filters = filters or LeaderboardFilters()
    models = {s.run_id: s.run.model for s in board_scores(filters, Contamination.NONE)}
    runs = {run_id: (m.key, m.name, model_cutoff(m)) for run_id, m in models.items()}
    order = {run_id: n for n, run_id in enumerate(sorted(runs, key=lambda r: (runs[r][1].lower(), r)))}
    # Plain tuples: the per-index sums (JSON) are not needed here, and model instances cost most of the time.
    rows = RunPaperScore.objects.filter(run_id__in=list(runs)).order_by().values_list(
        "run_id", "paper__key", "paper__first_commit_date", "line_mean", "line_std", "snippets",
        "expected_snippets", "lines",
    )  # fmt: skip
    out = []
    for run_id, paper_key, first_commit, line_mean, line_std, snippets, expected, lines in sorted(
        rows, key=lambda r: (r[1], order[r[0]])
    ):
        key, name, cutoff = runs[run_id]
        out.append(
            PaperTableRow(
                run_id,
                key,
                name,
                paper_key,
                first_commit,
                after_cutoff(first_commit, cutoff),
                line_mean,
                line_std,
                snippets,
                expected,
                lines,
            )  # fmt: skip
        )
    return out


@dataclass(frozen=True)
class SnippetTableRow:
    snippet_id: int
    paper_key: str
    task_key: str
    task_version: int
    name: str
    lines: int
    runs: int
    results: int
    passed: int
    solve_rate: float | None
    with_paper_solve_rate: float | None
    without_paper_solve_rate: float | None
    checked_by_test: bool = True


def snippet_stats_table(*, paper: str | None = None) -> list[SnippetTableRow]:
    """Difficulty of every snippet with results (optionally of one paper), hardest first. One query."""
    qs = SnippetStat.objects.filter(results__gt=0)
    if paper:
        qs = qs.filter(snippet__task_version__task__paper__key=paper)
    rows = [
        SnippetTableRow(
            snippet_id=sid, paper_key=pkey, task_key=tkey, task_version=num, name=name, lines=lines,
            runs=runs, results=results, passed=passed, solve_rate=rate,
            with_paper_solve_rate=pass_rate(wp, wr), without_paper_solve_rate=pass_rate(np_, nr), checked_by_test=checked,
        )
        for sid, pkey, tkey, num, name, lines, runs, results, passed, rate, wp, wr, np_, nr, checked in qs.values_list(
            "snippet_id", "snippet__task_version__task__paper__key", "snippet__task_version__task__key",
            "snippet__task_version__number", "snippet__name", "snippet__lines", "runs", "results", "passed",
            "solve_rate", "with_paper_passed", "with_paper_results", "without_paper_passed",
            "without_paper_results", "snippet__checked_by_test",
        )
    ]  # fmt: skip
    rows.sort(key=lambda r: (r.solve_rate if r.solve_rate is not None else math.inf, r.paper_key, r.name))
    return rows
