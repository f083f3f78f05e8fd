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

# ``revision_submitted``: sent after the transaction that moved a proposal to ``submitted`` has committed
# (``proposal_submit``, a retry after a validation that could not run, the watchdog's resend), with
# ``revision_id`` and ``needs_gpu``. The evaluation app answers by queueing the validation job; contributions
# cannot queue it itself, because the job runs the battery with evaluation's runner.
revision_submitted = Signal()

# ``task_version_published``: sent after the transaction that published an approved proposal has committed
# (``contributions.services.publishing.proposal_publish``), with ``task_version_id`` and ``by_user_id`` (the
# maintainer whose approval published it, or None). The evaluation app answers by queueing runs of the
# active portal-run models on the new version; contributions cannot create runs itself.
task_version_published = Signal()

# ``variants_wanted``: sent by ``manage.py import_pset --variants`` once its import has committed, with
# ``task_version_ids`` (in the release's order) and ``report`` (a callable taking one line to print). The
# evaluation app answers by deriving each version's impossible variants with its runner, in the version's
# environment, and storing them with it (``contributions.services.task_version_store_variants``), reporting a
# line per task as it goes; it returns a one-line summary. Contributions cannot derive them itself: that
# takes evaluation's runner.
variants_wanted = Signal()
