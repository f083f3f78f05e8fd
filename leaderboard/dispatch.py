"""The one module that sends the leaderboard's Celery tasks (``leaderboard.tasks``, queue ``site``).

Its callers are the leaderboard's services (``services.scheduling``, the debounced requests); each send
waits for the surrounding transaction to commit, so the task sees what asked for it.
"""

from __future__ import annotations

from django.db import transaction

from leaderboard import tasks


def run_refresh_send(run_id: int, *, countdown: int) -> None:
    """Send ``leaderboard_refresh_run`` of ``run_id`` in ``countdown`` seconds, after commit."""
    transaction.on_commit(
        lambda: tasks.leaderboard_refresh_run.apply_async(args=[run_id], countdown=countdown)
    )


def release_refresh_send(release_id: int | None, *, countdown: int) -> None:
    """Send ``leaderboard_refresh_release`` of ``release_id`` in ``countdown`` seconds, after commit."""
    transaction.on_commit(
        lambda: tasks.leaderboard_refresh_release.apply_async(args=[release_id], countdown=countdown)
    )
