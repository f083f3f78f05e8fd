"""Writes of the evaluation app, one module per concern. Keyword-only, typed, transactional.

- ``workers``: worker heartbeats and broker probes.
- ``runs``: runs, leases and the reaper; ``run_state``: a run's row lock and counts, taken by every writer.
- ``verdicts``: judging a completion and the one service that records a verdict.
- ``generation``: completions generated through a model's API; the connection test.
- ``published``: the paper's published results imported and verified (import the module directly: ``from
  evaluation.services.published import published_import``); reading and re-encoding them is the plain-Python
  ``evaluation.published_source``.
"""

from evaluation.services.generation import completion_generate, model_test_connection
from evaluation.services.runs import (
    LeaseResult,
    Prediction,
    ReapReport,
    RunError,
    completion_record_generation,
    lease_acquire,
    lease_renew,
    leases_reap,
    run_cancel,
    run_create,
    run_rerun,
)
from evaluation.services.verdicts import completion_test, test_result_record
from evaluation.services.workers import broker_probe_complete, broker_probe_create, worker_heartbeat_record

__all__ = [
    "LeaseResult",
    "Prediction",
    "ReapReport",
    "RunError",
    "broker_probe_complete",
    "broker_probe_create",
    "completion_generate",
    "completion_record_generation",
    "completion_test",
    "lease_acquire",
    "lease_renew",
    "leases_reap",
    "model_test_connection",
    "run_cancel",
    "run_create",
    "run_rerun",
    "test_result_record",
    "worker_heartbeat_record",
]
