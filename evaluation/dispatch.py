"""The one place the evaluation app sends Celery messages: services and receivers call these functions, and
no other module of the app imports ``evaluation.tasks``.

Each function is named after the service its task calls (``evaluation/tasks.py``) and picks the queue's task
(``site``, ``eval-cpu`` or ``eval-gpu``: ``evaluation/queues.py``). Callers decide *when*: services send once
their transaction commits (``transaction.on_commit``), so a message never names a rolled-back row.

``tasks`` is imported inside each function: the tasks import the services, which import this module.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from kombu.exceptions import OperationalError as KombuOperationalError

log = logging.getLogger(__name__)


def _publish(messages: Iterable[tuple[Callable[[int], object], int]]) -> None:
    """Publish ``(send, completion_id)`` messages; stop at the first the broker refuses. The rows are already
    committed as waiting, so nothing is lost: the reaper sends what waits longer than
    ``RCB_PENDING_RESEND_S`` again. A broker outage never fails the request or task that queued the work."""
    messages = list(messages)
    for sent, (send, completion_id) in enumerate(messages):
        try:
            send(completion_id)
        except (KombuOperationalError, OSError):
            log.warning(
                "the broker refused a message (completion %s); %d of %d not sent: the reaper sends them again "
                "after RCB_PENDING_RESEND_S",
                completion_id,
                len(messages) - sent,
                len(messages),
                exc_info=True,
            )
            return


def completion_generate(completion_ids: Iterable[int]) -> None:
    """Queue the generation of these completions (queue ``site``)."""
    from evaluation import tasks

    _publish((tasks.completion_generate.delay, completion_id) for completion_id in completion_ids)


def completion_test(items: Iterable[tuple[int, bool]]) -> None:
    """Queue the sandboxed test of these ``(completion id, needs GPU)`` items (``eval-cpu`` / ``eval-gpu``)."""
    from evaluation import tasks

    _publish(
        ((tasks.completion_test_gpu if needs_gpu else tasks.completion_test_cpu).delay, completion_id)
        for completion_id, needs_gpu in items
    )


def completion_rejudge(items: Iterable[tuple[int, bool]]) -> None:
    """Queue a maintainer's cold re-judge of these ``(completion id, needs GPU)`` items."""
    from evaluation import tasks

    for completion_id, needs_gpu in items:
        (tasks.completion_rejudge_gpu if needs_gpu else tasks.completion_rejudge_cpu).delay(completion_id)


def predictions_upload_check(upload_id: int) -> None:
    """Queue the check of a received upload (queue ``site``); a broker that refuses the message leaves the
    upload waiting for the reaper (``uploads_resend_waiting``)."""
    from evaluation import tasks

    try:
        tasks.predictions_upload_check.delay(upload_id)
    except (KombuOperationalError, OSError):
        log.warning(
            "the broker refused the message of upload %s: the reaper sends it again after RCB_UPLOAD_RESEND_S",
            upload_id,
            exc_info=True,
        )


def revision_validate(revision_id: int, *, needs_gpu: bool, soft_time_limit: int, time_limit: int) -> None:
    """Queue the validation battery of a proposal revision (``eval-cpu`` / ``eval-gpu``) with its Celery time
    limits (``contributions.services.validation_job_limits``)."""
    from evaluation import tasks

    task = tasks.revision_validate_gpu if needs_gpu else tasks.revision_validate_cpu
    task.apply_async((revision_id,), soft_time_limit=soft_time_limit, time_limit=time_limit)


def job_stop(job_id: str) -> None:
    """Stop a running job: Celery's revoke with ``terminate``, which kills the worker process running it."""
    from celery import current_app

    current_app.control.revoke(job_id, terminate=True, signal="SIGKILL")
