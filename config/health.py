"""Health checks of the portal's dependencies: database, broker, workers."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import connection


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
    from evaluation.selectors import worker_list_alive

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
