"""Load benchmark of the leaderboard (issue 6, item 6). Not part of the test suite.

1. Seeds a synthetic benchmark into its own PostgreSQL database (default ``rcb_bench``): 100 papers x 20
   snippets = 2,000 snippets, 100 models, one finished run each with 3 completions per snippet =
   600,000 completions and test results (COPY), then aggregates the read models with the real service
   (``leaderboard_refresh_run``, two processes). A database already seeded completely is reused.
2. Starts gunicorn (3 sync workers, 127.0.0.1) with ``RCB_BENCH=1``, which routes the baseline view
   ``/api/v1/bench/trivial/`` (a Django view that does nothing: same middleware and routing as the pages).
3. Measures each URL with wrk for ``--duration`` seconds at 4 connections, all in this one run: the trivial
   view, a static file, the leaderboard (plain and filtered), a model page and its lazily loaded verdict
   grid, a paper page and its lazily loaded heatmap (both as htmx asks for them), the API leaderboard, and
   the trivial view again at the end (how far noise moved the baseline). After 3 s of untimed load. It
   prints p50/p95/p99, requests/s and errors (socket errors + non-2xx) per URL, and every URL's p95 as a
   multiple of the trivial view's (target for the leaderboard: within 3x, 0 errors). Each URL is fetched a
   few times per worker first, so the numbers are the steady state (cached bodies, one query a request).

Usage: ``.venv/bin/python bench/leaderboard_load.py [--db rcb_bench] [--duration 10] [--reseed]
[--cache-url redis://127.0.0.1:6379/13]`` (default: the per-process LocMem cache).
"""

from __future__ import annotations

import argparse
import datetime as dt
import multiprocessing
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PG = "postgres://postgres@127.0.0.1:5432"
N_PAPERS, SNIPPETS_PER_PAPER, N_MODELS, N_COMPLETIONS = 100, 20, 100, 3
RELEASE = "bench-synthetic"
WRK_SCRIPT = """
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT p50=%f p95=%f p99=%f requests=%d duration_us=%d errors=%d non2xx=%d\\n",
    latency:percentile(50) / 1000, latency:percentile(95) / 1000, latency:percentile(99) / 1000,
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status))
end
"""


def bench_env(db: str) -> dict[str, str]:
    """The environment of the bench's processes (this one after ``_setup_django``, gunicorn, workers): the
    caller's, on database ``db``, with debug off and the baseline view routed."""
    return {
        **os.environ,
        "DATABASE_URL": f"{PG}/{db}",
        "DJANGO_SECRET_KEY": "bench-only-key-Vn3qT8cW1xZ6mR4kJ9pL2sD7fH0gB5yA-never-in-production",
        "DJANGO_DEBUG": "0",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DJANGO_STATIC_MANIFEST": "0",
        "DJANGO_LOG_LEVEL": "WARNING",
        "RCB_VAR_DIR": str(REPO / "var" / "bench"),
        "RCB_BENCH": "1",
    }


def _setup_django(db: str) -> None:
    os.environ.update(bench_env(db))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(REPO))
    import django

    django.setup()


def ensure_database(db: str, reseed: bool) -> None:
    import psycopg

    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (db,)).fetchone()
        if exists and reseed:
            conn.execute(f'DROP DATABASE "{db}" WITH (FORCE)')
            exists = None
        if not exists:
            conn.execute(f'CREATE DATABASE "{db}"')
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"],
        cwd=REPO,
        env=bench_env(db),
        check=True,
    )


def is_seeded() -> bool:
    from leaderboard.models import RunScore

    return RunScore.objects.filter(run__release__name=RELEASE, mode="none").count() == N_MODELS


def _copy(cursor, table: str, given: list[str], rows) -> int:
    """COPY rows into ``table``; NOT NULL columns not in ``given`` get a neutral value (empty text, 0,
    false, now) so that columns added by other apps later do not break the seed."""
    cursor.execute(
        "SELECT column_name, data_type, is_nullable FROM information_schema.columns "
        "WHERE table_name = %s AND column_default IS NULL AND is_identity = 'NO'",
        [table],
    )
    now = dt.datetime.now(dt.UTC)
    fill: dict[str, object] = {}
    for name, dtype, nullable in cursor.fetchall():
        if name in given or nullable == "YES":
            continue
        if "timestamp" in dtype:
            fill[name] = now
        elif dtype == "boolean":
            fill[name] = False
        elif dtype in ("integer", "bigint", "smallint", "numeric", "double precision"):
            fill[name] = 0
        elif dtype in ("jsonb", "json"):
            fill[name] = "{}"
        else:
            fill[name] = ""
    columns = given + list(fill)
    extra = tuple(fill.values())
    n = 0
    with cursor.cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(tuple(row) + extra)
            n += 1
    return n


