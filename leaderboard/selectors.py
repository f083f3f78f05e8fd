"""Reads of the leaderboard: every page, export and API endpoint gets its data here.

Contracts common to every selector:

- They read the aggregated read models only (``leaderboard.models``), never raw results, except
  ``snippet_detail`` which lists the individual completions of one snippet (rows, not aggregates) and
  ``run_results`` which pages through one run's results.
- They run a constant number of queries whatever the number of models, runs or papers (tested).
- They return frozen dataclasses (plain values: str, int, float, bool, date, tuples, dicts) that templates,
  serializers and CSV exports read directly. Scores are percentages (0-100); ``None`` means "no score"
  (nothing tested in that selection), never 0.
- ``LeaderboardFilters`` selects runs the same way for every selector that takes it.

Which runs are "on the board": runs with scores whose status is finished (``include_unfinished`` adds
runs still generating or testing, with their partial coverage), restricted by the filters (the default
release unless ``release`` names another or ``ANY_RELEASE``), and of those only the latest run per (model,
release, template, with/without paper).

The ranking rule (docs/scoring.md#ranking): runs are ranked only against runs of the same release, prompt
template and paper setting (a *group*); a view over several groups lists them group by group. Runs below
full coverage are listed after their group's ranked runs, without a rank. A rank comes with the range the
bootstrap intervals allow and the runs it is statistically tied with.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime
from typing import Any, NamedTuple

from django.db import connection
from django.db.models import Exists, Q, QuerySet, Subquery

from contributions.models import Paper, Release, Snippet
from evaluation import selectors as evaluation_selectors
from evaluation.models import Completion, EvaluationRun, LanguageModel, TestResult
from leaderboard.cutoffs import model_cutoff, release_cutoffs, release_global_selections
from leaderboard.models import (
    Contamination,
    RunErrorCount,
    RunPaperScore,
    RunScore,
    RunSnippetScore,
    SnippetStat,
)
from researchcodebench import errors as error_catalogue
from researchcodebench import scoring
from researchcodebench.scoring import combine_rates

#: sort keys of ``LeaderboardFilters.sort`` (prefix ``-`` for descending); null values always sort last
SORT_KEYS: dict[str, Callable[[Row], Any]] = {}
CONTAMINATION_MODES = tuple(c.value for c in Contamination)
#: ``LeaderboardFilters.release`` for the runs of every release (and of none), each release ranked apart;
#: not a valid release name (a slug), so it never shadows one
ANY_RELEASE = "*"


@dataclass(frozen=True)
class LeaderboardFilters:
    """What the board shows. ``None`` = no restriction.

    - ``developer``: exact developer name, case-insensitive (e.g. "OpenAI").
    - ``open_weights``: True = open-weights models only, False = closed only.
    - ``verification``: an ``EvaluationRun.Verification`` value (published, uploaded, generated, rerun).
    - ``release``: a release name; ``None`` = the default release (``contributions.selectors.
      release_default``; every run while there is no release); ``ANY_RELEASE`` = runs of every release
      (and runs without one), grouped by release.
    - ``template``: prompt template of the run (e.g. "rcb-2025", "rcb-v2").
    - ``with_paper``: True (default: the paper is in the prompt, the headline setting), False (the
      ablation without paper), None (both).
    - ``contamination``: "none" (every paper), "global" (the original rule: papers whose first commit is
      after the latest cutoff of the models shown, cutoffs compared as text like the original did, so
      "2024-7" beats "2024-10"), "per-model" (each model on the papers after its own cutoff; no score for
      a model whose cutoff is unknown).
    - ``sort``: a key of ``SORT_KEYS``, "-" prefix for descending; default "-scaled_pass_at_1".
    - ``include_unfinished``: also show runs still in progress (with their current coverage).
    """

    developer: str | None = None
    open_weights: bool | None = None
    verification: str | None = None
    release: str | None = None
    template: str | None = None
    with_paper: bool | None = True
    contamination: str = Contamination.NONE.value
    sort: str = "-scaled_pass_at_1"
    include_unfinished: bool = False

    def __post_init__(self) -> None:
        if self.contamination not in CONTAMINATION_MODES:
            raise ValueError(f"contamination: {self.contamination!r} is not one of {CONTAMINATION_MODES}")
        if self.sort.lstrip("-") not in SORT_KEYS:
            raise ValueError(f"sort: {self.sort!r} is not one of {sorted(SORT_KEYS)} (optionally with '-')")


@dataclass(frozen=True)
class ModelRef:
    """A language model as every table shows it."""

    key: str
    name: str
    developer: str
    company: str
    open_weights: bool | None
    knowledge_cutoff: date | None
    knowledge_cutoff_raw: str
    provider_model_id: str
    #: created by a user through an upload (``LanguageModel.Management.SELF_REPORTED``): shown as such
    self_reported: bool = False

    @classmethod
    def of(cls, m: LanguageModel) -> ModelRef:
        return cls(
            key=m.key,
            name=m.name,
            developer=m.developer,
            company=m.company,
            open_weights=m.open_weights,
            knowledge_cutoff=model_cutoff(m),
            knowledge_cutoff_raw=m.knowledge_cutoff_raw,
            provider_model_id=m.provider_model_id,
            self_reported=m.is_self_reported,
        )


@dataclass(frozen=True)
class Score:
    """A run's score over one selection of papers. ``ci95`` is None when not computed for that selection
    (the bootstrap cannot be recombined from per-paper sums: only stored selections have it)."""

    scaled_pass_at_1: float | None
    scaled_pass_at_1_std: float | None
    line_rates: tuple[float | None, ...]
    pass_at_1: float | None
    pass_at_1_std: float | None
    task_rates: tuple[float | None, ...]
    ci95: tuple[float, float] | None
    snippets: int
    expected_snippets: int
    lines: int
    coverage: float
    papers: int

    @property
    def coverage_complete(self) -> bool:
        return self.expected_snippets > 0 and self.snippets >= self.expected_snippets


@dataclass(frozen=True)
class Row:
    """One line of the leaderboard (one run). ``rank`` is the competition rank by Scaled Pass@1 among the
    rows shown of the same group (release, template, paper setting; equal scores share a rank); None for a
    row without a score and for an ``incomplete`` row (below full coverage: listed apart, never ranked).
    ``rank_low``..``rank_high`` is the range of ranks the 95% bootstrap intervals allow (a row without an
    interval counts as its point score): ``rank_low`` = 1 + the rows whose lower bound is above this row's
    upper bound, ``rank_high`` = the rows whose upper bound reaches this row's lower bound. ``tied_with``
    lists the model keys of the ranked rows of the group whose interval overlaps this row's
    (statistically indistinguishable). ``selection`` lists the papers scored (None = every paper)."""

    rank: int | None
    run_id: int
    model: ModelRef
    release: str | None
    template: str
    with_paper: bool
    verification: str
    source: str
    status: str
    n_completions: int
    finished_at: datetime | None
    cost_usd: float | None
    contamination: str
    selection: tuple[str, ...] | None
    score: Score
    rank_low: int | None = None
    rank_high: int | None = None
    tied_with: tuple[str, ...] = ()

    @property
    def group(self) -> tuple[str | None, str, bool]:
        """What a rank is relative to: (release, template, with_paper)."""
        return (self.release, self.template, self.with_paper)

    @property
    def incomplete(self) -> bool:
        """Below full coverage of what it is scored on: listed apart with its coverage, never ranked."""
        return 0 < self.score.expected_snippets and self.score.snippets < self.score.expected_snippets

    # Flat accessors: templates, serializers and CSV read these names.
    @property
    def scaled_pass_at_1(self) -> float | None:
        return self.score.scaled_pass_at_1

    @property
    def pass_at_1(self) -> float | None:
        return self.score.pass_at_1

    @property
    def coverage_complete(self) -> bool:
        return self.score.coverage_complete


SORT_KEYS.update(
    {
        "scaled_pass_at_1": lambda r: r.score.scaled_pass_at_1,
        "pass_at_1": lambda r: r.score.pass_at_1,
        "std": lambda r: r.score.scaled_pass_at_1_std,
        "coverage": lambda r: r.score.coverage,
        "snippets": lambda r: r.score.snippets,
        "cost": lambda r: r.cost_usd,
        "name": lambda r: r.model.name.lower(),
        "developer": lambda r: (r.model.developer or "").lower(),
        "cutoff": lambda r: r.model.knowledge_cutoff,
        "date": lambda r: r.finished_at,
    }
)


def _none(value: Any) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def _score_from_row(row: RunScore) -> Score:
    return Score(
        scaled_pass_at_1=row.line_mean,
        scaled_pass_at_1_std=row.line_std,
        line_rates=tuple(row.line_rates),
        pass_at_1=row.task_mean,
        pass_at_1_std=row.task_std,
        task_rates=tuple(row.task_rates),
        ci95=(row.ci_low, row.ci_high) if row.ci_low is not None and row.ci_high is not None else None,
        snippets=row.snippets,
        expected_snippets=row.expected_snippets,
        lines=row.lines,
        coverage=row.coverage,
        papers=row.papers,
    )


class PaperSums(NamedTuple):
    """The fields of a ``RunPaperScore`` that ``score_from_papers`` reads, as a plain tuple."""

    run_id: int
    paper_id: int
    line_num: list[int]
    line_den: list[int]
    task_num: list[int]
    task_den: list[int]
    snippets: int
    expected_snippets: int
    lines: int
    results: int


def score_from_papers(rows: Iterable[RunPaperScore | PaperSums]) -> Score:
    """Recombine per-paper sums into one score (exact for line/task rates; ``ci95`` None)."""
    rows = list(rows)
    width = max((len(r.task_den) for r in rows), default=0)
    sums = {k: [0] * width for k in ("line_num", "line_den", "task_num", "task_den")}
    for r in rows:
        for k, acc in sums.items():
            for i, v in enumerate(getattr(r, k)):
                acc[i] += v
    line = combine_rates(sums["line_num"], sums["line_den"], sums["task_den"])
    task = combine_rates(sums["task_num"], sums["task_den"], sums["task_den"])
    expected = sum(r.expected_snippets for r in rows)
    snippets = sum(r.snippets for r in rows)
    return Score(
        scaled_pass_at_1=_none(line.mean),
        scaled_pass_at_1_std=_none(line.std),
        line_rates=tuple(_none(v) for v in line.rates),
        pass_at_1=_none(task.mean),
        pass_at_1_std=_none(task.std),
        task_rates=tuple(_none(v) for v in task.rates),
        ci95=None,
        snippets=snippets,
        expected_snippets=expected,
        lines=sum(r.lines for r in rows),
        coverage=snippets / expected if expected else 0.0,
        papers=sum(1 for r in rows if r.results),
    )


def _run_filter(filters: LeaderboardFilters, prefix: str = "run__") -> Q:
    q = Q()
    if not filters.include_unfinished:
        q &= Q(**{f"{prefix}status": EvaluationRun.Status.FINISHED})
    else:
        q &= ~Q(**{f"{prefix}status__in": [EvaluationRun.Status.FAILED, EvaluationRun.Status.CANCELLED]})
    if filters.developer:
        q &= Q(**{f"{prefix}model__developer__iexact": filters.developer})
    if filters.open_weights is not None:
        q &= Q(**{f"{prefix}model__open_weights": filters.open_weights})
    if filters.verification:
        q &= Q(**{f"{prefix}verification": filters.verification})
    if filters.release == ANY_RELEASE:
        pass
    elif filters.release:
        q &= Q(**{f"{prefix}release__name": filters.release})
    else:
        # The default release in the same query: the one marked default, else the newest; every run while
        # there is no release at all.
        default = Release.objects.order_by("-is_default", "-created_at", "-pk").values("pk")[:1]
        q &= Q(**{f"{prefix}release_id": Subquery(default)}) | ~Exists(Release.objects.all())
    if filters.template:
        q &= Q(**{f"{prefix}template": filters.template})
    if filters.with_paper is not None:
        q &= Q(**{f"{prefix}with_paper": filters.with_paper})
    return q


def _latest_only(score_rows: Iterable[RunScore]) -> list[RunScore]:
    """Keep the latest run per (model, release, template, with_paper)."""
    best: dict[tuple, RunScore] = {}
    for row in score_rows:
        run = row.run
        key = (run.model_id, run.release_id, run.template, run.with_paper)
        stamp = (run.finished_at or run.created_at, run.pk)
        if key not in best or stamp > (
            best[key].run.finished_at or best[key].run.created_at,
            best[key].run.pk,
        ):
            best[key] = row
    return list(best.values())


def _board_scores(filters: LeaderboardFilters, mode: str) -> list[RunScore]:
    """The ``mode`` score rows of the runs on the board (one query)."""
    qs = (
        RunScore.objects.filter(_run_filter(filters), mode=mode)
        .select_related("run__model", "run__release")
        .order_by("run_id")
    )
    return _latest_only(qs)


def _row(score_row: RunScore, score: Score, mode: str, selection: Sequence[str] | None) -> Row:
    run = score_row.run
    cost = float(run.cost_usd) if run.cost_usd or run.input_tokens or run.output_tokens else None
    return Row(
        rank=None,
        run_id=run.pk,
        model=ModelRef.of(run.model),
        release=run.release.name if run.release_id else None,
        template=run.template,
        with_paper=run.with_paper,
        verification=run.verification,
        source=run.source,
        status=run.status,
        n_completions=run.n_completions,
        finished_at=evaluation_selectors.run_result_date(run),
        cost_usd=cost,
        contamination=mode,
        selection=tuple(selection) if selection is not None else None,
        score=score,
    )


def _group_order(score_rows: Iterable[RunScore]) -> dict[tuple, tuple]:
    """Sort key of each group of rows: the default release first, then newer releases, runs of no release
    last; within a release by template, with the paper before without."""
    order = {}
    for s in score_rows:
        run = s.run
        release = run.release if run.release_id else None
        key = (release.name if release else None, run.template, run.with_paper)
        order[key] = (
            release is None,
            not (release and release.is_default),
            -(release.created_at.timestamp() if release else 0),
            key[0] or "",
            run.template,
            not run.with_paper,
        )
    return order


def _rank_and_sort(rows: list[Row], sort: str, group_order: dict[tuple, tuple]) -> list[Row]:
    """Rank every group on its own, then list the groups in ``group_order``, each with its ranked (and
    unscored) rows in ``sort`` order followed by its incomplete rows in the same order."""
    groups: dict[tuple, list[Row]] = defaultdict(list)
    for r in rows:
        groups[r.group].append(r)
    out: list[Row] = []
    for key in sorted(groups, key=lambda k: group_order.get(k, (True, True, 0, "", "", True))):
        ranked = _rank_group(groups[key])
        out.extend(_sorted(ranked, sort, lambda r: not r.incomplete))
        out.extend(_sorted(ranked, sort, lambda r: r.incomplete))
    return out


def _rank_group(rows: list[Row]) -> list[Row]:
    """Competition ranks by Scaled Pass@1, rank ranges and ties from the bootstrap intervals, among the
    scored rows at full coverage of one group."""
    ranked = sorted(
        (r for r in rows if r.score.scaled_pass_at_1 is not None and not r.incomplete),
        key=lambda r: -r.score.scaled_pass_at_1,
    )
    bounds = {r.run_id: r.score.ci95 or (r.score.scaled_pass_at_1, r.score.scaled_pass_at_1) for r in ranked}
    done: dict[int, Row] = {}
    for pos, r in enumerate(ranked):
        prev = ranked[pos - 1] if pos else None
        same = prev is not None and prev.score.scaled_pass_at_1 == r.score.scaled_pass_at_1
        rank = done[prev.run_id].rank if same else pos + 1
        lo, hi = bounds[r.run_id]
        above = sum(1 for o in ranked if bounds[o.run_id][0] > hi)
        reach = sum(1 for o in ranked if bounds[o.run_id][1] >= lo)
        tied = tuple(
            o.model.key
            for o in ranked
            if o.run_id != r.run_id and bounds[o.run_id][0] <= hi and bounds[o.run_id][1] >= lo
        )
        done[r.run_id] = replace(
            r, rank=rank, rank_low=min(1 + above, rank), rank_high=max(reach, rank), tied_with=tied
        )
    return [done.get(r.run_id, r) for r in rows]


def _sorted(rows: list[Row], sort: str, keep: Callable[[Row], bool]) -> list[Row]:
    """The rows ``keep`` selects in ``sort`` order; rows without a value for the sort key last."""
    descending = sort.startswith("-")
    keyfunc = SORT_KEYS[sort.lstrip("-")]
    chosen = [r for r in rows if keep(r)]
    present = [r for r in chosen if keyfunc(r) is not None]
    absent = [r for r in chosen if keyfunc(r) is None]
    # Stable tie-break: model key (as the core's ``score_published``), then run id, whatever the direction.
    present.sort(key=lambda r: (r.model.key, r.run_id))
    present.sort(key=keyfunc, reverse=descending)
    absent.sort(key=lambda r: (r.model.key, r.run_id))
    return present + absent


def board_version() -> str:
    """A token that changes whenever the read models or the metadata they show change: the number and
    the latest computation time of the score rows (a refresh deletes and recreates a run's rows, so every
    aggregation moves it), the latest edit of models and papers, and the releases (filter choices). One
    query, on small tables. The cache layer (``leaderboard.caching``) keys every stored body by it, so a
    refresh is visible on the next request."""
    with connection.cursor() as cur:
        cur.execute(
            f"SELECT (SELECT COUNT(*) FROM {RunScore._meta.db_table}),"
            f" (SELECT MAX(computed_at) FROM {RunScore._meta.db_table}),"
            f" (SELECT MAX(updated_at) FROM {LanguageModel._meta.db_table}),"
            f" (SELECT MAX(updated_at) FROM {Paper._meta.db_table}),"
            f" (SELECT COUNT(*) FROM {Release._meta.db_table}),"
            f" (SELECT MAX(id) FROM {Release._meta.db_table})"
        )
        return "|".join(str(v) for v in cur.fetchone())


def leaderboard_rows(
    *, release: Release | None = None, filters: LeaderboardFilters | None = None
) -> list[Row]:
    """The leaderboard rows for ``filters`` (``release`` overrides ``filters.release``), ranked per group
    and sorted (the ranking rule of the module docstring).

    Scores per contamination mode:
    - ``none`` and ``per-model``: the stored ``RunScore`` rows (bootstrap interval included);
    - ``global``: the original rule over the cutoffs of every model of the run's release, whatever the
      other filters keep (``cutoffs.release_global_selections``). When that selection equals the stored
      one (the usual case) the stored row is used; otherwise the score is recombined exactly from
      per-paper sums, and ``ci95`` is None.

    At most five queries whatever the number of rows or releases.
    """
    filters = filters or LeaderboardFilters()
    if release is not None:
        filters = replace(filters, release=release.name)
    mode = filters.contamination
    score_rows = _board_scores(filters, mode)
    order = _group_order(score_rows)
    if mode != Contamination.GLOBAL:
        rows = [_row(s, _score_from_row(s), mode, s.selection) for s in score_rows]
        return _rank_and_sort(rows, filters.sort, order)
    wanted = release_global_selections({s.run.release_id for s in score_rows})
    recombine = [s for s in score_rows if s.selection != wanted[s.run.release_id]]
    per_paper: dict[int, list[RunPaperScore]] = defaultdict(list)
    if recombine:
        for p in RunPaperScore.objects.filter(run_id__in=[s.run_id for s in recombine]).select_related(
            "paper"
        ):
            per_paper[p.run_id].append(p)
    rows = []
    for s in score_rows:
        selection = wanted[s.run.release_id]
        if s.selection == selection:
            score = _score_from_row(s)
        else:
            kept = set(selection)
            score = score_from_papers(p for p in per_paper[s.run_id] if p.paper.key in kept)
        rows.append(_row(s, score, mode, selection))
    return _rank_and_sort(rows, filters.sort, order)


# --- model page ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PaperScoreRow:
    """One run on one paper. ``after_cutoff``: the paper's first commit is after the model's cutoff
    (None when either date is unknown)."""

    paper_key: str
    paper_title: str
    first_commit_date: date | None
    after_cutoff: bool | None
    scaled_pass_at_1: float | None
    scaled_pass_at_1_std: float | None
    snippets: int
    expected_snippets: int
    lines: int
    passed: int
    results: int


@dataclass(frozen=True)
class ErrorCountRow:
    category: str
    label: str
    tier: str
    count: int
    share: float  # percent of the failures of the same tier


@dataclass(frozen=True)
class SnippetVerdict:
    """One cell of a verdict grid: ``verdicts[c]`` is P (passed), F (failed), - (no result) per index."""

    snippet_id: int
    paper_key: str
    task_key: str
    name: str
    ordinal: int
    depth: int | None
    lines: int
    verdicts: str
    passed: int
    tested: int
    category: str
    #: False: the snippet's test does not check it (a maintainer accepted that; docs/validation.md)
    checked_by_test: bool = True


@dataclass(frozen=True)
class RunSummary:
    run_id: int
    release: str | None
    template: str
    with_paper: bool
    verification: str
    source: str
    status: str
    created_at: datetime
    finished_at: datetime | None
    scaled_pass_at_1: float | None
    pass_at_1: float | None
    coverage: float | None


@dataclass(frozen=True)
class ModelDetail:
    """Everything the model page shows, for one run of the model (``run``; None when it has none
    scored). ``before_cutoff``/``after_cutoff`` score the papers whose first commit is on/before vs after
    the model's cutoff (None when the cutoff is unknown); ``undated_papers`` have no first commit date."""

    model: ModelRef
    runs: tuple[RunSummary, ...]
    run: RunSummary | None
    scores: dict[str, Score]  # contamination mode -> stored score of ``run``
    per_paper: tuple[PaperScoreRow, ...]
    errors: tuple[ErrorCountRow, ...]
    infrastructure_errors: tuple[ErrorCountRow, ...]
    verdict_grid: tuple[SnippetVerdict, ...]
    before_cutoff: Score | None
    after_cutoff: Score | None
    undated_papers: tuple[str, ...]


