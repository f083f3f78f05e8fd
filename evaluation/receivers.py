"""Subscriptions of the evaluation app to the catalogue's signals (``connect`` runs in
``EvaluationConfig.ready``)."""

from __future__ import annotations

from typing import Any

from contributions.signals import revision_submitted


def queue_validation(sender: Any, *, revision_id: int, needs_gpu: bool = False, **kwargs: Any) -> None:
    """Queue the validation job of a submitted revision (the signal is sent after the commit)."""
    from evaluation import tasks

    job = tasks.validate_revision_gpu if needs_gpu else tasks.validate_revision_cpu
    job.delay(revision_id)


def connect() -> None:
    revision_submitted.connect(queue_validation, dispatch_uid="evaluation.queue_validation")
