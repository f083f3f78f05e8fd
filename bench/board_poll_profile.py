"""Where a poll of the board of a release under evaluation spends its time (issue 37). Not part of the suite.

On the mixed-load bench's database (``bench/mixed_load.py`` seeds it: the synthetic board plus the release
``bench-examples``), in this process with Django's test client (the same middleware and views as gunicorn),
the poll ``bench/board_visibility.py`` makes (the read API's leaderboard of the release, unfinished runs
included) is measured

1. as a hit: the body stored, the versions unchanged;
2. as a miss, the way every poll after a verdict was answered before issue 37 (``RCB_BOARD_STALE_S=0``): the
   release's scope moved as a verdict moves it (``scopes_bump``), the body built while the poll waits;
3. as a miss with the previous body served (``RCB_BOARD_STALE_S=1``): the poll's own time, and apart, the
   rebuild its process does once the response is sent;

each ``--repeat`` times (median and p95, SQL queries of one), then ``--threads`` polls at once after one
verdict, both ways: how many of them built the body (the rebuilds per verdict), and a cProfile of one miss.

Usage: ``.venv/bin/python bench/board_poll_profile.py [--db rcb_bench] [--release bench-examples]
[--repeat 20] [--threads 4]``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from board_visibility import board_path  # noqa: E402
from leaderboard_load import _setup_django  # noqa: E402


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(round(0.95 * len(ordered))) - 1)]


def _row(label: str, times: list[float], queries: int) -> str:
    return (
        f"{label:<58s} median {statistics.median(times) * 1000:7.1f} ms   p95 {_p95(times) * 1000:7.1f} ms"
        f"   {queries:3d} queries"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", default="rcb_bench")
    parser.add_argument("--release", default="bench-examples")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()
    _setup_django(args.db)

    from django.db import connection, connections
    from django.test import Client
    from django.test.utils import CaptureQueriesContext, override_settings

    from contributions.models import Release
    from leaderboard import caching
    from leaderboard.scopes import release_scope, scopes_bump

    release = Release.objects.get(name=args.release)
    url = board_path(args.release)
    client = Client(HTTP_HOST="127.0.0.1")

    def verdict() -> None:
        scopes_bump([release_scope(release.pk)])

    def timed() -> tuple[float, int]:
        with CaptureQueriesContext(connection) as queries:
            start = time.perf_counter()
            response = client.get(url)
            elapsed = time.perf_counter() - start
        assert response.status_code == 200, response.status_code
        return elapsed, len(queries.captured_queries)

    print(f"{url} on {args.db} (release {args.release}), {args.repeat} requests each")
    with override_settings(RCB_BOARD_STALE_S=0):
        client.get(url)
        hits = [timed() for _ in range(args.repeat)]
        misses = []
        for _ in range(args.repeat):
            verdict()
            misses.append(timed())
    size = len(client.get(url).content)
    print(_row("hit (stored body)", [t for t, _ in hits], hits[0][1]))
    print(_row("miss, built while the poll waits (before issue 37)", [t for t, _ in misses], misses[-1][1]))

    pending: list = []
    stale, rebuilds = [], []
    with override_settings(RCB_BOARD_STALE_S=1.0):
        original = caching.after_response
        caching.after_response = pending.append
        try:
            client.get(url)
            for _ in range(args.repeat):
                verdict()
                stale.append(timed())
                for work in pending:
                    start = time.perf_counter()
                    work()
                    rebuilds.append(time.perf_counter() - start)
                pending.clear()
        finally:
            caching.after_response = original
    print(_row("miss, the previous body served (issue 37)", [t for t, _ in stale], stale[-1][1]))
    print(_row("  its rebuild, after the response", rebuilds, misses[-1][1] - 1))
    print(f"body: {size:,} bytes")

    def at_once(stale_s: float) -> int:
        """``--threads`` polls at once right after one verdict: how many built the body."""
        built = []
        rendered = caching._rendered

        def counting(*a, **k):
            built.append(1)
            return rendered(*a, **k)

        caching._rendered = counting
        barrier = threading.Barrier(args.threads)

        def poll() -> None:
            barrier.wait()
            Client(HTTP_HOST="127.0.0.1").get(url)
            connections.close_all()

        try:
            with override_settings(RCB_BOARD_STALE_S=stale_s):
                Client(HTTP_HOST="127.0.0.1").get(url)
                verdict()
                threads = [threading.Thread(target=poll) for _ in range(args.threads)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
        finally:
            caching._rendered = rendered
        return len(built)

    print(
        f"{args.threads} polls at once after one verdict: {at_once(0)} built the body before issue 37, "
        f"{at_once(1.0)} with the previous body served"
    )

    with override_settings(RCB_BOARD_STALE_S=0):
        verdict()
        profiler = cProfile.Profile()
        profiler.enable()
        client.get(url)
        profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    out.write("one miss under cProfile, the project's functions by cumulative time:\n")
    stats.sort_stats("cumulative").print_stats(
        r"/(leaderboard|evaluation|contributions|researchcodebench)/", 15
    )
    print(out.getvalue())


if __name__ == "__main__":
    main()
