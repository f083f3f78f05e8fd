"""Celery tasks of the evaluation app: thin wrappers that load by id and call one service."""

from __future__ import annotations

import socket

from celery import shared_task

from evaluation import services


def _probe(token: str) -> bool:
    return services.broker_probe_complete(token=token, worker_hostname=socket.gethostname())


@shared_task(name="evaluation.tasks.probe_site")
def probe_site(token: str) -> bool:
    """Round-trip probe through the ``site`` queue."""
    return _probe(token)


@shared_task(name="evaluation.tasks.probe_eval_cpu")
def probe_eval_cpu(token: str) -> bool:
    """Round-trip probe through the ``eval-cpu`` queue."""
    return _probe(token)


@shared_task(name="evaluation.tasks.probe_eval_gpu")
def probe_eval_gpu(token: str) -> bool:
    """Round-trip probe through the ``eval-gpu`` queue."""
    return _probe(token)


PROBE_TASKS = {"site": probe_site, "eval-cpu": probe_eval_cpu, "eval-gpu": probe_eval_gpu}
