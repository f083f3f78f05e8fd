"""Worker liveness and broker round-trip probes."""

from __future__ import annotations

import secrets

from django.db import transaction
from django.utils import timezone

from evaluation.models import BrokerProbe, WorkerHeartbeat


def worker_heartbeat_record(
    *,
    hostname: str,
    queues: list[str],
    pid: int | None,
    stopped: bool = False,
    devices: list[dict[str, str]] | None = None,
) -> None:
    """Upsert the heartbeat row of one worker; ``devices`` (its host's GPUs) is kept when None."""
    now = timezone.now()
    status = WorkerHeartbeat.Status.STOPPED if stopped else WorkerHeartbeat.Status.ONLINE
    fields = {"queues": queues, "pid": pid, "status": status, "last_seen_at": now}
    if devices is not None:
        fields["devices"] = devices
    updated = WorkerHeartbeat.objects.filter(hostname=hostname).update(**fields)
    if not updated:
        WorkerHeartbeat.objects.get_or_create(hostname=hostname, defaults={**fields, "started_at": now})


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
