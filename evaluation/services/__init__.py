"""Writes of the evaluation app, one module per concern. Keyword-only, typed, transactional.

- ``workers``: worker heartbeats and broker probes.
- ``published``: the paper's published results: read (original file or our fixture), import, verify, re-encode
  (import the module directly: ``from evaluation.services.published import published_import``).
"""

from evaluation.services.workers import broker_probe_complete, broker_probe_create, worker_heartbeat_record

__all__ = ["broker_probe_complete", "broker_probe_create", "worker_heartbeat_record"]