def seed(
    *,
    n_papers: int = N_PAPERS,
    snippets_per_paper: int = SNIPPETS_PER_PAPER,
    n_models: int = N_MODELS,
    n_completions: int = N_COMPLETIONS,
) -> list[int]:
    """Create the synthetic benchmark (by default the size above; ``bench/aggregation.py`` asks for others);
    return the run ids (not yet aggregated)."""
    from django.db import connection, transaction
    from django.utils import timezone

    from contributions.models import Paper, Release, ReleaseEntry, Snippet, Task, TaskVersion
    from evaluation.models import EvaluationRun, LanguageModel

    rng = random.Random(7)
    started = time.perf_counter()
    with transaction.atomic():
        release = Release.objects.create(name=RELEASE, title="Synthetic load benchmark")
        papers = Paper.objects.bulk_create(
            Paper(
                key=f"bench-{i:03d}",
                title=f"Synthetic paper {i}",
                first_commit_date=dt.date(2023, 1, 1) + dt.timedelta(days=9 * i),
            )
            for i in range(n_papers)
        )
        tasks = Task.objects.bulk_create(Task(key=p.key, paper=p) for p in papers)
        versions = TaskVersion.objects.bulk_create(
            TaskVersion(task=t, number=1, content_hash=f"{i:064x}", origin=TaskVersion.Origin.IMPORTED)
            for i, t in enumerate(tasks)
        )
        ReleaseEntry.objects.bulk_create(
            ReleaseEntry(release=release, task_version=v, task=t)
            for v, t in zip(versions, tasks, strict=True)
        )
        snippets = Snippet.objects.bulk_create(
            Snippet(task_version=v, name=f"snippet {j}", ordinal=j, lines=rng.randint(1, 30), depth=0)
            for v in versions
            for j in range(snippets_per_paper)
        )
        # Model 0 holds the latest cutoff as text, so the global rule's paper set is fixed from the first run.
        models = LanguageModel.objects.bulk_create(
            LanguageModel(
                key=f"BENCH_MODEL_{i:03d}",
                name=f"Bench Model {i:03d}",
                developer=["OpenAI", "Google", "Anthropic", "Meta", "Mistral"][i % 5],
                open_weights=i % 3 == 0,
                knowledge_cutoff=dt.date(2025, 1, 1) if i == 0 else dt.date(2023 + i % 2, 1 + i % 12, 1),
                knowledge_cutoff_raw="2025-01" if i == 0 else f"{2023 + i % 2}-{1 + i % 12:02d}",
                active=False,
            )
            for i in range(n_models)
        )
        now = timezone.now()
        runs = EvaluationRun.objects.bulk_create(
            EvaluationRun(
                model=m,
                release=release,
                template="rcb-v2",
                with_paper=True,
                n_completions=n_completions,
                source=EvaluationRun.Source.GENERATED,
                verification=EvaluationRun.Verification.GENERATED,
                status=EvaluationRun.Status.FINISHED,
                finished_at=now,
                cost_usd=round(rng.uniform(0.5, 40), 2),
            )
            for m in models
        )
        difficulty = {s.pk: rng.random() for s in snippets}
        skill = {r.pk: 0.1 + 0.8 * i / n_models for i, r in enumerate(runs)}
        categories = [
            "syntax",
            "name",
            "type",
            "attribute",
            "index_key",
            "logic",
            "logic",
            "value_runtime",
            "timeout",
        ]
        with connection.cursor() as cur:
            cur.execute("SELECT COALESCE(MAX(id), 0) FROM evaluation_completion")
            first_id = cur.fetchone()[0] + 1
            items = [(r.pk, s.pk, c) for r in runs for s in snippets for c in range(n_completions)]
            n = _copy(
                cur,
                "evaluation_completion",
                [
                    "id",
                    "run_id",
                    "snippet_id",
                    "completion_idx",
                    "stage",
                    "code_extracted",
                    "created_at",
                    "updated_at",
                ],  # fmt: skip
                ((first_id + k, r, s, c, "done", True, now, now) for k, (r, s, c) in enumerate(items)),
            )
            cur.execute(
                "SELECT setval(pg_get_serial_sequence('evaluation_completion', 'id'), %s)", [first_id + n]
            )

            def results():
                for k, (r, s, _c) in enumerate(items):
                    passed = rng.random() < skill[r] * (1 - difficulty[s])
                    if passed:
                        yield (first_id + k, "passed", True, "passed", "none", now)
                    elif rng.random() < 0.002:
                        yield (first_id + k, "infra_error", False, "sandbox_failure", "infrastructure", now)
                    else:
                        cat = rng.choice(categories)
                        yield (
                            first_id + k,
                            "timeout" if cat == "timeout" else "failed",
                            False,
                            cat,
                            "model",
                            now,
                        )

            _copy(
                cur,
                "evaluation_testresult",
                ["completion_id", "outcome", "passed", "category", "tier", "created_at"],
                results(),
            )
    print(
        f"seeded {len(snippets)} snippets, {len(runs)} runs, {n} results in {time.perf_counter() - started:.1f} s"
    )
    return [r.pk for r in runs]


