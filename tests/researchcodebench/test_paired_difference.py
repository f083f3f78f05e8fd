"""The paired difference of two models (researchcodebench.scoring.paired_difference) on fixtures where the
answer is known: identical runs differ by 0 and 0 is inside the interval; a run that passes a strict
superset of the other's snippets is ahead and distinguishable; the interval is the same on every call."""

from __future__ import annotations

from researchcodebench.scoring import paired_difference

LINES = {f"s{i}": 3 + i % 5 for i in range(40)}


def run(passing: set[str], partial: dict[str, float] | None = None) -> dict[str, tuple[int, float]]:
    return {k: (n, (partial or {}).get(k, 1.0 if k in passing else 0.0)) for k, n in LINES.items()}


def test_identical_runs_differ_by_zero_with_zero_inside_the_interval():
    a = run({f"s{i}" for i in range(0, 40, 3)}, {"s1": 0.5, "s2": 0.25})
    d = paired_difference(a, dict(a))
    assert d.difference == 0 and d.low <= 0 <= d.high and not d.distinguishable and d.snippets == 40


def test_a_strict_superset_of_passes_is_ahead_and_distinguishable():
    base = {f"s{i}" for i in range(0, 40, 4)}
    more = base | {f"s{i}" for i in range(1, 40, 4)}
    d = paired_difference(run(more), run(base))
    gained = sum(LINES[f"s{i}"] for i in range(1, 40, 4))
    assert abs(d.difference - 100 * gained / sum(LINES.values())) < 1e-9
    assert 0 < d.low <= d.difference <= d.high and d.distinguishable
    reverse = paired_difference(run(base), run(more))
    assert reverse.difference == -d.difference and reverse.high < 0 and reverse.distinguishable


def test_one_snippet_of_forty_is_not_distinguishable():
    d = paired_difference(run({"s0"}), run(set()))
    assert d.difference > 0 and d.low <= 0 and not d.distinguishable


def test_only_the_snippets_both_were_judged_on_count_and_the_interval_is_reproducible():
    a, b = run(set(LINES)), run(set())
    b = {k: v for k, v in b.items() if k in ("s0", "s1")}
    d = paired_difference(a, b)
    assert d.snippets == 2 and d.difference == 100
    assert paired_difference(a, b) == d
    assert paired_difference(a, {"other": (3, 1.0)}) is None
