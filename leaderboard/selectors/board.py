"""The board: which runs are on it, their ranks and order, the filters every page takes, and the filter
choices.

Which runs are "on the board": runs with scores whose status is finished (``include_unfinished`` adds
runs still generating or testing, with their partial coverage), restricted by the filters (the default
release unless ``release`` names another or ``ANY_RELEASE``), and of those only the latest run per (model,
release, template, with/without paper). ``board_scores`` selects them for every page that takes filters.

The ranking rule (docs/scoring.md#ranking): runs are ranked only against runs of the same release, prompt
template and paper setting (a *group*); a view over several groups lists them group by group. Runs below
full coverage are listed after their group's ranked runs, without a rank. A rank comes with the range the
bootstrap intervals allow and the runs it is statistically tied with.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime
from typing import Any

from django.db.models import Exists, Q, Subquery

from contributions.models import Release
from evaluation.models import EvaluationRun, LanguageModel
from evaluation.selectors.runs import run_result_date
from leaderboard.cutoffs import release_global_selections, release_paper_dates, window_selection
from leaderboard.models import Contamination, RunPaperScore, RunScore
from leaderboard.selectors.common import ModelRef, Score, score_from_papers, score_from_row

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
    - ``paper_from``, ``paper_to``: the paper-date window (LiveCodeBench-style), both bounds included:
      each run is scored only on the papers of its release first committed within it, on top of the
      contamination rule; a paper with no known date is outside every window (``cutoffs.window_selection``).
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
    paper_from: date | None = None
    paper_to: date | None = None

    def __post_init__(self) -> None:
        if self.contamination not in CONTAMINATION_MODES:
            raise ValueError(f"contamination: {self.contamination!r} is not one of {CONTAMINATION_MODES}")
        if self.paper_from and self.paper_to and self.paper_from > self.paper_to:
            raise ValueError(f"paper_to: {self.paper_to} is before paper_from ({self.paper_from})")
        if self.sort.lstrip("-") not in SORT_KEYS:
            raise ValueError(f"sort: {self.sort!r} is not one of {sorted(SORT_KEYS)} (optionally with '-')")

    @property
    def windowed(self) -> bool:
        """True when a paper-date window restricts the papers scored."""
        return self.paper_from is not None or self.paper_to is not None


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
    #: for a run on no release, what it covers instead (its label, such as "new task rmsnorm v2" for the run
    #: queued on a task's approval: ``compare.Setting.covers``); "" for a run on a release
    covers: str = ""

    @property
    def group(self) -> tuple[str | None, str, bool, str]:
        """What a rank is relative to: (release, template, with_paper, covers). Runs on no release that cover
        different things (two new tasks' approval runs) are never ranked against each other."""
        return (self.release, self.template, self.with_paper, self.covers)

    @property
    def release_words(self) -> str:
        """The release part of the group's name: the release, what a run on no release covers, or "(none)"."""
        if self.release:
            return self.release
        return f"{self.covers} (not in a release)" if self.covers else "(none)"

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

    @property
    def forging_rate(self) -> float | None:
        return self.score.forging_rate


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
        "forging_rate": lambda r: r.score.forging_rate,
    }
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


def _covers(run: EvaluationRun) -> str:
    """``Row.covers`` of ``run``."""
    return "" if run.release_id else run.label


def _latest_only(score_rows: Iterable[RunScore]) -> list[RunScore]:
    """Keep the latest run per (model, release, template, with_paper, covers)."""
    best: dict[tuple, RunScore] = {}
    for row in score_rows:
        run = row.run
        key = (run.model_id, run.release_id, run.template, run.with_paper, _covers(run))
        stamp = (run.finished_at or run.created_at, run.pk)
        if key not in best or stamp > (
            best[key].run.finished_at or best[key].run.created_at,
            best[key].run.pk,
        ):
            best[key] = row
    return list(best.values())


def board_scores(filters: LeaderboardFilters, mode: str) -> list[RunScore]:
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
        finished_at=run_result_date(run),
        cost_usd=cost,
        contamination=mode,
        selection=tuple(selection) if selection is not None else None,
        score=score,
        covers=_covers(run),
    )


