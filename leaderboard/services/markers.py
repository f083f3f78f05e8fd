"""The per-release marker (``ReleaseAggregation``) and the runs whose intervals are behind their verdicts
(``RunAggregation``): what the rebuilds and the per-release step both read and stamp."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import F

from leaderboard.models import (
    ReleaseAggregation,
    RunAggregation,
)
from leaderboard.scopes import release_scope, scopes_bump


def stale_runs(release_id: int | None):
    """``RunAggregation`` rows of the release's runs whose intervals are behind their verdicts."""
    return RunAggregation.objects.filter(run__release_id=release_id, intervals_changes__lt=F("changes"))


@transaction.atomic
def release_stamp(release_id: int | None, **fields: object) -> None:
    """Set ``fields`` of the release's marker (created if missing); moves the release's cache scope (the
    board shows when the step ran and whether one is waiting)."""
    scopes_bump([release_scope(release_id)])
    if ReleaseAggregation.objects.filter(release_id=release_id).update(**fields):
        return
    try:
        with transaction.atomic():
            ReleaseAggregation.objects.create(release_id=release_id, **fields)
    except IntegrityError:  # created meanwhile by a request
        ReleaseAggregation.objects.filter(release_id=release_id).update(**fields)
