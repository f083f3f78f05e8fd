"""Crash tests with real processes: a part of the portal dies or is cut off in the middle of its work.

Each scenario runs real Celery workers (and, for uploads, a real gunicorn web process) against the test
database and the configured broker, breaks one part on purpose, and then checks the same outcome: every
result present exactly once and equal to what the core library decides for the same answers, no item left
in a leased stage, nothing half-written, and every recovery the reaper made listed on the run page.

- a worker killed with SIGKILL while it holds a lease (the reaper re-queues its item);
- the broker (RabbitMQ) restarted mid-run (skips on the filesystem broker: it has no server);
- every database connection of the workers cut mid-run, three times (skips on SQLite: no server);
- the web process killed while an upload arrives and while it is being stored (the retry with the same
  idempotency key starts the run once; the spooled file the killed process left is swept).

``make crash-tests`` runs them five times in a row (``pytest -m crash --count 5``).
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, transaction
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

from evaluation.models import Completion, EvaluationRun, RunEvent, TestResult
from evaluation.services import leases_reap
from evaluation.services.uploads import upload_temp_sweep
from tests.conftest import REPO, database_url_for_current_connection, wait_for
from tests.evaluation.engine_helpers import (
    WORKER_ENV,
    answer_by_prompt,
    assert_every_item_recorded_once,
    core_verdict_outcomes,
    example_tasks,
    import_release,
    run_state,
    scripted_answers,
    start_run,
    stop_together,
)
from tests.factories import (
    LanguageModelFactory,
    MaintainerFactory,
    UserFactory,
    api_token_for,
    fake_llm_model,
)

pytestmark = [pytest.mark.slow, pytest.mark.crash]

Stage = Completion.Stage
LEASED = (Stage.GENERATING, Stage.TESTING)
TASKS = ("rmsnorm", "roformer")
#: short leases, so that an item a dead worker held is taken back within seconds
CRASH_ENV = {**WORKER_ENV, "RCB_LEASE_SECONDS": "2"}


@pytest.fixture(scope="module")
def scripted() -> tuple[list, dict, dict]:
    """The example tasks, the scripted answers, and the verdicts the core library gives them."""
    tasks = example_tasks(TASKS)
    answers = scripted_answers(tasks)
    return tasks, answers, core_verdict_outcomes(tasks, answers)


@pytest.fixture
def crash_run(start_worker, tmp_path, fake_llm, settings, scripted):
    """A generated run of the fake model on three example tasks, and how to start workers for it."""
    tasks, answers, expected = scripted
    fake_llm.answer = answer_by_prompt(tasks, answers)
    settings.RCB_PENDING_RESEND_S = 5
    release = import_release(tmp_path, name="crash", task_ids=TASKS)
    model = fake_llm_model(fake_llm.base_url)
    return model, release, expected


def in_the_middle_of_testing(run: EvaluationRun) -> bool:
    done = TestResult.objects.filter(completion__run=run).count()
    return (
        3 <= done < run.total_items - 3 and Completion.objects.filter(run=run, stage=Stage.TESTING).exists()
    )


def finish_with_reaper(run: EvaluationRun, timeout: float = 120) -> None:
    """Run the reaper (as beat would) until the run ends; meanwhile no item may be leased without a lease."""

    def finished() -> bool:
        leases_reap()
        assert not Completion.objects.filter(
            run=run, stage__in=LEASED, lease_expires_at__isnull=True
        ).exists()
        return run_state(run).is_final

    wait_for(finished, timeout=timeout, interval=0.5, what="the run to finish after the crash")


def assert_survived(run: EvaluationRun, expected: dict, client) -> list[RunEvent]:
    """The run finished with every verdict once, equal to the core library's, and its page lists every
    recovery of the reaper. Returns the recoveries."""
    run = run_state(run)
    assert run.status == EvaluationRun.Status.FINISHED, run.status_reason
    assert TestResult.objects.filter(completion__run=run).count() == run.total_items == len(expected)
    assert_every_item_recorded_once(run)
    portal = {
        (c.snippet.task_version.task.key, c.snippet.name): (c.result.outcome, c.result.passed)
        for c in run.completions.select_related("snippet__task_version__task", "result")
    }
    assert portal == expected
    events = list(RunEvent.objects.filter(run=run))
    client.force_login(MaintainerFactory())
    page = client.get(f"/runs/{run.pk}/").content.decode()
    recovery = page.split('id="run-recovery"', 1)[1].split("</section>", 1)[0]
    assert recovery.count("<tr data-event=") == len(events)
    for event in events:
        assert f'<tr data-event="{event.kind}">' in recovery
        assert event.detail.replace("'", "&#x27;") in recovery
    if not events:
        assert "Nothing to recover" in recovery
    return events


# ------------------------------------------------------------------------------------------ workers


def test_a_worker_killed_while_testing_loses_and_duplicates_nothing(start_worker, crash_run, client):
    model, release, expected = crash_run
    first = start_worker(concurrency=1, extra_env=CRASH_ENV)
    run = start_run(model, release)

    def leased() -> list[int]:
        return list(Completion.objects.filter(run=run, stage__in=LEASED).values_list("pk", flat=True))

    # The worker may finish its item between our look at the database and the kill, and a worker killed
    # between two items loses nothing. So freeze it first (SIGSTOP: it can record nothing more), read what
    # it holds from the frozen state, and kill it only while it holds a lease; else let it go on and retry.
    lost: list[int] = []
    deadline = time.monotonic() + 60
    while not lost:
        assert time.monotonic() < deadline, "never caught the worker holding a lease mid-run"
        wait_for(
            lambda: in_the_middle_of_testing(run),
            timeout=60,
            interval=0.02,
            what="a test in flight with some results",
        )
        os.killpg(first.proc.pid, signal.SIGSTOP)
        lost = leased()
        if not lost:
            os.killpg(first.proc.pid, signal.SIGCONT)
    first.kill()
    before = TestResult.objects.filter(completion__run=run).count()
    assert set(leased()) == set(lost)
    second = start_worker(concurrency=1, extra_env=CRASH_ENV)
    finish_with_reaper(run)
    print(f"\nkilled after {before}/{run.total_items} results with {len(lost)} leased item(s) lost")

    events = assert_survived(run, expected, client)
    assert not TestResult.objects.filter(completion__run=run, category="worker_lost").exists()
    assert max(Completion.objects.filter(run=run).values_list("attempts", flat=True)) <= 2
    # The items the dead worker held were taken again after their lease expired, and the page says so.
    assert set(Completion.objects.filter(pk__in=lost).values_list("attempts", flat=True)) == {2}
    requeued = [e for e in events if e.kind == RunEvent.Kind.REQUEUED]
    assert {e.completion_id for e in requeued} == set(lost)
    assert all(first.hostname in e.worker for e in requeued)
    stop_together([first, second])


# ------------------------------------------------------------------------------------------- broker


def restart_rabbitmq() -> float:
    """Stop RabbitMQ's application (every connection drops; durable queues and persistent messages stay),
    start it again and wait until it serves. Returns the seconds it was away."""
    started = time.monotonic()
    for command in (["stop_app"], ["start_app"], ["await_startup"]):
        subprocess.run(["rabbitmqctl", *command], check=True, capture_output=True, timeout=120)
    return time.monotonic() - started


def test_a_broker_restart_mid_run_loses_and_duplicates_nothing(start_worker, crash_run, client):
    if not django_settings.CELERY_BROKER_URL.startswith("amqp"):
        pytest.skip(
            "the broker is not RabbitMQ (CELERY_BROKER_URL=amqp://...): the filesystem broker has no server"
        )
    if shutil.which("rabbitmqctl") is None:
        pytest.skip("rabbitmqctl is not on PATH: cannot restart the broker")
    model, release, expected = crash_run
    worker = start_worker(concurrency=1, extra_env=CRASH_ENV)
    run = start_run(model, release)
    wait_for(
        lambda: in_the_middle_of_testing(run),
        timeout=60,
        interval=0.05,
        what="a test in flight with some results",
    )
    before = TestResult.objects.filter(completion__run=run).count()
    away = restart_rabbitmq()
    finish_with_reaper(run)
    print(f"\nbroker away {away:.1f} s after {before}/{run.total_items} results")

    assert worker.proc.poll() is None, (
        "the worker did not survive the broker's restart:\n" + worker.log()[-3000:]
    )
    assert "Connection to broker lost" in worker.log()
    assert_survived(run, expected, client)
    stop_together([worker])


# ----------------------------------------------------------------------------------------- database


def other_backends(what: str = "count(*)", where: str = "TRUE") -> int:
    """``what`` over the other PostgreSQL sessions of the test database (not this test's own) that match
    ``where``."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {what} FROM pg_stat_activity "
            f"WHERE datname = current_database() AND pid <> pg_backend_pid() AND {where}"
        )
        return cursor.fetchone()[0]


