"""The Celery application: three queues (``evaluation/queues.py``), routing by task name, results of record
in the database."""

from __future__ import annotations

import os

from celery import Celery
from kombu import Exchange, Queue

# The queues and routes belong to the evaluation app (plain constants); re-exported for the app's users.
from evaluation.queues import QUEUE_EVAL_CPU, QUEUE_EVAL_GPU, QUEUE_SITE, QUEUES, TASK_ROUTES

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

__all__ = ["QUEUES", "QUEUE_EVAL_CPU", "QUEUE_EVAL_GPU", "QUEUE_SITE", "TASK_ROUTES", "app", "route_task"]


def route_task(name: str, args, kwargs, options, task=None, **kw) -> dict[str, str]:
    """Celery router: the queue for a task name (``site`` unless listed in ``TASK_ROUTES``)."""
    return {"queue": TASK_ROUTES.get(name, QUEUE_SITE)}


app = Celery("researchcodebench_hub")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.update(
    task_queues=[Queue(q, Exchange(q, type="direct"), routing_key=q) for q in QUEUES],
    task_default_queue=QUEUE_SITE,
    task_routes=(route_task,),
    # Results of record live in the database; Celery's own result backend is not used.
    task_ignore_result=True,
    result_backend=None,
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    task_serializer="json",
    accept_content=["json"],
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
)
# The beat schedule is CELERY_BEAT_SCHEDULE in config/settings.py (its intervals come from the environment).
app.autodiscover_tasks()
