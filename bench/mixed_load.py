"""Mixed-load benchmark of the whole portal (issue 14 item 7; issue 21 item 4). Not part of the test suite.

1. Seeds (or reuses) the synthetic benchmark of ``bench/leaderboard_load.py`` in PostgreSQL (default database
   ``rcb_bench``: 100 models x 2,000 snippets x 3 completions) with the target checkout's own harness, models
   and migrations (a process in ``--repo``), and adds a small real release, ``bench-examples``
   (``examples/pset``: 9 tasks, 85 snippets, with files), that the worker can test against; the synthetic
   release stays the board's default. A self-reported model takes the uploads of a bench user (with a
   personal API token), and a maintainer-managed model, ``bench-fake-llm``, is served by the demo's fake LLM.
2. Starts, as real processes of the checkout ``--repo`` (default: this one; another worktree, e.g. an older
   commit, takes the same load from this script): the fake LLM (``manage.py serve_fake_llm``), one Celery
   worker with the beat (``-Q site,eval-cpu,eval-gpu -B``, ``--worker-concurrency`` 2) and gunicorn
   (``config.wsgi``, 3 sync workers), all on RabbitMQ (a vhost named after the database, emptied at start;
   the default vhost when ``rabbitmqctl`` cannot make it). The cache is shared, as in production: Redis at
   ``--cache-url`` (default ``redis://127.0.0.1:6379/13``), that database flushed at start; when nothing
   answers at a local address the bench starts ``redis-server`` there itself. ``--local-cache`` (or
   ``--cache-url ''``) gives each process its own LocMem cache instead. This process imports the same
   checkout's code (``sys.path``) for what it does in Django: the fixtures, starting runs, board changes.
3. Cold vs cached, before the load: for each GET URL, a board change (one synthetic run re-aggregated by
   the real service, ``leaderboard_refresh_run``, and the catalogue's cache scope moved, which every cached
   body's key includes), then the first request (cold), then the median of ``--samples`` requests once every
   gunicorn worker has served it (cached).
4. Starts a generated run of ``bench-fake-llm`` on ``bench-examples`` (``run_start``, as the web and
   ``evaluate_model`` do), so the worker is busy, and for ``--duration`` seconds drives a mixed load from
   ``--clients`` processes (keep-alive ``http.client``; each cycles through the GET URLs in its own shuffled
   order, with no pause): the trivial view ``/healthz`` (the baseline, measured in the same cycles; it asks
   the database for ``SELECT 1`` and opens a broker connection), board pages, model/paper/snippet pages and
   their htmx parts, the contamination page, /papers/, /status/, the run's page and the read API; this
   process uploads a predictions file through ``POST /api/v1/runs/upload/`` every ``--upload-every``
   seconds (one example task per upload, the fake LLM's answers; with ``Prefer: respond-async``, as
   ``rcb submit`` sends it: a portal that takes it answers 202 and its worker starts the run, one that
   does not answers 201 with the run) and starts another generated run whenever the current one is final.
5. Visibility, during the load: a thread polls the API leaderboard of ``bench-examples`` (unfinished runs
   included) every ``--poll-every`` seconds, until ``--visibility-grace`` seconds after the load; each
   verdict the worker records for a generated run during the load is timed from its ``created_at`` to the
   first answer showing it (``bench/board_visibility.py`` says exactly what is observed). The polls are
   listed apart, not in the load's total.
6. Waits (at most ``--drain`` seconds) until every run started is final and aggregated, measures cold vs
   cached again, and prints per URL requests, req/s, p50/p95/p99, p95 as a multiple of ``/healthz``'s, errors
   (non-2xx or exceptions; the first bodies are printed) and PASS/FAIL against the acceptance (p95 at most
   1.5x the trivial view's, issue 37, and at most 150 ms, 0 errors); the totals; record -> visible (PASS when
   the 95th percentile is within 1 s, issue 37, and every result is seen within 10 s); the runs (finished or not, test results); both cold/cached tables; with
   ``--baseline OLD.json`` (an earlier run's ``--json``, e.g. of the old commit) both runs side by side and
   the ratio of total requests/s (PASS at 5x). ``--json PATH`` writes the numbers; ``--profile`` adds a
   cProfile of a cold contamination page served in this process.

The bench's environment differs from the defaults on purpose: the upload throttle is set to twice the
bench's upload rate (``RCB_UPLOAD_THROTTLE``; default 30/hour), the verdict cache is off (the worker runs
every test; ``--verdict-cache`` turns it on), the fake LLM's one address is an allowed LLM host and the
worker consumes ``eval-gpu`` without a GPU (``RCB_GPU_QUEUE_WITHOUT_GPU=1``, a development setting).

Usage: ``.venv/bin/python bench/mixed_load.py [--duration 60] [--clients 4] [--upload-every 5]
[--repo PATH --db NAME] [--cache-url URL | --local-cache] [--json PATH] [--baseline PATH] [--profile]
[--reseed]`` (``make bench-mixed``). Side by side with an older commit, one after the other:
``git worktree add --detach ../old COMMIT``, then ``--repo ../old --db rcb_bench_old --json old.json`` and
``--db rcb_bench_new --json new.json --baseline old.json``. Every process it starts is stopped at the end,
also on Ctrl-C or an error.
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
import shutil
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import psycopg
from board_visibility import VISIBLE_P95_S, VISIBLE_WITHIN_S, BoardPoller, board_path, latencies
from leaderboard_load import PG, RELEASE, bench_env, bench_model_key, free_port, wait_up

#: this checkout: the default ``--repo``
HERE = Path(__file__).resolve().parent.parent
EXAMPLES_RELEASE = "bench-examples"
AMQP = "amqp://guest:guest@127.0.0.1:5672"
DEFAULT_CACHE_URL = "redis://127.0.0.1:6379/13"
UPLOADER = "bench-uploader"
UPLOAD_MODEL = "bench-uploads"
GENERATED_MODEL = "bench-fake-llm"
KEY_ENV = "RCB_LLM_KEY_BENCH"
TOKEN_NAME = "mixed-load bench"
UPLOAD_URL = "/api/v1/runs/upload/"
UPLOAD_NAME = "API upload (POST)"
TRIVIAL_NAME = "trivial view /healthz"
POLL_NAME = "board poll (API leaderboard, examples)"
#: the acceptance per URL: p95 at most this multiple of the trivial view's (issue 37; issue 21 asked 3x), and at
#: most this many ms (issue 21)
P95_OVER_TRIVIAL, P95_MAX_MS = 1.5, 150.0
#: and for the whole load: total requests/s at least this multiple of the baseline's (``--baseline``)
RPS_OVER_BASELINE = 5.0
#: error bodies kept per URL (the first ones), and how much of each
ERROR_SAMPLES, ERROR_BODY_CHARS = 3, 600
#: the seeding step, run in the target checkout by its own harness (argv: database, "1" to reseed)
SEED = (
    "import sys; sys.path.insert(0, 'bench'); from leaderboard_load import prepare_database; "
    "prepare_database(sys.argv[1], sys.argv[2] == '1')"
)


@dataclass(frozen=True)
class Target:
    """One GET URL of the load; ``htmx``: asked for as htmx asks for a lazily loaded part."""

    name: str
    path: str
    htmx: bool = False


# --- processes ------------------------------------------------------------------------------------------


class Processes:
    """The processes this bench started (in ``cwd``, the target checkout), stopped together (each leads
    its own session: its whole group is signalled, pool children and test runs included)."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.started: list[tuple[str, subprocess.Popen]] = []

    def start(self, name: str, cmd: list[str], *, env: dict[str, str], log: Path) -> subprocess.Popen:
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                cmd, cwd=self.cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.started.append((name, proc))
        return proc

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


