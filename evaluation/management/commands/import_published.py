"""`python manage.py import_published PATH [--papers papers.yaml]`: import the paper's published results."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from contributions.signals import bulk_write_finished
from evaluation.published_source import PublishedSourceError
from evaluation.services.published import published_import, published_verify


class Command(BaseCommand):
    help = (
        "Import published results (the original's overall_stats.json or an rcb-hub-published/1 fixture) as "
        "the release rcb-2025-published with one run per model, then check the recomputed scores against "
        "the file's. Idempotent."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path, help="overall_stats.json or a .json/.json.gz fixture")
        parser.add_argument(
            "--papers", type=Path, default=None, help="papers.yaml-style registry (first commit dates etc.)"
        )
        parser.add_argument("--no-verify", action="store_true", help="skip the score check after importing")

    def handle(self, *args, **options) -> None:
        try:
            report = published_import(source=options["path"], papers=options["papers"])
        except PublishedSourceError as exc:
            raise CommandError(str(exc)) from exc
        for line in report.summary_lines():
            self.stdout.write(line)
        # The import writes results in bulk (no per-result signal): the leaderboard aggregates them now, so
        # the board is complete when the command returns, with no worker or beat running.
        for _receiver, summary in bulk_write_finished.send(sender=self.__class__, source="import_published"):
            if summary:
                self.stdout.write(str(summary))
        if options["no_verify"]:
            return
        mismatches = published_verify(source=options["path"])
        if mismatches:
            for m in mismatches:
                self.stderr.write(
                    f"score mismatch: {m.model} {m.what}: file {m.expected}, database {m.actual}"
                )
            raise CommandError(f"{len(mismatches)} recomputed scores differ from the file's")
        self.stdout.write(self.style.SUCCESS("recomputed scores equal the file's for every model"))
