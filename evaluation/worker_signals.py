"""Worker liveness and devices: each Celery worker records a heartbeat row every few seconds while it runs,
with the GPUs of its host; only a worker with a GPU consumes the ``eval-gpu`` queue.

The database, not the broker, is the source of truth for "which workers are alive", so that /healthz and the
run pages work identically with the filesystem transport, RabbitMQ or Redis.

The GPU gate runs once at start-up (``celeryd_after_setup``, after ``-Q`` was applied and before anything
is consumed): a worker asked for ``eval-gpu`` on a host where ``nvidia-smi`` lists no GPU drops that queue
with an error in its log and serves its other queues; if ``eval-gpu`` was its only queue it exits with that
error (exit status 1). A GPU task taken by such a worker would fail for want of a device, or worse pass on
the CPU while the task says it needs a GPU. ``RCB_GPU_QUEUE_WITHOUT_GPU=1`` lets development and test
machines keep the queue.

Clean stops: a warm shutdown (TERM to the main process or to its whole process group, Ctrl-C) waits for
running tasks, which for a test run or a validation can be minutes. ``_on_shutting_down`` bounds it: after
``RCB_WORKER_STOP_S`` seconds the worker sends itself SIGQUIT, Celery's cold shutdown, which cancels the
running tasks (their messages go back to the queue, as ``task_acks_late`` and ``task_reject_on_worker_lost``
say) and stops the pool; every sandbox dies with the pool process that started it (``--die-with-parent``),
and a lease a cancelled item held is reclaimed by the reaper and listed in its run's Recovery section.
``STOP_GRACE_S`` after its pool processes were killed, a main process still waiting on one of them (for a
queue lock a killed process held) exits on its own.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from typing import Any

from celery.signals import celeryd_after_setup, worker_ready, worker_shutdown, worker_shutting_down
from django.conf import settings
from django.db import close_old_connections

from evaluation.queues import QUEUE_EVAL_GPU
from researchcodebench.gpu import detect_gpus

log = logging.getLogger(__name__)
#: Seconds the main process may still take to stop after its pool processes were killed.
STOP_GRACE_S = 1.5
_stop = threading.Event()
#: The GPUs of this worker's host, detected once at start-up.
_devices: list[dict[str, str]] = []


class NoGpuForQueue(SystemExit):
    """The worker was asked to consume only ``eval-gpu`` and has no GPU (exits with status 1)."""


def gpu_queue_decision(
    queues: list[str], devices: list[dict[str, str]], *, allow_without_gpu: bool
) -> tuple[list[str], str | None]:
    """The queues a worker may consume given its GPUs, and the error to log when one was refused."""
    if QUEUE_EVAL_GPU not in queues or devices or allow_without_gpu:
        return queues, None
    kept = [q for q in queues if q != QUEUE_EVAL_GPU]
    error = (
        f"this worker has no GPU (nvidia-smi lists none), so it does not consume the {QUEUE_EVAL_GPU} queue: "
        f"start it on a GPU host, or set RCB_GPU_QUEUE_WITHOUT_GPU=1 on a development machine"
    )
    return kept, error


def _queues(sender) -> list[str]:
    try:
        return sorted(q.name for q in sender.app.amqp.queues.consume_from.values())
    except AttributeError:
        return []


def _on_after_setup(sender: Any = None, instance: Any = None, **kwargs: Any) -> None:
    global _devices
    _devices = detect_gpus()
    queues = _queues(instance)
    kept, error = gpu_queue_decision(queues, _devices, allow_without_gpu=settings.RCB_GPU_QUEUE_WITHOUT_GPU)
    if error is None:
        if _devices:
            log.info("GPUs of this worker: %s", ", ".join(d["name"] for d in _devices))
        return
    log.error(error)
    if not kept:
        raise NoGpuForQueue(f"{error}; it has no other queue to consume")
    instance.app.amqp.queues.deselect([QUEUE_EVAL_GPU])


def _beat(hostname: str, queues: list[str]) -> None:
    from evaluation.services import worker_heartbeat_record

    while not _stop.is_set():
        try:
            close_old_connections()
            worker_heartbeat_record(hostname=hostname, queues=queues, pid=os.getpid(), devices=_devices)
        except Exception:
            log.exception("could not record the worker heartbeat")
        _stop.wait(settings.CELERY_WORKER_HEARTBEAT_S)


def _on_ready(sender=None, **kwargs) -> None:
    hostname = sender.hostname
    queues = _queues(sender)
    _stop.clear()
    threading.Thread(target=_beat, args=(hostname, queues), name="rcb-heartbeat", daemon=True).start()


def _on_shutdown(sender=None, **kwargs) -> None:
    from evaluation.services import worker_heartbeat_record

    _stop.set()
    hostname = getattr(sender, "hostname", None)
    if hostname:
        try:
            close_old_connections()
            worker_heartbeat_record(hostname=hostname, queues=[], pid=os.getpid(), stopped=True)
        except Exception:
            log.exception("could not record the worker shutdown")


def _children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (the pool's, for the main process)."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def _on_shutting_down(sig: Any = None, how: Any = None, **kwargs: Any) -> None:
    """A warm shutdown began (in the main process): turn it into a cold one after ``RCB_WORKER_STOP_S``."""
    if how != "Warm":
        return
    delay = settings.RCB_WORKER_STOP_S
    pid = os.getpid()

    def escalate() -> None:
        log.warning("the warm shutdown is still waiting after %s s: cancelling the running tasks", delay)
        os.kill(pid, signal.SIGQUIT)
        # A cold shutdown cancels the requests but still waits for a pool process busy in a long call (a
        # sandboxed run): end those processes too, TERM first, then KILL. Their sandboxes die with them.
        for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 2.0)):
            time.sleep(wait)
            for child in _children(pid):
                try:
                    os.kill(child, sig)
                except OSError:
                    pass
        # The pool's own shutdown can still wait for ever: a pool process killed while it wrote its last
        # message to the pool's queue leaves that queue's lock taken (billiard's queues share a lock between
        # processes), and the pool's task handler then blocks on it. The running tasks' messages are back in
        # the queue by now (acks_late); what is left is the main process waiting on a dead child's lock.
        time.sleep(STOP_GRACE_S)
        log.error(
            "the worker's pool did not stop %s s after its processes were killed: exiting", STOP_GRACE_S
        )
        logging.shutdown()
        os._exit(1)

    timer = threading.Timer(delay, escalate)
    timer.daemon = True
    timer.start()


def connect() -> None:
    celeryd_after_setup.connect(_on_after_setup, dispatch_uid="rcb-worker-gpu-gate")
    worker_ready.connect(_on_ready, dispatch_uid="rcb-worker-ready")
    worker_shutdown.connect(_on_shutdown, dispatch_uid="rcb-worker-shutdown")
    worker_shutting_down.connect(_on_shutting_down, dispatch_uid="rcb-worker-shutting-down")