def _after(paper_date: date | None, cutoff: date | None) -> bool | None:
    if paper_date is None or cutoff is None:
        return None
    return paper_date > cutoff


def _error_rows(counts: Iterable[tuple[str, str, int]]) -> tuple[tuple[ErrorCountRow, ...], ...]:
    by_tier: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for category, tier, n in counts:
        by_tier[tier][category] += n
    out = []
    for tier in (TestResult.Tier.MODEL, TestResult.Tier.INFRASTRUCTURE):
        cats = by_tier.get(tier, {})
        total = sum(cats.values())
        out.append(
            tuple(
                ErrorCountRow(
                    category=c,
                    label=error_catalogue.LABELS.get(c, c.replace("_", " ").capitalize()),
                    tier=tier,
                    count=n,
                    share=100 * n / total if total else 0.0,
                )
                for c, n in sorted(cats.items(), key=lambda kv: (-kv[1], kv[0]))
            )
        )
    return out[0], out[1]


def _summary(run: EvaluationRun, score: RunScore | None) -> RunSummary:
    return RunSummary(
        run_id=run.pk,
        release=run.release.name if run.release_id else None,
        template=run.template,
        with_paper=run.with_paper,
        verification=run.verification,
        source=run.source,
        status=run.status,
        created_at=run.created_at,
        finished_at=run.finished_at,
        scaled_pass_at_1=score.line_mean if score else None,
        pass_at_1=score.task_mean if score else None,
        coverage=score.coverage if score else None,
    )


