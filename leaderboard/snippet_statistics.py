"""Snippet statistics over the board's runs (issue 22 item 8): per snippet, how many of the models on the
board solve it, its line weight, whether solving it goes with a model's overall rank (discrimination),
and whether it is never or always solved. Definitions: docs/scoring.md#snippet-statistics.

Plain functions of values, no queries: the paper page and the maintainers' curation view read their runs
and verdicts with their selectors and compute the figures here, so both pages give the same numbers for
the same runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from leaderboard.aggregates import FAIL, PASS

#: fewer models than this give no discrimination: a correlation over two points is always +-1
MIN_MODELS = 3

UNTESTED, NEVER, ALWAYS, MIXED = "untested", "never", "always", "mixed"
STATUS_LABELS = {
    UNTESTED: "not tested",
    NEVER: "never solved",
    ALWAYS: "always solved",
    MIXED: "sometimes solved",
}


@dataclass(frozen=True)
class RunVerdicts:
    """One run on the board: its overall Scaled Pass@1 (every paper of its release; None: no score) and
    its verdict string (``RunSnippetScore.verdicts``) per snippet id."""

    run_id: int
    overall: float | None
    verdicts: Mapping[int, str]


@dataclass(frozen=True)
class SnippetStatistics:
    """One snippet's statistics over the runs given.

    ``models``: the runs with at least one tested result of the snippet (infrastructure failures and
    missing results do not count); ``solved``: those with at least one passed result. ``solve_rate``: the
    mean over those runs of each run's share of passed results (for one greedy completion, the percentage
    of models that solved it); None when untested. ``weight``: the snippet's lines as a percentage of the
    lines of every snippet of its paper (its weight in the paper's Scaled Pass@1). ``discrimination``:
    Pearson's correlation between a run's share of passed results on the snippet and its overall Scaled
    Pass@1 (the point-biserial correlation for one completion), over the tested runs with a score; None
    with ``discrimination_reason`` when it is undefined."""

    snippet_id: int
    lines: int
    weight: float | None
    models: int
    solved: int
    solve_rate: float | None
    discrimination: float | None
    discrimination_reason: str
    status: str

    @property
    def status_label(self) -> str:
        return STATUS_LABELS[self.status]


def _share(verdicts: str) -> float | None:
    """The share of passed results among the tested ones of one verdict string; None when none tested."""
    passed, failed = verdicts.count(PASS), verdicts.count(FAIL)
    return passed / (passed + failed) if passed + failed else None


def correlation(xs: Sequence[float], ys: Sequence[float]) -> tuple[float | None, str]:
    """Pearson's r of paired values, or None with the reason it is undefined (too few pairs, or either
    side constant)."""
    n = len(xs)
    if n < MIN_MODELS:
        return None, f"fewer than {MIN_MODELS} models tested it"
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx == 0:
        return None, "every model did the same on it"
    if syy == 0:
        return None, "every model has the same overall score"
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy))), ""


def snippet_statistics(
    snippets: Iterable[tuple[int, int, int]], runs: Sequence[RunVerdicts]
) -> dict[int, SnippetStatistics]:
    """The statistics of each snippet, given as ``(id, lines, paper lines)`` (``paper lines``: the sum of
    the lines of every snippet of its paper's scored versions), over ``runs``, by snippet id."""
    out = {}
    for sid, lines, paper_lines in snippets:
        pairs = [(share, r.overall) for r in runs if (share := _share(r.verdicts.get(sid, ""))) is not None]
        shares = [share for share, _overall in pairs]
        scored = [(share, overall) for share, overall in pairs if overall is not None]
        r, reason = correlation([s for s, _o in scored], [o for _s, o in scored])
        if not shares:
            status = UNTESTED
        elif all(s == 0 for s in shares):
            status = NEVER
        elif all(s == 1 for s in shares):
            status = ALWAYS
        else:
            status = MIXED
        if status == NEVER and len(scored) >= MIN_MODELS:
            reason = "no model solved it"
        elif status == ALWAYS and len(scored) >= MIN_MODELS:
            reason = "every model solved it"
        out[sid] = SnippetStatistics(
            snippet_id=sid,
            lines=lines,
            weight=100 * lines / paper_lines if paper_lines else None,
            models=len(shares),
            solved=sum(1 for s in shares if s > 0),
            solve_rate=100 * sum(shares) / len(shares) if shares else None,
            discrimination=r,
            discrimination_reason=reason,
            status=status,
        )
    return out


#: the sort keys of a table of snippet statistics; the default is the document order
STAT_SORT_KEYS: dict[str, Callable[[Any], Any]] = {
    "order": lambda row: row.order,
    "name": lambda row: row.name.lower(),
    "lines": lambda row: row.stats.lines,
    "models": lambda row: row.stats.models,
    "solve_rate": lambda row: row.stats.solve_rate,
    "discrimination": lambda row: row.stats.discrimination,
    "status": lambda row: row.stats.status_label,
}


def parse_sort(raw: str, default: str = "order") -> str:
    """``raw`` when it is a key of ``STAT_SORT_KEYS`` (with an optional ``-``), else ``default``."""
    return raw if raw.lstrip("-") in STAT_SORT_KEYS else default


@dataclass(frozen=True)
class StatRow:
    """One line of a table of snippet statistics: what ``sort_rows`` sorts."""

    order: int
    name: str
    url: str
    stats: SnippetStatistics
    paper_key: str = ""
    task: str = ""
    depth: int | None = None


def sort_rows(rows: Sequence[Any], sort: str) -> list[Any]:
    """``rows`` (with ``order``, ``name`` and ``stats``) in ``sort`` order (``-``: descending); rows
    without a value for the key last, in document order, whatever the direction."""
    keyfunc = STAT_SORT_KEYS[sort.lstrip("-")]
    present = sorted((r for r in rows if keyfunc(r) is not None), key=lambda r: r.order)
    present.sort(key=keyfunc, reverse=sort.startswith("-"))
    absent = sorted((r for r in rows if keyfunc(r) is None), key=lambda r: r.order)
    return present + absent
