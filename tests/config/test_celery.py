"""Celery: routing by task name, and a real worker round trip through the configured broker."""

from __future__ import annotations

import pytest

from config.celery import QUEUES, TASK_ROUTES, app
from evaluation import services
from evaluation.models import BrokerProbe
from evaluation.tasks import PROBE_TASKS
from tests.conftest import wait_for


def routed_queue(task_name: str) -> str:
    route = app.amqp.router.route({}, task_name, args=(), kwargs={})
    return route["queue"].name


@pytest.mark.parametrize(
    ("task_name", "queue"),
    [
        ("evaluation.tasks.completion_test_cpu", "eval-cpu"),
        ("evaluation.tasks.completion_test_gpu", "eval-gpu"),
        ("evaluation.tasks.broker_probe_complete_eval_cpu", "eval-cpu"),
        ("evaluation.tasks.broker_probe_complete_eval_gpu", "eval-gpu"),
        ("evaluation.tasks.revision_validate_cpu", "eval-cpu"),
        ("evaluation.tasks.revision_validate_gpu", "eval-gpu"),
        ("evaluation.tasks.broker_probe_complete_site", "site"),
        ("anything.else.entirely", "site"),
    ],
)
def test_each_task_name_is_routed_to_its_queue(task_name, queue):
    assert routed_queue(task_name) == queue


def test_every_route_targets_a_declared_queue():
    declared = {q.name for q in app.conf.task_queues}
    assert declared == set(QUEUES)
    assert set(TASK_ROUTES.values()) <= declared


def test_probe_tasks_are_registered_under_their_routed_names():
    for queue, task in PROBE_TASKS.items():
        assert task.name in app.tasks
        assert routed_queue(task.name) == queue


def test_results_of_record_do_not_use_a_celery_result_backend():
    assert app.conf.task_ignore_result is True
    assert app.conf.task_acks_late is True and app.conf.task_reject_on_worker_lost is True


@pytest.mark.slow
def test_a_real_worker_consumes_each_queue_and_writes_to_the_database(start_worker):
    worker = start_worker("site,eval-cpu,eval-gpu")
    probes = {}
    for queue, task in PROBE_TASKS.items():
        probe = services.broker_probe_create(queue=queue)
        task.delay(probe.token)
        probes[queue] = probe.pk

    def all_received() -> bool:
        return BrokerProbe.objects.filter(pk__in=probes.values(), received_at__isnull=False).count() == 3

    wait_for(all_received, timeout=60, what=f"three probes to be consumed; worker log:\n{worker.log()}")
    for probe in BrokerProbe.objects.filter(pk__in=probes.values()):
        assert probe.worker_hostname


@pytest.mark.slow
def test_a_worker_only_consumes_the_queues_it_was_given(start_worker):
    start_worker("eval-cpu")
    cpu = services.broker_probe_create(queue="eval-cpu")
    site = services.broker_probe_create(queue="site")
    PROBE_TASKS["site"].delay(site.token)
    PROBE_TASKS["eval-cpu"].delay(cpu.token)
    wait_for(
        lambda: BrokerProbe.objects.get(pk=cpu.pk).received_at is not None, timeout=60, what="eval-cpu probe"
    )
    assert BrokerProbe.objects.get(pk=site.pk).received_at is None


def test_every_periodic_task_is_a_registered_task():
    import evaluation.tasks  # noqa: F401  (autodiscovery is lazy outside a worker)
    import leaderboard.tasks  # noqa: F401

    names = {entry["task"] for entry in app.conf.beat_schedule.values()}
    assert names == {
        "evaluation.tasks.leases_reap",
        "evaluation.tasks.upload_temp_sweep",
        "evaluation.tasks.validations_watchdog",
        "leaderboard.tasks.leaderboard_sweep",
    }
    assert names <= set(app.tasks)