def cut_database_connections() -> int:
    """Terminate every other connection to the test database (the workers'); keep this test's own."""
    return other_backends("count(pg_terminate_backend(pid))")


def test_database_connections_cut_mid_run_lose_and_duplicate_nothing(start_worker, crash_run, client):
    if connection.vendor != "postgresql":
        pytest.skip(
            "SQLite has no server connection to cut: runs on PostgreSQL (DATABASE_URL=postgres://...)"
        )
    model, release, expected = crash_run
    worker = start_worker(concurrency=1, extra_env=CRASH_ENV)
    run = start_run(model, release)
    cut = 0
    for _ in range(3):
        wait_for(
            lambda: Completion.objects.filter(run=run, stage__in=LEASED).exists() or run_state(run).is_final,
            timeout=60,
            interval=0.02,
            what="an item in flight",
        )
        cut += cut_database_connections()
        time.sleep(0.7)
    assert cut >= 3, "no worker connection was cut"
    finish_with_reaper(run)
    print(f"\ncut {cut} database connections of the worker in three goes")

    assert worker.proc.poll() is None, "the worker did not survive:\n" + worker.log()[-3000:]
    assert_survived(run, expected, client)
    assert not TestResult.objects.filter(completion__run=run, outcome="infra_error").exists()
    stop_together([worker])


