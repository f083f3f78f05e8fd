"""Writes of the evaluation app, one module per concern. Keyword-only, typed, transactional.

- ``workers``: worker heartbeats and broker probes.
"""

from evaluation.services.workers import broker_probe_complete, broker_probe_create, worker_heartbeat_record

__all__ = ["broker_probe_complete", "broker_probe_create", "worker_heartbeat_record"]
