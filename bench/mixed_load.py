"""Mixed-load benchmark of the whole portal (issue 14 item 7). Not part of the test suite.

1. Seeds (or reuses) the synthetic benchmark of ``bench/leaderboard_load.py`` in PostgreSQL (default database
   ``rcb_bench``: 100 models x 2,000 snippets x 3 completions), and adds a small real release,
   ``bench-examples`` (``examples/pset``: 9 tasks, 85 snippets, with files), that the worker can test
   against; the synthetic release stays the board's default. A self-reported model takes the uploads of a
   bench user (with a personal API token), and a maintainer-managed model, ``bench-fake-llm``, is served by
   the demo's fake LLM.
2. Starts, as real processes: the fake LLM (``manage.py serve_fake_llm``), one Celery worker with the beat
   (``-Q site,eval-cpu,eval-gpu -B``, ``--worker-concurrency`` 2) and gunicorn (``config.wsgi``, 3 sync
   workers), all on RabbitMQ (the vhost ``rcb_bench``, emptied at start; the default vhost when
   ``rabbitmqctl`` cannot make it) and the per-process LocMem page cache (``--cache-url`` for Redis).
3. Cold vs cached, before the load: for each GET URL, a board change (one synthetic run re-aggregated by
   the real service, ``leaderboard_refresh_run``, which moves the board version every cached body is keyed
   by), then the first request (cold), then the median of ``--samples`` requests once every gunicorn worker
   has served it (cached).
4. Starts a generated run of ``bench-fake-llm`` on ``bench-examples`` (``run_start``, as the web and
   ``evaluate_model`` do), so the worker is busy, and for ``--duration`` seconds drives a mixed load from
   ``--clients`` processes (keep-alive ``http.client``; each cycles through the GET URLs in its own shuffled
   order, with no pause): board pages, model/paper/snippet pages and their htmx parts, the contamination
   page, /papers/, /status/, the run's page and the read API; this process uploads a predictions file
   through ``POST /api/v1/runs/upload/`` every ``--upload-every`` seconds (one example task per upload,
   the fake LLM's answers) and starts another generated run whenever the current one is final.
5. Waits (at most ``--drain`` seconds) until every run started is final and aggregated, measures cold vs
   cached again, and prints per URL requests, req/s, p50/p95/p99 and errors (non-2xx or exceptions; the
   first bodies are printed), the totals, the runs (finished or not, test results), and both cold/cached
   tables. ``--json PATH`` writes the numbers; ``--profile`` adds a cProfile of a cold contamination page
   served in this process.

The bench's environment differs from the defaults on purpose: the upload throttle is set to twice the
bench's upload rate (``RCB_UPLOAD_THROTTLE``; default 30/hour), the verdict cache is off (the worker runs
every test; ``--verdict-cache`` turns it on), the fake LLM's one address is an allowed LLM host and the
worker consumes ``eval-gpu`` without a GPU (``RCB_GPU_QUEUE_WITHOUT_GPU=1``, a development setting).

Usage: ``.venv/bin/python bench/mixed_load.py [--duration 60] [--clients 4] [--upload-every 5]
[--json PATH] [--profile] [--reseed]`` (``make bench-mixed``). Every process it starts is stopped at the
end, also on Ctrl-C or an error.
"""

from __future__ import annotations

import argparse
import cProfile
import http.client
import io
import json
import math
import multiprocessing
import os
import pstats
import random
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from leaderboard_load import (
    RELEASE,
    REPO,
    bench_env,
    bench_model_key,
    free_port,
    prepare_database,
    start_gunicorn,
    wait_up,
)

EXAMPLES_RELEASE = "bench-examples"
EXAMPLES = REPO / "examples" / "pset"
VHOST = "rcb_bench"
AMQP = "amqp://guest:guest@127.0.0.1:5672"
UPLOADER = "bench-uploader"
UPLOAD_MODEL = "bench-uploads"
GENERATED_MODEL = "bench-fake-llm"
KEY_ENV = "RCB_LLM_KEY_BENCH"
TOKEN_NAME = "mixed-load bench"
UPLOAD_URL = "/api/v1/runs/upload/"
UPLOAD_NAME = "API upload (POST)"
#: error bodies kept per URL (the first ones), and how much of each
ERROR_SAMPLES, ERROR_BODY_CHARS = 3, 600