def _aggregate_chunk(args: tuple[str, list[int]]) -> int:
    db, run_ids = args
    from django.db import connections

    connections.close_all()
    from evaluation.models import EvaluationRun
    from leaderboard.services import leaderboard_refresh_run

    for run in EvaluationRun.objects.filter(id__in=run_ids):
        leaderboard_refresh_run(run=run, defer_shared=True)
    connections.close_all()
    return len(run_ids)


def aggregate(db: str, run_ids: list[int], processes: int = 2) -> None:
    from django.db import connections

    from contributions.models import Snippet
    from leaderboard.services import leaderboard_refresh_global, snippet_stats_refresh

    started = time.perf_counter()
    _aggregate_chunk((db, run_ids[:1]))  # the run holding the global cutoff first (see seed)
    rest = run_ids[1:]
    chunks = [rest[i::processes] for i in range(processes)]
    connections.close_all()
    with multiprocessing.get_context("fork").Pool(processes) as pool:
        pool.map(_aggregate_chunk, [(db, c) for c in chunks])
    rebuilt = leaderboard_refresh_global()
    snippet_stats_refresh(
        snippet_ids=Snippet.objects.filter(task_version__releases__name=RELEASE).values_list("id", flat=True)
    )
    print(
        f"aggregated {len(run_ids)} runs in {time.perf_counter() - started:.1f} s ({rebuilt} global rows rebuilt)"
    )


def prepare_database(db: str, reseed: bool) -> None:
    """Create and migrate ``db``, set Django up on it, and seed and aggregate the synthetic benchmark unless
    it is there complete (then it is reused)."""
    ensure_database(db, reseed)
    _setup_django(db)
    if is_seeded():
        print(f"reusing the seeded database {db}")
        return
    from django.db import connection

    connection.close()
    ensure_database(db, reseed=True)
    aggregate(db, seed())
    # The bulk COPY leaves the planner without statistics; autovacuum (off on this project's machines)
    # would gather them on a production server.
    with connection.cursor() as cur:
        cur.execute("ANALYZE")


def bench_model_key() -> str:
    """The synthetic model whose pages are measured (the 51st of 100: a middling one)."""
    from evaluation.models import LanguageModel

    return (
        LanguageModel.objects.filter(key__startswith="BENCH_MODEL_")
        .order_by("key")
        .values_list("key", flat=True)[50]
    )


