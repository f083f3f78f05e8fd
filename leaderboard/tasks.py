"""Celery tasks of the leaderboard (queue ``site``): thin wrappers around ``leaderboard.services``."""

from __future__ import annotations

from celery import shared_task

from evaluation.models import EvaluationRun
from leaderboard import services
from leaderboard.models import RunAggregation


@shared_task(name="leaderboard.tasks.refresh_run", acks_late=True, max_retries=3, default_retry_delay=10)
def refresh_run(run_id: int) -> bool:
    """Aggregate one run (the debounced task of ``leaderboard_request_refresh``); False if it is gone.

    The ``scheduled`` marker is cleared *before* aggregating, so results recorded meanwhile schedule a
    follow-up refresh instead of being missed. Aggregation is idempotent, so a redelivery is harmless.
    """
    RunAggregation.objects.filter(run_id=run_id).update(scheduled=False)
    run = EvaluationRun.objects.filter(pk=run_id).first()
    if run is None:
        return False
    services.leaderboard_refresh_run(run=run)
    return True


@shared_task(name="leaderboard.tasks.refresh_stale")
def refresh_stale() -> list[int]:
    """Safety net for results written without a signal (bulk inserts): re-aggregate runs whose result
    count moved since their last aggregation. Cheap when nothing changed (one grouped query)."""
    return services.leaderboard_refresh_stale()
