"""Celery tasks of the leaderboard (queue ``site``): thin wrappers, each named after the service it calls.

Sent only by ``leaderboard.dispatch`` (and the beat, ``CELERY_BEAT_SCHEDULE``).
"""

from __future__ import annotations

from celery import shared_task

from evaluation.models import EvaluationRun
from leaderboard.models import RunAggregation
from leaderboard.services import rebuild, release_step, sweep


@shared_task(
    name="leaderboard.tasks.leaderboard_refresh_run", acks_late=True, max_retries=3, default_retry_delay=10
)
def leaderboard_refresh_run(run_id: int) -> bool:
    """Aggregate one run (the debounced task of ``leaderboard_request_refresh``); False if it is gone.

    The ``scheduled`` marker is cleared *before* aggregating, so results recorded meanwhile schedule a
    follow-up refresh instead of being missed. Aggregation is idempotent, so a redelivery is harmless.
    """
    RunAggregation.objects.filter(run_id=run_id).update(scheduled=False)
    run = EvaluationRun.objects.filter(pk=run_id).first()
    if run is None:
        return False
    rebuild.leaderboard_refresh_run(run=run)
    return True


@shared_task(name="leaderboard.tasks.leaderboard_refresh_release", acks_late=True)
def leaderboard_refresh_release(release_id: int | None) -> dict[str, int]:
    """The per-release background step (bootstrap intervals and contamination selections), debounced by
    ``leaderboard_request_release_refresh``. Idempotent."""
    done = release_step.leaderboard_refresh_release(release_id=release_id)
    return {"reselected": done.reselected, "recomputed": done.recomputed}


@shared_task(name="leaderboard.tasks.leaderboard_sweep")
def leaderboard_sweep() -> list[int]:
    """Safety net (beat): re-aggregate runs whose result count moved since their last aggregation (bulk
    inserts), and run the step of releases left with stale intervals. Cheap when nothing changed."""
    return sweep.leaderboard_sweep()
