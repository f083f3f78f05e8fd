"""Reads of the evaluation app."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from evaluation.models import EvaluationRun, TestResult, WorkerHeartbeat
from researchcodebench.scoring import SnippetResult


def worker_list_alive(*, within_s: int | None = None) -> QuerySet[WorkerHeartbeat]:
    """Workers whose last heartbeat is recent (three heartbeat periods by default) and not stopped."""
    window = within_s if within_s is not None else 3 * settings.CELERY_WORKER_HEARTBEAT_S
    cutoff = timezone.now() - timedelta(seconds=window)
    return WorkerHeartbeat.objects.filter(status=WorkerHeartbeat.Status.ONLINE, last_seen_at__gte=cutoff)


def run_snippet_results(*, run: EvaluationRun) -> list[SnippetResult]:
    """Every tested completion of ``run`` as the core library's ``SnippetResult`` (task = task key, lines =
    the snippet's N), ordered by task, snippet order and completion index; feed it to
    ``researchcodebench.scoring``.

    Results of the infrastructure tier are left out: they say nothing about the model and never count
    against it (SPEC section 6); completions without a test result are not results yet.
    """
    rows = (
        TestResult.objects.filter(completion__run=run)
        .exclude(tier=TestResult.Tier.INFRASTRUCTURE)
        .order_by(
            "completion__snippet__task_version__task__key",
            "completion__snippet__ordinal",
            "completion__completion_idx",
        )
        .values_list(
            "completion__snippet__task_version__task__key",
            "completion__snippet__name",
            "completion__snippet__lines",
            "completion__completion_idx",
            "passed",
        )
    )
    return [
        SnippetResult(task=task, snippet=name, lines=lines, completion_idx=idx, passed=passed)
        for task, name, lines, idx, passed in rows
    ]
