"""Worker liveness and broker round-trip probes."""

from __future__ import annotations

import secrets

from django.db import transaction
from django.utils import timezone

from evaluation.models import BrokerProbe, WorkerHeartbeat


def worker_heartbeat_record(
    *, hostname: str, queues: list[str], pid: int | None, stopped: bool = False
) -> None:
    """Upsert the heartbeat row of one worker."""
    now = timezone.now()
    status = WorkerHeartbeat.Status.STOPPED if stopped else WorkerHeartbeat.Status.ONLINE
    updated = WorkerHeartbeat.objects.filter(hostname=hostname).update(
        queues=queues, pid=pid, status=status, last_seen_at=now
    )
    if not updated:
        WorkerHeartbeat.objects.get_or_create(
            hostname=hostname,
            defaults={"queues": queues, "pid": pid, "status": status, "started_at": now, "last_seen_at": now},
        )


@transaction.atomic
def broker_probe_create(*, queue: str) -> BrokerProbe:
    return BrokerProbe.objects.create(queue=queue, token=secrets.token_hex(16))


def broker_probe_complete(*, token: str, worker_hostname: str) -> bool:
    """Mark a probe as received; returns False for an unknown token (a stale message is harmless)."""
    return bool(
        BrokerProbe.objects.filter(token=token, received_at__isnull=True).update(
            received_at=timezone.now(), worker_hostname=worker_hostname
        )
    )