def model_detail(*, key: str, run_id: int | None = None) -> ModelDetail:
    """The model page for ``key``: by default its latest finished run with the paper in the prompt (else
    its latest scored run); ``run_id`` picks another of its runs. Raises ``LanguageModel.DoesNotExist``
    for an unknown key and ``EvaluationRun.DoesNotExist`` for a run of another model. Seven queries."""
    model = LanguageModel.objects.get(key=key)
    runs = list(EvaluationRun.objects.filter(model=model).select_related("release").order_by("-created_at"))
    scores = defaultdict(dict)
    for s in RunScore.objects.filter(run__model=model):
        scores[s.run_id][s.mode] = s
    summaries = tuple(_summary(r, scores[r.pk].get(Contamination.NONE)) for r in runs)
    if run_id is not None:
        chosen = next((r for r in runs if r.pk == run_id), None)
        if chosen is None:
            raise EvaluationRun.DoesNotExist(f"run {run_id} is not a run of {key}")
    else:
        scored = [r for r in runs if r.pk in scores]
        preferred = [r for r in scored if r.status == EvaluationRun.Status.FINISHED and r.with_paper]
        chosen = (preferred or scored or [None])[0]
    cutoff = model_cutoff(model)
    if chosen is None:
        return ModelDetail(
            model=ModelRef.of(model), runs=summaries, run=None, scores={}, per_paper=(), errors=(),
            infrastructure_errors=(), verdict_grid=(), before_cutoff=None, after_cutoff=None,
            undated_papers=(),
        )  # fmt: skip
    paper_rows = list(RunPaperScore.objects.filter(run=chosen).select_related("paper").order_by("paper__key"))
    per_paper = tuple(
        PaperScoreRow(
            paper_key=p.paper.key,
            paper_title=p.paper.title,
            first_commit_date=p.paper.first_commit_date,
            after_cutoff=_after(p.paper.first_commit_date, cutoff),
            scaled_pass_at_1=p.line_mean,
            scaled_pass_at_1_std=p.line_std,
            snippets=p.snippets,
            expected_snippets=p.expected_snippets,
            lines=p.lines,
            passed=p.passed,
            results=p.results,
        )
        for p in paper_rows
    )
    errors, infra = _error_rows(
        RunErrorCount.objects.filter(run=chosen).values_list("category", "tier", "count")
    )
    grid = tuple(
        SnippetVerdict(
            snippet_id=sid, paper_key=pkey, task_key=tkey, name=name, ordinal=ordinal, depth=depth,
            lines=lines, verdicts=verdicts, passed=passed, tested=tested, category=category, checked_by_test=checked,
        )
        for sid, pkey, tkey, name, ordinal, depth, lines, verdicts, passed, tested, category, checked in (
            RunSnippetScore.objects.filter(run=chosen)
            .order_by("paper__key", "snippet__task_version__task__key", "snippet__ordinal")
            .values_list(
                "snippet_id", "paper__key", "snippet__task_version__task__key", "snippet__name",
                "snippet__ordinal", "snippet__depth", "lines", "verdicts", "passed", "tested", "category",
                "snippet__checked_by_test",
            )
        )
    )  # fmt: skip
    before = [p for p, row in zip(paper_rows, per_paper, strict=True) if row.after_cutoff is False]
    after = [p for p, row in zip(paper_rows, per_paper, strict=True) if row.after_cutoff is True]
    return ModelDetail(
        model=ModelRef.of(model),
        runs=summaries,
        run=_summary(chosen, scores[chosen.pk].get(Contamination.NONE)),
        scores={mode: _score_from_row(s) for mode, s in scores[chosen.pk].items()},
        per_paper=per_paper,
        errors=errors,
        infrastructure_errors=infra,
        verdict_grid=grid,
        before_cutoff=score_from_papers(before) if cutoff is not None else None,
        after_cutoff=score_from_papers(after) if cutoff is not None else None,
        undated_papers=tuple(p.paper_key for p in per_paper if p.first_commit_date is None),
    )


