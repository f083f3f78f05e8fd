"""A model's page: its runs, the chosen run's scores per contamination mode and per paper, its errors, its
verdict grid, its memorisation figures and the snippets it failed; the model list and the model search."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime

from django.db.models import Count, F, Q, QuerySet

from evaluation.models import Completion, EvaluationRun, LanguageModel
from evaluation.selectors.counts import forging_rate
from leaderboard.cutoffs import model_cutoff
from leaderboard.models import Contamination, RunErrorCount, RunPaperScore, RunScore, RunSnippetScore
from leaderboard.selectors.common import (
    ErrorCountRow,
    ModelRef,
    Score,
    after_cutoff,
    error_rows,
    score_from_papers,
    score_from_row,
)
from researchcodebench import errors as error_catalogue


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
    #: the run's passes confirmed against an impossible variant, unconfirmed, and its forged verdicts, over
    #: every paper (docs/scoring.md#forging-rate)
    passes_confirmed: int = 0
    passes_unconfirmed: int = 0
    passes_forged: int = 0
    #: forged / (forged + confirmed) in percent; None when not measured (results imported without code, or
    #: no pass confirmed or forged)
    forging_rate: float | None = None
    #: what the run covers when it has no release (e.g. "new task rmsnorm v2", a run queued on approval)
    label: str = ""

    @property
    def status_label(self) -> str:
        """The run's status in words ("Queued", "Testing", ...)."""
        return EvaluationRun.Status(self.status).label

    @property
    def scored(self) -> bool:
        """Whether the run has a score to show: a run not yet judged on any snippet (queued, or still
        generating) has none, rather than a score of 0."""
        return self.scaled_pass_at_1 is not None


@dataclass(frozen=True)
class Forging:
    """The forging rate of a model over all its runs (``runs``: those with a confirmed or forged pass):
    forged / (forged + confirmed) passes in percent, None when not measured."""

    passes_confirmed: int
    passes_unconfirmed: int
    passes_forged: int
    forging_rate: float | None
    runs: int


@dataclass(frozen=True)
class VerbatimShare:
    """How many of a run's passed completions reproduce the reference nearly verbatim
    (docs/scoring.md#memorisation): ``measured`` passes could be told (code, and a reference of at least
    ``MIN_REFERENCE_TOKENS`` tokens), ``near_verbatim`` of them are; ``share`` is a percentage of
    ``measured`` (None when none was)."""

    passes: int
    measured: int
    near_verbatim: int
    share: float | None


@dataclass(frozen=True)
class Memorisation:
    """The run's passes that are near verbatim: all of them, and on papers first committed on or before
    vs after the model's cutoff (both None when the cutoff is unknown; papers without a date are in
    ``all`` only)."""

    all: VerbatimShare
    before_cutoff: VerbatimShare | None
    after_cutoff: VerbatimShare | None


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
    memorisation: Memorisation | None = None
    #: the model's forging rate over all its runs (per run: ``runs``)
    forging: Forging | None = None


def _forging(runs: Iterable[RunSummary]) -> Forging:
    runs = list(runs)
    confirmed, forged = sum(r.passes_confirmed for r in runs), sum(r.passes_forged for r in runs)
    return Forging(
        passes_confirmed=confirmed,
        passes_unconfirmed=sum(r.passes_unconfirmed for r in runs),
        passes_forged=forged,
        forging_rate=forging_rate(forged=forged, confirmed=confirmed),
        runs=sum(1 for r in runs if r.forging_rate is not None),
    )


def _summary(run: EvaluationRun, score: RunScore | None) -> RunSummary:
    """The run as the model page lists it; a run not final and not yet judged on any snippet has no scores
    (None, not 0)."""
    if score is not None and not score.snippets and not run.is_final:
        score = None
    measured = score is not None and run.source != EvaluationRun.Source.IMPORTED
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
        passes_confirmed=score.passes_confirmed if score else 0,
        passes_unconfirmed=score.passes_unconfirmed if score else 0,
        passes_forged=score.passes_forged if score else 0,
        forging_rate=forging_rate(forged=score.passes_forged, confirmed=score.passes_confirmed)
        if measured
        else None,
        label=run.label,
    )


