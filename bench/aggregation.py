"""Aggregation cost per recorded verdict (issue 21, item 1): a whole-run refresh vs one verdict applied as a
delta, side by side in one run. Not part of the test suite.

1. Seeds (or reuses) the synthetic benchmark of ``bench/leaderboard_load.py`` at the size asked for, in its
   own PostgreSQL database (default ``rcb_bench_agg``): ``--papers`` x ``--snippets-per-paper`` snippets,
   ``--models`` finished runs with 3 completions per snippet, every result of record, aggregated by the
   real service.
2. Whole-run refresh: ``leaderboard_refresh_run`` of the middle run, ``--rebuilds`` times.
3. One verdict as a delta: ``--verdicts`` times, a random result of the same run flips (passed <-> a logic
   failure), in a transaction holding the run's row lock as a worker recording a verdict does, and
   ``leaderboard.services.increments.leaderboard_apply_result`` (what the result's ``post_save`` calls)
   applies it; committed each time. Timed: the delta, and after commit the request for the release's step
   (the run lock and the result's own write are the verdict's, not the aggregation's; wall time: the delta
   alone).
4. The per-release background step those verdicts asked for (``leaderboard_refresh_release``): the run's
   bootstrap intervals.

For each it prints the median wall time, database time (every statement's round trip, summed with
``connection.execute_wrapper``) and number of queries, the ratio of database time per verdict, and, for
scale, one ``SELECT 1`` round trip (on a busy host most of a delta's time is round trips). The
broker is the embedded filesystem one under ``var/bench/`` (the step's message is sent, never consumed).

Usage: ``.venv/bin/python bench/aggregation.py [--models 20 --papers 20 --snippets-per-paper 20]
[--verdicts 200] [--rebuilds 5] [--db rcb_bench_agg] [--reseed]``. Issue 21's size (the 0.86 s refresh):
``--models 100 --papers 100 --snippets-per-paper 20`` (2,000 snippets, 600,000 results; seeding and the
first aggregation take minutes).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from leaderboard_load import RELEASE, _setup_django, aggregate, ensure_database, seed  # noqa: E402


@dataclass
class Clock:
    """Database round trips of the statements run while installed (``connection.execute_wrapper``), but
    those run while ``paused``."""

    seconds: float = 0.0
    queries: int = 0
    paused: bool = False

    def __call__(self, execute, sql, params, many, context):
        if self.paused:
            return execute(sql, params, many, context)
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.seconds += time.perf_counter() - started
            self.queries += 1


@dataclass(frozen=True)
class Sample:
    wall_s: float
    db_s: float
    queries: int


def timed(fn) -> Sample:
    from django.db import connection

    clock = Clock()
    with connection.execute_wrapper(clock):
        started = time.perf_counter()
        fn()
        wall = time.perf_counter() - started
    return Sample(wall, clock.seconds, clock.queries)


def median(samples: list[Sample]) -> Sample:
    return Sample(
        statistics.median(s.wall_s for s in samples),
        statistics.median(s.db_s for s in samples),
        int(statistics.median(s.queries for s in samples)),
    )


def prepare(args: argparse.Namespace) -> None:
    """The seeded, aggregated board of the asked size (reused when the database holds exactly that)."""
    ensure_database(args.db, args.reseed)
    _setup_django(args.db)
    from contributions.models import Snippet
    from evaluation.models import EvaluationRun

    snippets = Snippet.objects.filter(task_version__releases__name=RELEASE).count()
    runs = EvaluationRun.objects.filter(release__name=RELEASE, scores__mode="none").count()
    if snippets == args.papers * args.snippets_per_paper and runs == args.models:
        print(f"reusing the seeded database {args.db}")
        return
    from django.db import connection

    connection.close()
    ensure_database(args.db, reseed=True)
    run_ids = seed(n_papers=args.papers, snippets_per_paper=args.snippets_per_paper, n_models=args.models)
    aggregate(args.db, run_ids)


def flip(result_id: int, passed: bool) -> None:
    """The verdict of record of one result, turned over (as a re-test or a re-judge would record it)."""
    from evaluation.models import TestResult

    if passed:
        fields = {"outcome": "failed", "passed": False, "category": "logic", "tier": "model"}
    else:
        fields = {"outcome": "passed", "passed": True, "category": "passed", "tier": "none"}
    TestResult.objects.filter(pk=result_id).update(**fields)


def bench_delta(run_id: int, result: tuple[int, int, bool]) -> Sample:
    """One verdict's delta and what it does after commit (asking for the release's step); the run lock
    and the result's own write are the verdict's, not counted."""
    from django.db import connection, transaction

    from evaluation.services.run_state import run_lock
    from leaderboard.services.increments import leaderboard_apply_result

    result_id, completion_id, passed = result
    clock = Clock(paused=True)
    with connection.execute_wrapper(clock):
        with transaction.atomic():
            run_lock(run_id)
            flip(result_id, passed)
            clock.paused = False
            started = time.perf_counter()
            leaderboard_apply_result(completion_id=completion_id, created=False)
            wall = time.perf_counter() - started
        # COMMIT is not a statement the clock sees; what runs after it (the step's request) is.
    return Sample(wall, clock.seconds, clock.queries)


def select_one() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="rcb_bench_agg")
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--papers", type=int, default=20)
    parser.add_argument("--snippets-per-paper", type=int, default=20)
    parser.add_argument("--verdicts", type=int, default=200, help="deltas timed (median reported)")
    parser.add_argument("--rebuilds", type=int, default=5, help="whole-run refreshes timed (median)")
    parser.add_argument("--reseed", action="store_true", help="drop and seed the database again")
    args = parser.parse_args()
    os.environ.pop("CELERY_BROKER_URL", None)  # the embedded broker: nothing here consumes the step's message

    prepare(args)
    from evaluation.models import EvaluationRun, TestResult
    from leaderboard.services import leaderboard_refresh_release, leaderboard_refresh_run

    runs = list(EvaluationRun.objects.filter(release__name=RELEASE).order_by("pk"))
    run = runs[len(runs) // 2]
    results = list(
        TestResult.objects.filter(completion__run=run, tier__in=["none", "model"]).values_list(
            "pk", "completion_id", "passed"
        )
    )
    snippets = args.papers * args.snippets_per_paper
    print(
        f"{args.models} models x {snippets:,} snippets x 3 completions "
        f"({args.models * snippets * 3:,} results); the run measured: {run.pk} ({len(results):,} results)"
    )

    rebuilds = [timed(lambda: leaderboard_refresh_run(run=run)) for _ in range(args.rebuilds)]
    rng = random.Random(21)
    chosen = [rng.choice(results) for _ in range(args.verdicts + 10)]
    states = {r[0]: r[2] for r in chosen}
    deltas = []
    for i, (result_id, completion_id, _) in enumerate(chosen):
        sample = bench_delta(run.pk, (result_id, completion_id, states[result_id]))
        states[result_id] = not states[result_id]
        if i >= 10:  # the first ten warm the connection and the caches
            deltas.append(sample)
    step = timed(lambda: leaderboard_refresh_release(release_id=run.release_id))
    trip = median([timed(select_one) for _ in range(100)])

    full, one = median(rebuilds), median(deltas)
    print(f"{'':44} {'wall':>10} {'database':>10} {'queries':>8}")
    for label, s in (
        (f"whole-run refresh, median of {len(rebuilds)}", full),
        (f"one verdict as a delta, median of {len(deltas)}", one),
    ):
        print(f"{label:44} {s.wall_s * 1000:>8.1f}ms {s.db_s * 1000:>8.1f}ms {s.queries:>8}")
    p95 = sorted(d.db_s for d in deltas)[int(0.95 * (len(deltas) - 1))]
    print(f"{'one verdict as a delta, p95 database time':44} {'':>10} {p95 * 1000:>8.1f}ms")
    print(
        f"database time per recorded verdict: {one.db_s * 1000:.1f} ms instead of {full.db_s * 1000:.0f} ms "
        f"({full.db_s / one.db_s:.0f}x less; wall {full.wall_s / one.wall_s:.0f}x)"
    )
    print(f"for scale, one round trip of SELECT 1 here: {trip.db_s * 1000:.2f} ms (median of 100)")
    print(
        f"per-release step afterwards (intervals of the run): {step.wall_s:.2f} s wall, "
        f"{step.db_s * 1000:.0f} ms database, {step.queries} queries"
    )


if __name__ == "__main__":
    main()
