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


@shared_task(name="leaderboard.tasks.refresh_release", acks_late=True)
def refresh_release(release_id: int | None) -> dict[str, int]:
    """The per-release background step (``leaderboard_refresh_release``: bootstrap intervals and
    contamination selections), debounced by ``leaderboard_request_release_refresh``. Idempotent."""
    done = services.leaderboard_refresh_release(release_id=release_id)
    return {"reselected": done.reselected, "recomputed": done.recomputed}


@shared_task(name="leaderboard.tasks.refresh_stale")
def refresh_stale() -> list[int]:
    """Safety net (beat): re-aggregate runs whose result count moved since their last aggregation (bulk
    inserts), and run the step of releases left with stale intervals. Cheap when nothing changed."""
    return services.leaderboard_sweep()
