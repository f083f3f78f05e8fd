"""Fixtures shared by the whole suite: real Celery worker processes on the configured broker, and the
system Chromium driven by Playwright for the browser journeys."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection, connections
from django.test.utils import override_settings

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


#: markers of the tests, or files of tests, that take longest (real workers, browsers, image builds, the
#: sandbox batteries)
LONG_MARKERS = ("slow", "browser", "sandbox")


def pytest_configure(config: pytest.Config) -> None:
    """Passwords are hashed with a fast hasher in the test processes: PBKDF2's 1.2 million rounds take about
    0.4 s a hash, and every account a test makes and every sign-in pays it (more than half the time of the
    account and review tests). No test is about the hasher; production keeps Django's default. Set before any
    password is hashed (Django caches the hashers on first use)."""
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _empty_cache() -> None:
    """Each test starts with the embedded default cache (this process's memory) empty: what an earlier test
    stored (a run's shared copy, a throttle's counts, a page) never reaches it. A shared store is left alone:
    clearing it would empty it under the other test processes too."""
    from django.conf import settings

    if settings.CACHES["default"]["BACKEND"].endswith(".LocMemCache"):
        cache.clear()


@pytest.fixture
def redis_url() -> str:
    """A Redis database for this test (the production store: ``RCB_CACHE_URL``); skips when none runs."""
    url = os.environ.get("RCB_TEST_REDIS_URL", "redis://127.0.0.1:6379/14")
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
    except redis.exceptions.ConnectionError as exc:
        pytest.skip(f"no Redis at {url} ({exc}): the shared store is tested where one runs")
    return url


@pytest.fixture
def shared_store(redis_url) -> Iterator[str]:
    """The production store, a Redis cache under a key prefix of this test's own (yielded), in
    ``settings.CACHES`` for the test; its keys are deleted afterwards."""
    import redis

    prefix = f"rcb-test-{uuid.uuid4().hex[:12]}"
    store = {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": redis_url,
        "KEY_PREFIX": prefix,
    }
    try:
        with override_settings(CACHES={"default": store}):
            yield prefix
    finally:
        shared = redis.Redis.from_url(redis_url)
        for name in shared.scan_iter(f"{prefix}:*"):
            shared.delete(name)


#: Seconds each test file took in a recorded run (``RCB_RECORD_DURATIONS=1 make test`` rewrites it): only the
#: order of the files depends on it, never what a test checks. A file it does not list (a new one) counts as
#: ``UNLISTED_LONG_S`` when it holds a test of ``LONG_MARKERS``, else as nothing.
DURATIONS = Path(__file__).with_name("durations.json")
UNLISTED_LONG_S = 60.0


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist, the longest files first, each file's tests in their own order: ``make test`` hands
    whole files to its processes in the order they first appear (``--dist loadfile``), so a long file
    collected last would run alone at the end while the others idle. A process runs each file whole anyway,
    so pytest-django's order (database tests before transactional ones) holds only within a file there; a
    run on one process keeps that order across files, untouched."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    recorded = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
    long_files = {item.path for item in items if any(item.get_closest_marker(m) for m in LONG_MARKERS)}

    def seconds(path: Path) -> float:
        name = path.relative_to(REPO).as_posix()
        return recorded.get(name, UNLISTED_LONG_S if path in long_files else 0.0)

    items.sort(key=lambda item: -seconds(item.path))  # a stable sort: each file's order stays


_SPENT: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """With ``RCB_RECORD_DURATIONS=1``, the time of each file's tests (setup, call and teardown), added up in
    the process that reports them all (xdist's controller, or the only one)."""
    if os.environ.get("RCB_RECORD_DURATIONS") == "1" and not os.environ.get("PYTEST_XDIST_WORKER"):
        name = report.nodeid.split("::")[0]
        _SPENT[name] = _SPENT.get(name, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Write the files' recorded times into ``DURATIONS`` (merged over what it lists: a run of some files keeps
    the others' times)."""
    if not _SPENT:
        return
    recorded = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
    recorded.update({name: round(spent, 1) for name, spent in _SPENT.items()})
    DURATIONS.write_text(json.dumps(dict(sorted(recorded.items())), indent=1) + "\n")


def database_url_for_current_connection() -> str:
    """A DATABASE_URL that points a subprocess at the database this test is using (the test database)."""
    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{s['NAME']}"
    user = s.get("USER") or "postgres"
    password = f":{s['PASSWORD']}" if s.get("PASSWORD") else ""
    host = s.get("HOST") or "127.0.0.1"
    port = s.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{s['NAME']}"


class WorkerProcess:
    """A real `celery worker` subprocess; stopped (or killed) by the test."""

    def __init__(self, proc: subprocess.Popen, hostname: str, log_path: Path) -> None:
        self.proc = proc
        self.hostname = hostname
        self.log_path = log_path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Kill the whole process group (main process and pool children), as a crash would."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            self.proc.wait(timeout=30)

    def terminate(self) -> None:
        """Ask for a warm shutdown (SIGTERM to the process group); ``finish`` waits for it."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)

    def finish(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the worker to exit, then kill it."""
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def stop(self) -> None:
        self.terminate()
        self.finish(timeout=20)


@pytest.fixture(autouse=True)
def _close_the_shared_runner() -> Iterator[None]:
    """A test that validates or evaluates in this process (load_demo, revision_validate) starts the shared warm
    runner; stop it afterwards so that no warm server or cgroup of one test outlives it into the next."""
    yield
    from evaluation.workspace import shared_runner_close

    shared_runner_close()


@pytest.fixture
def start_worker(transactional_db, tmp_path) -> Iterator[Callable[..., WorkerProcess]]:
    """Start Celery workers against the test database and the configured broker; wait until each is alive.

    Uses ``transactional_db`` so that rows the test writes are committed and visible to the worker.
    """
    from config.celery import app

    started: list[WorkerProcess] = []
    counter = iter(range(1000))

    def start(
        queues: str = "site,eval-cpu,eval-gpu",
        *,
        concurrency: int = 1,
        extra_env: dict | None = None,
        timeout: float = 60.0,
    ) -> WorkerProcess:
        from evaluation.models import WorkerHeartbeat

        n = next(counter)
        hostname = f"test{n}-{os.getpid()}@localhost"
        log_path = tmp_path / f"worker{n}.log"
        env = {
            **os.environ,
            "DATABASE_URL": database_url_for_current_connection(),
            "RCB_WORKER_HEARTBEAT_S": "1",
            "PYTHONUNBUFFERED": "1",
            **(extra_env or {}),
        }
        cmd = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "-Q",
            queues,
            "--hostname",
            hostname,
            "--concurrency",
            str(concurrency),
            "--loglevel",
            "INFO",
            "--without-mingle",
            "--without-gossip",
        ]
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        worker = WorkerProcess(proc, hostname, log_path)
        started.append(worker)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise AssertionError(f"worker exited with {proc.returncode}:\n{worker.log()}")
            if WorkerHeartbeat.objects.filter(hostname=hostname, status="online").exists():
                return worker
            time.sleep(0.2)
        worker.kill()
        raise AssertionError(f"worker did not become ready in {timeout}s:\n{worker.log()}")

    with app.connection_for_write() as conn:
        for queue in ("site", "eval-cpu", "eval-gpu"):
            try:
                conn.default_channel.queue_purge(queue)
            except Exception:  # a queue that does not exist yet has nothing stale in it
                pass
    yield start
    # After the test nothing the workers still do matters (the database is flushed next): ask them all to
    # stop at once and kill what has not exited after a short grace period, instead of waiting for a warm
    # shutdown that finishes in-flight retries one worker after another.
    for worker in started:
        worker.terminate()
    for worker in started:
        worker.finish(timeout=5)


#: How many times its ``timeout`` ``wait_for`` waits: a wait's timeout only catches a hang, never a slow
#: machine (tests assert behaviour, not speed), so a busy machine gets room (``RCB_TEST_PATIENCE``).
PATIENCE = float(os.environ.get("RCB_TEST_PATIENCE", "4"))


def wait_for(
    predicate: Callable[[], bool], *, timeout: float = 30.0, interval: float = 0.2, what: str = ""
) -> None:
    """Poll ``predicate`` until it is true; fail with ``what`` after ``PATIENCE`` x ``timeout`` seconds."""
    timeout *= PATIENCE
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what or predicate}")


@contextmanager
def chromium() -> Iterator[Any]:
    """The system Chromium launched through Playwright's sync API (a ``playwright.sync_api.Browser``);
    skips when Playwright or Chromium is missing. Closed on exit."""
    playwright_api = pytest.importorskip("playwright.sync_api")
    if not shutil.which(CHROMIUM):
        pytest.skip(f"no system Chromium at {CHROMIUM}")
    # Playwright's sync API runs an event loop in this thread; the ORM calls the test makes between
    # browser steps are ordinary synchronous code, so Django's async-safety check would misfire.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        with playwright_api.sync_playwright() as pw:
            launched = pw.chromium.launch(executable_path=CHROMIUM, args=list(CHROMIUM_ARGS))
            try:
                yield launched
            finally:
                launched.close()
                # ORM calls made while Playwright's loop runs get their own connection (asgiref's
                # context-local connections); close it here, or it would keep the test database from being
                # dropped.
                connections.close_all()


@pytest.fixture
def browser() -> Iterator[Any]:
    """Chromium for one test (``chromium``). A module whose tests are all browser tests may share one per
    module instead (tests/test_journeys.py): Playwright's event loop then runs for the whole module, which is
    only safe where every test already runs under it."""
    with chromium() as launched:
        yield launched
