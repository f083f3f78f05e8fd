"""The arithmetic of the read models, shared by the whole-run rebuild
(``services.rebuild.leaderboard_refresh_run``) and the per-verdict deltas
(``services.increments.leaderboard_apply_result``), so that both give the same rows.

- ``snippet_state``: one (run, snippet) row (``RunSnippetScore``) from that snippet's results of record,
  with each index's confirmation against an impossible variant;
- ``Contribution``: what one snippet's verdicts add to its paper's ``RunPaperScore`` row; a paper row is the
  sum of its snippets' contributions (the rebuild) or the old row plus new minus old (a delta);
- ``paper_rates`` and ``score_fields``: the rates of a paper row, and a ``RunScore`` row recombined from the
  run's paper rows over a selection of papers (every field but the bootstrap interval).

Every sum is an integer, so adding and subtracting contributions in any order gives the same row; the
floats come from ``researchcodebench.scoring.combine_rates``, the same operations ``scoring`` applies to
results, and ``interval`` is ``scoring.bootstrap_ci`` over the same set of results. Plain functions of
values: no queries.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import zip_longest
from typing import Protocol

from evaluation.models import TestResult
from evaluation.selectors.counts import confirmation_kind
from researchcodebench import scoring
from researchcodebench.scoring import combine_rates

PASS, FAIL, MISSING = "P", "F", "-"
#: ``RunSnippetScore.confirmations``: per index, a pass confirmed against an impossible variant, a pass
#: unconfirmed (its snippet has no variant), a forged verdict, or none of these (``MISSING``)
CONFIRMED, UNCONFIRMED, FORGED = "C", "U", "X"
_CONFIRMATION_MARKS = {
    TestResult.Confirmation.CONFIRMED: CONFIRMED,
    TestResult.Confirmation.UNCONFIRMED: UNCONFIRMED,
    TestResult.Confirmation.FORGED: FORGED,
}
#: the integer fields of ``RunPaperScore`` and ``RunScore`` counting confirmations, by mark
CONFIRMATION_FIELDS = {
    CONFIRMED: "passes_confirmed",
    UNCONFIRMED: "passes_unconfirmed",
    FORGED: "passes_forged",
}
#: the list fields of ``RunPaperScore``, one integer per completion index
SUM_FIELDS = ("line_num", "line_den", "task_num", "task_den")
#: the integer fields of ``RunPaperScore`` besides the lists
COUNT_FIELDS = (
    "snippets", "lines", "passed", "results", "expected_tested", "expected_lines", *CONFIRMATION_FIELDS.values(),
)  # fmt: skip
#: ``(completion_idx, passed, tier, category, outcome, confirmation)`` of one result of record
ResultRow = tuple[int, bool, str, str, str, str]


def finite(value: float | None) -> float | None:
    """A float as stored: NaN (nothing tested) becomes null."""
    return None if value is None or math.isnan(value) else value


def solve_rate(passed: int, results: int) -> float | None:
    """``SnippetStat.solve_rate``: 100 * passed / results, null without results."""
    return 100 * passed / results if results else None


@dataclass(frozen=True)
class SnippetState:
    """The fields of one ``RunSnippetScore`` row (see its model for their meaning)."""

    verdicts: str
    passed: int
    tested: int
    category: str
    failures: tuple[tuple[str, str] | None, ...]
    #: per index ``CONFIRMED``, ``UNCONFIRMED``, ``FORGED`` or ``MISSING``, without trailing ``MISSING`` ("" for
    #: a snippet without any: what rows built before confirmations hold)
    confirmations: str = ""

    def errors(self) -> list[tuple[str, str]]:
        """The ``(category, tier)`` of every failed result: what the row adds to ``RunErrorCount``."""
        return [f for f in self.failures if f is not None]


def snippet_state(results: Iterable[ResultRow]) -> SnippetState | None:
    """The row of one snippet of one run from its results of record; None when it has none.

    Infrastructure-tier results never count against a model: their index shows as ``-`` (untested) and
    they are counted under their own tier. A plain failure with no category was recorded without test
    output (the published results) and counts as ``unclassified``. Each index's confirmation is the one
    ``evaluation.selectors.counts.confirmation_kind`` gives its result (the run page counts the same).
    """
    marks: dict[int, str] = {}
    failures: dict[int, tuple[str, str]] = {}
    confirmed: dict[int, str] = {}
    first_failure: tuple[int, str] | None = None
    for idx, passed, tier, category, outcome, confirmation in results:
        kind = confirmation_kind(outcome=outcome, category=category, confirmation=confirmation)
        if kind:
            confirmed[idx] = _CONFIRMATION_MARKS[kind]
        if tier == TestResult.Tier.INFRASTRUCTURE:
            marks[idx] = MISSING
            failures[idx] = (category or outcome, TestResult.Tier.INFRASTRUCTURE)
            continue
        marks[idx] = PASS if passed else FAIL
        if not passed:
            label = category or ("unclassified" if outcome == TestResult.Outcome.FAILED else outcome)
            failures[idx] = (label, TestResult.Tier.MODEL)
            if first_failure is None or idx < first_failure[0]:
                first_failure = (idx, label)
    if not marks:
        return None
    width = max(marks) + 1
    verdicts = "".join(marks.get(i, MISSING) for i in range(width))
    return SnippetState(
        verdicts=verdicts,
        passed=verdicts.count(PASS),
        tested=verdicts.count(PASS) + verdicts.count(FAIL),
        category=first_failure[1] if first_failure else "",
        failures=tuple(failures.get(i) for i in range(width)),
        confirmations="".join(confirmed.get(i, MISSING) for i in range(width)).rstrip(MISSING),
    )


def stored_failures(failures: Sequence[tuple[str, str] | None]) -> list[list[str] | None]:
    """``SnippetState.failures`` as the JSON ``RunSnippetScore.failures`` holds."""
    return [list(f) if f is not None else None for f in failures]


def loaded_failures(stored: Sequence[Sequence[str] | None]) -> tuple[tuple[str, str] | None, ...]:
    """``RunSnippetScore.failures`` back as ``SnippetState.failures``."""
    return tuple((f[0], f[1]) if f is not None else None for f in stored)


@dataclass
class Contribution:
    """The sums of ``RunPaperScore`` (lists per completion index, and counts) for a set of snippets."""

    sums: dict[str, list[int]] = field(default_factory=lambda: {k: [] for k in SUM_FIELDS})
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNT_FIELDS, 0))

    @classmethod
    def of_snippet(
        cls, verdicts: str, lines: int, *, expected: bool, confirmations: str = ""
    ) -> Contribution:
        """What one snippet's verdict string adds to its paper: per index with a result, its lines to
        ``line_den``, one result to ``task_den`` and, when passed, the same to ``line_num``/``task_num``; per
        index of ``confirmations`` (``SnippetState.confirmations``), one to its ``CONFIRMATION_FIELDS``."""
        out = cls()
        for mark in confirmations:
            if mark in CONFIRMATION_FIELDS:
                out.counts[CONFIRMATION_FIELDS[mark]] += 1
        for name in SUM_FIELDS:
            out.sums[name] = [0] * len(verdicts)
        tested = False
        for idx, mark in enumerate(verdicts):
            if mark == MISSING:
                continue
            tested = True
            out.sums["line_den"][idx] += lines
            out.sums["task_den"][idx] += 1
            out.counts["results"] += 1
            if mark == PASS:
                out.sums["line_num"][idx] += lines
                out.sums["task_num"][idx] += 1
                out.counts["passed"] += 1
        if tested:
            out.counts["snippets"] += 1
            out.counts["lines"] += lines
            if expected:
                out.counts["expected_tested"] += 1
                out.counts["expected_lines"] += lines
        return out

    def add(self, other: Contribution, sign: int = 1) -> None:
        """Add (``sign`` 1) or subtract (-1) ``other``; lists grow to the longer width."""
        for name in SUM_FIELDS:
            mine, theirs = self.sums[name], other.sums[name]
            mine.extend([0] * (len(theirs) - len(mine)))
            for i, v in enumerate(theirs):
                mine[i] += sign * v
        for name in COUNT_FIELDS:
            self.counts[name] += sign * other.counts[name]

    def widen(self, width: int) -> None:
        """Pad every list with zeros to ``width`` (every paper row of a run has the run's width)."""
        for values in self.sums.values():
            values.extend([0] * (width - len(values)))

    def fields(self) -> dict:
        """The ``RunPaperScore`` fields these sums give (``expected_snippets`` apart)."""
        line_mean, line_std = paper_rates(self.sums)
        return {**self.sums, **self.counts, "line_mean": line_mean, "line_std": line_std}


def paper_rates(sums: Mapping[str, Sequence[int]]) -> tuple[float | None, float | None]:
    """``line_mean`` and ``line_std`` of a paper row (its ``problem_scores``)."""
    line = combine_rates(sums["line_num"], sums["line_den"], sums["task_den"])
    return finite(line.mean), finite(line.std)


class PaperRow(Protocol):
    """What ``score_fields`` reads of a ``RunPaperScore``: the paper's key, its lists and counts."""

    paper_key: str
    line_num: list[int]
    line_den: list[int]
    task_num: list[int]
    task_den: list[int]
    snippets: int
    expected_snippets: int
    results: int
    expected_tested: int
    expected_lines: int
    passes_confirmed: int
    passes_unconfirmed: int
    passes_forged: int


def summed_indices(rows: Sequence[PaperRow]) -> dict[str, list[int]]:
    """The per-index integer sums (``SUM_FIELDS``) of paper rows added up, index by index."""
    width = max((len(r.task_den) for r in rows), default=0)
    sums = {}
    for name in SUM_FIELDS:
        columns = zip_longest(*(getattr(r, name) for r in rows), fillvalue=0)
        sums[name] = ([sum(column) for column in columns] + [0] * width)[:width]
    return sums


def confirmation_fields(rows: Iterable[PaperRow], selection: Sequence[str] | None) -> dict[str, int]:
    """The confirmation counts of a ``RunScore`` over ``selection`` (None: every paper): its paper rows'
    summed."""
    kept = None if selection is None else set(selection)
    chosen = [r for r in rows if kept is None or r.paper_key in kept]
    return {name: sum(getattr(r, name) for r in chosen) for name in CONFIRMATION_FIELDS.values()}


def score_fields(rows: Iterable[PaperRow], selection: Sequence[str] | None) -> dict:
    """The fields of a ``RunScore`` over ``selection`` (None: every paper) recombined from the run's paper
    rows, every one but the bootstrap interval: what ``scoring.score_model`` gives for the same results,
    and the confirmation counts (``confirmation_fields``)."""
    kept = None if selection is None else set(selection)
    chosen = [r for r in rows if kept is None or r.paper_key in kept]
    sums = summed_indices(chosen)
    line = combine_rates(sums["line_num"], sums["line_den"], sums["task_den"])
    task = combine_rates(sums["task_num"], sums["task_den"], sums["task_den"])
    expected = sum(r.expected_snippets for r in chosen)
    return {
        "line_mean": finite(line.mean),
        "line_std": finite(line.std),
        "line_rates": [finite(v) for v in line.rates],
        "task_mean": finite(task.mean),
        "task_std": finite(task.std),
        "task_rates": [finite(v) for v in task.rates],
        "snippets": sum(r.snippets for r in chosen),
        "lines": sum(r.expected_lines for r in chosen),
        "expected_snippets": expected,
        "coverage": sum(r.expected_tested for r in chosen) / expected if expected else 0.0,
        "papers": sum(1 for r in chosen if r.results),
        **confirmation_fields(chosen, None),
    }


def interval(
    results: Sequence[scoring.SnippetResult], selection: Sequence[str] | None
) -> tuple[float | None, float | None]:
    """The stored bootstrap interval over ``selection``: ``scoring.bootstrap_ci`` of the selected results
    (it depends on the set of results only, not on their order)."""
    kept = None if selection is None else set(selection)
    low, high = scoring.bootstrap_ci([r for r in results if kept is None or r.task in kept])
    return finite(low), finite(high)
