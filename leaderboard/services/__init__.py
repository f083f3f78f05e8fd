"""Writes of the leaderboard: the read models, rebuilt, updated by deltas and recomputed per release.

``rebuild`` (whole runs, the shared rows, the repair path), ``increments`` (a verdict's delta),
``release_step`` (the per-release background step), ``scheduling`` (the debounced requests, sent through
``leaderboard.dispatch``), ``sweep`` (the beat's safety net), ``locks`` and ``markers`` (what they share).
The entry points are handed on here.
"""

from leaderboard.services.rebuild import (
    leaderboard_rebuild,
    leaderboard_refresh_after_bulk_write,
    leaderboard_refresh_global,
    leaderboard_refresh_run,
    leaderboard_refresh_runs,
    leaderboard_refresh_stale,
    snippet_stats_refresh,
)
from leaderboard.services.release_step import leaderboard_refresh_release
from leaderboard.services.scheduling import leaderboard_request_refresh, leaderboard_request_release_refresh
from leaderboard.services.sweep import leaderboard_sweep

__all__ = [
    "leaderboard_rebuild",
    "leaderboard_refresh_after_bulk_write",
    "leaderboard_refresh_global",
    "leaderboard_refresh_release",
    "leaderboard_refresh_run",
    "leaderboard_refresh_runs",
    "leaderboard_refresh_stale",
    "leaderboard_request_refresh",
    "leaderboard_request_release_refresh",
    "leaderboard_sweep",
    "snippet_stats_refresh",
]
