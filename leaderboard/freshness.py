"""When the per-release background step last ran, for the board page (docs/scoring.md#how-aggregation-runs).

A verdict moves the scores at once (a delta); the bootstrap intervals, the rank ranges and ties built on
them, and the contamination selections are recomputed per release in the background
(``services.leaderboard_refresh_release``). The board says when, and whether newer results are waiting.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Exists, F, OuterRef, Q, Value
from django.db.models.functions import Coalesce

from leaderboard.models import ReleaseAggregation, RunAggregation


@dataclass(frozen=True)
class Freshness:
    """``computed_at``: the step's last run, the oldest among the releases shown; ``pending``: some run of
    them has verdicts its intervals do not reflect yet."""

    computed_at: datetime
    pending: bool


def freshness_get(*, releases: Iterable[str | None]) -> Freshness | None:
    """The freshness of the board rows of these releases (by name; None: the runs of no release); None
    when the step has not run for any of them. One query."""
    names = set(releases)
    wanted = Q(release__name__in=[n for n in names if n is not None])
    if None in names:
        wanted |= Q(release__isnull=True)
    # 0 stands for "no release" on both sides (NULL never equals NULL).
    behind = RunAggregation.objects.annotate(release_key=Coalesce("run__release_id", Value(0))).filter(
        release_key=OuterRef("release_key"), intervals_changes__lt=F("changes")
    )
    rows = list(
        ReleaseAggregation.objects.filter(wanted, computed_at__isnull=False)
        .annotate(release_key=Coalesce("release_id", Value(0)))
        .annotate(behind=Exists(behind))
        .values_list("computed_at", "behind", "scheduled")
    )
    if not rows:
        return None
    return Freshness(
        computed_at=min(at for at, _, _ in rows),
        pending=any(behind or scheduled for _, behind, scheduled in rows),
    )