# --- paper page ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SnippetNode:
    """A snippet of the paper's current task versions, in document order; ``depth``/``parent_id`` give
    the tree. ``solve_rate`` is the percentage of passed results across every scored run (None: none)."""

    id: int
    task_key: str
    task_version: int
    name: str
    ordinal: int
    depth: int | None
    parent_id: int | None
    lines: int
    runs: int
    results: int
    passed: int
    solve_rate: float | None
    checked_by_test: bool = True
    unchecked_reason: str = ""
    unchecked_explanation: str = ""


@dataclass(frozen=True)
class MatrixRow:
    """One run on the paper: its paper score and its verdicts per snippet id (missing id: no result)."""

    run_id: int
    model: ModelRef
    with_paper: bool
    scaled_pass_at_1: float | None
    after_cutoff: bool | None
    verdicts: dict[int, str]


@dataclass(frozen=True)
class PaperDetail:
    key: str
    title: str
    venue: str
    arxiv_id: str
    arxiv_abs: str
    arxiv_date: date | None
    arxiv_v1_date: date | None
    github_url: str
    first_commit_date: date | None
    last_commit_date: date | None
    tasks: tuple[str, ...]
    snippets: tuple[SnippetNode, ...]
    matrix: tuple[MatrixRow, ...]  # best paper score first