def model_detail(*, key: str, run_id: int | None = None) -> ModelDetail:
    """The model page for ``key``: by default its latest finished run with the paper in the prompt (else
    its latest scored run); ``run_id`` picks another of its runs. Raises ``LanguageModel.DoesNotExist``
    for an unknown key and ``EvaluationRun.DoesNotExist`` for a run of another model. Eight queries."""
    model = LanguageModel.objects.get(key=key)
    runs = list(
        EvaluationRun.objects.filter(model=model).select_related("release").order_by("-created_at", "id")
    )
    scores = defaultdict(dict)
    # The board's contamination modes (the contamination page's before-cutoff rows are not the model page's).
    for s in RunScore.objects.filter(run__model=model, mode__in=Contamination.values):
        scores[s.run_id][s.mode] = s
    summaries = tuple(_summary(r, scores[r.pk].get(Contamination.NONE)) for r in runs)
    chosen = _chosen_run(key=key, runs=runs, scores=scores, run_id=run_id)
    cutoff = model_cutoff(model)
    if chosen is None:
        return ModelDetail(
            model=ModelRef.of(model), runs=summaries, run=None, scores={}, per_paper=(), errors=(),
            infrastructure_errors=(), verdict_grid=(), before_cutoff=None, after_cutoff=None,
            undated_papers=(), forging=_forging(summaries),
        )  # fmt: skip
    paper_rows, per_paper = _per_paper(chosen, cutoff)
    errors, infra = error_rows(
        RunErrorCount.objects.filter(run=chosen).values_list("category", "tier", "count")
    )
    grid = _verdict_grid(chosen)
    summary = _summary(chosen, scores[chosen.pk].get(Contamination.NONE))
    before = [p for p, row in zip(paper_rows, per_paper, strict=True) if row.after_cutoff is False]
    after = [p for p, row in zip(paper_rows, per_paper, strict=True) if row.after_cutoff is True]
    return ModelDetail(
        model=ModelRef.of(model),
        runs=summaries,
        run=summary,
        scores={mode: score_from_row(s) for mode, s in scores[chosen.pk].items()} if summary.scored else {},
        per_paper=per_paper,
        errors=errors,
        infrastructure_errors=infra,
        verdict_grid=grid,
        before_cutoff=score_from_papers(before) if cutoff is not None else None,
        after_cutoff=score_from_papers(after) if cutoff is not None else None,
        undated_papers=tuple(p.paper_key for p in per_paper if p.first_commit_date is None),
        memorisation=_memorisation(chosen, cutoff),
        forging=_forging(summaries),
    )


def _verbatim_share(rows: list[dict]) -> VerbatimShare:
    passes, measured, verbatim = (sum(r[k] for r in rows) for k in ("passes", "measured", "verbatim"))
    return VerbatimShare(
        passes=passes,
        measured=measured,
        near_verbatim=verbatim,
        share=100 * verbatim / measured if measured else None,
    )


def run_verbatim_shares(*, run_ids: Iterable[int]) -> dict[int, VerbatimShare]:
    """The near-verbatim share of each run of ``run_ids`` over its passes (``Memorisation.all`` of the model
    page, docs/scoring.md#memorisation): one grouped count over the runs' passed completions, whose
    figures are stored with each verdict. A run without a pass is absent."""
    rows = (
        Completion.objects.filter(run_id__in=list(run_ids), result__passed=True)
        .values("run_id")
        .annotate(
            passes=Count("id"),
            measured=Count("id", filter=Q(near_verbatim__isnull=False)),
            verbatim=Count("id", filter=Q(near_verbatim=True)),
        )
        .order_by()
    )
    return {r["run_id"]: _verbatim_share([r]) for r in rows}


