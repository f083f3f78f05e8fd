"""Celery tasks of the evaluation app: thin wrappers that load by id and call one service, each named after
it (``completion_test_cpu`` calls ``completion_test``). Only ``evaluation/dispatch.py`` sends them."""

from __future__ import annotations

import logging
import os
import random
import socket
import threading
from typing import Any

from celery import Task, current_app, shared_task
from celery.signals import worker_process_init
from django.conf import settings
from django.db import connection

from evaluation import services
from evaluation.models import Completion
from evaluation.services import LeaseResult, received_uploads, rejudge, uploads, validation

log = logging.getLogger(__name__)


def _probe(token: str) -> bool:
    return services.broker_probe_complete(token=token, worker_hostname=socket.gethostname())


@shared_task(name="evaluation.tasks.broker_probe_complete_site")
def broker_probe_complete_site(token: str) -> bool:
    """Round-trip probe through the ``site`` queue."""
    return _probe(token)


@shared_task(name="evaluation.tasks.broker_probe_complete_eval_cpu")
def broker_probe_complete_eval_cpu(token: str) -> bool:
    """Round-trip probe through the ``eval-cpu`` queue."""
    return _probe(token)


@shared_task(name="evaluation.tasks.broker_probe_complete_eval_gpu")
def broker_probe_complete_eval_gpu(token: str) -> bool:
    """Round-trip probe through the ``eval-gpu`` queue."""
    return _probe(token)


PROBE_TASKS = {
    "site": broker_probe_complete_site,
    "eval-cpu": broker_probe_complete_eval_cpu,
    "eval-gpu": broker_probe_complete_eval_gpu,
}


# ------------------------------------------------------------------------------------- evaluation work
#
# Every work task is thin: take the item's lease (someone else has it, or it is past this stage: return),
# keep the lease alive with a heartbeat thread while the service works, and let the service record the
# outcome. acks_late and reject_on_worker_lost are global (config/celery.py); the reaper covers the rest.


def _owner(task: Task) -> str:
    """A lease owner unique to this delivery of this task (worker host, process, message id)."""
    return f"{task.request.hostname or socket.gethostname()}:{os.getpid()}:{task.request.id}"


class _LeaseHeartbeat:
    """Renews a lease every third of its length in a background thread while the ``with`` block runs."""

    def __init__(self, completion_id: int, owner: str, seconds: int) -> None:
        self.completion_id = completion_id
        self.owner = owner
        self.seconds = seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"lease-{completion_id}", daemon=True)

    def _beat(self) -> None:
        try:
            while not self._stop.wait(max(0.5, self.seconds / 3)):
                try:
                    if not services.lease_renew(
                        completion_id=self.completion_id, owner=self.owner, seconds=self.seconds
                    ):
                        return
                except Exception:
                    log.exception("could not renew the lease of completion %s", self.completion_id)
                    # A connection the database dropped stays broken for this thread: open a new one at the
                    # next beat, so a short outage does not cost the lease.
                    connection.close()
        finally:
            connection.close()

    def __enter__(self) -> _LeaseHeartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


def _lease(task: Task, completion_id: int, stage_from: str, stage_to: str) -> tuple[str, LeaseResult]:
    owner = _owner(task)
    result = services.lease_acquire(
        completion_id=completion_id,
        owner=owner,
        stage_from=stage_from,
        stage_to=stage_to,
        seconds=settings.RCB_LEASE_SECONDS,
    )
    return owner, result


@shared_task(bind=True, name="evaluation.tasks.completion_generate", max_retries=None)
def completion_generate(self: Task, completion_id: int) -> str:
    """Generate one completion (queue ``site``); waits and retries while the model is at its concurrency."""
    owner, lease = _lease(
        self, completion_id, Completion.Stage.PENDING_GENERATION, Completion.Stage.GENERATING
    )
    if lease is LeaseResult.BUSY:
        raise self.retry(countdown=1 + random.random())
    if lease is not LeaseResult.ACQUIRED:
        return lease.value
    with _LeaseHeartbeat(completion_id, owner, settings.RCB_LEASE_SECONDS):
        services.completion_generate(completion_id=completion_id, owner=owner)
    return "generated"


def _completion_test(task: Task, completion_id: int) -> str:
    owner, lease = _lease(task, completion_id, Completion.Stage.PENDING_TEST, Completion.Stage.TESTING)
    if lease is not LeaseResult.ACQUIRED:
        return lease.value
    with _LeaseHeartbeat(completion_id, owner, settings.RCB_LEASE_SECONDS):
        services.completion_test(
            completion_id=completion_id, owner=owner, worker_host=task.request.hostname or ""
        )
    return "tested"