def shared_cache(url: str, processes: Processes, log: Path) -> str:
    """Make the Redis database of ``url`` answer and empty (flushed: no body of an earlier bench is
    served), and return a note. When nothing answers at a local address, ``redis-server`` is started there
    (without persistence; stopped with the rest); elsewhere, or without ``redis-server``, it stops."""
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=10)
    note = "flushed at start"
    try:
        client.ping()
    except redis.exceptions.ConnectionError as exc:  # nothing listens there
        where = urlsplit(url)
        server = shutil.which("redis-server")
        if where.hostname not in ("127.0.0.1", "localhost") or server is None:
            raise SystemExit(
                f"the shared cache {url} does not answer ({exc}). `make bench-mixed` installs redis-server "
                "(apt-get) when missing; start it (e.g. `redis-server --daemonize yes`), or pass "
                "--local-cache for per-process LocMem caches."
            ) from exc
        cmd = [server, "--port", str(where.port or 6379), "--bind", "127.0.0.1", "--save", ""]
        proc = processes.start("redis", [*cmd, "--appendonly", "no"], env=dict(os.environ), log=log)
        _wait_for_redis(client, proc, log)
        note = f"started by the bench ({server}), {note}"
    except redis.exceptions.RedisError as exc:  # something else answers there
        raise SystemExit(f"the shared cache {url} does not answer as Redis does: {exc}") from exc
    client.flushdb()
    return f"Redis {url} ({note})"


def _wait_for_redis(client: Any, proc: subprocess.Popen, log: Path, timeout: float = 20) -> None:
    import redis

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            client.ping()
            return
        except redis.exceptions.ConnectionError:
            if proc.poll() is not None:
                raise SystemExit(f"redis-server exited with {proc.returncode}:\n{_tail(log)}") from None
            time.sleep(0.2)
    raise SystemExit(f"redis-server did not answer within {timeout:g} s:\n{_tail(log)}")


def seed_database(repo: Path, db: str, reseed: bool, env: dict[str, str]) -> None:
    """Create, migrate and seed ``db`` (or reuse it, seeded) with the target checkout's own harness
    (``bench/leaderboard_load.py``), models and migrations, in a process of its own: the seed and its first
    aggregation are what that commit's code makes of them. It runs on the embedded broker (its messages are
    never consumed) and the LocMem cache."""
    seed_env = {k: v for k, v in env.items() if k not in ("CELERY_BROKER_URL", "RCB_CACHE_URL")}
    if not (repo / "bench" / "leaderboard_load.py").is_file():
        raise SystemExit(f"{repo} has no bench/leaderboard_load.py to seed {db} with")
    done = subprocess.run(
        [sys.executable, "-c", SEED, db, "1" if reseed else "0"], cwd=repo, env=seed_env, check=False
    )
    if done.returncode:
        raise SystemExit(f"seeding {db} in {repo} failed (exit status {done.returncode})")
    analyze(db)


