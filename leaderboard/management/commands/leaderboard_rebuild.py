"""``leaderboard_rebuild``: rebuild read models from the results of record (the repair path).

Verdicts are applied as deltas when they are recorded (docs/scoring.md#how-aggregation-runs); this rebuilds
whole runs from their results instead, giving the same rows, to repair rows written by hand or by a bug,
or after a migration. One run per transaction, then the shared rows (global contamination rows, snippet
statistics) once. ``--release`` and ``--all`` take the runs with results or rows::

    python manage.py leaderboard_rebuild --run ID [--run ID ...]
    python manage.py leaderboard_rebuild --release NAME
    python manage.py leaderboard_rebuild --all
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Q

from contributions.models import Release
from evaluation.models import EvaluationRun
from leaderboard.services import leaderboard_rebuild


class Command(BaseCommand):
    help = "Rebuild the leaderboard's read models of some runs, a release's runs or every run from their results."

    def add_arguments(self, parser: CommandParser) -> None:
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--run", type=int, action="append", metavar="ID", help="a run's id (repeatable)")
        which.add_argument("--release", metavar="NAME", help="every run of this release")
        which.add_argument("--all", action="store_true", help="every run")

    def handle(self, *args: Any, **options: Any) -> None:
        runs = EvaluationRun.objects.all()
        if options["run"]:
            missing = set(options["run"]) - set(
                runs.filter(pk__in=options["run"]).values_list("pk", flat=True)
            )
            if missing:
                raise CommandError(f"no run with id {', '.join(map(str, sorted(missing)))}")
            runs = runs.filter(pk__in=options["run"])
        elif options["release"]:
            if not Release.objects.filter(name=options["release"]).exists():
                raise CommandError(f"no release named {options['release']!r}")
            runs = runs.filter(release__name=options["release"])
        if not options["run"]:
            # A run that never had a result has no rows to repair (aggregating it would add an empty score).
            runs = runs.filter(Q(completions__result__isnull=False) | Q(scores__isnull=False)).distinct()
        started = time.perf_counter()
        done = leaderboard_rebuild(run_ids=runs.values_list("pk", flat=True))
        self.stdout.write(f"{len(done)} run(s) rebuilt in {time.perf_counter() - started:.1f} s")
