"""Keeps the read models fresh: evaluation's result events -> a debounced aggregation of the run.

Layering: evaluation must not import leaderboard, so the leaderboard subscribes to evaluation's events
instead of being called: ``post_save`` of ``TestResult`` (each result recorded one by one) and
``evaluation.signals.results_recorded`` (sent after bulk writes such as the published import). Both only
flip the run's debounce marker; a burst of results therefore causes one aggregation.

``contributions.signals.bulk_write_finished`` (an import command finished) is answered synchronously
instead: the command returns with the board aggregated, whether or not a worker runs.
"""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_save

from contributions.signals import bulk_write_finished
from evaluation.models import Completion, TestResult
from evaluation.signals import results_recorded
from leaderboard import services


def on_result_saved(sender: type[TestResult], instance: TestResult, created: bool, **kwargs: Any) -> None:
    if kwargs.get("raw"):  # loaddata: fixtures are aggregated explicitly
        return
    run_id = Completion.objects.filter(pk=instance.completion_id).values_list("run_id", flat=True).first()
    if run_id is not None:
        services.leaderboard_request_refresh(run_id=run_id)


def on_results_recorded(sender: Any, run_id: int, **kwargs: Any) -> None:
    services.leaderboard_request_refresh(run_id=run_id)


def on_bulk_write_finished(sender: Any, **kwargs: Any) -> str:
    refreshed = services.leaderboard_refresh_after_bulk_write()
    return f"leaderboard: {len(refreshed)} runs aggregated"


def connect() -> None:
    post_save.connect(on_result_saved, sender=TestResult, dispatch_uid="leaderboard.result_saved")
    results_recorded.connect(on_results_recorded, dispatch_uid="leaderboard.results_recorded")
    bulk_write_finished.connect(on_bulk_write_finished, dispatch_uid="leaderboard.bulk_write_finished")
