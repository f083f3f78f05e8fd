"""Events the evaluation app publishes for higher layers (which may subscribe; evaluation imports none).

``results_recorded``: send after test results of a run were written by any path, bulk writes included
(``post_save`` does not fire for ``bulk_create``)::

    results_recorded.send(sender=TestResult, run_id=run.id)
"""

from __future__ import annotations

from django.dispatch import Signal

results_recorded = Signal()
