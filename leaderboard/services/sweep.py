"""The beat's safety net (task ``leaderboard_sweep``): re-aggregate runs whose result count moved since
their last aggregation (bulk inserts send no signal) and run the step of releases left with stale
intervals."""

from __future__ import annotations

from django.db.models import F

from leaderboard.models import (
    RunAggregation,
)
from leaderboard.services.rebuild import leaderboard_refresh_stale
from leaderboard.services.release_step import leaderboard_refresh_release


def leaderboard_sweep() -> list[int]:
    """The beat's safety net (task ``leaderboard_sweep``): ``leaderboard_refresh_stale``, then the step of
    every release with a run whose intervals are behind its verdicts (a step request lost with a worker or
    the broker). Returns the ids of the runs re-aggregated."""
    refreshed = leaderboard_refresh_stale()
    behind = set(
        RunAggregation.objects.filter(intervals_changes__lt=F("changes")).values_list(
            "run__release_id", flat=True
        )
    )
    for release_id in sorted(behind, key=lambda r: (r is None, r or 0)):
        leaderboard_refresh_release(release_id=release_id)
    return refreshed
