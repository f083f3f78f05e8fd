"""The leaderboard's own locks: what serialises its writes to the read models.

Two locks, both PostgreSQL advisory locks held until the transaction ends (SQLite's single write lock does
the same work there, so both are no-ops on it):

- the aggregation lock (``aggregation_lock``): whole-run rebuilds take it *exclusively*, each in one
  transaction (``serialized``): a reader never sees a run's rows deleted and not yet rebuilt, and two
  rebuilds of runs of one release (which share ``SnippetStat`` rows and the ``global`` rows) never
  interleave their delete-and-insert. Row-level writers (a verdict's delta, the step's new selections) take
  it *shared*, so they run side by side but never during a rebuild.
- a run's aggregation lock (``run_aggregation_lock``): row-level writers of one run's rows (deltas, the
  step's new selections) take it first, so they apply one after the other, each on the rows the previous
  one committed. It locks no row of another app: the leaderboard never waits on evaluation's run row, and
  a verdict's writer, which holds that row, takes this lock after it.

Lock order: (evaluation's run row, when a verdict's writer calls in), the run's aggregation lock, the
aggregation lock, read-model rows. A rebuild takes no run's aggregation lock, so it cannot wait on a
row-level writer that waits on it. Bootstrap intervals are computed holding no lock and written only over
the rows (and selections) they were computed for.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from django.db import connection, transaction

#: the PostgreSQL advisory lock key of aggregation writes (any constant unique to this purpose)
AGGREGATION_LOCK_KEY = 0x52434241  # "RCBA"
#: the high 32 bits of the advisory lock key of one run's row-level writes (its low 32 bits: the run id)
RUN_AGGREGATION_LOCK_PREFIX = 0x52434252  # "RCBR"

P = ParamSpec("P")
R = TypeVar("R")


def aggregation_lock(*, shared: bool) -> None:
    """Take the aggregation lock until the current transaction ends: exclusive for a whole-run rebuild,
    shared for row-level writers (see the module docstring for the lock order). Re-entrant."""
    if connection.vendor == "postgresql":
        function = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT {function}(%s)", [AGGREGATION_LOCK_KEY])


def run_aggregation_lock(run_id: int) -> None:
    """Take the aggregation lock of one run, exclusively, until the current transaction ends: the row-level
    writers of its read-model rows apply one after the other. Re-entrant; take it before
    ``aggregation_lock``."""
    if connection.vendor == "postgresql":
        key = (RUN_AGGREGATION_LOCK_PREFIX << 32) | (run_id & 0xFFFFFFFF)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [key])


def serialized(func: Callable[P, R]) -> Callable[P, R]:
    """Run ``func`` in one transaction holding the aggregation lock exclusively (re-entrant: nested entry
    points share the outer transaction and lock)."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with transaction.atomic():
            aggregation_lock(shared=False)
            return func(*args, **kwargs)

    return wrapper