def paper_detail(*, key: str, filters: LeaderboardFilters | None = None) -> PaperDetail:
    """The paper page for ``key``: metadata, the snippet tree of each task's latest version with its
    difficulty, and the model x snippet matrix over the runs ``filters`` keep (the board's runs by
    default, but of every release when ``filters`` names none: a paper is in the releases that hold it,
    not necessarily the default one). Raises ``Paper.DoesNotExist``. Four queries."""
    filters = filters or LeaderboardFilters()
    if filters.release is None:
        filters = replace(filters, release=ANY_RELEASE)
    paper = Paper.objects.get(key=key)
    snippets = list(
        Snippet.objects.filter(task_version__task__paper=paper)
        .select_related("task_version__task", "stat")
        .order_by("task_version__task__key", "-task_version__number", "ordinal")
    )
    latest: dict[str, int] = {}
    for s in snippets:
        latest.setdefault(s.task_version.task.key, s.task_version.number)
    nodes = tuple(
        SnippetNode(
            id=s.pk,
            task_key=s.task_version.task.key,
            task_version=s.task_version.number,
            name=s.name,
            ordinal=s.ordinal,
            depth=s.depth,
            parent_id=s.parent_id,
            lines=s.lines,
            runs=_stat(s).runs,
            results=_stat(s).results,
            passed=_stat(s).passed,
            solve_rate=_stat(s).solve_rate,
            checked_by_test=s.checked_by_test,
            unchecked_reason=s.get_unchecked_reason_display() if s.unchecked_reason else "",
            unchecked_explanation=s.unchecked_explanation,
        )
        for s in snippets
        if s.task_version.number == latest[s.task_version.task.key]
    )
    board = {s.run_id: s for s in _board_scores(filters, Contamination.NONE)}
    paper_scores = {p.run_id: p for p in RunPaperScore.objects.filter(paper=paper, run_id__in=list(board))}
    verdicts: dict[int, dict[int, str]] = defaultdict(dict)
    for run_id, sid, text in RunSnippetScore.objects.filter(
        paper=paper, run_id__in=list(board), snippet_id__in=[n.id for n in nodes]
    ).values_list("run_id", "snippet_id", "verdicts"):
        verdicts[run_id][sid] = text
    matrix = [
        MatrixRow(
            run_id=run_id,
            model=ModelRef.of(s.run.model),
            with_paper=s.run.with_paper,
            scaled_pass_at_1=paper_scores[run_id].line_mean if run_id in paper_scores else None,
            after_cutoff=_after(paper.first_commit_date, model_cutoff(s.run.model)),
            verdicts=verdicts.get(run_id, {}),
        )
        for run_id, s in board.items()
        if run_id in paper_scores
    ]
    matrix.sort(key=lambda m: (m.scaled_pass_at_1 is None, -(m.scaled_pass_at_1 or 0), m.model.name))
    return PaperDetail(
        key=paper.key,
        title=paper.title,
        venue=paper.venue,
        arxiv_id=paper.arxiv_id,
        arxiv_abs=paper.arxiv_abs,
        arxiv_date=paper.arxiv_date,
        arxiv_v1_date=paper.arxiv_v1_date,
        github_url=paper.github_url,
        first_commit_date=paper.first_commit_date,
        last_commit_date=paper.last_commit_date,
        tasks=tuple(latest),
        snippets=nodes,
        matrix=tuple(matrix),
    )


