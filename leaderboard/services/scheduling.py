"""Debounced requests for aggregation: a burst of results asks for one task, sent through ``leaderboard.dispatch``.

- ``leaderboard_request_refresh(*, run_id)``: the debounced whole-run refresh of a bulk write
  (``results_recorded``), task ``leaderboard_refresh_run``.
- ``leaderboard_request_release_refresh(*, release_id)``: the debounced per-release step, task
  ``leaderboard_refresh_release``.
"""

from __future__ import annotations

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from leaderboard import dispatch
from leaderboard.models import (
    ReleaseAggregation,
    RunAggregation,
)
from leaderboard.scopes import release_scope, scopes_bump

#: seconds between the first result of a burst and the aggregation that covers the whole burst
DEBOUNCE_S_DEFAULT = 5


def debounce_seconds() -> int:
    """``RCB_LEADERBOARD_DEBOUNCE_S`` (settings), default 5 s."""
    return int(getattr(settings, "RCB_LEADERBOARD_DEBOUNCE_S", DEBOUNCE_S_DEFAULT))


def leaderboard_request_refresh(*, run_id: int) -> bool:
    """Ask for an aggregation of ``run_id`` in ``debounce_seconds()``; True when this call scheduled it.

    Debounce: the marker row's ``scheduled`` flag flips from false to true in one conditional update, so a
    burst of results schedules exactly one task; the task clears the flag *before* aggregating, so a result
    that lands during the aggregation schedules the next one (never lost, at worst one extra refresh).
    The task is sent after the surrounding transaction commits (its results are then visible).
    """
    RunAggregation.objects.get_or_create(run_id=run_id)
    flipped = RunAggregation.objects.filter(run_id=run_id, scheduled=False).update(
        scheduled=True, requested_at=timezone.now()
    )
    if not flipped:
        return False
    countdown = debounce_seconds()
    dispatch.run_refresh_send(run_id, countdown=countdown)
    return True


def leaderboard_request_release_refresh(*, release_id: int | None) -> bool:
    """Ask for the per-release step of ``release_id`` (None: the runs of no release) in
    ``debounce_seconds()``; True when this call scheduled it.

    Debounce as ``leaderboard_request_refresh``: the release's marker flips from not scheduled to scheduled
    in one conditional update, and the step clears it before it starts, so a burst of verdicts schedules
    one step and a verdict recorded during a step schedules the next. Sent after the surrounding
    transaction commits.
    """
    now = timezone.now()
    marker = ReleaseAggregation.objects.filter(release_id=release_id)
    scheduled = marker.order_by("pk").values_list("scheduled", flat=True).first()
    if scheduled:  # the usual case during a burst: one read
        return False
    if scheduled is None:
        try:
            with transaction.atomic():
                ReleaseAggregation.objects.create(release_id=release_id, scheduled=True, requested_at=now)
        except IntegrityError:  # another request created it first, and scheduled the step
            return False
    elif not marker.filter(scheduled=False).update(scheduled=True, requested_at=now):
        return False
    scopes_bump([release_scope(release_id)])  # the board says a step is waiting
    countdown = debounce_seconds()
    dispatch.release_refresh_send(release_id, countdown=countdown)
    return True