# ---------------------------------------------------------------------------------------- web process


class WebProcess:
    """A real gunicorn (one sync worker) serving the portal from the test database; killed with SIGKILL."""

    def __init__(self, log_path: Path) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        env = {
            **os.environ,
            "DATABASE_URL": database_url_for_current_connection(),
            "DJANGO_DEBUG": "0",
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
            "DJANGO_STATIC_MANIFEST": "0",
            "RCB_UPLOAD_THROTTLE": "1000/hour",
        }
        gunicorn = [
            sys.executable,
            "-m",
            "gunicorn",
            "config.wsgi",
            "-w",
            "1",
            "-b",
            f"127.0.0.1:{self.port}",
        ]
        with open(log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [*gunicorn, "--timeout", "120"],
                cwd=REPO,
                env=env,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        wait_for(self._up, timeout=60, what="gunicorn to serve")

    def _up(self) -> bool:
        assert self.proc.poll() is None, "gunicorn exited"
        try:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
            conn.request("GET", "/healthz")
            return conn.getresponse().status in (200, 503)
        except OSError:
            return False

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)


def big_predictions(tasks) -> tuple[bytes, int]:
    """Every snippet's reference body, three completions each, padded with a comment so that the file is
    over Django's in-memory limit (the web process spools it to a file while it reads the request)."""
    lines = []
    for task in tasks:
        for snippet in task.snippets:
            for idx in range(3):
                code = textwrap.dedent(snippet.code) + "\n# " + "p" * 60_000 + "\n"
                lines.append(
                    json.dumps(
                        {"task": task.id, "snippet": snippet.name, "completion_idx": idx, "code": code}
                    )
                )
    data = ("\n".join(lines) + "\n").encode()
    assert len(data) > django_settings.FILE_UPLOAD_MAX_MEMORY_SIZE
    return data, len(lines)


