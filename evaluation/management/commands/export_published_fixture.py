"""`python manage.py export_published_fixture OUT [--source overall_stats.json] [--papers papers.yaml]`."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.published_source import PublishedSourceError, published_fixture_write

DEFAULT_SOURCE = Path("../shared/data/overall_stats.json")


class Command(BaseCommand):
    help = (
        "Re-encode published results (the original's overall_stats.json, plus a papers.yaml registry) as the "
        "hub's compact rcb-hub-published/1 fixture (gzipped when OUT ends in .gz). Deterministic output."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("out", type=Path, help="e.g. demo/rcb-2025-published.json.gz")
        parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help=f"default {DEFAULT_SOURCE}")
        parser.add_argument("--papers", type=Path, default=None, help="papers.yaml-style registry")

    def handle(self, *args, **options) -> None:
        try:
            out = published_fixture_write(
                source=options["source"], out=options["out"], papers=options["papers"]
            )
        except PublishedSourceError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"wrote {out} ({out.stat().st_size} bytes)")