def _group_order(score_rows: Iterable[RunScore]) -> dict[tuple, tuple]:
    """Sort key of each group of rows: the default release first, then newer releases, runs of no release
    last; within a release by template, with the paper before without."""
    order = {}
    for s in score_rows:
        run = s.run
        release = run.release if run.release_id else None
        key = (release.name if release else None, run.template, run.with_paper, _covers(run))
        order[key] = (
            release is None,
            not (release and release.is_default),
            -(release.created_at.timestamp() if release else 0),
            key[0] or "",
            key[3],
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
    for key in sorted(groups, key=lambda k: group_order.get(k, (True, True, 0, "", "", "", True))):
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

    With a paper-date window (``filters.paper_from``/``paper_to``) each run's selection is the rule's (every
    paper for ``none``) restricted to the papers of its release within the window, recombined exactly from
    per-paper sums (``ci95`` None); a paper with no known date is never in a window.

    At most five queries whatever the number of rows or releases (six with a window).
    """
    filters = filters or LeaderboardFilters()
    if release is not None:
        filters = replace(filters, release=release.name)
    mode = filters.contamination
    score_rows = board_scores(filters, mode)
    order = _group_order(score_rows)
    selections: dict[int, Sequence[str] | None] = {s.run_id: s.selection for s in score_rows}
    if mode == Contamination.GLOBAL:
        wanted = release_global_selections({s.run.release_id for s in score_rows})
        selections = {s.run_id: wanted[s.run.release_id] for s in score_rows}
    if filters.windowed:
        dates = release_paper_dates({s.run.release_id for s in score_rows})
        window = {
            release_id: window_selection(papers, filters.paper_from, filters.paper_to)
            for release_id, papers in dates.items()
        }
        for s in score_rows:
            chosen = selections[s.run_id]
            inside = window[s.run.release_id]
            selections[s.run_id] = inside if chosen is None else sorted(set(chosen) & set(inside))
    recombine = [s for s in score_rows if s.selection != selections[s.run_id]]
    per_paper: dict[int, list[RunPaperScore]] = defaultdict(list)
    if recombine:
        for p in RunPaperScore.objects.filter(run_id__in=[s.run_id for s in recombine]).select_related(
            "paper"
        ):
            per_paper[p.run_id].append(p)
    rows = []
    for s in score_rows:
        selection = selections[s.run_id]
        if s.selection == selection:
            score = score_from_row(s)
        else:
            kept = set(selection or ())
            score = score_from_papers(p for p in per_paper[s.run_id] if p.paper.key in kept)
        rows.append(_row(s, score, mode, selection))
    return _rank_and_sort(rows, filters.sort, order)


@dataclass(frozen=True)
class PaperWindow:
    """The paper-date window over the papers of the release a board shows (every paper for
    ``ANY_RELEASE`` or while there is no release): the earliest and latest known first-commit dates
    (``first``, ``last``: the slider's ends; None without a dated paper), how many papers there are, how
    many the window keeps (``inside``: all dated ones without a bound) and how many have no known date
    (``undated``: outside every window)."""

    first: date | None
    last: date | None
    papers: int
    inside: int
    undated: int


def paper_window(filters: LeaderboardFilters) -> PaperWindow:
    """The ``PaperWindow`` of the release ``filters.release`` names (the default one when None). Two
    queries."""
    if filters.release == ANY_RELEASE:
        release_id = None
    else:
        releases = Release.objects.order_by("-is_default", "-created_at", "-pk")
        if filters.release:
            releases = releases.filter(name=filters.release)
        release_id = releases.values_list("pk", flat=True).first()
    dates = release_paper_dates([release_id])[release_id]
    known = sorted(d for d in dates.values() if d is not None)
    return PaperWindow(
        first=known[0] if known else None,
        last=known[-1] if known else None,
        papers=len(dates),
        inside=len(window_selection(dates, filters.paper_from, filters.paper_to)),
        undated=len(dates) - len(known),
    )


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


def developer_names() -> list[str]:
    """Every developer of a known model, sorted case-insensitively (one query): the fixed order that gives
    each developer its colour, whatever a filter leaves on a chart."""
    names = LanguageModel.objects.exclude(developer="").values_list("developer", flat=True).distinct()
    return sorted(set(names), key=str.casefold)