def start_gunicorn(*, port: int, workers: int, env: dict[str, str]) -> subprocess.Popen:
    """gunicorn serving ``config.wsgi`` with ``workers`` sync workers on 127.0.0.1:``port``, in a session of
    its own (so that a terminal's Ctrl-C reaches it only through the caller's clean-up)."""
    gunicorn = Path(sys.executable).with_name("gunicorn")
    return subprocess.Popen(
        [
            str(gunicorn),
            "config.wsgi",
            "-w",
            str(workers),
            "-b",
            f"127.0.0.1:{port}",
            "--log-level",
            "warning",
        ],
        cwd=REPO,
        env=env,
        start_new_session=True,
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_up(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except OSError:
            time.sleep(0.3)
    raise SystemExit(f"gunicorn did not answer {url} within {timeout} s")


def status_of(url: str, headers: tuple[str, ...] = ()) -> int:
    request = urllib.request.Request(url, headers=dict(h.split(": ", 1) for h in headers))
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return -1


def measure(
    url: str, duration: int, connections: int, script: str, headers: tuple[str, ...] = ()
) -> dict[str, float]:
    extra = [arg for h in headers for arg in ("-H", h)]
    out = subprocess.run(
        ["wrk", "-t2", f"-c{connections}", f"-d{duration}s", "--timeout", "10s", "-s", script, *extra, url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    match = re.search(r"RESULT (.*)", out)
    if not match:
        raise SystemExit(f"wrk printed no result for {url}:\n{out}")
    values = dict(pair.split("=") for pair in match.group(1).split())
    return {k: float(v) for k, v in values.items()}


def require_wrk() -> None:
    """Stop before seeding (minutes) when the load generator is missing, saying how to get it."""
    if shutil.which("wrk"):
        return
    raise SystemExit(
        "wrk (the HTTP load generator this benchmark drives) is not installed or not on PATH.\n"
        "`make bench-leaderboard` installs it (scripts/bootstrap.sh --bench: apt-get install wrk, as root or\n"
        "with sudo); elsewhere install the package wrk with your package manager or build it from\n"
        "https://github.com/wg/wrk, then run this again."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="rcb_bench")
    parser.add_argument("--duration", type=int, default=10, help="seconds of load per URL")
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--workers", type=int, default=3, help="gunicorn sync workers")
    parser.add_argument("--reseed", action="store_true", help="drop and seed the database again")
    parser.add_argument(
        "--cache-url",
        default="",
        help="RCB_CACHE_URL for gunicorn (e.g. redis://127.0.0.1:6379/13); default LocMem",
    )
    args = parser.parse_args()
    require_wrk()

    prepare_database(args.db, args.reseed)
    model_key = bench_model_key()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    urls = {
        "trivial view": "/api/v1/bench/trivial/",
        "static file (whitenoise)": "/static/css/site.css",
        "leaderboard page /": "/",
        "leaderboard page, global rule": "/?contamination=global&developer=OpenAI",
        "model page": f"/models/{model_key}/",
        "model page, verdict grid (htmx)": f"/models/{model_key}/?grid=all",
        "paper page": "/papers/bench-050/",
        "paper page, heatmap (htmx)": "/papers/bench-050/?heatmap=all",
        "API leaderboard": "/api/v1/leaderboard/",
        "API leaderboard, per-model": "/api/v1/leaderboard/?contamination=per-model",
        # Again at the end: how much the machine's noise moved the baseline during the run.
        "trivial view, again": "/api/v1/bench/trivial/",
    }
    server = start_gunicorn(
        port=port, workers=args.workers, env={**bench_env(args.db), "RCB_CACHE_URL": args.cache_url}
    )
    # The lazy parts are what htmx fetches when they scroll into view: measured with its header.
    headers = {name: ("HX-Request: true",) for name in urls if name.endswith("(htmx)")}
    results: dict[str, dict[str, float]] = {}
    try:
        wait_up(base + urls["trivial view"])
        with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
            f.write(WRK_SCRIPT)
        # Until every worker has booted and served, the first seconds stall (p99 near a second): load the
        # trivial view untimed first, so the baseline is the steady state like the pages' numbers.
        measure(base + urls["trivial view"], 3, args.connections, f.name)
        for name, path in urls.items():
            code = status_of(base + path, headers.get(name, ()))
            if code != 200:
                print(f"{name:32s} {path}: HTTP {code} before the load; measured anyway (errors will show)")
            for _ in range(3 * args.workers):  # warm every worker's connection and caches
                status_of(base + path, headers.get(name, ()))
            results[name] = measure(
                base + path, args.duration, args.connections, f.name, headers.get(name, ())
            )
    finally:
        server.terminate()
        server.wait(timeout=30)

    print(
        f"\n{args.connections} connections, {args.duration} s per URL, gunicorn {args.workers} sync workers, db {args.db}, "
        f"cache {args.cache_url or 'per-process LocMem'}"
    )
    print(f"{'URL':34s} {'p50 ms':>8s} {'p95 ms':>8s} {'p99 ms':>8s} {'req/s':>8s} {'errors':>7s}")
    for name, r in results.items():
        errors = int(r["errors"] + r["non2xx"])
        rps = r["requests"] / (r["duration_us"] / 1e6)
        print(f"{name:34s} {r['p50']:8.2f} {r['p95']:8.2f} {r['p99']:8.2f} {rps:8.1f} {errors:7d}")
    base_p95 = results["trivial view"]["p95"]
    print(
        f"\np95 ratio to the trivial view ({base_p95:.2f} ms); target for the leaderboard: within 3x, 0 errors"
    )
    for name, r in results.items():
        if name.startswith("trivial view"):
            continue
        ratio = r["p95"] / base_p95
        verdict = ("within 3x" if ratio <= 3 else "OVER 3x") if name.startswith("leaderboard page") else ""
        print(f"  {name:34s} {ratio:6.2f}x {verdict}")


if __name__ == "__main__":
    main()
