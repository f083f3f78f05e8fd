"""/status/: queue depths read from the real broker, validations in progress, the oldest waiting item and the
throughput of the last hour from the real database, all cached for ``RCB_STATUS_CACHE_S`` seconds."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.conf import settings
from django.core.cache import cache
from django.utils import timezone
from kombu import Connection

from config.celery import app
from contributions.models import ProposalRevision
from evaluation.broker import queue_depths
from evaluation.models import Completion, EvaluationRun, ResultsPerMinute, TestResult
from evaluation.selectors.status import (
    completion_oldest_waiting,
    result_throughput,
    validation_in_progress_summary,
)
from evaluation.services.verdicts import THROUGHPUT_KEEP_S, test_result_record
from tests.conftest import wait_for
from tests.evaluation.run_helpers import PASSED
from tests.factories import CompletionFactory, EvaluationRunFactory, SnippetFactory
from tests.factories.builders import proposal_draft, proposal_upload

UNREACHABLE_AMQP = "amqp://guest:guest@127.0.0.1:1//"
BROKERS = {
    "configured": None,  # the suite's own broker (filesystem by default, RabbitMQ in CI)
    "amqp": "amqp://guest:guest@127.0.0.1:5672//",
    "redis": "redis://127.0.0.1:6379/15",
}


@pytest.fixture(autouse=True)
def _no_cached_report(settings) -> Iterator[None]:
    # The suite turns the cache off (tests/pytest_env.py); here it is on, as in production, and starts empty.
    settings.RCB_STATUS_CACHE_S = 5
    cache.clear()
    yield
    cache.clear()


def _connection(url: str | None) -> Connection:
    if url is None:
        return app.connection_for_write()
    return Connection(url, connect_timeout=2)


def _reachable(url: str | None) -> bool:
    try:
        with _connection(url) as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, timeout=2)
        return True
    except Exception:
        return False


def _depth_cell(page: str, queue: str) -> str:
    match = re.search(rf'data-queue-depth="{re.escape(queue)}">(.*?)</td>', page, re.S)
    assert match, f"no depth cell for {queue}"
    return re.sub(r"<[^>]+>", "", match.group(1)).strip()


@pytest.mark.parametrize("broker", list(BROKERS))
def test_queue_depth_counts_the_messages_published_to_a_queue_nobody_consumes(broker):
    url = BROKERS[broker]
    if not _reachable(url):
        pytest.skip(f"no {broker} broker answers here ({url or settings.CELERY_BROKER_URL})")
    name = f"rcb-status-test-{uuid.uuid4().hex[:12]}"
    with _connection(url) as conn:
        waiting = conn.SimpleQueue(name)
        try:
            for i in range(5):
                waiting.put({"n": i})
            # RabbitMQ counts a published message a moment after the publish returns (no publisher confirms
            # here): ask until the five are counted, as the status page would on its next look, for 10 s at most.
            deadline = time.monotonic() + 10
            while True:
                depths = queue_depths(queues=[name, f"{name}-never-declared"], url=url)
                if depths[0].depth == 5 or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
        finally:
            waiting.clear()
            waiting.queue.delete()
            waiting.close()
    assert [(d.queue, d.depth, d.error) for d in depths] == [
        (name, 5, ""),
        (f"{name}-never-declared", 0, ""),
    ]


def test_queue_depth_of_an_unreachable_broker_is_unknown_with_the_reason():
    depths = queue_depths(queues=["site", "eval-cpu"], url=UNREACHABLE_AMQP, timeout_s=1)
    assert [d.depth for d in depths] == [None, None]
    assert all("refused" in d.error.lower() for d in depths)


@pytest.mark.django_db
def test_status_page_shows_the_depth_of_each_queue_on_the_suites_broker(client):
    if not _reachable(None):
        pytest.skip(f"the suite's broker ({settings.CELERY_BROKER_URL}) does not answer")
    before = queue_depths(queues=["eval-gpu"])[0].depth
    with app.connection_for_write() as conn:
        # Declared exactly as Celery declares it; no worker of this test consumes eval-gpu.
        waiting = conn.SimpleQueue(app.amqp.queues["eval-gpu"])
        try:
            for i in range(4):
                waiting.put({"status-test": i})
            # Publishing does not wait for the broker to route: another connection may count the queue
            # first (seen under load). The page is what is tested, once the broker holds the messages.
            wait_for(
                lambda: queue_depths(queues=["eval-gpu"])[0].depth == before + 4,
                timeout=10,
                what="the broker to hold the 4 messages",
            )
            page = client.get("/status/").content.decode()
        finally:
            waiting.clear()
            waiting.close()
    assert _depth_cell(page, "eval-gpu") == str(before + 4)
    for queue in ("site", "eval-cpu"):
        assert _depth_cell(page, queue).isdigit()


def _record(item: Completion) -> TestResult:
    return test_result_record(completion_id=item.pk, verdict=PASSED, worker_host="status-test", attempt=1)


def _revision(status: str) -> ProposalRevision:
    revision = proposal_upload(proposal_draft())
    ProposalRevision.objects.filter(pk=revision.pk).update(
        validation_status=status, validation_started_at=timezone.now() - timedelta(minutes=3)
    )
    return revision


@pytest.mark.django_db
def test_status_page_counts_validations_the_oldest_waiting_item_and_the_last_hours_results(client):
    now = timezone.now()
    _revision(ProposalRevision.ValidationStatus.RUNNING)
    _revision(ProposalRevision.ValidationStatus.RUNNING)
    _revision(ProposalRevision.ValidationStatus.PASSED)

    active = EvaluationRunFactory(status=EvaluationRun.Status.TESTING)
    gpu_snippet = SnippetFactory(task_version__needs_gpu=True)
    oldest = CompletionFactory(run=active, snippet=gpu_snippet, stage=Completion.Stage.PENDING_TEST)
    newer = CompletionFactory(run=active, stage=Completion.Stage.PENDING_GENERATION)
    # Older still, but its run is over: it waits for nothing.
    finished = CompletionFactory(
        run=EvaluationRunFactory(status=EvaluationRun.Status.CANCELLED), stage=Completion.Stage.PENDING_TEST
    )
    Completion.objects.filter(pk=oldest.pk).update(created_at=now - timedelta(hours=2))
    Completion.objects.filter(pk=newer.pk).update(created_at=now - timedelta(minutes=5))
    Completion.objects.filter(pk=finished.pk).update(created_at=now - timedelta(days=1))

    testing = EvaluationRunFactory(status=EvaluationRun.Status.TESTING)
    for snippet in [SnippetFactory(), SnippetFactory(), SnippetFactory(), gpu_snippet]:
        _record(CompletionFactory(run=testing, snippet=snippet, stage=Completion.Stage.TESTING))
    # Imported verdicts come from a paper's files in one go: no queue tested them.
    imported = EvaluationRunFactory(source=EvaluationRun.Source.IMPORTED)
    _record(CompletionFactory(run=imported, stage=Completion.Stage.TESTING))

    assert validation_in_progress_summary().count == 2
    waiting = completion_oldest_waiting()
    assert (waiting.completion_id, waiting.run_id, waiting.queue) == (oldest.pk, active.pk, "eval-gpu")
    assert result_throughput() == {"eval-cpu": 3, "eval-gpu": 1}
    # The window moves on: 59 minutes later they still count, 61 minutes later they no longer do.
    later = timezone.now()
    assert result_throughput(now=later + timedelta(minutes=59)) == {"eval-cpu": 3, "eval-gpu": 1}
    assert result_throughput(now=later + timedelta(minutes=61)) == {"eval-cpu": 0, "eval-gpu": 0}

    page = client.get("/status/").content.decode()
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", page))
    assert "Validations in progress 2 (the oldest started 3" in text
    assert f"run {active.pk}, item {oldest.pk}: waiting for a test worker in eval-gpu for 2" in text
    assert "Results recorded in the last hour 4" in text
    assert re.search(r'data-queue-throughput="eval-cpu">3<', page)
    assert re.search(r'data-queue-throughput="eval-gpu">1<', page)
    assert re.search(r'data-queue-throughput="site">&ndash;<', page)


@pytest.mark.django_db
def test_a_minutes_first_verdict_deletes_its_queues_counters_older_than_they_are_kept():
    run = EvaluationRunFactory(status=EvaluationRun.Status.TESTING)
    _record(CompletionFactory(run=run, stage=Completion.Stage.TESTING))
    counter = ResultsPerMinute.objects.get()
    ResultsPerMinute.objects.filter(pk=counter.pk).update(
        minute=counter.minute - timedelta(seconds=THROUGHPUT_KEEP_S + 60)
    )
    _record(CompletionFactory(run=run, stage=Completion.Stage.TESTING))
    # The old counter is gone; the new verdict's minute (this one, or the next at a minute's turn) has 1.
    assert list(ResultsPerMinute.objects.values_list("queue", "results")) == [("eval-cpu", 1)]
    assert ResultsPerMinute.objects.get().minute >= counter.minute


@pytest.mark.django_db
def test_status_page_with_nothing_going_on_says_so(client):
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", client.get("/status/").content.decode()))
    assert (
        "Results recorded in the last hour 0 Validations in progress 0 Oldest waiting item nothing waits"
        in text
    )


@pytest.mark.django_db
def test_a_cached_repeat_costs_no_query_and_no_broker_call(client, settings, django_assert_num_queries):
    first = client.get("/status/").content.decode()
    assert _depth_cell(first, "site") != "unknown"
    # Were the broker asked again, this URL would answer "unknown"; were the database, a query would count.
    settings.CELERY_BROKER_URL = UNREACHABLE_AMQP
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {}
    with django_assert_num_queries(0):
        again = client.get("/status/").content.decode()
    assert _depth_cell(again, "site") == _depth_cell(first, "site")
    assert "refreshed at most every 5 s" in again


@pytest.mark.django_db
def test_an_unreachable_broker_shows_unknown_depths_and_the_page_still_answers(client, settings):
    settings.CELERY_BROKER_URL = UNREACHABLE_AMQP
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {}
    response = client.get("/status/")
    assert response.status_code == 200
    page = response.content.decode()
    assert [_depth_cell(page, q) for q in ("site", "eval-cpu", "eval-gpu")] == [
        "unknown (the broker did not answer)"
    ] * 3
    broker_row = re.sub(
        r"\s+", " ", re.sub(r"<[^>]+>", " ", page.split('scope="row">Broker', 1)[1].split("</tr>")[0])
    )
    assert "down" in broker_row and "refused" in broker_row.lower()


@pytest.mark.django_db
def test_a_workers_last_heartbeat_reads_as_how_long_ago_with_the_exact_time_kept(client, settings):
    from evaluation.models import WorkerHeartbeat

    seen = timezone.now() - timedelta(minutes=3, seconds=5)
    WorkerHeartbeat.objects.create(
        hostname="celery@0123456789ab", queues=["site", "eval-cpu"], started_at=seen, last_seen_at=seen
    )
    settings.CELERY_WORKER_HEARTBEAT_S = 120  # alive: seen within three heartbeat periods
    page = client.get("/status/").content.decode()
    cell = page.split("celery@0123456789ab", 1)[1].split("</tr>", 1)[0]
    assert (
        f'<time datetime="{seen.isoformat()}" title="{seen:%Y-%m-%d %H:%M:%S} UTC">3\xa0minutes ago</time>'
        in cell
    )
    assert client.get("/healthz").json()["workers"][0]["last_seen_at"] == seen.isoformat()
