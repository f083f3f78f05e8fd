"""Keeps the read models fresh: evaluation's result events -> the leaderboard's aggregation.

Layering: evaluation must not import leaderboard, so the leaderboard subscribes to evaluation's events
instead of being called:

- ``post_save`` of ``TestResult`` (a verdict recorded one by one, or a re-judge that overwrites one) is
  applied as a delta, in the transaction that records it (``services.increments.leaderboard_apply_result``):
  the result is on the board as soon as it is committed;
- ``evaluation.signals.results_recorded`` (sent after bulk writes and a re-run's deletes, which send no
  ``post_save``) flips the run's debounce marker: a burst of results causes one whole-run aggregation.

``contributions.signals.bulk_write_finished`` (an import command finished) is answered synchronously
instead: the command returns with the board aggregated, whether or not a worker runs.

Cache scopes (``leaderboard.scopes``) of rows the lower layers write: a run saved (a verdict's or a
generated completion's transaction ends with the run's counts, ``evaluation``'s ``run_refresh``; a cancel,
a re-run, a status move) or deleted moves its release's and model's scopes, in the writer's transaction; a
deleted run, model or paper, a saved or deleted release and a finished import move the catalogue's
(``scopes.META``; edits of models and papers move it through their ``updated_at``).
"""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_delete, post_save

from contributions.models import Paper, Release
from contributions.signals import bulk_write_finished
from evaluation.models import EvaluationRun, LanguageModel, TestResult
from evaluation.signals import results_recorded
from leaderboard import services
from leaderboard.scopes import META, run_scopes, scopes_bump
from leaderboard.services import increments


def on_result_saved(sender: type[TestResult], instance: TestResult, created: bool, **kwargs: Any) -> None:
    if kwargs.get("raw"):  # loaddata: fixtures are aggregated explicitly
        return
    fields = kwargs.get("update_fields")
    if fields is not None and not increments.VERDICT_FIELDS & set(fields):
        return  # e.g. a re-judge that agreed: the verdict of record did not change
    increments.leaderboard_apply_result(completion_id=instance.completion_id, created=created)


def on_results_recorded(sender: Any, run_id: int, **kwargs: Any) -> None:
    services.leaderboard_request_refresh(run_id=run_id)


def on_bulk_write_finished(sender: Any, **kwargs: Any) -> str:
    refreshed = services.leaderboard_refresh_after_bulk_write()
    scopes_bump([META])
    return f"leaderboard: {len(refreshed)} runs aggregated"


def on_run_saved(sender: type[EvaluationRun], instance: EvaluationRun, **kwargs: Any) -> None:
    if kwargs.get("raw"):
        return
    scopes_bump(run_scopes(release_id=instance.release_id, model_id=instance.model_id))


def on_run_deleted(sender: type[EvaluationRun], instance: EvaluationRun, **kwargs: Any) -> None:
    scopes_bump([*run_scopes(release_id=instance.release_id, model_id=instance.model_id), META])


def on_catalogue_changed(sender: type, **kwargs: Any) -> None:
    if kwargs.get("raw"):
        return
    scopes_bump([META])


def connect() -> None:
    post_save.connect(on_result_saved, sender=TestResult, dispatch_uid="leaderboard.result_saved")
    results_recorded.connect(on_results_recorded, dispatch_uid="leaderboard.results_recorded")
    bulk_write_finished.connect(on_bulk_write_finished, dispatch_uid="leaderboard.bulk_write_finished")
    post_save.connect(on_run_saved, sender=EvaluationRun, dispatch_uid="leaderboard.run_saved")
    post_delete.connect(on_run_deleted, sender=EvaluationRun, dispatch_uid="leaderboard.run_deleted")
    for signal, model in (
        (post_delete, LanguageModel),
        (post_delete, Paper),
        (post_save, Release),
        (post_delete, Release),
    ):
        uid = f"leaderboard.catalogue.{signal is post_save}.{model.__name__}"
        signal.connect(on_catalogue_changed, sender=model, dispatch_uid=uid)
