"""A paper's page: its metadata, the snippet tree of each task's latest version with its difficulty, and
the model x snippet matrix over the board's runs; the paper list."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from datetime import date

from django.db.models import QuerySet

from contributions.models import Paper, Snippet
from leaderboard.cutoffs import model_cutoff
from leaderboard.models import Contamination, RunPaperScore, RunSnippetScore
from leaderboard.selectors.board import ANY_RELEASE, LeaderboardFilters, board_scores
from leaderboard.selectors.common import ModelRef, after_cutoff, snippet_stat
from leaderboard.snippet_statistics import RunVerdicts, SnippetStatistics, snippet_statistics


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
    #: the run's Scaled Pass@1 over every paper of its release (the board's score)
    overall: float | None = None


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
    #: each snippet's statistics over the matrix's runs, by snippet id (``leaderboard.snippet_statistics``)
    statistics: dict[int, SnippetStatistics] = field(default_factory=dict)


def paper_detail(*, key: str, filters: LeaderboardFilters | None = None) -> PaperDetail:
    """The paper page for ``key``: metadata, the snippet tree of each task's latest version with its
    difficulty, and the model x snippet matrix over the runs ``filters`` keep (the board's runs by
    default, but of every release when ``filters`` names none: a paper is in the releases that hold it,
    not necessarily the default one), with each snippet's statistics over those runs. Raises
    ``Paper.DoesNotExist``. Four queries."""
    filters = filters or LeaderboardFilters()
    if filters.release is None:
        filters = replace(filters, release=ANY_RELEASE)
    paper = Paper.objects.get(key=key)
    tasks, nodes = _latest_snippets(paper)
    matrix = _matrix(paper, nodes, filters)
    paper_lines = sum(n.lines for n in nodes)
    statistics = snippet_statistics(
        ((n.id, n.lines, paper_lines) for n in nodes),
        [RunVerdicts(m.run_id, m.overall, m.verdicts) for m in matrix],
    )
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
        tasks=tasks,
        snippets=nodes,
        matrix=matrix,
        statistics=statistics,
    )


def _latest_snippets(paper: Paper) -> tuple[tuple[str, ...], tuple[SnippetNode, ...]]:
    """The paper's task keys and the snippets of each task's latest version with their difficulty, by
    task and document order (one query)."""
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
            runs=snippet_stat(s).runs,
            results=snippet_stat(s).results,
            passed=snippet_stat(s).passed,
            solve_rate=snippet_stat(s).solve_rate,
            checked_by_test=s.checked_by_test,
            unchecked_reason=s.get_unchecked_reason_display() if s.unchecked_reason else "",
            unchecked_explanation=s.unchecked_explanation,
        )
        for s in snippets
        if s.task_version.number == latest[s.task_version.task.key]
    )
    return tuple(latest), nodes


def _matrix(
    paper: Paper, nodes: tuple[SnippetNode, ...], filters: LeaderboardFilters
) -> tuple[MatrixRow, ...]:
    """The runs ``filters`` keep that scored the paper, each with its verdicts on ``nodes``, best paper
    score first (three queries)."""
    board = {s.run_id: s for s in board_scores(filters, Contamination.NONE)}
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
            after_cutoff=after_cutoff(paper.first_commit_date, model_cutoff(s.run.model)),
            verdicts=verdicts.get(run_id, {}),
            overall=s.line_mean,
        )
        for run_id, s in board.items()
        if run_id in paper_scores
    ]
    matrix.sort(key=lambda m: (m.scaled_pass_at_1 is None, -(m.scaled_pass_at_1 or 0), m.model.name))
    return tuple(matrix)


def paper_list() -> QuerySet[Paper]:
    """Every paper, by key."""
    return Paper.objects.order_by("key")