def analyze(db: str) -> None:
    """``ANALYZE`` the whole database, whichever commit seeded it: the seed's bulk COPY leaves the planner
    without statistics, which autovacuum would gather on a production server but not where it is off (as on
    this project's machines), and a count over a run's results then took 300 ms instead of 0.5 ms."""
    with psycopg.connect(f"{PG}/{db}", autocommit=True) as conn:
        conn.execute("ANALYZE")


def setup_django(repo: Path) -> None:
    """Django in this process on the target checkout's code (first on ``sys.path``), with the environment
    already in ``os.environ``. The process moves into ``repo``: Celery's Django fix-up puts the working
    directory first on ``sys.path``."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.chdir(repo)
    sys.path.insert(0, str(repo))
    import django

    django.setup()


def repo_commit(repo: Path) -> str:
    """The checkout's commit (short), "+ changes" when its tracked files differ from it."""
    try:
        head = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(repo), "diff", "--quiet", "HEAD"], check=False).returncode
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head} + changes" if dirty else head


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


def prepare_examples(repo: Path):
    """The small real release of ``repo``'s ``examples/pset`` (files to test against), imported once; the synthetic release is made the
    default again so that the board, the API and leaderboard_load.py keep measuring it."""
    from contributions.models import Release
    from contributions.services import CatalogueError, release_create_from_pset, release_set_default

    examples = repo / "examples" / "pset"
    release = Release.objects.filter(name=EXAMPLES_RELEASE).first()
    if release is None:
        try:
            release = release_create_from_pset(
                path=examples, name=EXAMPLES_RELEASE, title="Example tasks (mixed-load bench)"
            )
        except CatalogueError as exc:
            raise SystemExit(f"cannot import {examples} as {EXAMPLES_RELEASE!r}: {exc}") from exc
        print(f"imported {examples} as release {EXAMPLES_RELEASE!r}")
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


def upload_files(repo: Path) -> list[tuple[str, bytes]]:
    """One predictions file per example task of ``repo``: the fake LLM's answers (most the reference, every fourth
    snippet a body that raises), as responses."""
    from evaluation.management.commands.serve_fake_llm import plan_answers

    by_task: dict[str, list[str]] = {}
    for p in plan_answers(repo / "examples" / "pset"):
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
    """Re-aggregate one synthetic run with the service a worker's ``leaderboard_refresh_run`` task calls, and move the
    catalogue's cache scope (every cached page and API table includes it; the run alone moves only its
    release's and model's pages). Returns the seconds of the re-aggregation. A ``--repo`` older than the
    scopes (one global board version, which the re-aggregation moves) has nothing more to move."""
    from evaluation.models import EvaluationRun
    from leaderboard.services import leaderboard_refresh_run

    started = time.perf_counter()
    leaderboard_refresh_run(run=EvaluationRun.objects.get(pk=run_id))
    elapsed = time.perf_counter() - started
    try:
        from leaderboard.scopes import META, scopes_bump
    except ImportError:
        return elapsed
    scopes_bump([META])
    return elapsed


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


def _row(latencies: list[float], errors: int, samples: list[str], seconds: float, busy: float) -> dict:
    return {
        "time_share": sum(latencies) / busy,
        "requests": len(latencies),
        "rps": len(latencies) / seconds,
        "p50_ms": percentile(latencies, 50),
        "p95_ms": percentile(latencies, 95),
        "p99_ms": percentile(latencies, 99),
        "max_ms": max(latencies, default=None),
        "errors": errors,
        "error_samples": samples,
    }


def load_rows(stats: dict[str, UrlStats], seconds: float, poller: BoardPoller) -> dict[str, dict]:
    """Per URL, in total (``TOTAL``: the clients' GETs and the uploads) and the board poller's requests
    (``POLL_NAME``, after the total: not part of the load's shape); ``time_share``: the URL's part of the
    time all requests took (what the clients spent waiting on it), where the load's time went. Each row
    has its acceptance (``judge``)."""
    busy = sum(sum(s.latencies) for s in stats.values()) or 1.0
    rows = {name: _row(s.latencies, s.errors, s.samples, seconds, busy) for name, s in stats.items()}
    every = [ms for s in stats.values() for ms in s.latencies]
    rows["TOTAL"] = _row(every, sum(s.errors for s in stats.values()), [], seconds, busy)
    polled = poller.latencies_ms
    rows[POLL_NAME] = _row(polled, len(poller.failures), poller.failures[:ERROR_SAMPLES], seconds, busy)
    rows[POLL_NAME]["time_share"] = None
    judge(rows)
    return rows