@shared_task(bind=True, name="evaluation.tasks.completion_test_cpu")
def completion_test_cpu(self: Task, completion_id: int) -> str:
    """Test one completion in the sandbox (queue ``eval-cpu``)."""
    return _completion_test(self, completion_id)


@shared_task(bind=True, name="evaluation.tasks.completion_test_gpu")
def completion_test_gpu(self: Task, completion_id: int) -> str:
    """Test one completion of a task that needs a GPU (queue ``eval-gpu``)."""
    return _completion_test(self, completion_id)


def _completion_rejudge(task: Task, completion_id: int) -> str:
    result = rejudge.completion_rejudge(completion_id=completion_id, worker_host=task.request.hostname or "")
    return "rejudged" if result is not None else "nothing to re-judge"


# No lease: the completion stays done, and a re-judge is recorded only while one is pending, so a
# redelivered message costs one more cold run at worst (evaluation/services/rejudge.py).
@shared_task(bind=True, name="evaluation.tasks.completion_rejudge_cpu")
def completion_rejudge_cpu(self: Task, completion_id: int) -> str:
    """A maintainer's cold re-judge of one passed completion (queue ``eval-cpu``)."""
    return _completion_rejudge(self, completion_id)


@shared_task(bind=True, name="evaluation.tasks.completion_rejudge_gpu")
def completion_rejudge_gpu(self: Task, completion_id: int) -> str:
    """A maintainer's cold re-judge of one passed completion of a task that needs a GPU (``eval-gpu``)."""
    return _completion_rejudge(self, completion_id)


@shared_task(name="evaluation.tasks.leases_reap")
def leases_reap() -> dict[str, int]:
    """Beat: re-queue or fail items whose lease expired; resend lost messages; finish idle runs."""
    report = services.leases_reap()
    return {
        "requeued": len(report.requeued),
        "failed": len(report.failed),
        "resent": len(report.resent),
        "runs_finished": len(report.runs_finished),
        "uploads_resent": len(received_uploads.uploads_resend_waiting()),
    }


@shared_task(name="evaluation.tasks.predictions_upload_check")
def predictions_upload_check(upload_id: int) -> str:
    """Check an upload received with ``Prefer: respond-async`` and start its run (queue ``site``)."""
    upload = received_uploads.predictions_upload_check(upload_id=upload_id)
    return upload.status if upload is not None else "gone"


@shared_task(name="evaluation.tasks.upload_temp_sweep")
def upload_temp_sweep() -> int:
    """Beat: delete spooled upload files a killed web process left behind."""
    return len(uploads.upload_temp_sweep())


def _prewarm() -> None:
    from evaluation.workspace import shared_runner

    try:
        runner = shared_runner()
        if runner.pool is not None:
            runner.pool.release(runner.pool.acquire(runner.environment, False))
    except Exception:
        log.exception("could not pre-start the warm test interpreter (tests will start it on demand)")


@worker_process_init.connect(dispatch_uid="rcb-prewarm-runner")
def _prewarm_on_start(**kwargs: object) -> None:
    """Start the warm test interpreter of a worker process that consumes a test queue in the background,
    so that its ~2-8 s start overlaps with generation instead of delaying the first test."""
    try:
        queues = set(current_app.amqp.queues.consume_from)
    except Exception:
        queues = set()
    if queues & {"eval-cpu", "eval-gpu"}:
        threading.Thread(target=_prewarm, name="rcb-prewarm", daemon=True).start()


# ------------------------------------------------------------------------------ contribution validation
#
# No lease: the proposal's state machine is the lock (proposal_validation_start is one conditional update,
# so a redelivered message does nothing), and the validation watchdog covers a worker that died.


@shared_task(name="evaluation.tasks.revision_validate_cpu", bind=True)
def revision_validate_cpu(self: Any, revision_id: int) -> str:
    """Run the validation battery of a proposal revision (queue ``eval-cpu``)."""
    return validation.revision_validate(revision_id=revision_id, job_id=self.request.id or "")


@shared_task(name="evaluation.tasks.revision_validate_gpu", bind=True)
def revision_validate_gpu(self: Any, revision_id: int) -> str:
    """Run the validation battery of a revision whose task needs a GPU (queue ``eval-gpu``)."""
    return validation.revision_validate(revision_id=revision_id, job_id=self.request.id or "")


@shared_task(name="evaluation.tasks.validations_watchdog")
def validations_watchdog() -> dict[str, int]:
    """Beat: fail validations running past twice their limit; re-send submitted ones whose message was lost."""
    return validation.validations_watchdog()
