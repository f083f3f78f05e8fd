"""Load the demo data that ships with the repository (idempotent; `make demo` runs it).

1. ``examples/pset`` as the release ``demo`` (through the catalogue service; skipped if the folder is absent);
2. the paper's published results, ``demo/rcb-2025-published.json.gz``, as the release
   ``rcb-2025-published`` with one run per model (the default release when no other is);
3. the leaderboard's read models, brought up to date before it returns (no worker needed);
4. with ``DEBUG`` on (``make demo``), or ``--accounts``: a maintainer and a contributor account with verified
   addresses and fixed passwords, printed. Their passwords are public, so a deployment (debug off) gets
   them only when asked for.
"""

from __future__ import annotations

from argparse import BooleanOptionalAction
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from contributions.models import Release
from contributions.services import CatalogueError, release_create_from_pset
from contributions.services.accounts import account_create_verified
from evaluation.services.published import PublishedSourceError, published_import, published_verify
from leaderboard.services import leaderboard_refresh_after_bulk_write

DEMO_RELEASE = "demo"
#: (email, password, maintainer, display name): for trying the site locally, never for a deployment
DEMO_ACCOUNTS = (
    ("maintainer@example.org", "demo-maintainer-password", True, "Demo Maintainer"),
    ("contributor@example.org", "demo-contributor-password", False, "Demo Contributor"),
)


class Command(BaseCommand):
    help = (
        "Load the demo data shipped with the repository (example tasks, published results). Safe to repeat."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--examples",
            type=Path,
            default=settings.BASE_DIR / "examples" / "pset",
            help="example pset folder",
        )
        parser.add_argument(
            "--published",
            type=Path,
            default=settings.BASE_DIR / "demo" / "rcb-2025-published.json.gz",
            help="published-results fixture",
        )
        parser.add_argument(
            "--accounts",
            action=BooleanOptionalAction,
            default=None,
            help="create the demo accounts (default: only with DEBUG on; their passwords are public)",
        )

    def handle(self, *args, **options) -> None:
        self._load_examples(options["examples"])
        self._load_published(options["published"])
        # Bulk imports send no per-result signal: aggregate now so the first page view shows the board.
        refreshed = leaderboard_refresh_after_bulk_write()
        self.stdout.write(f"leaderboard: {len(refreshed)} runs aggregated")
        accounts = options["accounts"] if options["accounts"] is not None else settings.DEBUG
        if accounts:
            self._load_accounts()
        else:
            self.stdout.write("demo accounts: skipped (DEBUG is off; --accounts creates them)")

    def _load_accounts(self) -> None:
        for email, password, maintainer, name in DEMO_ACCOUNTS:
            account_create_verified(email=email, password=password, maintainer=maintainer, display_name=name)
            role = "maintainer" if maintainer else "contributor"
            self.stdout.write(f"demo account ({role}): sign in as {email} with password {password}")

    def _load_examples(self, path: Path) -> None:
        if not path.is_dir():
            self.stdout.write(f"examples: {path} not found; skipped")
            return
        existed = Release.objects.filter(name=DEMO_RELEASE).exists()
        try:
            release = release_create_from_pset(path=path, name=DEMO_RELEASE, title="Example tasks")
        except CatalogueError as exc:
            if not existed:
                raise CommandError(f"examples: {exc}") from exc
            # Releases never change: examples edited since the first load keep the release as it was.
            self.stdout.write(
                f"examples: release {DEMO_RELEASE!r} exists and differs from {path}; kept as it is ({exc})"
            )
            return
        entries = release.entries.select_related("task_version")
        snippets = sum(e.task_version.snippets.count() for e in entries)
        state = "already loaded" if existed else "loaded"
        self.stdout.write(
            f"examples: release {release.name!r} {state}: {entries.count()} tasks, {snippets} snippets"
        )

    def _load_published(self, path: Path) -> None:
        try:
            report = published_import(source=path)
        except PublishedSourceError as exc:
            raise CommandError(f"published results: {exc}") from exc
        mismatches = published_verify(source=path)
        if mismatches:
            raise CommandError(
                f"published results: {len(mismatches)} recomputed scores differ from the fixture's "
                f"(first: {mismatches[0]})"
            )
        state = "loaded" if report.changed else "already loaded"
        self.stdout.write(
            f"published results: release {report.release!r} {state}: "
            f"{report.models_created} models, {report.runs_created} runs, {report.results_created} "
            f"results created in {report.duration_s:.2f} s; scores equal the published ones"
        )
