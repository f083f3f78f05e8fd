"""Events the evaluation app publishes for higher layers (which may subscribe; evaluation imports none).

``results_recorded``: send after test results of a run were written or deleted by any path, bulk writes
included (``post_save`` does not fire for ``bulk_create``, nor for a delete: a re-run's)::

    results_recorded.send(sender=TestResult, run_id=run.id)

Subscribers answer it with a debounced refresh (a worker aggregates). A command that writes in bulk and
must return with the board aggregated sends ``contributions.signals.bulk_write_finished`` instead.
"""

from __future__ import annotations

from django.dispatch import Signal

results_recorded = Signal()
