"""Reads of the evaluation app."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from evaluation.models import WorkerHeartbeat


def worker_list_alive(*, within_s: int | None = None) -> QuerySet[WorkerHeartbeat]:
    """Workers whose last heartbeat is recent (three heartbeat periods by default) and not stopped."""
    window = within_s if within_s is not None else 3 * settings.CELERY_WORKER_HEARTBEAT_S
    cutoff = timezone.now() - timedelta(seconds=window)
    return WorkerHeartbeat.objects.filter(status=WorkerHeartbeat.Status.ONLINE, last_seen_at__gte=cutoff)