def judge(rows: dict[str, dict]) -> None:
    """Add to every row but the total its p95 as a multiple of the trivial view's (``p95_ratio``) and
    ``pass``: the acceptance of every read URL (p95 at most ``P95_OVER_TRIVIAL`` times the trivial view's
    and at most ``P95_MAX_MS``, no error; the upload, a write, by its errors alone)."""
    trivial = rows.get(TRIVIAL_NAME, {}).get("p95_ms")
    for name, row in rows.items():
        p95 = row["p95_ms"]
        row["p95_ratio"] = p95 / trivial if p95 is not None and trivial else None
        if name == "TOTAL":
            row["pass"] = None
            continue
        if name == UPLOAD_NAME:
            # Not a read: judged by its errors alone (its p95 is that of a few uploads, each a transaction).
            row["pass"] = bool(row["requests"] and not row["errors"])
            continue
        row["pass"] = bool(
            row["requests"]
            and not row["errors"]
            and row["p95_ratio"] is not None
            and row["p95_ratio"] <= P95_OVER_TRIVIAL
            and p95 <= P95_MAX_MS
        )


def _ms(value: float | None) -> str:
    return f"{'-':>8s}" if value is None else f"{value:8.1f}"


def print_load(rows: dict[str, dict], paths: dict[str, str]) -> None:
    print(
        f"{'URL':38s} {'requests':>8s} {'req/s':>7s} {'p50 ms':>8s} {'p95 ms':>8s} {'p99 ms':>8s} "
        f"{'max ms':>8s} {'p95/triv':>8s} {'errors':>6s} {'time %':>6s}  accept"
    )
    for name, r in rows.items():
        if name in ("TOTAL", POLL_NAME):
            print("-" * 116)
        ms = " ".join(_ms(r[k]) for k in ("p50_ms", "p95_ms", "p99_ms", "max_ms"))
        ratio = f"{'-':>8s}" if r["p95_ratio"] is None else f"{r['p95_ratio']:7.2f}x"
        share = f"{'-':>6s}" if r["time_share"] is None else f"{100 * r['time_share']:6.1f}"
        verdict = {True: "PASS", False: "FAIL", None: ""}[r["pass"]]
        print(
            f"{name:38s} {r['requests']:8d} {r['rps']:7.1f} {ms} {ratio} {r['errors']:6d} {share}  {verdict}"
        )
    print(
        f"p95/triv: the URL's p95 over {TRIVIAL_NAME}'s in this run; accept: PASS when p95 <= "
        f"{P95_OVER_TRIVIAL:g}x that and <= {P95_MAX_MS:g} ms with 0 errors (the reads; the upload: 0 errors). time %: the URL's "
        f"part of the time every request took together. TOTAL: the clients' GETs and the uploads; the board "
        f"poll (visibility below) is apart."
    )
    print("paths:")
    for name, path in paths.items():
        print(f"  {name:38s} {path}")
    failed = {name: r for name, r in rows.items() if r["errors"]}
    if failed:
        print("\nERRORS (must be 0): first bodies per URL")
        for name, r in failed.items():
            for sample in r["error_samples"]:
                print(f"  {name}: {sample}")


def print_visibility(seen: dict, poll_every: float) -> None:
    """Record -> visible, with its verdict."""
    times = seen["seen_s"]
    if times:
        spread = (
            f"p50 {percentile(times, 50):.2f} s, p95 {percentile(times, 95):.2f} s, max {max(times):.2f} s"
        )
    else:
        spread = "none seen"
    verdict = "PASS" if seen["pass"] else "FAIL"
    print(
        f"{len(times)} verdicts of the generated runs recorded during the load and seen on the board: {spread} "
        f"(polled every {poll_every:g} s; an upper bound); {seen['not_seen']} not seen before the polls ended; "
        f"{seen['superseded']} superseded by the next run before they showed. {verdict} "
        f"(p95 within {VISIBLE_P95_S:g} s, every one within {VISIBLE_WITHIN_S:g} s)"
    )
    for run_id, r in seen["runs"].items():
        print(
            f"  run {run_id}: {r['board_last']} snippets on the last answer that showed it, "
            f"{r['recorded']} counted results recorded by then"
        )


def print_acceptance(rows: dict[str, dict], seen: dict, baseline: dict | None) -> None:
    """Issue 21's acceptance in one block (the 5x needs ``--baseline``)."""
    urls = {n: r for n, r in rows.items() if n != "TOTAL"}
    failing = [n for n, r in urls.items() if not r["pass"]]
    trivial = rows.get(TRIVIAL_NAME, {}).get("p95_ms")
    print(
        f"errors: {rows['TOTAL']['errors'] + rows[POLL_NAME]['errors']} ({'PASS' if not any(r['errors'] for r in urls.values()) else 'FAIL'}: 0)"
    )
    print(
        f"p95 per URL <= {P95_OVER_TRIVIAL:g}x {TRIVIAL_NAME}'s ({_ms(trivial).strip()} ms) and <= {P95_MAX_MS:g} ms: "
        f"{len(urls) - len(failing)} of {len(urls)} URLs PASS"
        + (f"; FAIL: {', '.join(failing)}" if failing else "")
    )
    print(
        f"record -> visible, p95 within {VISIBLE_P95_S:g} s and every one within {VISIBLE_WITHIN_S:g} s: "
        f"{'PASS' if seen['pass'] else 'FAIL'}"
    )
    total = rows["TOTAL"]["rps"]
    if baseline is None:
        print(f"total {total:.1f} requests/s (the 5x needs --baseline OLD.json, the old commit's run)")
        return
    ratio = total / baseline["load"]["TOTAL"]["rps"]
    print(
        f"total {total:.1f} requests/s = {ratio:.2f}x the baseline's {baseline['load']['TOTAL']['rps']:.1f} "
        f"({'PASS' if ratio >= RPS_OVER_BASELINE else 'FAIL'}: at least {RPS_OVER_BASELINE:g}x)"
    )


