"""Subscriptions of the evaluation app to the catalogue's signals (``connect`` runs in
``EvaluationConfig.ready``)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model

from contributions.models import TaskVersion
from contributions.signals import revision_submitted, task_version_published, variants_wanted
from evaluation import dispatch
from evaluation.services.runs import runs_create_for_new_task_version


def queue_validation(sender: Any, *, revision_id: int, needs_gpu: bool = False, **kwargs: Any) -> None:
    """Queue the validation job of a submitted revision (the signal is sent after the commit)."""
    from contributions.services import validation_job_limits

    soft, hard = validation_job_limits()
    dispatch.revision_validate(revision_id, needs_gpu=needs_gpu, soft_time_limit=soft, time_limit=hard)


def queue_new_task_version(
    sender: Any, *, task_version_id: int, by_user_id: int | None = None, **kwargs: Any
) -> None:
    """Queue the active portal-run models on a newly published task version (sent after the commit)."""
    version = TaskVersion.objects.filter(pk=task_version_id).select_related("task").first()
    if version is None:
        return
    requester = get_user_model().objects.filter(pk=by_user_id).first() if by_user_id is not None else None
    runs_create_for_new_task_version(task_version=version, requester=requester)


def derive_imported_variants(
    sender: Any, *, task_version_ids: list[int], report: Any = None, **kwargs: Any
) -> str:
    """Derive and store the impossible variants of imported versions (``import_pset --variants``), with this
    process's runner, stopped afterwards; returns the command's summary line."""
    from evaluation.services.variants import task_versions_derive_variants
    from evaluation.workspace import shared_runner, shared_runner_close

    try:
        outcomes = task_versions_derive_variants(
            task_version_ids=task_version_ids, runner=shared_runner(), report=report
        )
    finally:
        shared_runner_close()
    snippets = sum(o.snippets for o in outcomes)
    with_variants = sum(o.with_variants for o in outcomes)
    seconds = sum(o.seconds for o in outcomes)
    return (
        f"impossible variants: {with_variants} of {snippets} snippet(s) of {len(outcomes)} task(s) have "
        f"some ({seconds:.1f} s)"
    )


def connect() -> None:
    revision_submitted.connect(queue_validation, dispatch_uid="evaluation.queue_validation")
    task_version_published.connect(queue_new_task_version, dispatch_uid="evaluation.queue_new_task_version")
    variants_wanted.connect(derive_imported_variants, dispatch_uid="evaluation.derive_imported_variants")
