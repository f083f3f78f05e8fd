"""Worker liveness: each Celery worker records a heartbeat row every few seconds while it runs.

The database, not the broker, is the source of truth for "which workers are alive", so that /healthz and the
run pages work identically with the filesystem transport, RabbitMQ or Redis.
"""

from __future__ import annotations

import logging
import os
import threading

from celery.signals import worker_ready, worker_shutdown
from django.conf import settings
from django.db import close_old_connections

log = logging.getLogger(__name__)
_stop = threading.Event()


def _queues(sender) -> list[str]:
    try:
        return sorted(q.name for q in sender.app.amqp.queues.consume_from.values())
    except AttributeError:
        return []


def _beat(hostname: str, queues: list[str]) -> None:
    from evaluation.services import worker_heartbeat_record

    while not _stop.is_set():
        try:
            close_old_connections()
            worker_heartbeat_record(hostname=hostname, queues=queues, pid=os.getpid())
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


def connect() -> None:
    worker_ready.connect(_on_ready, dispatch_uid="rcb-worker-ready")
    worker_shutdown.connect(_on_shutdown, dispatch_uid="rcb-worker-shutdown")