def print_baseline(rows: dict[str, dict], baseline: dict) -> None:
    """This run and the baseline's, side by side per URL: requests/s, p50 and p95."""
    old = baseline["load"]
    config = baseline["config"]
    print(
        f"baseline: {config.get('repo', '?')} at {config.get('commit', '?')}, db {config['db']}, cache {config['cache']}"
    )
    print(
        f"{'URL':38s} {'req/s':>17s} {'p50 ms':>17s} {'p95 ms':>17s}\n{'':38s} "
        + " ".join(f"{'baseline':>8s} {'this':>8s}" for _ in range(3))
    )
    for name, r in rows.items():
        b = old.get(name)
        if b is None:
            continue
        print(
            f"{name:38s} {b['rps']:8.2f} {r['rps']:8.2f} {_ms(b['p50_ms'])} {_ms(r['p50_ms'])} "
            f"{_ms(b['p95_ms'])} {_ms(r['p95_ms'])}"
        )


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


# --- the run ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fixture:
    """What the load needs from the database, prepared once: the examples release, the uploader's token
    (``secret``), the predictions files, the measured synthetic model, a synthetic run (board changes) and
    one of its snippets."""

    examples: Any
    secret: str
    files: list[tuple[str, bytes]]
    model_key: str
    board_run: int
    snippet_id: int


def prepare_fixture(repo: Path, llm_url: str) -> Fixture:
    from evaluation.models import EvaluationRun

    examples = prepare_examples(repo)
    secret = prepare_users_and_models(llm_url)
    board_run = (
        EvaluationRun.objects.filter(release__name=RELEASE).order_by("-pk").values_list("pk", flat=True)[0]
    )
    snippet_id = (
        EvaluationRun.objects.get(pk=board_run)
        .completions.order_by("snippet_id")
        .values_list("snippet_id", flat=True)[0]
    )
    return Fixture(examples, secret, upload_files(repo), bench_model_key(), board_run, snippet_id)


def page_targets(fx: Fixture) -> list[Target]:
    """The GET URLs of the load but the run's (the trivial view first; it has no cold/cached figure)."""
    key = fx.model_key
    return [
        Target(TRIVIAL_NAME, "/healthz"),
        Target("board /", "/"),
        Target("board, global rule + developer", "/?contamination=global&developer=OpenAI"),
        Target("contamination page", "/contamination/"),
        Target("model page", f"/models/{key}/"),
        Target("model page, verdict grid (htmx)", f"/models/{key}/?grid=all", htmx=True),
        Target("paper page", "/papers/bench-050/"),
        Target("paper page, heatmap (htmx)", "/papers/bench-050/?heatmap=all", htmx=True),
        Target("snippet page", f"/papers/bench-050/snippets/{quote('snippet 5')}/"),
        Target("papers list /papers/", "/papers/"),
        Target("status page /status/", "/status/"),
        Target("API leaderboard", "/api/v1/leaderboard/"),
        Target("API leaderboard, per-model", "/api/v1/leaderboard/?contamination=per-model"),
        Target("API leaderboard papers", "/api/v1/leaderboard/papers/"),
        Target("API models", "/api/v1/models/"),
        Target("API model", f"/api/v1/models/{key}/"),
        Target("API paper", "/api/v1/papers/bench-050/"),
        Target("API snippet", f"/api/v1/snippets/{fx.snippet_id}/"),
        Target("API runs", "/api/v1/runs/"),
    ]


def start_services(
    processes: Processes, args: argparse.Namespace, env: dict[str, str], logs: Path, llm_port: int
) -> tuple[int, Path]:
    """The fake LLM, the worker (with the beat) and gunicorn, up and answering; returns gunicorn's port
    and the worker's log."""
    bin_dir = Path(sys.executable).parent
    llm_log = logs / "fake-llm.log"
    llm_cmd = [sys.executable, "manage.py", "serve_fake_llm", "--port", str(llm_port)]
    llm = processes.start("fake LLM", llm_cmd, env=env, log=llm_log)
    wait_for_line(llm, llm_log, "listening on", timeout=60)
    hostname = f"bench{os.getpid()}@localhost"
    worker_log = logs / "worker.log"
    worker_cmd = [
        str(bin_dir / "celery"), "-A", "config", "worker", "-Q", "site,eval-cpu,eval-gpu", "-B",
        "--schedule", str(logs / "celerybeat-schedule"), "--concurrency", str(args.worker_concurrency),
        "--hostname", hostname, "--loglevel", "INFO", "--without-mingle", "--without-gossip",
    ]  # fmt: skip
    worker = processes.start("worker", worker_cmd, env=env, log=worker_log)
    port = free_port()
    gunicorn_cmd = [
        str(bin_dir / "gunicorn"), "config.wsgi", "-w", str(args.workers), "-b", f"127.0.0.1:{port}",
        "--log-level", "warning",
    ]  # fmt: skip
    processes.start("gunicorn", gunicorn_cmd, env=env, log=logs / "gunicorn.log")
    wait_for_worker(worker, hostname, worker_log)
    wait_up(f"http://127.0.0.1:{port}/healthz")
    return port, worker_log


