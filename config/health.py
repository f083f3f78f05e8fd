"""Health checks of the portal's dependencies (database, broker, workers) and the status page's report."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.utils import timezone

#: the cache key of the status page's report (``status_report``)
STATUS_CACHE_KEY = "status:report"


def database_status() -> dict[str, Any]:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        return {"ok": True, "vendor": connection.vendor}
    except Exception as exc:
        return {"ok": False, "vendor": connection.vendor, "error": f"{type(exc).__name__}: {exc}"}


def broker_status() -> dict[str, Any]:
    """Connect to the broker (with a short timeout) without sending anything."""
    from config.celery import app

    url = settings.CELERY_BROKER_URL
    transport = url.split("://", 1)[0]
    try:
        with app.connection_for_write(url) as conn:
            conn.ensure_connection(max_retries=1, timeout=3)
        return {"ok": True, "transport": transport}
    except Exception as exc:
        return {"ok": False, "transport": transport, "error": f"{type(exc).__name__}: {exc}"}


def workers_status() -> list[dict[str, Any]]:
    from evaluation.selectors.status import worker_list_alive

    return [
        {
            "hostname": w.hostname,
            "queues": w.queues,
            "devices": w.devices,
            "last_seen_at": w.last_seen_at.isoformat(),
        }
        for w in worker_list_alive()
    ]


def health_report() -> dict[str, Any]:
    db = database_status()
    report: dict[str, Any] = {"database": db, "broker": broker_status()}
    report["workers"] = workers_status() if db["ok"] else []
    report["ok"] = bool(db["ok"] and report["broker"]["ok"])
    return report


def queues_status(*, broker_ok: bool) -> list[dict[str, Any]]:
    """Messages waiting per Celery queue; every depth is None (unknown) when the broker is down, without a
    second wait for it."""
    from config.celery import QUEUES
    from evaluation.broker import queue_depths

    if not broker_ok:
        return [{"queue": q, "depth": None, "error": "the broker did not answer"} for q in QUEUES]
    return [asdict(depth) for depth in queue_depths(queues=QUEUES)]


def work_status() -> dict[str, Any]:
    """Validations in progress, the oldest waiting item and the results of the last hour per queue."""
    from evaluation.selectors.status import (
        STATUS_THROUGHPUT_WINDOW_S,
        completion_oldest_waiting,
        result_throughput,
        validation_in_progress_summary,
    )

    oldest = completion_oldest_waiting()
    throughput = result_throughput()
    return {
        "validations": asdict(validation_in_progress_summary()),
        "oldest_waiting": None if oldest is None else {**asdict(oldest), "stage_label": oldest.stage_label},
        "throughput": throughput,
        "throughput_total": sum(throughput.values()),
        "throughput_window_s": STATUS_THROUGHPUT_WINDOW_S,
    }


def status_report() -> dict[str, Any]:
    """``health_report`` plus queue depths and ``work_status``, reused for ``RCB_STATUS_CACHE_S`` seconds:
    a status page polled by many clients asks the broker and the database once per period, not once per
    request. ``generated_at`` says how old the answer is."""
    ttl = settings.RCB_STATUS_CACHE_S
    if ttl:
        cached = cache.get(STATUS_CACHE_KEY)
        if cached is not None:
            return cached
    report = health_report()
    # /healthz gives a worker's last heartbeat as ISO text; the page says how long ago, from the datetime.
    for worker in report["workers"]:
        worker["last_seen"] = datetime.fromisoformat(worker["last_seen_at"])
    report["queues"] = queues_status(broker_ok=report["broker"]["ok"])
    report["work"] = work_status() if report["database"]["ok"] else None
    for row in report["queues"]:
        # Only the test queues record results; ``site`` does database work (None: not applicable).
        row["results_last_hour"] = report["work"]["throughput"].get(row["queue"]) if report["work"] else None
    report["generated_at"] = timezone.now()
    report["cache_s"] = ttl
    if ttl:
        cache.set(STATUS_CACHE_KEY, report, ttl)
    return report
