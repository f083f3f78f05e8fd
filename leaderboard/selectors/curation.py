"""The maintainers' curation view: every snippet of a release's task versions, across papers, with its
statistics over that release's board (``leaderboard.snippet_statistics``), filterable by status and paper.

The runs are the board's (``board_scores`` with the default filters for that release: finished runs, the
paper in the prompt, the latest run per model and template), so the figures are those the paper page shows
for the same release.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from contributions.models import Release, Snippet
from contributions.selectors import releases as contribution_selectors
from leaderboard.models import Contamination, RunSnippetScore
from leaderboard.selectors.board import LeaderboardFilters, board_scores
from leaderboard.snippet_statistics import (
    STATUS_LABELS,
    RunVerdicts,
    SnippetStatistics,
    snippet_statistics,
    sort_rows,
)


@dataclass(frozen=True)
class CurationRow:
    """One snippet: where it is (paper, task, version, depth) and its statistics; ``order`` is by paper,
    task and document order (the default sort)."""

    order: int
    id: int
    paper_key: str
    task: str
    task_version: int
    name: str
    depth: int | None
    stats: SnippetStatistics


@dataclass(frozen=True)
class Curation:
    """``rows``: the snippets kept by the filters, sorted; ``total``: every snippet of the release;
    ``counts``: the number of snippets per status over the whole release; ``models``: the board's runs."""

    release: str | None
    rows: tuple[CurationRow, ...]
    total: int
    counts: dict[str, int]
    models: int
    papers: tuple[str, ...]


def snippet_curation(
    *, release: str = "", status: str = "", paper: str = "", sort: str = "order"
) -> Curation:
    """The snippets of ``release`` (a name; ``""``: the default release, every task's latest version while
    there is none) with their statistics over its board, kept when of ``status`` (a key of
    ``snippet_statistics.STATUS_LABELS``; ``""``: any) and of ``paper`` (a key; ``""``: any), in ``sort``
    order (``snippet_statistics.sort_rows``). Raises ``Release.DoesNotExist`` for an unknown release name.
    Five queries at most."""
    chosen = contribution_selectors.release_get(name=release) if release else None
    chosen = chosen or contribution_selectors.release_default()
    runs = board_scores(LeaderboardFilters(release=chosen.name if chosen else None), Contamination.NONE)
    snippets = _snippets(chosen)
    verdicts: dict[int, dict[int, str]] = defaultdict(dict)
    for run_id, sid, text in RunSnippetScore.objects.filter(
        run_id__in=[r.run_id for r in runs], snippet_id__in=[s.pk for s in snippets]
    ).values_list("run_id", "snippet_id", "verdicts"):
        verdicts[run_id][sid] = text
    paper_lines: dict[str, int] = defaultdict(int)
    for s in snippets:
        paper_lines[s.task_version.task.paper.key] += s.lines
    stats = snippet_statistics(
        ((s.pk, s.lines, paper_lines[s.task_version.task.paper.key]) for s in snippets),
        [RunVerdicts(r.run_id, r.line_mean, verdicts.get(r.run_id, {})) for r in runs],
    )
    rows = [
        CurationRow(
            order=i,
            id=s.pk,
            paper_key=s.task_version.task.paper.key,
            task=s.task_version.task.key,
            task_version=s.task_version.number,
            name=s.name,
            depth=s.depth,
            stats=stats[s.pk],
        )
        for i, s in enumerate(snippets)
    ]
    counts = dict.fromkeys(STATUS_LABELS, 0)
    for row in rows:
        counts[row.stats.status] += 1
    kept = [
        r for r in rows if (not status or r.stats.status == status) and (not paper or r.paper_key == paper)
    ]
    return Curation(
        release=chosen.name if chosen else None,
        rows=tuple(sort_rows(kept, sort)),
        total=len(rows),
        counts=counts,
        models=len(runs),
        papers=tuple(sorted(paper_lines)),
    )


def _snippets(release: Release | None) -> list[Snippet]:
    """The snippets of ``release``'s task versions, or of every task's latest version without one, by
    paper, task and document order (one query)."""
    qs = Snippet.objects.select_related("task_version__task__paper").order_by(
        "task_version__task__paper__key", "task_version__task__key", "-task_version__number", "ordinal"
    )
    if release is not None:
        return list(qs.filter(task_version__release_entries__release=release))
    snippets = list(qs)
    latest: dict[str, int] = {}
    for s in snippets:
        latest.setdefault(s.task_version.task.key, s.task_version.number)
    return [s for s in snippets if s.task_version.number == latest[s.task_version.task.key]]