#: a predictions file every check refuses (its one line names no snippet of the release): it warms the upload
#: path and starts no run
REFUSED_FILE = b'{"task": "no-such-task", "snippet": "none", "completion_idx": 0, "response": "x"}\n'


def warm_up(port: int, targets: list[Target], workers: int, fx: Fixture) -> None:
    """Every URL a few times per gunicorn worker: imports, connections and templates are warm, so the
    cold numbers are about the board change alone; and as many uploads of ``REFUSED_FILE`` (each worker's
    first upload imports the multipart parser and opens its broker connection), which start no run."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for target in targets:
        statuses = {timed_get(conn, target)[1] for _ in range(3 * workers)}
        if statuses != {200}:
            print(
                f"{target.name}: {target.path} answers {sorted(statuses)} before the load (measured anyway)"
            )
    statuses = {send_upload(conn, fx, n, data=REFUSED_FILE)[1] for n in range(3 * workers)}
    print(f"{3 * workers} uploads of a file the check refuses, before the load: answered {sorted(statuses)}")
    conn.close()


def send_upload(
    conn: http.client.HTTPConnection, fx: Fixture, n: int, *, data: bytes | None = None
) -> tuple[float, int, bytes]:
    """The ``n``-th upload (example tasks in turn; ``data`` instead when given): milliseconds, status (-1: an
    exception) and answer."""
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

    if data is None:
        _task, data = fx.files[n % len(fx.files)]
    fields = {
        "model": UPLOAD_MODEL,
        "model_name": "Bench uploads",
        "release": EXAMPLES_RELEASE,
        "template": "rcb-v2",
        "with_paper": "true",
        "file": SimpleUploadedFile("predictions.jsonl", data),
    }
    # As ``rcb submit`` asks (a portal without the preference answers 201 with the run).
    headers = {
        "Authorization": f"Token {fx.secret}",
        "Content-Type": MULTIPART_CONTENT,
        "Prefer": "respond-async",
    }
    started = time.perf_counter()
    try:
        conn.request("POST", UPLOAD_URL, body=encode_multipart(BOUNDARY, fields), headers=headers)
        response = conn.getresponse()
        status, answer = response.status, response.read()
    except (OSError, http.client.HTTPException) as exc:
        conn.close()
        status, answer = -1, f"{type(exc).__name__}: {exc}".encode()
    return (time.perf_counter() - started) * 1000, status, answer


@dataclass
class Load:
    """What the load did: per URL stats (uploads included), its seconds, the runs it started and made,
    the uploads sent, and the board poller (joined)."""

    stats: dict[str, UrlStats]
    seconds: float
    ended: float
    generated: list[int]
    uploaded: list[int]
    uploads_sent: int
    poller: BoardPoller


def drive_uploads(port: int, fx: Fixture, every: float, deadline: float, generated: list[int]):
    """Until ``deadline``: an upload every ``every`` seconds, and another generated run whenever the
    latest is final (appended to ``generated``). Returns the uploads' stats, the runs they made and how
    many were sent."""
    stats, uploaded, receipts = UrlStats(), [], []
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    next_upload, sent = time.time(), 0
    while time.time() < deadline:
        if time.time() >= next_upload:
            ms, status, answer = send_upload(conn, fx, sent)
            stats.add(ms, status, answer)
            if status == 201:
                uploaded.append(json.loads(answer)["id"])
            elif status == 202:
                receipts.append(json.loads(answer)["id"])
            sent += 1
            next_upload += every
        if run_is_final(generated[-1]):
            generated.append(start_generated_run(fx.examples))
        time.sleep(0.2)
    conn.close()
    return stats, uploaded + checked_runs(receipts), sent


def checked_runs(upload_ids: list[int], most_s: float = 120) -> list[int]:
    """The runs the uploads answered 202 started, once the worker checked them (at most ``most_s`` s)."""
    if not upload_ids:
        return []
    from evaluation.models import PredictionsUpload

    started = time.monotonic()
    while time.monotonic() - started < most_s:
        rows = PredictionsUpload.objects.filter(pk__in=upload_ids).values_list("status", "run_id")
        if all(status != PredictionsUpload.Status.RECEIVED for status, _ in rows):
            return [run_id for _, run_id in rows if run_id is not None]
        time.sleep(0.5)
    raise SystemExit(f"uploads {upload_ids} were not checked within {most_s:g} s")


def run_load(args: argparse.Namespace, port: int, targets: list[Target], fx: Fixture, run_id: int) -> Load:
    """The clients' GETs (forked processes), the uploads and runs (this thread) and the board poller (a
    thread, until ``--visibility-grace`` s after the load) for ``--duration`` seconds."""
    from django.db import connections

    connections.close_all()  # the clients are forked: they must not share this process's connections
    started = time.time()
    deadline = started + args.duration
    pool = multiprocessing.get_context("fork").Pool(args.clients, initializer=_client_init)
    try:
        pending = pool.map_async(
            client_loop, [(port, targets, deadline, seed) for seed in range(args.clients)]
        )
        poller = BoardPoller(
            port=port,
            path=board_path(EXAMPLES_RELEASE),
            stop_at=deadline + args.visibility_grace,
            interval=args.poll_every,
        )
        poller.start()
        generated = [run_id]
        uploads, uploaded, sent = drive_uploads(port, fx, args.upload_every, deadline, generated)
        results = pending.get(timeout=120)
        seconds = time.time() - started
        pool.close()
        pool.join()
    finally:
        pool.terminate()
    stats: dict[str, UrlStats] = {t.name: UrlStats() for t in targets}
    for client in results:
        for name, s in client.items():
            stats[name].merge(s)
    stats[UPLOAD_NAME] = uploads
    poller.join()
    return Load(stats, seconds, deadline, generated, uploaded, sent, poller)


def drain(run_ids: list[int], most_s: int) -> tuple[dict[int, dict], float]:
    """Wait (at most ``most_s``) until every run is final and aggregated; their state and the seconds."""
    from evaluation.models import EvaluationRun

    started = time.monotonic()
    while time.monotonic() - started < most_s:
        state = runs_state(run_ids)
        if all(s["status"] in EvaluationRun.FINAL_STATUSES and s["aggregated"] for s in state.values()):
            break
        time.sleep(2)
    return runs_state(run_ids), time.monotonic() - started


# --- main -----------------------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add = parser.add_argument
    add("--repo", type=Path, default=HERE, help="the checkout whose code serves (default: this one)")
    add("--db", default="rcb_bench", help="the bench's PostgreSQL database (and RabbitMQ vhost)")
    add("--duration", type=int, default=60, help="seconds of mixed load")
    add("--clients", type=int, default=4, help="client processes of the GET load")
    add("--upload-every", type=float, default=5.0, help="seconds between two uploads")
    add("--workers", type=int, default=3, help="gunicorn sync workers")
    add("--worker-concurrency", type=int, default=2, help="Celery worker processes")
    add("--samples", type=int, default=20, help="cached requests per URL (their median)")
    add("--drain", type=int, default=300, help="most seconds to wait for the runs after the load")
    add("--cache-url", default=DEFAULT_CACHE_URL, help="RCB_CACHE_URL, flushed at start ('': LocMem)")
    add("--local-cache", action="store_true", help="per-process LocMem caches (same as --cache-url '')")
    add("--poll-every", type=float, default=0.2, help="seconds between two board polls (visibility)")
    add("--visibility-grace", type=float, default=15.0, help="seconds the polls go on after the load")
    add("--verdict-cache", action="store_true", help="let the worker reuse cached verdicts")
    add("--profile", action="store_true", help="cProfile a cold contamination page at the end")
    add("--json", type=Path, help="also write the numbers to this file")
    add("--baseline", type=Path, help="an earlier run's --json (e.g. the old commit's): side by side")
    add("--reseed", action="store_true", help="drop and seed the database again")
    args = parser.parse_args()
    args.repo = args.repo.resolve()
    args.json = args.json.resolve() if args.json else None  # the bench moves into --repo
    if args.local_cache:
        args.cache_url = ""
    if not (args.repo / "manage.py").is_file():
        parser.error(f"--repo {args.repo}: no manage.py there")
    args.baseline_numbers = json.loads(args.baseline.read_text()) if args.baseline else None
    return args


def bench_environment(args: argparse.Namespace, broker: str, llm_port: int, throttle: str) -> dict[str, str]:
    """The environment of every process of the bench (this one included) on the target checkout."""
    return {
        **bench_env(args.db),
        "RCB_VAR_DIR": str(args.repo / "var" / "bench"),
        "CELERY_BROKER_URL": broker,
        "RCB_CACHE_URL": args.cache_url,
        "RCB_UPLOAD_THROTTLE": throttle,
        "RCB_VERDICT_CACHE": "1" if args.verdict_cache else "0",
        "RCB_LLM_ALLOWED_HOSTS": f"127.0.0.1:{llm_port}",
        KEY_ENV: "bench-key-not-secret",
        "RCB_GPU_QUEUE_WITHOUT_GPU": "1",
    }


def measure(
    args: argparse.Namespace, processes: Processes, env: dict[str, str], logs: Path, llm_port: int
) -> dict:
    """Everything between the fixtures and the report (see the module's docstring); returns the numbers."""
    fx = prepare_fixture(args.repo, f"http://127.0.0.1:{llm_port}/v1")
    targets = page_targets(fx)
    port, worker_log = start_services(processes, args, env, logs, llm_port)
    warm_up(port, targets, args.workers, fx)
    pages = targets[1:]
    print(f"cold vs cached before the load ({args.samples} cached samples per URL)...")
    before = cold_and_cached(port, pages, board_run=fx.board_run, samples=args.samples, workers=args.workers)
    run_id = start_generated_run(fx.examples)
    targets += [
        Target("run page (generated run)", f"/runs/{run_id}/"),
        Target("API run results", f"/api/v1/runs/{run_id}/results/"),
    ]
    print(
        f"mixed load for {args.duration} s: {args.clients} clients, an upload every {args.upload_every:g} s, "
        f"generated run {run_id} in progress, the board polled every {args.poll_every:g} s..."
    )
    load = run_load(args, port, targets, fx, run_id)
    rows = load_rows(load.stats, load.seconds, load.poller)
    seen = latencies(load.poller.polls, load.generated, until=load.ended)
    print(f"load over after {load.seconds:.1f} s; waiting (at most {args.drain} s) for the runs to finish...")
    state, drain_s = drain(load.generated + load.uploaded, args.drain)
    print(f"cold vs cached after the load ({drain_s:.0f} s after it)...")
    after = cold_and_cached(port, pages, board_run=fx.board_run, samples=args.samples, workers=args.workers)
    return {
        "load": rows,
        "seconds": load.seconds,
        "paths": {t.name: t.path for t in targets} | {UPLOAD_NAME: UPLOAD_URL, POLL_NAME: load.poller.path},
        "visibility": seen,
        "runs": state,
        "uploads": (len(load.uploaded), load.uploads_sent),
        "drain_s": drain_s,
        "cold_cached": {"before": before, "after": after},
        "worker_task_failures": worker_failures(worker_log),
        "profile": profile_contamination(fx.board_run) if args.profile else "",
    }


def report(args: argparse.Namespace, config: dict, out: dict, logs: Path) -> None:
    rows = out["load"]
    print(
        f"\n== Mixed load: {out['seconds']:.1f} s, {args.clients} client processes (keep-alive http.client, no "
        f"pause), gunicorn {args.workers} sync workers, 1 Celery worker (concurrency {args.worker_concurrency}, "
        f"site,eval-cpu,eval-gpu + beat); code {config['repo']} at {config['commit']}, db {args.db}"
    )
    print(
        f"broker: {config['broker']}; cache: {config['cache']}; upload throttle "
        f"RCB_UPLOAD_THROTTLE={config['upload_throttle']} (twice the bench's rate of one upload every "
        f"{args.upload_every:g} s; default 30/hour); verdict cache {'on' if args.verdict_cache else 'off'}"
    )
    print_load(rows, out["paths"])
    print("\n== Record -> visible on the board (API leaderboard of the examples release, unfinished runs)")
    print_visibility(out["visibility"], args.poll_every)
    print(f"\n== Runs ({out['drain_s']:.0f} s after the load)")
    print_runs(out["runs"], *out["uploads"], out["worker_task_failures"])
    print(f"logs: {logs}")
    print(
        f"\n== Cold (first request after a board change) vs cached (median of {args.samples}), ms: "
        "before the load | after it"
    )
    print_cold(out["cold_cached"]["before"], out["cold_cached"]["after"])
    if out["profile"]:
        print("\n== Profile of a cold contamination page\n" + out["profile"])
    if args.baseline_numbers:
        print(f"\n== Side by side with the baseline {args.baseline}")
        print_baseline(rows, args.baseline_numbers)
    print("\n== Acceptance (issues 21 and 37)")
    print_acceptance(rows, out["visibility"], args.baseline_numbers)


def write_json(path: Path, config: dict, out: dict) -> None:
    numbers = {
        "config": config,
        "load": out["load"],
        "paths": out["paths"],
        "visibility": out["visibility"],
        "runs": {str(pk): s for pk, s in out["runs"].items()},
        "worker_task_failures": out["worker_task_failures"],
        "cold_cached": out["cold_cached"],
    }
    path.write_text(json.dumps(numbers, indent=2))
    print(f"numbers written to {path}")


def main() -> None:
    began = time.monotonic()
    args = parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # progress lines show at once in a log file too
    signal.signal(signal.SIGTERM, _raise_interrupt)
    logs = args.repo / "var" / "bench" / "mixed-load"
    logs.mkdir(parents=True, exist_ok=True)
    processes = Processes(args.repo)
    try:
        broker, broker_note = rabbit_broker(args.db)
        cache_note = shared_cache(args.cache_url, processes, logs / "redis.log") if args.cache_url else None
        llm_port = free_port()
        throttle = f"{2 * math.ceil(3600 / args.upload_every)}/hour"
        env = bench_environment(args, broker, llm_port, throttle)
        print(f"code: {args.repo} at {repo_commit(args.repo)}; database {args.db}")
        seed_database(args.repo, args.db, args.reseed, env)
        os.environ.update(env)
        setup_django(args.repo)
        out = measure(args, processes, env, logs, llm_port)
    finally:
        processes.stop_all()
    config = {
        "repo": str(args.repo),
        "commit": repo_commit(args.repo),
        "db": args.db,
        "duration_s": out["seconds"],
        "clients": args.clients,
        "gunicorn_workers": args.workers,
        "worker_concurrency": args.worker_concurrency,
        "upload_every_s": args.upload_every,
        "upload_throttle": throttle,
        "cache": cache_note or "per-process LocMem",
        "broker": broker_note,
        "verdict_cache": args.verdict_cache,
        "bench_s": time.monotonic() - began,
    }
    report(args, config, out, logs)
    if args.json:
        write_json(args.json, config, out)
    print(f"\nthe bench took {config['bench_s']:.0f} s end to end")
    errors = out["load"]["TOTAL"]["errors"]
    if errors:
        raise SystemExit(f"{errors} errors during the load (must be 0)")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        raise SystemExit("interrupted: every process the bench started is stopped") from None
