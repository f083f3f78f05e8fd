"""The Celery queues and which evaluation task goes to which (config/celery.py builds the app from these).

- ``site``: database work (generation, aggregation, notifications, probes);
- ``eval-cpu``: sandboxed test runs;
- ``eval-gpu``: sandboxed test runs of tasks that need a GPU (a GPU host runs ``-Q eval-gpu``).

Plain constants: imported by the Celery app before Django is set up.
"""

from __future__ import annotations

QUEUE_SITE = "site"
QUEUE_EVAL_CPU = "eval-cpu"
QUEUE_EVAL_GPU = "eval-gpu"
QUEUES = (QUEUE_SITE, QUEUE_EVAL_CPU, QUEUE_EVAL_GPU)

#: Task name -> queue. A name not listed here goes to ``site``.
TASK_ROUTES: dict[str, str] = {
    "evaluation.tasks.completion_test_cpu": QUEUE_EVAL_CPU,
    "evaluation.tasks.completion_test_gpu": QUEUE_EVAL_GPU,
    "evaluation.tasks.completion_rejudge_cpu": QUEUE_EVAL_CPU,
    "evaluation.tasks.completion_rejudge_gpu": QUEUE_EVAL_GPU,
    "evaluation.tasks.revision_validate_cpu": QUEUE_EVAL_CPU,
    "evaluation.tasks.revision_validate_gpu": QUEUE_EVAL_GPU,
    "evaluation.tasks.broker_probe_complete_eval_cpu": QUEUE_EVAL_CPU,
    "evaluation.tasks.broker_probe_complete_eval_gpu": QUEUE_EVAL_GPU,
}
