"""``manage.py import_pset PATH --release NAME``: import an original-format pset folder as a release."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from contributions import selectors, services
from contributions.signals import bulk_write_finished


class Command(BaseCommand):
    help = (
        "Import an original-format pset folder (papers.yaml + one folder per task) as immutable task "
        "versions in a new release. Repeating an identical import is harmless."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="the pset folder (holding papers.yaml)")
        parser.add_argument(
            "--release", required=True, help="the new release's name (letters, digits, - and _)"
        )
        parser.add_argument("--title", default="", help="a human-readable title for the release")
        parser.add_argument(
            "--default", action="store_true", help="make it the release the leaderboard shows"
        )
        parser.add_argument(
            "--allow-errors",
            action="store_true",
            help="import even when validation finds errors (duplicate snippet names are still refused)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            release = services.release_create_from_pset(
                path=options["path"],
                name=options["release"],
                title=options["title"],
                allow_errors=options["allow_errors"],
            )
            if options["default"]:
                services.release_set_default(release=release)
        except services.CatalogueError as exc:
            raise CommandError(str(exc)) from exc
        except OSError as exc:
            raise CommandError(f"{exc.filename or options['path']}: cannot read: {exc.strerror}") from exc
        row = selectors.release_list().get(pk=release.pk)
        release.refresh_from_db()
        self.stdout.write(
            self.style.SUCCESS(
                f"release {release.name!r}: {row.task_count} task(s), {row.snippet_count} snippet(s), "
                f"{row.total_lines} lines{' (default)' if release.is_default else ''}"
            )
        )
        if release.git_commit:
            self.stdout.write(f"benchmark repository: tag {release.git_tag!r} at {release.git_commit[:12]}")
        elif release.git_error:
            self.stderr.write(f"warning: the benchmark repository was not updated: {release.git_error}")
        # Higher layers (the leaderboard) bring their read models up to date before the command returns.
        for _receiver, summary in bulk_write_finished.send(sender=self.__class__, source="import_pset"):
            if summary:
                self.stdout.write(str(summary))