def _stat(s: Snippet) -> SnippetStat:
    try:
        return s.stat
    except SnippetStat.DoesNotExist:
        return SnippetStat(snippet=s)


# --- snippet page -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Attempt:
    """One completion of the snippet with its verdict of record (outcome "" = not tested yet)."""

    completion_id: int
    completion_idx: int
    run_id: int
    model: ModelRef
    with_paper: bool
    template: str
    code: str
    code_extracted: bool
    outcome: str
    passed: bool | None
    category: str
    tier: str
    exception_type: str
    exception_message: str
    stdout_tail: str
    stderr_tail: str
    duration_s: float | None


@dataclass(frozen=True)
class SnippetDetail:
    id: int
    paper_key: str
    paper_title: str
    task_key: str
    task_version_id: int
    task_version: int
    name: str
    file: str
    start_line: int | None
    end_line: int | None
    lines: int
    depth: int | None
    parent_id: int | None
    reference_code: str
    runs: int
    results: int
    passed: int
    solve_rate: float | None
    with_paper_solve_rate: float | None
    without_paper_solve_rate: float | None
    attempts: tuple[Attempt, ...]  # best models first is the page's choice: ordered by model name here
    checked_by_test: bool = True
    unchecked_reason: str = ""
    unchecked_explanation: str = ""


def _rate(passed: int, results: int) -> float | None:
    return 100 * passed / results if results else None


def snippet_detail(*, snippet_id: int) -> SnippetDetail:
    """A snippet with its reference code, difficulty and every completion of it with its verdict (from
    finished, testing or generating runs). Raises ``Snippet.DoesNotExist``. Two queries."""
    s = Snippet.objects.select_related("task_version__task__paper", "stat").get(pk=snippet_id)
    stat = _stat(s)
    attempts = tuple(
        Attempt(
            completion_id=c.pk,
            completion_idx=c.completion_idx,
            run_id=c.run_id,
            model=ModelRef.of(c.run.model),
            with_paper=c.run.with_paper,
            template=c.run.template,
            code=c.code,
            code_extracted=c.code_extracted,
            outcome=_result(c).outcome if _result(c) else "",
            passed=_result(c).passed if _result(c) else None,
            category=_result(c).category if _result(c) else "",
            tier=_result(c).tier if _result(c) else "",
            exception_type=_result(c).exception_type if _result(c) else "",
            exception_message=_result(c).exception_message if _result(c) else "",
            stdout_tail=_result(c).stdout_tail if _result(c) else "",
            stderr_tail=_result(c).stderr_tail if _result(c) else "",
            duration_s=_result(c).duration_s if _result(c) else None,
        )
        for c in Completion.objects.filter(snippet=s)
        .exclude(run__status__in=[EvaluationRun.Status.FAILED, EvaluationRun.Status.CANCELLED])
        .select_related("run__model", "result")
        .order_by("run__model__name", "run_id", "completion_idx")
    )
    return SnippetDetail(
        id=s.pk,
        paper_key=s.task_version.task.paper.key,
        paper_title=s.task_version.task.paper.title,
        task_key=s.task_version.task.key,
        task_version_id=s.task_version_id,
        task_version=s.task_version.number,
        name=s.name,
        file=s.file,
        start_line=s.start_line,
        end_line=s.end_line,
        lines=s.lines,
        depth=s.depth,
        parent_id=s.parent_id,
        reference_code=s.code,
        runs=stat.runs,
        results=stat.results,
        passed=stat.passed,
        solve_rate=stat.solve_rate,
        with_paper_solve_rate=_rate(stat.with_paper_passed, stat.with_paper_results),
        without_paper_solve_rate=_rate(stat.without_paper_passed, stat.without_paper_results),
        attempts=attempts,
        checked_by_test=s.checked_by_test,
        unchecked_reason=s.get_unchecked_reason_display() if s.unchecked_reason else "",
        unchecked_explanation=s.unchecked_explanation,
    )


def _result(c: Completion) -> TestResult | None:
    try:
        return c.result
    except TestResult.DoesNotExist:
        return None


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


def error_breakdown(*, filters: LeaderboardFilters | None = None) -> ErrorBreakdown:
    """Error categories over the runs ``filters`` keep (the board's by default). Two queries."""
    filters = filters or LeaderboardFilters()
    board = _board_scores(filters, Contamination.NONE)
    board.sort(key=lambda s: (s.line_mean is None, -(s.line_mean or 0), s.run.model.name))
    counts = list(
        RunErrorCount.objects.filter(run_id__in=[s.run_id for s in board]).values_list(
            "run_id", "category", "tier", "count"
        )
    )
    categories, infra = _error_rows((c, t, n) for _r, c, t, n in counts)
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
    return ErrorBreakdown(categories=categories, infrastructure=infra, per_model=per_model, labels=labels)


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
    papers_after: int


@dataclass(frozen=True)
class ContaminationOverview:
    """Cutoffs vs paper dates. ``global_cutoff`` is the original rule's (latest cutoff compared as text),
    ``global_cutoff_fixed`` the same compared as dates; ``global_papers`` the papers the original rule
    keeps for the models shown."""

    papers: tuple[PaperDate, ...]
    models: tuple[ModelContamination, ...]
    global_cutoff: date | None
    global_cutoff_fixed: date | None
    global_papers: tuple[str, ...]


