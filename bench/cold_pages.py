"""Cold requests of every board page, htmx part and read API endpoint (issue 21, item 3). Not part of the
test suite.

"Cold" is the first request after a change: nothing stored in the cache layer, so the body is built from
the read models. Target: at most 150 ms each at 100 models x 2,000 snippets x 3 completions.

1. Seeds (or reuses) the synthetic benchmark of ``bench/leaderboard_load.py`` in its own PostgreSQL database
   (default ``rcb_bench``): 100 papers x 20 snippets, 100 models, one finished run each with 3 completions
   per snippet, aggregated by the real services.
2. In this process, with Django's test client (same middleware, routing and templates as gunicorn, no
   socket), every URL is fetched once untimed (templates compiled, connection open: a worker that has
   served before), then:

   - **cold**: ``--repeat`` times, the whole cache cleared (``cache.clear()``, which also drops the status
     page's report) and the URL fetched; the median and the slowest, the median of this process's CPU time
     (what the request costs here, less sensitive than wall time to other work on a shared machine), the
     number of SQL queries and their database time (round trips summed with
     ``connection.execute_wrapper``);
   - **after a change**: ``--repeat`` times, one verdict recorded through the real service path (a result
     of the middle run removed and recorded again, turned over, with ``test_result_record``: its
     ``post_save`` applies the delta to the read models, which moves the board version), then the URL
     fetched without clearing anything: the median. This checks that what a change costs is the cold
     build above, not a stale hit (a page cached by time rather than by version, like ``/status/``'s
     report for ``RCB_STATUS_CACHE_S`` seconds, shows a hit here).

It prints one line per URL (status, cold median and worst, queries, database ms, after-change median) and
flags a cold median over the target. The broker is the embedded filesystem one under ``var/bench/`` (a
change's request for the per-release step is sent, never consumed).

Usage: ``.venv/bin/python bench/cold_pages.py [--db rcb_bench] [--repeat 5] [--only SUBSTRING]
[--reseed]``.
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
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent))
from aggregation import Clock  # noqa: E402
from leaderboard_load import RELEASE, bench_model_key, prepare_database  # noqa: E402

#: the issue's budget for a cold request, in milliseconds
TARGET_MS = 150.0
PAPER = "bench-050"


@dataclass(frozen=True)
class Fetch:
    status: int
    wall_ms: float
    cpu_ms: float
    db_ms: float
    queries: int
    size: int


def urls() -> list[tuple[str, str, bool]]:
    """(name, path, htmx) of every board page, htmx part and read API table, the CSV exports included
    (leaderboard/urls.py, leaderboard/api_urls.py, evaluation/api_urls.py, /papers/ and /status/)."""
    from contributions.models import Snippet
    from evaluation.models import EvaluationRun

    model = bench_model_key()
    other = model.replace(model[-3:], f"{int(model[-3:]) + 1:03d}")
    run_id = EvaluationRun.objects.filter(model__key=model).values_list("pk", flat=True).first()
    snippet = Snippet.objects.filter(task_version__task__paper__key=PAPER).order_by("ordinal")[3]
    snippet_path = f"/papers/{PAPER}/snippets/{quote(snippet.name)}/"
    return [
        ("board", "/", False),
        ("board, global rule + developer", "/?contamination=global&developer=OpenAI", False),
        ("board, per-model", "/?contamination=per-model", False),
        ("board, sorted by cost (htmx)", "/?sort=cost", True),
        ("errors page", "/errors/", False),
        ("contamination page", "/contamination/", False),
        ("ablation page", "/ablation/", False),
        ("model search (htmx)", "/models/?q=bench", True),
        ("model page", f"/models/{model}/", False),
        ("model page, verdict grid (htmx)", f"/models/{model}/?grid=all", True),
        ("compare page", f"/compare/?models={model}&models={other}", False),
        ("paper page", f"/papers/{PAPER}/", False),
        ("paper page, heatmap (htmx)", f"/papers/{PAPER}/?heatmap=all", True),
        ("snippet page", snippet_path, False),
        ("papers list /papers/", "/papers/", False),
        ("status page /status/", "/status/", False),
        ("API leaderboard", "/api/v1/leaderboard/", False),
        ("API leaderboard, global", "/api/v1/leaderboard/?contamination=global", False),
        ("API leaderboard, per-model", "/api/v1/leaderboard/?contamination=per-model", False),
        ("API leaderboard CSV", "/api/v1/leaderboard/?format=csv", False),
        ("API per-paper table", "/api/v1/leaderboard/papers/", False),
        ("API per-paper CSV", "/api/v1/leaderboard/papers/?format=csv", False),
        ("API errors table", "/api/v1/leaderboard/errors/", False),
        ("API errors CSV", "/api/v1/leaderboard/errors/?format=csv", False),
        ("API per-snippet table", "/api/v1/leaderboard/snippets/", False),
        ("API per-snippet CSV", "/api/v1/leaderboard/snippets/?format=csv", False),
        ("API models", "/api/v1/models/?format=json", False),
        ("API models CSV", "/api/v1/models/?format=csv", False),
        ("API model detail", f"/api/v1/models/{model}/?format=json", False),
        ("API papers", "/api/v1/papers/?format=json", False),
        ("API paper detail", f"/api/v1/papers/{PAPER}/?format=json", False),
        ("API snippets", "/api/v1/snippets/?format=json", False),
        ("API snippet detail", f"/api/v1/snippets/{snippet.pk}/?format=json", False),
        ("API runs", "/api/v1/runs/?format=json", False),
        ("API runs CSV", f"/api/v1/runs/?model={model}&format=csv", False),
        ("API run detail", f"/api/v1/runs/{run_id}/?format=json", False),
        ("API run results", f"/api/v1/runs/{run_id}/results/?format=json", False),
        ("API run results, failed", f"/api/v1/runs/{run_id}/results/?format=json&outcome=failed", False),
        ("run page (6,000 completions)", f"/runs/{run_id}/", False),
    ]


def fetch(client, path: str, htmx: bool) -> Fetch:
    from django.db import connection

    clock = Clock()
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    with connection.execute_wrapper(clock):
        started, cpu = time.perf_counter(), time.process_time()
        response = client.get(path, **headers)
        content = response.getvalue() if response.streaming else response.content
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    return Fetch(
        response.status_code, wall * 1000, cpu * 1000, clock.seconds * 1000, clock.queries, len(content)
    )


class Changer:
    """Records one verdict at a time through the real service path: a result of the middle run is removed
    and recorded again, turned over, by ``test_result_record`` (its ``post_save`` applies the delta)."""

    def __init__(self) -> None:
        from evaluation.models import EvaluationRun, TestResult

        runs = list(
            EvaluationRun.objects.filter(release__name=RELEASE).order_by("pk").values_list("pk", flat=True)
        )
        self.results = list(
            TestResult.objects.filter(completion__run_id=runs[len(runs) // 2], tier__in=["none", "model"])
            .order_by("pk")
            .values_list("completion_id", flat=True)
        )
        self.rng = random.Random(21)

    def change(self) -> None:
        from django.db import transaction

        from evaluation.models import TestResult
        from evaluation.services.verdicts import test_result_record
        from researchcodebench.runner import Verdict

        completion_id = self.rng.choice(self.results)
        with transaction.atomic():
            old = TestResult.objects.get(completion_id=completion_id)
            passed = old.passed
            old.delete()
            verdict = (
                Verdict(outcome="failed", category="logic", tier="model", reason="bench: turned over")
                if passed
                else Verdict(outcome="passed", category="passed", tier="none")
            )
            test_result_record(completion_id=completion_id, verdict=verdict, worker_host="bench", attempt=1)


def measure(client, changer: Changer, path: str, htmx: bool, repeat: int) -> tuple[list[Fetch], list[Fetch]]:
    from django.core.cache import cache

    fetch(client, path, htmx)  # untimed: templates compiled, as in a worker that has served before
    cold = []
    for _ in range(repeat):
        cache.clear()
        cold.append(fetch(client, path, htmx))
    after = []
    for _ in range(repeat):
        changer.change()
        after.append(fetch(client, path, htmx))
    return cold, after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="rcb_bench")
    parser.add_argument("--repeat", type=int, default=5, help="cold fetches per URL (median reported)")
    parser.add_argument("--only", default="", help="measure only the URLs whose name contains this")
    parser.add_argument("--reseed", action="store_true", help="drop and seed the database again")
    args = parser.parse_args()
    os.environ.pop("CELERY_BROKER_URL", None)  # the embedded broker: nothing here consumes the step's message

    prepare_database(args.db, args.reseed)
    from django.test import Client

    client = Client(SERVER_NAME="127.0.0.1")
    changer = Changer()
    chosen = [u for u in urls() if args.only.lower() in u[0].lower()]
    print(
        f"db {args.db}; cold = cache cleared, median of {args.repeat}; after a change = one verdict "
        f"recorded, then the request (median of {args.repeat}); target {TARGET_MS:.0f} ms"
    )
    print(
        f"{'URL':34s} {'HTTP':>4s} {'cold ms':>8s} {'worst':>7s} {'cpu ms':>7s} {'queries':>7s} {'db ms':>7s} "
        f"{'after change':>12s} {'KiB':>6s}"
    )
    over = []
    for name, path, htmx in chosen:
        cold, after = measure(client, changer, path, htmx, args.repeat)
        median = statistics.median(f.wall_ms for f in cold)
        flag = " OVER" if median > TARGET_MS else ""
        if flag:
            over.append(name)
        print(
            f"{name:34s} {cold[0].status:4d} {median:8.1f} {max(f.wall_ms for f in cold):7.1f} "
            f"{statistics.median(f.cpu_ms for f in cold):7.1f} "
            f"{statistics.median(f.queries for f in cold):7.0f} {statistics.median(f.db_ms for f in cold):7.1f} "
            f"{statistics.median(f.wall_ms for f in after):12.1f} {cold[0].size / 1024:6.0f}{flag}"
        )
    print(f"\nover {TARGET_MS:.0f} ms cold: {', '.join(over) if over else 'none'}")


if __name__ == "__main__":
    main()