def send(web: WebProcess, head: bytes, body: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", web.port), timeout=30)
    sock.sendall(head + body)
    return sock


def spooled() -> set[str]:
    return {p.name for p in Path(django_settings.FILE_UPLOAD_TEMP_DIR).glob("*.upload*")}


def hold_the_write_lock():
    """A transaction that blocks the upload's writes until it ends: on PostgreSQL a table lock on the
    completions (the run row is inserted, its items wait), on SQLite the database's write lock."""
    if connection.vendor == "postgresql":
        atomic = transaction.atomic()
        atomic.__enter__()
        with connection.cursor() as cursor:
            cursor.execute("LOCK TABLE evaluation_completion IN SHARE ROW EXCLUSIVE MODE")
        return lambda: atomic.__exit__(None, None, None)
    db = sqlite3.connect(connection.settings_dict["NAME"], timeout=30)
    db.execute("BEGIN IMMEDIATE")
    return db.rollback


def upload_is_waiting_for_the_lock() -> bool:
    return connection.vendor != "postgresql" or other_backends(where="wait_event_type = 'Lock'") > 0


def no_other_backend() -> bool:
    return connection.vendor != "postgresql" or other_backends(where="backend_type = 'client backend'") == 0


def test_the_web_process_killed_while_storing_an_upload_leaves_nothing_half_written(
    start_worker, transactional_db, tmp_path, client
):
    tasks = example_tasks(("rmsnorm", "roformer"))
    release = import_release(tmp_path, name="web", task_ids=("rmsnorm", "roformer"))
    user = UserFactory()
    LanguageModelFactory(key="uploader", self_reported=True, owner=user)
    token = api_token_for(user)
    data, n_lines = big_predictions(tasks)
    content_type = MULTIPART_CONTENT
    body = encode_multipart(
        BOUNDARY,
        {
            "model": "uploader",
            "release": release.name,
            "template": "rcb-v2",
            "file": SimpleUploadedFile("p.jsonl", data),
        },
    )
    key = uuid.uuid4().hex
    head = (
        f"POST /api/v1/runs/upload/ HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Token {token}\r\n"
        f"Idempotency-Key: {key}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    log = tmp_path / "gunicorn.log"
    before = spooled()

    # 1. Killed while the request body arrives: half the file is spooled, nothing is stored.
    web = WebProcess(log)
    sock = send(web, head, body[: len(body) // 2])
    wait_for(lambda: spooled() - before, timeout=30, what="the web process to spool the upload")
    web.kill()
    sock.close()
    left = spooled() - before
    assert left and not EvaluationRun.objects.exists()

    # 2. Killed while it stores the upload (inside its transaction, held at the completions' insert).
    release_lock = hold_the_write_lock()
    try:
        web = WebProcess(log)
        sock = send(web, head, body)
        wait_for(upload_is_waiting_for_the_lock, timeout=30, what="the upload to wait inside its transaction")
        time.sleep(0.5)
        sock.settimeout(0.1)
        with pytest.raises(TimeoutError):
            sock.recv(1)  # no answer: the upload is still being stored
        web.kill()
        sock.close()
    finally:
        release_lock()
    wait_for(no_other_backend, timeout=30, what="the killed process's database session to end")
    assert not EvaluationRun.objects.exists() and not Completion.objects.exists()

    # 3. The client retries with the same key: one run, stored whole; a second retry gets that run back.
    web = WebProcess(log)
    answers = []
    for _ in range(2):
        sock = send(web, head, body)
        response = http.client.HTTPResponse(sock)
        response.begin()
        answers.append((response.status, json.loads(response.read())))
        sock.close()
    web.kill()
    assert [status for status, _ in answers] == [201, 200], answers
    run = EvaluationRun.objects.get()
    assert answers[0][1]["id"] == answers[1][1]["id"] == run.pk
    assert run.total_items == n_lines == Completion.objects.filter(run=run).count()
    assert run.upload_key == key

    # What the killed process spooled is swept (the beat does it once the file is old enough).
    assert set(upload_temp_sweep(older_than_s=0)) >= left
    assert not spooled() - before

    worker = start_worker(concurrency=1, extra_env={"RCB_LEASE_SECONDS": "5"})
    wait_for(lambda: run_state(run).is_final, timeout=120, interval=0.5, what="the uploaded run to finish")
    assert run.status == EvaluationRun.Status.FINISHED, run.status_reason
    assert_every_item_recorded_once(run)
    assert TestResult.objects.filter(completion__run=run).count() == n_lines
    assert set(TestResult.objects.filter(completion__run=run).values_list("outcome", flat=True)) == {"passed"}
    assert "Traceback" not in log.read_text(errors="replace")
    stop_together([worker])
