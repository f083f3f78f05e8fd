"""Events the catalogue app publishes for higher layers (which may subscribe; contributions imports none).

``bulk_write_finished``: send once a bulk write (an import command: a pset release, the published results)
has committed. Bulk writes bypass the per-row signals and the debounced refresh that follows them, so a
subscriber brings its read models up to date *synchronously*: when ``send`` returns, the pages show the new
data without a worker or beat running. A subscriber may return a one-line summary for the command to print::

    for _receiver, summary in bulk_write_finished.send(sender=Command, source="import_pset"):
        ...
"""

from __future__ import annotations

from django.dispatch import Signal

bulk_write_finished = Signal()