@dataclass(frozen=True)
class Target:
    """One GET URL of the load; ``htmx``: asked for as htmx asks for a lazily loaded part."""

    name: str
    path: str
    htmx: bool = False


# --- processes ------------------------------------------------------------------------------------------


class Processes:
    """The processes this bench started, stopped together (each leads its own session: its whole group is
    signalled, pool children and test runs included)."""

    def __init__(self) -> None:
        self.started: list[tuple[str, subprocess.Popen]] = []

    def start(self, name: str, cmd: list[str], *, env: dict[str, str], log: Path) -> subprocess.Popen:
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                cmd, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.started.append((name, proc))
        return proc

    def add(self, name: str, proc: subprocess.Popen) -> None:
        self.started.append((name, proc))

    def stop_all(self, grace_s: float = 10.0) -> None:
        for _name, proc in self.started:
            _signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for _name, proc in self.started:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            # The group may outlive its leader (a pool child, a sandboxed test): kill what is left.
            _signal_group(proc, signal.SIGKILL)
            proc.wait()
        self.started.clear()


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def rabbit_broker(vhost: str) -> tuple[str, str]:
    """The broker URL of a fresh, empty ``vhost`` (deleted and made again with rabbitmqctl, so no message of
    an earlier bench is left), and a note; the default vhost when rabbitmqctl cannot do it."""
    ctl = ["rabbitmqctl", "-q"]
    try:
        subprocess.run([*ctl, "delete_vhost", vhost], capture_output=True, timeout=60)
        subprocess.run([*ctl, "add_vhost", vhost], capture_output=True, timeout=60, check=True)
        subprocess.run(
            [*ctl, "set_permissions", "-p", vhost, "guest", ".*", ".*", ".*"],
            capture_output=True,
            timeout=60,
            check=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{AMQP}//", f"RabbitMQ default vhost (rabbitmqctl could not make {vhost!r}: {exc})"
    return f"{AMQP}/{vhost}", f"RabbitMQ vhost {vhost!r} (emptied at start)"


def wait_for_line(proc: subprocess.Popen, log: Path, text: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise SystemExit(f"{log.name}: the process exited with {proc.returncode}:\n{_tail(log)}")
        time.sleep(0.2)
    raise SystemExit(f"{log.name}: no {text!r} within {timeout:g} s:\n{_tail(log)}")


def wait_for_worker(proc: subprocess.Popen, hostname: str, log: Path, timeout: float = 120) -> None:
    from evaluation.models import WorkerHeartbeat

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if WorkerHeartbeat.objects.filter(hostname=hostname, status="online").exists():
            return
        if proc.poll() is not None:
            raise SystemExit(f"the worker exited with {proc.returncode}:\n{_tail(log)}")
        time.sleep(0.3)
    raise SystemExit(f"the worker did not report online within {timeout:g} s:\n{_tail(log)}")


def _tail(log: Path, lines: int = 30) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


# --- data -----------------------------------------------------------------------------------------------


def prepare_examples():
    """The small real release (files to test against), imported once; the synthetic release is made the
    default again so that the board, the API and leaderboard_load.py keep measuring it."""
    from contributions.models import Release
    from contributions.services import CatalogueError, release_create_from_pset, release_set_default

    release = Release.objects.filter(name=EXAMPLES_RELEASE).first()
    if release is None:
        try:
            release = release_create_from_pset(
                path=EXAMPLES, name=EXAMPLES_RELEASE, title="Example tasks (mixed-load bench)"
            )
        except CatalogueError as exc:
            raise SystemExit(f"cannot import {EXAMPLES} as {EXAMPLES_RELEASE!r}: {exc}") from exc
        print(f"imported {EXAMPLES} as release {EXAMPLES_RELEASE!r}")
    synthetic = Release.objects.get(name=RELEASE)
    if not synthetic.is_default:
        release_set_default(release=synthetic)
    return release


def prepare_users_and_models(llm_url: str) -> str:
    """The uploader (a plain member) and a fresh API token of theirs (returned), and the generated runs'
    model pointed at this run's fake LLM. Any earlier bench run still going on is cancelled."""
    from django.contrib.auth import get_user_model

    from contributions.models import ApiToken
    from contributions.services.accounts import api_token_create
    from evaluation.models import EvaluationRun, LanguageModel
    from evaluation.services.language_models import language_model_create, language_model_update
    from evaluation.services.runs import run_cancel

    user, _ = get_user_model().objects.get_or_create(
        username=UPLOADER, defaults={"email": "bench-uploader@example.org"}
    )
    ApiToken.objects.filter(user=user, name=TOKEN_NAME).delete()
    secret = api_token_create(user=user, name=TOKEN_NAME).secret

    model = LanguageModel.objects.filter(key=GENERATED_MODEL).first()
    if model is None:
        language_model_create(
            key=GENERATED_MODEL,
            name="Bench fake LLM",
            developer="mixed-load bench",
            provider=LanguageModel.Provider.OTHER,
            provider_model_id="bench-fake",
            base_url=llm_url,
            api_key_env=KEY_ENV,
            input_cost_per_mtok=0,
            output_cost_per_mtok=0,
            management=LanguageModel.Management.MAINTAINER,
            active=True,
        )
    elif model.base_url != llm_url:
        language_model_update(model=model, base_url=llm_url)

    leftovers = EvaluationRun.objects.filter(release__name=EXAMPLES_RELEASE).exclude(
        status__in=EvaluationRun.FINAL_STATUSES
    )
    for run in leftovers:
        run_cancel(run=run, by="mixed-load bench (left over by an earlier run)")
    return secret


def upload_files() -> list[tuple[str, bytes]]:
    """One predictions file per example task: the fake LLM's answers (most the reference, every fourth
    snippet a body that raises), as responses."""
    from evaluation.management.commands.serve_fake_llm import plan_answers

    by_task: dict[str, list[str]] = {}
    for p in plan_answers(EXAMPLES):
        line = {"task": p.task, "snippet": p.snippet, "completion_idx": 0, "response": p.answer}
        by_task.setdefault(p.task, []).append(json.dumps(line))
    return [(task, ("\n".join(lines) + "\n").encode()) for task, lines in sorted(by_task.items())]


def start_generated_run(release) -> int:
    from evaluation.models import LanguageModel
    from evaluation.services.estimates import release_run_defaults
    from evaluation.services.generation import run_start

    defaults = release_run_defaults(release=release)
    run = run_start(
        model=LanguageModel.objects.get(key=GENERATED_MODEL),
        release=release,
        template=defaults.template,
        with_paper=defaults.with_paper,
        n_completions=1,
    )
    return run.pk


def board_change(run_id: int) -> float:
    """Re-aggregate one synthetic run with the service a worker's ``refresh_run`` calls: the board version
    moves (every cached page and API table is keyed by it). Returns its seconds."""
    from evaluation.models import EvaluationRun
    from leaderboard.services import leaderboard_refresh_run

    started = time.perf_counter()
    leaderboard_refresh_run(run=EvaluationRun.objects.get(pk=run_id))
    return time.perf_counter() - started


def runs_state(run_ids: list[int]) -> dict[int, dict]:
    """Status, items, test results (passed) and whether the board has their latest results."""
    from django.db.models import Count, Q

    from evaluation.models import EvaluationRun
    from leaderboard.models import RunAggregation

    rows = EvaluationRun.objects.filter(pk__in=run_ids).annotate(
        items=Count("completions"),
        results=Count("completions__result"),
        passed=Count("completions__result", filter=Q(completions__result__passed=True)),
    )
    seen = dict(
        RunAggregation.objects.filter(run_id__in=run_ids, scheduled=False).values_list("run", "results_seen")
    )
    return {
        r.pk: {
            "source": r.source,
            "status": r.status,
            "items": r.items,
            "results": r.results,
            "passed": r.passed,
            "aggregated": seen.get(r.pk) == r.results and r.results > 0,
        }
        for r in rows
    }


def run_is_final(run_id: int) -> bool:
    from evaluation.models import EvaluationRun

    return EvaluationRun.objects.filter(pk=run_id, status__in=EvaluationRun.FINAL_STATUSES).exists()


# --- HTTP -----------------------------------------------------------------------------------------------


def _get(conn: http.client.HTTPConnection, target: Target) -> tuple[int, bytes]:
    headers = {"HX-Request": "true"} if target.htmx else {}
    conn.request("GET", target.path, headers=headers)
    response = conn.getresponse()
    return response.status, response.read()


def timed_get(conn: http.client.HTTPConnection, target: Target) -> tuple[float, int, bytes]:
    """Milliseconds to the last byte, status (-1: an exception, its text as the body) and body."""
    started = time.perf_counter()
    try:
        status, body = _get(conn, target)
    except (OSError, http.client.HTTPException) as exc:
        conn.close()
        status, body = -1, f"{type(exc).__name__}: {exc}".encode()
    return (time.perf_counter() - started) * 1000, status, body


class UrlStats:
    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.errors = 0
        self.samples: list[str] = []

    def add(self, ms: float, status: int, body: bytes) -> None:
        self.latencies.append(ms)
        if not 200 <= status < 300:
            self.errors += 1
            if len(self.samples) < ERROR_SAMPLES:
                self.samples.append(f"HTTP {status}: {body[:ERROR_BODY_CHARS].decode(errors='replace')}")

    def merge(self, other: UrlStats) -> None:
        self.latencies += other.latencies
        self.errors += other.errors
        self.samples += other.samples[: ERROR_SAMPLES - len(self.samples)]


def _client_init() -> None:
    # The parent stops the pool (SIGTERM) on Ctrl-C: a client neither sees the terminal's SIGINT nor
    # inherits the parent's SIGTERM handler.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def client_loop(args: tuple[int, list[Target], float, int]) -> dict[str, UrlStats]:
    """One client: until ``deadline`` (time.time()), every target in a shuffled order, again and again."""
    port, targets, deadline, seed = args
    rng = random.Random(seed)
    stats = {t.name: UrlStats() for t in targets}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    order = list(targets)
    while time.time() < deadline:
        rng.shuffle(order)
        for target in order:
            if time.time() >= deadline:
                break
            stats[target.name].add(*timed_get(conn, target))
    conn.close()
    return stats


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in 0-100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def cold_and_cached(
    port: int, targets: list[Target], *, board_run: int, samples: int, workers: int
) -> dict[str, dict]:
    """Per target: a board change, the first request (cold), then every worker warmed (3 requests per
    gunicorn worker, not counted) and the median of ``samples`` requests (cached)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    out: dict[str, dict] = {}
    for target in targets:
        refresh_s = board_change(board_run)
        cold_ms, status, _ = timed_get(conn, target)
        for _ in range(3 * workers):
            timed_get(conn, target)
        cached = [timed_get(conn, target) for _ in range(samples)]
        statuses = {status, *(s for _, s, _ in cached)}
        out[target.name] = {
            "cold_ms": cold_ms,
            "cached_p50_ms": statistics.median(ms for ms, _, _ in cached),
            "statuses": sorted(statuses),
            "board_change_s": refresh_s,
        }
    conn.close()
    return out


def profile_contamination(board_run: int, top: int = 20) -> str:
    """A cold contamination page served in this process (Django's test client: the same middleware and
    view) after a warm-up request: its time and SQL queries unprofiled, then under cProfile, the functions
    with the most time of their own and the project's functions by cumulative time."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client(HTTP_HOST="127.0.0.1")
    client.get("/contamination/")  # imports, URL resolver, templates: not what a board change costs
    board_change(board_run)
    with CaptureQueriesContext(connection) as queries:
        started = time.perf_counter()
        response = client.get("/contamination/")
        total = time.perf_counter() - started
    sql_s = sum(float(q["time"]) for q in queries.captured_queries)
    out = io.StringIO()
    out.write(
        f"cold /contamination/ in this process: HTTP {response.status_code}, {total:.3f} s, "
        f"{len(queries.captured_queries)} queries taking {sql_s:.3f} s of it; the slowest:\n"
    )
    for q in sorted(queries.captured_queries, key=lambda q: -float(q["time"]))[:3]:
        out.write(f"  {float(q['time']):.3f} s  {q['sql'][:200]}...\n")
    board_change(board_run)
    profiler = cProfile.Profile()
    profiler.enable()
    client.get("/contamination/")
    profiler.disable()
    stats = pstats.Stats(profiler, stream=out)
    out.write("\nunder cProfile, by own time:\n")
    stats.sort_stats("tottime").print_stats(top)
    out.write("the project's functions by cumulative time:\n")
    stats.sort_stats("cumulative").print_stats(
        r"/(leaderboard|evaluation|contributions|researchcodebench)/", top
    )
    return out.getvalue()


# --- report ---------------------------------------------------------------------------------------------


def load_rows(stats: dict[str, UrlStats], seconds: float) -> dict[str, dict]:
    """Per URL and in total; ``time_share``: the URL's part of the time all requests took (what the
    clients spent waiting on it), where the load's time went."""
    rows = {}
    busy = sum(sum(s.latencies) for s in stats.values()) or 1.0
    for name, s in stats.items():
        rows[name] = {
            "time_share": sum(s.latencies) / busy,
            "requests": len(s.latencies),
            "rps": len(s.latencies) / seconds,
            "p50_ms": percentile(s.latencies, 50),
            "p95_ms": percentile(s.latencies, 95),
            "p99_ms": percentile(s.latencies, 99),
            "max_ms": max(s.latencies, default=None),
            "errors": s.errors,
            "error_samples": s.samples,
        }
    every = [ms for s in stats.values() for ms in s.latencies]
    rows["TOTAL"] = {
        "time_share": 1.0,
        "requests": len(every),
        "rps": len(every) / seconds,
        "p50_ms": percentile(every, 50),
        "p95_ms": percentile(every, 95),
        "p99_ms": percentile(every, 99),
        "max_ms": max(every, default=None),
        "errors": sum(s.errors for s in stats.values()),
        "error_samples": [],
    }
    return rows


def _ms(value: float | None) -> str:
    return f"{'-':>8s}" if value is None else f"{value:8.1f}"


def print_load(rows: dict[str, dict], paths: dict[str, str]) -> None:
    print(
        f"{'URL':38s} {'requests':>8s} {'req/s':>7s} {'p50 ms':>8s} {'p95 ms':>8s} {'p99 ms':>8s} "
        f"{'max ms':>8s} {'errors':>6s} {'time %':>6s}"
    )
    for name, r in rows.items():
        if name == "TOTAL":
            print("-" * 105)
        ms = " ".join(_ms(r[k]) for k in ("p50_ms", "p95_ms", "p99_ms", "max_ms"))
        share = 100 * r["time_share"]
        print(f"{name:38s} {r['requests']:8d} {r['rps']:7.1f} {ms} {r['errors']:6d} {share:6.1f}")
    print("time %: the URL's part of the time every request took together")
    print("paths:")
    for name, path in paths.items():
        print(f"  {name:38s} {path}")
    failed = {name: r for name, r in rows.items() if r["errors"]}
    if failed:
        print("\nERRORS (must be 0): first bodies per URL")
        for name, r in failed.items():
            for sample in r["error_samples"]:
                print(f"  {name}: {sample}")


def print_cold(before: dict[str, dict], after: dict[str, dict]) -> None:
    print(
        f"{'URL':38s} {'cold ms':>9s} {'cached ms':>9s} {'ratio':>6s} | {'cold ms':>9s} {'cached ms':>9s} "
        f"{'ratio':>6s}   statuses"
    )
    for name, b in before.items():
        a = after.get(name)
        cells = [f"{b['cold_ms']:9.1f} {b['cached_p50_ms']:9.1f} {b['cold_ms'] / b['cached_p50_ms']:6.1f}"]
        cells.append(
            f"{a['cold_ms']:9.1f} {a['cached_p50_ms']:9.1f} {a['cold_ms'] / a['cached_p50_ms']:6.1f}"
            if a
            else f"{'-':>9s} {'-':>9s} {'-':>6s}"
        )
        statuses = sorted(set(b["statuses"]) | set(a["statuses"] if a else ()))
        print(f"{name:38s} {cells[0]} | {cells[1]}   {','.join(map(str, statuses))}")
    changes = [c["board_change_s"] for c in (*before.values(), *after.values())]
    print(f"board change (re-aggregating one synthetic run): median {statistics.median(changes):.2f} s")


def worker_failures(log: Path) -> list[str]:
    """The worker log's lines of tasks that raised (Celery's "raised unexpected")."""
    return [line for line in log.read_text(errors="replace").splitlines() if "raised unexpected" in line]


def print_runs(state: dict[int, dict], uploads_ok: int, uploads_sent: int, failures: list[str]) -> None:
    for source in ("generated", "uploaded"):
        runs = {pk: s for pk, s in state.items() if s["source"] == source}
        finished = sum(s["status"] == "finished" for s in runs.values())
        results = sum(s["results"] for s in runs.values())
        items = sum(s["items"] for s in runs.values())
        passed = sum(s["passed"] for s in runs.values())
        aggregated = sum(s["aggregated"] for s in runs.values())
        extra = f" ({uploads_ok} of {uploads_sent} uploads accepted)" if source == "uploaded" else ""
        print(
            f"{source} runs: {len(runs)}{extra}, {finished} finished, {aggregated} on the board; "
            f"{results} test results of {items} items ({passed} passed)"
        )
        unfinished = {pk: s["status"] for pk, s in runs.items() if s["status"] != "finished"}
        if unfinished:
            print(f"  not finished: {unfinished}")
    print(f"worker: {len(failures)} tasks raised (see its log)")
    for line in failures[:ERROR_SAMPLES]:
        print(f"  {line[:ERROR_BODY_CHARS]}")


# --- main -----------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="rcb_bench")
    parser.add_argument("--duration", type=int, default=60, help="seconds of mixed load")
    parser.add_argument("--clients", type=int, default=4, help="client processes of the GET load")
    parser.add_argument("--upload-every", type=float, default=5.0, help="seconds between two uploads")
    parser.add_argument("--workers", type=int, default=3, help="gunicorn sync workers")
    parser.add_argument("--worker-concurrency", type=int, default=2, help="Celery worker processes")
    parser.add_argument("--samples", type=int, default=20, help="cached requests per URL (their median)")
    parser.add_argument(
        "--drain", type=int, default=300, help="most seconds to wait for the runs after the load"
    )
    parser.add_argument(
        "--cache-url", default="", help="RCB_CACHE_URL (e.g. redis://127.0.0.1:6379/13); default LocMem"
    )
    parser.add_argument("--verdict-cache", action="store_true", help="let the worker reuse cached verdicts")
    parser.add_argument(
        "--profile", action="store_true", help="cProfile a cold contamination page at the end"
    )
    parser.add_argument("--json", type=Path, help="also write the numbers to this file")
    parser.add_argument("--reseed", action="store_true", help="drop and seed the database again")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # progress lines show at once in a log file too
    signal.signal(signal.SIGTERM, _raise_interrupt)

    broker, broker_note = rabbit_broker(VHOST)
    llm_port = free_port()
    throttle = f"{2 * math.ceil(3600 / args.upload_every)}/hour"
    os.environ.update(
        {
            "CELERY_BROKER_URL": broker,
            "RCB_CACHE_URL": args.cache_url,
            "RCB_UPLOAD_THROTTLE": throttle,
            "RCB_VERDICT_CACHE": "1" if args.verdict_cache else "0",
            "RCB_LLM_ALLOWED_HOSTS": f"127.0.0.1:{llm_port}",
            KEY_ENV: "bench-key-not-secret",
            "RCB_GPU_QUEUE_WITHOUT_GPU": "1",
        }
    )
    prepare_database(args.db, args.reseed)  # sets Django up with the environment above
    env = bench_env(args.db)
    logs = Path(env["RCB_VAR_DIR"]) / "mixed-load"
    logs.mkdir(parents=True, exist_ok=True)

    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.db import connections
    from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

    from evaluation.models import EvaluationRun

    examples = prepare_examples()
    llm_url = f"http://127.0.0.1:{llm_port}/v1"
    secret = prepare_users_and_models(llm_url)
    files = upload_files()
    model_key = bench_model_key()
    board_run = (
        EvaluationRun.objects.filter(release__name=RELEASE).order_by("-pk").values_list("pk", flat=True)[0]
    )
    snippet_id = (
        EvaluationRun.objects.get(pk=board_run)
        .completions.order_by("snippet_id")
        .values_list("snippet_id", flat=True)[0]
    )

    targets = [
        Target("board /", "/"),
        Target("board, global rule + developer", "/?contamination=global&developer=OpenAI"),
        Target("contamination page", "/contamination/"),
        Target("model page", f"/models/{model_key}/"),
        Target("model page, verdict grid (htmx)", f"/models/{model_key}/?grid=all", htmx=True),
        Target("paper page", "/papers/bench-050/"),
        Target("paper page, heatmap (htmx)", "/papers/bench-050/?heatmap=all", htmx=True),
        Target("snippet page", f"/papers/bench-050/snippets/{quote('snippet 5')}/"),
        Target("papers list /papers/", "/papers/"),
        Target("status page /status/", "/status/"),
        Target("API leaderboard", "/api/v1/leaderboard/"),
        Target("API leaderboard, per-model", "/api/v1/leaderboard/?contamination=per-model"),
        Target("API leaderboard papers", "/api/v1/leaderboard/papers/"),
        Target("API models", "/api/v1/models/"),
        Target("API model", f"/api/v1/models/{model_key}/"),
        Target("API paper", "/api/v1/papers/bench-050/"),
        Target("API snippet", f"/api/v1/snippets/{snippet_id}/"),
        Target("API runs", "/api/v1/runs/"),
    ]

    processes = Processes()
    pool = None
    try:
        llm_log = logs / "fake-llm.log"
        llm = processes.start(
            "fake LLM",
            [sys.executable, "manage.py", "serve_fake_llm", "--port", str(llm_port)],
            env=env,
            log=llm_log,
        )
        wait_for_line(llm, llm_log, "listening on", timeout=60)
        hostname = f"bench{os.getpid()}@localhost"
        worker_log = logs / "worker.log"
        worker = processes.start(
            "worker",
            [
                str(Path(sys.executable).with_name("celery")),
                "-A",
                "config",
                "worker",
                "-Q",
                "site,eval-cpu,eval-gpu",
                "-B",
                "--schedule",
                str(logs / "celerybeat-schedule"),
                "--concurrency",
                str(args.worker_concurrency),
                "--hostname",
                hostname,
                "--loglevel",
                "INFO",
                "--without-mingle",
                "--without-gossip",
            ],
            env=env,
            log=worker_log,
        )
        port = free_port()
        processes.add("gunicorn", start_gunicorn(port=port, workers=args.workers, env=env))
        wait_for_worker(worker, hostname, worker_log)
        wait_up(f"http://127.0.0.1:{port}/api/v1/bench/trivial/")

        # Every URL a few times per gunicorn worker: imports, connections and templates are warm, so the
        # cold numbers below are about the board change alone.
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for target in targets:
            statuses = {timed_get(conn, target)[1] for _ in range(3 * args.workers)}
            if statuses != {200}:
                print(
                    f"{target.name}: {target.path} answers {sorted(statuses)} before the load (measured anyway)"
                )
        conn.close()

        print(f"cold vs cached before the load ({args.samples} cached samples per URL)...")
        before = cold_and_cached(
            port, targets, board_run=board_run, samples=args.samples, workers=args.workers
        )

        run_id = start_generated_run(examples)
        generated = [run_id]
        targets += [
            Target("run page (generated run)", f"/runs/{run_id}/"),
            Target("API run results", f"/api/v1/runs/{run_id}/results/"),
        ]
        paths = {t.name: t.path for t in targets} | {UPLOAD_NAME: UPLOAD_URL}
        print(
            f"mixed load for {args.duration} s: {args.clients} clients, an upload every {args.upload_every:g} s, "
            f"generated run {run_id} in progress..."
        )
        connections.close_all()  # the clients are forked: they must not share this process's connections
        deadline = time.time() + args.duration
        load_started = time.time()
        pool = multiprocessing.get_context("fork").Pool(args.clients, initializer=_client_init)
        pending = pool.map_async(
            client_loop, [(port, targets, deadline, seed) for seed in range(args.clients)]
        )

        upload_stats = UrlStats()
        uploaded: list[int] = []
        upload = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        next_upload, n_uploads = load_started, 0
        while time.time() < deadline:
            if time.time() >= next_upload:
                task, data = files[n_uploads % len(files)]
                body = encode_multipart(
                    BOUNDARY,
                    {
                        "model": UPLOAD_MODEL,
                        "model_name": "Bench uploads",
                        "release": EXAMPLES_RELEASE,
                        "template": "rcb-v2",
                        "with_paper": "true",
                        "file": SimpleUploadedFile("predictions.jsonl", data),
                    },
                )
                started = time.perf_counter()
                try:
                    upload.request(
                        "POST",
                        UPLOAD_URL,
                        body=body,
                        headers={"Authorization": f"Token {secret}", "Content-Type": MULTIPART_CONTENT},
                    )
                    response = upload.getresponse()
                    status, answer = response.status, response.read()
                except (OSError, http.client.HTTPException) as exc:
                    upload.close()
                    status, answer = -1, f"{type(exc).__name__}: {exc}".encode()
                upload_stats.add((time.perf_counter() - started) * 1000, status, answer)
                if status == 201:
                    uploaded.append(json.loads(answer)["id"])
                n_uploads += 1
                next_upload += args.upload_every
            if run_is_final(generated[-1]):
                generated.append(start_generated_run(examples))
            time.sleep(0.2)
        upload.close()
        results = pending.get(timeout=120)
        load_s = time.time() - load_started
        pool.close()
        pool.join()
        pool = None

        stats: dict[str, UrlStats] = {t.name: UrlStats() for t in targets}
        for client in results:
            for name, s in client.items():
                stats[name].merge(s)
        stats[UPLOAD_NAME] = upload_stats
        rows = load_rows(stats, load_s)

        print(f"load over after {load_s:.1f} s; waiting (at most {args.drain} s) for the runs to finish...")
        run_ids = generated + uploaded
        drain_started = time.monotonic()
        while time.monotonic() - drain_started < args.drain:
            state = runs_state(run_ids)
            if all(s["status"] in EvaluationRun.FINAL_STATUSES and s["aggregated"] for s in state.values()):
                break
            time.sleep(2)
        drain_s = time.monotonic() - drain_started
        state = runs_state(run_ids)

        print(f"cold vs cached after the load ({drain_s:.0f} s after it)...")
        after = cold_and_cached(
            port,
            [t for t in targets if t.name in before],
            board_run=board_run,
            samples=args.samples,
            workers=args.workers,
        )
        profile = profile_contamination(board_run) if args.profile else ""
        failures = worker_failures(worker_log)
    finally:
        if pool is not None:
            pool.terminate()
        processes.stop_all()

    print(
        f"\n== Mixed load: {load_s:.1f} s, {args.clients} client processes (keep-alive http.client, no pause), "
        f"gunicorn {args.workers} sync workers, 1 Celery worker (concurrency {args.worker_concurrency}, "
        f"site,eval-cpu,eval-gpu + beat), db {args.db}"
    )
    print(
        f"broker: {broker_note}; cache: {args.cache_url or 'per-process LocMem'}; upload throttle "
        f"RCB_UPLOAD_THROTTLE={throttle} (twice the bench's rate of one upload every {args.upload_every:g} s; "
        f"default 30/hour); verdict cache {'on' if args.verdict_cache else 'off'}"
    )
    print_load(rows, paths)
    print(f"\n== Runs ({drain_s:.0f} s after the load)")
    print_runs(state, len(uploaded), n_uploads, failures)
    print(f"logs: {logs}")
    print(
        f"\n== Cold (first request after a board change) vs cached (median of {args.samples}), ms: "
        "before the load | after it"
    )
    print_cold(before, after)
    if profile:
        print("\n== Profile of a cold contamination page\n" + profile)
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "config": {
                        "db": args.db,
                        "duration_s": load_s,
                        "clients": args.clients,
                        "gunicorn_workers": args.workers,
                        "worker_concurrency": args.worker_concurrency,
                        "upload_every_s": args.upload_every,
                        "upload_throttle": throttle,
                        "cache": args.cache_url or "locmem",
                        "broker": broker_note,
                        "verdict_cache": args.verdict_cache,
                    },
                    "load": rows,
                    "paths": paths,
                    "runs": {str(pk): s for pk, s in state.items()},
                    "worker_task_failures": failures,
                    "cold_cached": {"before": before, "after": after},
                },
                indent=2,
            )
        )
        print(f"numbers written to {args.json}")
    if rows["TOTAL"]["errors"]:
        raise SystemExit(f"{rows['TOTAL']['errors']} errors during the load (must be 0)")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        raise SystemExit("interrupted: every process the bench started is stopped") from None
