"""Run services without workers: creation, leases, the reaper, cancel and re-run (the verdict of record:
test_verdicts.py)."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, connections, transaction
from django.utils import timezone

from evaluation.models import Completion, EvaluationRun, RunEvent, TestResult
from evaluation.services import (
    LeaseResult,
    Prediction,
    RunError,
    lease_acquire,
    lease_renew,
    leases_reap,
    run_cancel,
    run_create,
    run_rerun,
    test_result_record,
)
from tests.evaluation.run_helpers import FAILED, INFRA, PASSED, rms_release, take, uploaded_run
from tests.factories import fake_llm_model

pytestmark = pytest.mark.django_db

Stage = Completion.Stage


@pytest.fixture
def release(tmp_path):
    return rms_release(tmp_path)


@pytest.fixture
def model():
    return fake_llm_model("http://127.0.0.1:9/v1")


def generated_run(model, release, **kwargs) -> EvaluationRun:
    return run_create(model=model, release=release, source="generated", verification="generated", **kwargs)


def test_generated_run_has_one_completion_per_snippet_and_index(model, release):
    run = generated_run(model, release, n_completions=2)
    snippets = release.task_versions.get().snippets.count()
    assert run.completions.count() == 2 * snippets
    assert set(run.completions.values_list("stage", flat=True)) == {Stage.PENDING_GENERATION}
    assert run.status == EvaluationRun.Status.QUEUED
    assert run.counts["total"] == run.counts["expected"] == 2 * snippets
    assert run.counts["pending"] == 2 * snippets


def test_uploaded_predictions_are_ready_for_testing_and_missing_snippets_lower_coverage(model, release):
    run = run_create(
        model=model,
        release=release,
        source="uploaded",
        verification="uploaded",
        predictions=[
            Prediction(task="rmsnorm", snippet="compute rms", response="```python\nx = 1\n```"),
            Prediction(task="rmsnorm", snippet="optional bias", response="no code here"),
        ],
    )
    items = {c.snippet.name: c for c in run.completions.select_related("snippet")}
    assert set(items) == {"compute rms", "optional bias"}
    assert all(c.stage == Stage.PENDING_TEST for c in items.values())
    assert items["compute rms"].code.strip() == "x = 1"
    assert items["optional bias"].code_extracted is False
    assert run.counts["total"] == 2
    assert run.counts["expected"] == release.task_versions.get().snippets.count()


@pytest.mark.parametrize(
    ("prediction", "message"),
    [
        (Prediction(task="rmsnorm", snippet="no such block"), "unknown task/snippet"),
        (Prediction(task="nope", snippet="compute rms"), "unknown task/snippet"),
        (Prediction(task="rmsnorm", snippet="compute rms", completion_idx=3), "outside 0..0"),
    ],
)
def test_rejects_predictions_for_unknown_items(model, release, prediction, message):
    with pytest.raises(RunError, match=message):
        run_create(
            model=model, release=release, source="uploaded", verification="uploaded", predictions=[prediction]
        )
    assert not EvaluationRun.objects.exists()


def test_rejects_duplicate_predictions(model, release):
    twice = [Prediction(task="rmsnorm", snippet="compute rms", code="x")] * 2
    with pytest.raises(RunError, match="duplicate prediction"):
        run_create(
            model=model, release=release, source="uploaded", verification="uploaded", predictions=twice
        )


def test_rejects_unknown_template(model, release):
    with pytest.raises(RunError, match="unknown template"):
        generated_run(model, release, template="rcb-9")


def test_only_one_worker_can_take_an_item(model, release):
    item = uploaded_run(model, release).completions.first()
    assert take(item, "w1") is LeaseResult.ACQUIRED
    assert take(item, "w2") is LeaseResult.UNAVAILABLE
    item.refresh_from_db()
    assert (item.stage, item.lease_owner, item.attempts) == (Stage.TESTING, "w1", 1)
    assert item.run.status == EvaluationRun.Status.TESTING


def test_an_expired_lease_can_be_taken_over_and_the_old_owner_cannot_renew(model, release):
    item = uploaded_run(model, release).completions.first()
    take(item, "w1")
    Completion.objects.filter(pk=item.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert take(item, "w2") is LeaseResult.ACQUIRED
    assert lease_renew(completion_id=item.pk, owner="w1", seconds=60) is False
    assert lease_renew(completion_id=item.pk, owner="w2", seconds=60) is True
    item.refresh_from_db()
    assert item.attempts == 2
    # The lost attempt is on record for the run page, as when the reaper re-queues it.
    (event,) = RunEvent.objects.filter(completion=item)
    assert (event.kind, event.worker) == (RunEvent.Kind.REQUEUED, "w1")
    assert event.detail.startswith(f"attempt 1 of {Completion.MAX_ATTEMPTS} lost while testing")
    assert event.detail.endswith("taken over by w2")
    assert take(item, "w3") is LeaseResult.UNAVAILABLE  # a live lease is never taken over
    assert RunEvent.objects.filter(completion=item).count() == 1


def test_generation_lease_respects_the_models_concurrency_across_items(model, release):
    model.max_concurrency = 2
    model.save()
    items = list(generated_run(model, release).completions.all()[:3])
    results = [
        lease_acquire(
            completion_id=c.pk,
            owner=f"w{c.pk}",
            stage_from=Stage.PENDING_GENERATION,
            stage_to=Stage.GENERATING,
            seconds=60,
        )
        for c in items
    ]
    assert results == [LeaseResult.ACQUIRED, LeaseResult.ACQUIRED, LeaseResult.BUSY]


def test_reaper_requeues_a_lost_item_then_fails_it_as_worker_lost_after_max_attempts(model, release):
    run = uploaded_run(model, release)
    item = run.completions.first()
    later = timezone.now() + timedelta(seconds=120)
    for attempt in range(1, Completion.MAX_ATTEMPTS + 1):
        assert take(item, f"w{attempt}", seconds=60) is LeaseResult.ACQUIRED
        report = leases_reap(now=later)
        if attempt < Completion.MAX_ATTEMPTS:
            assert report.requeued == [item.pk]
            item.refresh_from_db()
            assert item.stage == Stage.PENDING_TEST and f"attempt {attempt}: worker lost" in item.error
    assert report.failed == [item.pk]
    result = TestResult.objects.get(completion=item)
    assert (result.outcome, result.tier, result.category, result.passed) == (
        "infra_error",
        "infrastructure",
        "worker_lost",
        False,
    )
    assert result.exception_message.startswith(f"worker lost {Completion.MAX_ATTEMPTS} times")
    assert take(item, "w9") is LeaseResult.UNAVAILABLE
    # Every recovery is on record for the run page, with the worker whose lease expired.
    events = list(RunEvent.objects.filter(run=run).order_by("pk"))
    kinds = [e.kind for e in events]
    assert kinds[: Completion.MAX_ATTEMPTS] == ["requeued"] * (Completion.MAX_ATTEMPTS - 1) + ["failed"]
    assert [e.worker for e in events[: Completion.MAX_ATTEMPTS]] == [
        f"w{a}" for a in range(1, Completion.MAX_ATTEMPTS + 1)
    ]
    assert all(e.completion_id == item.pk for e in events[: Completion.MAX_ATTEMPTS])
    assert events[0].detail.startswith(f"attempt 1 of {Completion.MAX_ATTEMPTS} lost while testing")
    assert events[0].detail.endswith("queued for waiting for a test worker again")
    assert "worker lost" in events[Completion.MAX_ATTEMPTS - 1].detail


def test_reaper_leaves_live_leases_alone(model, release):
    item = uploaded_run(model, release).completions.first()
    take(item, "w1", seconds=60)
    report = leases_reap()
    assert report.requeued == [] and report.failed == []
    assert Completion.objects.get(pk=item.pk).stage == Stage.TESTING
    assert not RunEvent.objects.exists()


def test_reaper_resends_messages_of_items_waiting_too_long_and_records_it_per_run(model, release, settings):
    settings.RCB_PENDING_RESEND_S = 60
    runs = [uploaded_run(model, release), uploaded_run(model, release)]
    later = timezone.now() + timedelta(seconds=61)
    report = leases_reap(now=later)
    waiting = Completion.objects.filter(stage=Stage.PENDING_TEST).count()
    assert len(report.resent) == waiting > 0
    for run in runs:
        event = RunEvent.objects.get(run=run)
        n = run.completions.count()
        assert (event.kind, event.items, event.completion_id) == ("resent", n, None)
        assert (
            event.detail
            == f"{n} items waited over 60 s for a worker (a message lost by the broker, or never sent): sent again"
        )
    # Just sent: not again at once.
    assert leases_reap(now=later).resent == []


def test_a_broker_that_refuses_messages_fails_nothing_and_the_reaper_sends_them_later(
    model, release, settings, monkeypatch, django_capture_on_commit_callbacks
):
    from kombu.exceptions import OperationalError

    from evaluation import tasks

    sent = []

    def refused(completion_id):
        raise OperationalError("[Errno 111] Connection refused")

    monkeypatch.setattr(tasks.completion_test_cpu, "delay", refused)
    with django_capture_on_commit_callbacks(execute=True):
        run = uploaded_run(model, release)
    assert run.completions.filter(stage=Stage.PENDING_TEST).count() == run.completions.count() > 0
    monkeypatch.setattr(tasks.completion_test_cpu, "delay", sent.append)
    settings.RCB_PENDING_RESEND_S = 1
    with django_capture_on_commit_callbacks(execute=True):
        report = leases_reap(now=timezone.now() + timedelta(seconds=2))
    assert sorted(sent) == sorted(report.resent) == sorted(run.completions.values_list("pk", flat=True))


def test_cancel_stops_waiting_and_running_items_and_refuses_their_verdicts(model, release):
    run = uploaded_run(model, release)
    running = run.completions.first()
    take(running)
    run = run_cancel(run=run, by="alice")
    assert run.status == EvaluationRun.Status.CANCELLED and run.status_reason == "cancelled by alice"
    assert set(run.completions.values_list("stage", flat=True)) == {Stage.CANCELLED}
    assert test_result_record(completion_id=running.pk, verdict=PASSED, worker_host="h", attempt=1) is None
    assert take(run.completions.last()) is LeaseResult.UNAVAILABLE


def test_rerun_requeues_only_infrastructure_errors(model, release):
    run = uploaded_run(model, release)
    items = list(run.completions.all())
    for item, verdict in zip(items, [INFRA, FAILED] + [PASSED] * (len(items) - 2), strict=True):
        take(item)
        test_result_record(completion_id=item.pk, verdict=verdict, worker_host="h", attempt=1)
    run.refresh_from_db()
    assert run.status == EvaluationRun.Status.FINISHED and "1 infrastructure errors" in run.status_reason
    assert run_rerun(run=run, by="bob") == 1
    run.refresh_from_db()
    assert not TestResult.objects.filter(completion=items[0]).exists()
    assert Completion.objects.get(pk=items[0].pk).stage == Stage.PENDING_TEST
    assert TestResult.objects.filter(completion=items[1]).exists()
    assert run.status == EvaluationRun.Status.TESTING and run.finished_at is None


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="row locks and deferred foreign-key checks need PostgreSQL"
)
@pytest.mark.django_db(transaction=True)
def test_a_generation_lease_waiting_on_a_row_never_deadlocks_a_commit_that_checks_the_models_key(
    model, release
):
    """The CI deadlock: a transaction holding a completion's row (a cancel, a verdict) commits a row that
    references the model, whose deferred foreign-key check takes FOR KEY SHARE on the model row, while a
    lease taker holds the model row and waits for that completion. The lease's lock must not block the
    check, so the commit succeeds and the lease then proceeds."""
    item = generated_run(model, release).completions.first()
    lease: dict[str, object] = {}

    def take_generation() -> None:
        try:
            lease["result"] = lease_acquire(
                completion_id=item.pk,
                owner="w1",
                stage_from=Stage.PENDING_GENERATION,
                stage_to=Stage.GENERATING,
                seconds=60,
            )
        except Exception as exc:  # the thread's outcome is asserted below
            lease["error"] = exc
        finally:
            connection.close()

    with transaction.atomic():
        Completion.objects.filter(pk=item.pk).update(stage=Stage.CANCELLED)
        taker = threading.Thread(target=take_generation)
        taker.start()
        _wait_until_waiting_on_a_lock(timeout=10)
        generated_run(model, release)
    taker.join(timeout=10)
    assert not taker.is_alive() and "error" not in lease, lease
    assert lease["result"] is LeaseResult.UNAVAILABLE


def _wait_until_waiting_on_a_lock(timeout: float) -> None:
    """Until another session of this database waits on a lock. Inside a transaction pg_stat_activity is
    a snapshot taken at its first read, so each poll clears it first."""
    deadline = time.monotonic() + timeout
    with connections["default"].cursor() as cur:
        while time.monotonic() < deadline:
            cur.execute("SELECT pg_stat_clear_snapshot()")
            cur.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                " AND datname = current_database() AND pid <> pg_backend_pid()"
            )
            if cur.fetchone()[0]:
                return
            time.sleep(0.05)
    raise AssertionError("the lease taker never waited on the completion's row")