def contamination_overview(*, filters: LeaderboardFilters | None = None) -> ContaminationOverview:
    """The contamination page over the runs ``filters`` keep (its ``contamination`` is ignored). The global
    rule is that of the releases of those runs, over every model of the release whatever the other
    filters (as ``leaderboard_rows``). Five queries."""
    filters = replace(filters or LeaderboardFilters(), contamination=Contamination.NONE.value)
    board = _board_scores(filters, Contamination.NONE)
    papers = list(Paper.objects.order_by("first_commit_date", "key"))
    releases = {s.run.release_id for s in board}
    cutoffs = [c for cs in release_cutoffs(releases).values() for c in cs]
    kept = {k for keys in release_global_selections(releases).values() for k in keys}
    # Plain tuples, unordered: building model instances (and a Paper per row) was most of a cold page.
    per_run: dict[int, list[PaperSums]] = defaultdict(list)
    sums = RunPaperScore.objects.filter(run_id__in=[s.run_id for s in board]).order_by()
    for row in sums.values_list(*PaperSums._fields):
        per_run[row[0]].append(PaperSums(*row))
    dates = {p.pk: p.first_commit_date for p in papers}
    models = []
    for s in sorted(board, key=lambda s: (s.line_mean is None, -(s.line_mean or 0), s.run.model.name)):
        cutoff = model_cutoff(s.run.model)
        rows = per_run[s.run_id]
        after = [p for p in rows if _after(dates[p.paper_id], cutoff) is True]
        before = [p for p in rows if _after(dates[p.paper_id], cutoff) is False]
        models.append(
            ModelContamination(
                run_id=s.run_id,
                model=ModelRef.of(s.run.model),
                full=_score_from_row(s),
                before=score_from_papers(before) if cutoff else None,
                after=score_from_papers(after) if cutoff else None,
                papers_after=len(after),
            )
        )
    return ContaminationOverview(
        papers=tuple(PaperDate(p.key, p.title, p.first_commit_date, p.key in kept) for p in papers),
        models=tuple(models),
        global_cutoff=scoring.original_global_cutoff(cutoffs),
        global_cutoff_fixed=scoring.fixed_global_cutoff(cutoffs),
        global_papers=tuple(sorted(kept)),
    )


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
    board = _board_scores(filters, Contamination.NONE)
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
                    with_paper=_score_from_row(w),
                    without_paper=_score_from_row(wo),
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


@dataclass(frozen=True)
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
    """Per (run, paper) scores of the board's runs (the paper's heatmap; ``problem_scores``). Two
    queries."""
    filters = filters or LeaderboardFilters()
    board = {s.run_id: s for s in _board_scores(filters, Contamination.NONE)}
    cutoffs = {run_id: model_cutoff(score.run.model) for run_id, score in board.items()}
    out = []
    # Plain tuples: the per-index sums (JSON) are not needed here, and model instances cost most of the time.
    rows = RunPaperScore.objects.filter(run_id__in=list(board)).order_by().values_list(
        "run_id", "paper__key", "paper__first_commit_date", "line_mean", "line_std", "snippets",
        "expected_snippets", "lines",
    )  # fmt: skip
    for run_id, paper_key, first_commit, line_mean, line_std, snippets, expected, lines in rows:
        model = board[run_id].run.model
        out.append(
            PaperTableRow(
                run_id=run_id,
                model_key=model.key,
                model_name=model.name,
                paper_key=paper_key,
                first_commit_date=first_commit,
                after_cutoff=_after(first_commit, cutoffs[run_id]),
                scaled_pass_at_1=line_mean,
                scaled_pass_at_1_std=line_std,
                snippets=snippets,
                expected_snippets=expected,
                lines=lines,
            )
        )
    out.sort(key=lambda r: (r.paper_key, r.model_name.lower(), r.run_id))
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
            with_paper_solve_rate=_rate(wp, wr), without_paper_solve_rate=_rate(np_, nr), checked_by_test=checked,
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


def model_list() -> QuerySet[LanguageModel]:
    """Every language model, by name."""
    return LanguageModel.objects.order_by("name")


def paper_list() -> QuerySet[Paper]:
    """Every paper, by key."""
    return Paper.objects.order_by("key")


def snippet_list(*, paper: str | None = None) -> QuerySet[Snippet]:
    """Every snippet of every task version with its difficulty (``stat``, absent before any result), by
    task, version and document order; ``paper`` (a key) narrows it to one paper's."""
    qs = Snippet.objects.select_related("task_version__task__paper", "stat").order_by(
        "task_version__task__key", "task_version__number", "ordinal"
    )
    return qs.filter(task_version__task__paper__key=paper) if paper else qs


def release_names() -> list[str]:
    """Names of every release (filter choices)."""
    return list(Release.objects.order_by("name").values_list("name", flat=True))


def filter_choices() -> dict[str, list[str]]:
    """Values the filter controls offer: developers, templates and releases present among scored runs
    (two queries); ``release_default`` holds the name of the release the board shows by default (none
    while there is no release)."""
    runs = EvaluationRun.objects.filter(scores__mode=Contamination.NONE)
    pairs = set(runs.values_list("model__developer", "template"))
    # The default release's rule of ``_run_filter``: marked default, else the newest.
    releases = list(
        Release.objects.order_by("-is_default", "-created_at", "-pk").values_list("name", flat=True)
    )
    return {
        "developer": sorted({d for d, _t in pairs if d}, key=str.lower),
        "template": sorted({t for _d, t in pairs if t}),
        "release": sorted(releases),
        "release_default": releases[:1],
        "verification": [v.value for v in EvaluationRun.Verification],
        "contamination": list(CONTAMINATION_MODES),
    }


__all__ = [
    "ANY_RELEASE",
    "Ablation",
    "AblationPair",
    "Attempt",
    "ContaminationOverview",
    "ErrorBreakdown",
    "LeaderboardFilters",
    "ModelDetail",
    "ModelRef",
    "PaperDetail",
    "Row",
    "Score",
    "SnippetDetail",
    "ablation_pairs",
    "contamination_overview",
    "error_breakdown",
    "filter_choices",
    "leaderboard_rows",
    "model_detail",
    "paper_detail",
    "paper_list",
    "paper_scores_table",
    "snippet_detail",
    "snippet_list",
    "snippet_stats_table",
]


# --- finding out why: model search, comparison, failed snippets ----------------------------------------


def developer_names() -> list[str]:
    """Every developer of a known model, sorted case-insensitively (one query): the fixed order that gives
    each developer its colour, whatever a filter leaves on a chart."""
    names = LanguageModel.objects.exclude(developer="").values_list("developer", flat=True).distinct()
    return sorted(set(names), key=str.casefold)


#: the most models a search lists (a longer query narrows it)
SEARCH_LIMIT = 25