def _memorisation(run: EvaluationRun, cutoff: date | None) -> Memorisation:
    """The run's passes that are near verbatim, split by the papers' first commit against ``cutoff``: one
    grouped count over the run's passed completions (their figures are stored with each verdict)."""
    rows = list(
        Completion.objects.filter(run=run, result__passed=True)
        .values(first=F("snippet__task_version__task__paper__first_commit_date"))
        .annotate(
            passes=Count("id"),
            measured=Count("id", filter=Q(near_verbatim__isnull=False)),
            verbatim=Count("id", filter=Q(near_verbatim=True)),
        )
        .order_by()
    )
    if cutoff is None:
        return Memorisation(all=_verbatim_share(rows), before_cutoff=None, after_cutoff=None)
    return Memorisation(
        all=_verbatim_share(rows),
        before_cutoff=_verbatim_share([r for r in rows if after_cutoff(r["first"], cutoff) is False]),
        after_cutoff=_verbatim_share([r for r in rows if after_cutoff(r["first"], cutoff) is True]),
    )


def _chosen_run(
    *, key: str, runs: list[EvaluationRun], scores: Mapping[int, dict], run_id: int | None
) -> EvaluationRun | None:
    """The run the model page shows: ``run_id`` when given (``EvaluationRun.DoesNotExist`` unless it is one
    of ``runs``), else, of the runs with a score (``RunSummary.scored``), the first on a release before one
    on no release (a run queued on a task's approval covers that task only), and among those the first that
    is finished with the paper in the prompt; None when there is none."""
    if run_id is not None:
        chosen = next((r for r in runs if r.pk == run_id), None)
        if chosen is None:
            raise EvaluationRun.DoesNotExist(f"run {run_id} is not a run of {key}")
        return chosen
    scored = [r for r in runs if _summary(r, scores.get(r.pk, {}).get(Contamination.NONE)).scored]
    return min(
        scored,
        key=lambda r: (
            r.release_id is None,
            not (r.status == EvaluationRun.Status.FINISHED and r.with_paper),
        ),
        default=None,
    )


def _per_paper(
    run: EvaluationRun, cutoff: date | None
) -> tuple[list[RunPaperScore], tuple[PaperScoreRow, ...]]:
    """The run's per-paper score rows by paper key (one query), and each as the page shows it."""
    paper_rows = list(RunPaperScore.objects.filter(run=run).select_related("paper").order_by("paper__key"))
    per_paper = tuple(
        PaperScoreRow(
            paper_key=p.paper.key,
            paper_title=p.paper.title,
            first_commit_date=p.paper.first_commit_date,
            after_cutoff=after_cutoff(p.paper.first_commit_date, cutoff),
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
    return paper_rows, per_paper


def _verdict_grid(run: EvaluationRun) -> tuple[SnippetVerdict, ...]:
    """The run's verdicts per snippet, by paper, task and document order (one query)."""
    return tuple(
        SnippetVerdict(
            snippet_id=sid, paper_key=pkey, task_key=tkey, name=name, ordinal=ordinal, depth=depth,
            lines=lines, verdicts=verdicts, passed=passed, tested=tested, category=category, checked_by_test=checked,
        )
        for sid, pkey, tkey, name, ordinal, depth, lines, verdicts, passed, tested, category, checked in (
            RunSnippetScore.objects.filter(run=run)
            .order_by("paper__key", "snippet__task_version__task__key", "snippet__ordinal")
            .values_list(
                "snippet_id", "paper__key", "snippet__task_version__task__key", "snippet__name",
                "snippet__ordinal", "snippet__depth", "lines", "verdicts", "passed", "tested", "category",
                "snippet__checked_by_test",
            )
        )
    )  # fmt: skip


def model_list() -> QuerySet[LanguageModel]:
    """Every language model, by name."""
    return LanguageModel.objects.order_by("name")


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
    passed, failed = "P" in verdicts, "F" in verdicts
    if passed and failed:
        return "partial"
    return "pass" if passed else "fail" if failed else "none"


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
