"""Evaluation models. Workers report liveness here, so that /healthz works with any broker."""

from __future__ import annotations

from django.db import models


class WorkerHeartbeat(models.Model):
    """The last sign of life of one Celery worker process (one row per worker hostname)."""

    class Status(models.TextChoices):
        ONLINE = "online", "Online"
        STOPPED = "stopped", "Stopped"

    hostname = models.CharField(max_length=255, unique=True)
    queues = models.JSONField(default=list)
    pid = models.PositiveIntegerField(null=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ONLINE)
    started_at = models.DateTimeField()
    last_seen_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["hostname"]

    def __str__(self) -> str:
        return f"{self.hostname} ({self.status})"


class BrokerProbe(models.Model):
    """A round trip through a queue: created by the sender, completed by whichever worker consumed it."""

    queue = models.CharField(max_length=32)
    token = models.CharField(max_length=64, unique=True)
    sent_at = models.DateTimeField(auto_now_add=True)
    received_at = models.DateTimeField(null=True)
    worker_hostname = models.CharField(max_length=255, blank=True)

    class Meta:
        ordering = ["-sent_at"]

    def __str__(self) -> str:
        return f"probe {self.token[:8]} via {self.queue}"