def model_search(*, query: str, limit: int = SEARCH_LIMIT) -> list[ModelRef]:
    """Models whose key, name or developer contains ``query`` (case-insensitive, surrounding blanks
    ignored), by name; an empty query finds nothing. One query."""
    text = query.strip()
    if not text:
        return []
    found = LanguageModel.objects.filter(
        Q(key__icontains=text) | Q(name__icontains=text) | Q(developer__icontains=text)
    ).order_by("name", "key")[:limit]
    return [ModelRef.of(m) for m in found]


def verdict_state(verdicts: str) -> str:
    """A snippet's verdicts (``SnippetVerdict.verdicts``) as one state: pass (every tested completion
    passed), fail (none did), partial (some did) or none (nothing tested)."""
    tested = [c for c in verdicts if c in "PF"]
    if not tested:
        return "none"
    if all(c == "P" for c in tested):
        return "pass"
    if all(c == "F" for c in tested):
        return "fail"
    return "partial"


@dataclass(frozen=True)
class FailedSnippet:
    """A snippet a run did not solve in every completion: ``completion_idx`` is its first failed
    completion (the one a link points at), ``label`` the category's name."""

    snippet_id: int
    paper_key: str
    task_key: str
    name: str
    lines: int
    category: str
    label: str
    run_id: int
    completion_idx: int
    failed: int
    tested: int


def failed_snippets(*, run_id: int, grid: Iterable[SnippetVerdict]) -> tuple[FailedSnippet, ...]:
    """The failed (or partly failed) snippets of one run's verdict grid, in the grid's order."""
    out = []
    for v in grid:
        if "F" not in v.verdicts:
            continue
        out.append(
            FailedSnippet(
                snippet_id=v.snippet_id,
                paper_key=v.paper_key,
                task_key=v.task_key,
                name=v.name,
                lines=v.lines,
                category=v.category,
                label=error_catalogue.LABELS.get(v.category, v.category.replace("_", " ").capitalize())
                if v.category
                else "",
                run_id=run_id,
                completion_idx=v.verdicts.index("F"),
                failed=v.verdicts.count("F"),
                tested=v.tested,
            )
        )
    return tuple(out)


def model_failed_snippets(*, key: str, run_id: int | None = None) -> tuple[FailedSnippet, ...]:
    """The failed snippets of the model's run shown on its page (``model_detail``'s choice of run)."""
    detail = model_detail(key=key, run_id=run_id)
    return failed_snippets(run_id=detail.run.run_id, grid=detail.verdict_grid) if detail.run else ()


@dataclass(frozen=True)
class ComparedCell:
    """One model's result on one snippet: ``state`` as ``verdict_state``; ``completion_idx`` the
    completion to look at (its first failure, else its first pass; None when nothing was tested)."""

    run_id: int | None
    state: str
    verdicts: str
    category: str
    completion_idx: int | None


@dataclass(frozen=True)
class ComparedSnippet:
    """A snippet as several models did it (``cells`` in the comparison's model order). Snippets are
    matched by paper, task and name, so runs on different releases compare where their tasks agree.
    ``differs``: the models' states are not all the same."""

    paper_key: str
    task_key: str
    name: str
    lines: int
    snippet_ids: tuple[int | None, ...]
    cells: tuple[ComparedCell, ...]
    differs: bool


@dataclass(frozen=True)
class ComparedPaper:
    """Per-paper Scaled Pass@1 of each model (None: not scored) and the spread between the best and the
    worst of them (None unless every model has a score)."""

    paper_key: str
    paper_title: str
    scores: tuple[float | None, ...]
    spread: float | None


@dataclass(frozen=True)
class ModelComparison:
    models: tuple[ModelDetail, ...]
    papers: tuple[ComparedPaper, ...]
    snippets: tuple[ComparedSnippet, ...]
    differing: int


def _cell(run_id: int | None, v: SnippetVerdict | None) -> ComparedCell:
    if v is None:
        return ComparedCell(run_id=run_id, state="none", verdicts="", category="", completion_idx=None)
    idx = v.verdicts.find("F")
    if idx < 0:
        idx = v.verdicts.find("P")
    return ComparedCell(
        run_id=run_id,
        state=verdict_state(v.verdicts),
        verdicts=v.verdicts,
        category=v.category,
        completion_idx=idx if idx >= 0 else None,
    )


def model_compare(*, keys: Sequence[str]) -> ModelComparison:
    """Two or more models side by side, each on the run its model page shows: per-paper scores and
    per-snippet verdicts, snippets whose verdicts differ first, then document order. Raises
    ``LanguageModel.DoesNotExist`` naming an unknown key. Seven queries per model."""
    details = []
    for key in dict.fromkeys(keys):
        try:
            details.append(model_detail(key=key))
        except LanguageModel.DoesNotExist:
            raise LanguageModel.DoesNotExist(f"no model {key!r}") from None
    papers: dict[str, str] = {}
    for d in details:
        for p in d.per_paper:
            papers.setdefault(p.paper_key, p.paper_title)
    paper_rows = []
    for paper_key in sorted(papers):
        scores = tuple(
            next((p.scaled_pass_at_1 for p in d.per_paper if p.paper_key == paper_key), None) for d in details
        )
        known = [s for s in scores if s is not None]
        spread = max(known) - min(known) if len(known) == len(scores) and known else None
        paper_rows.append(ComparedPaper(paper_key, papers[paper_key], scores, spread))
    by_model = [{(v.paper_key, v.task_key, v.name): v for v in d.verdict_grid} for d in details]
    order: dict[tuple[str, str, str], SnippetVerdict] = {}
    for grid in by_model:
        for k, v in grid.items():
            order.setdefault(k, v)
    snippets = []
    for k, first in sorted(order.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[1].ordinal)):
        verdicts = [grid.get(k) for grid in by_model]
        cells = tuple(
            _cell(d.run.run_id if d.run else None, v) for d, v in zip(details, verdicts, strict=True)
        )
        snippets.append(
            ComparedSnippet(
                paper_key=k[0],
                task_key=k[1],
                name=k[2],
                lines=first.lines,
                snippet_ids=tuple(v.snippet_id if v else None for v in verdicts),
                cells=cells,
                differs=len({c.state for c in cells}) > 1,
            )
        )
    snippets.sort(key=lambda s: not s.differs)
    return ModelComparison(
        models=tuple(details),
        papers=tuple(paper_rows),
        snippets=tuple(snippets),
        differing=sum(1 for s in snippets if s.differs),
    )
