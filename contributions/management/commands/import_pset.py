"""``manage.py import_pset PATH --release NAME``: import an original-format pset folder as a release.

``manage.py import_pset --git URL --commit SHA --release NAME`` imports the pset at that commit of a git
repository instead, through the same safe intake as the contribution form (``contributions.intake``): only that
commit is fetched, into a quarantine folder that is removed afterwards, within the ``RCB_INTAKE_*`` limits.

``--variants`` derives the impossible variants of every imported version in its environment (after
``--infer-requirements`` locked it) and stores them with it; the evaluation app does the deriving
(``contributions.signals.variants_wanted``), with its runner.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from contributions import intake, services
from contributions.models import Release
from contributions.selectors.releases import release_list
from contributions.signals import bulk_write_finished, variants_wanted


class Command(BaseCommand):
    help = (
        "Import an original-format pset folder (papers.yaml + one folder per task) as immutable task "
        "versions in a new release. Repeating an identical import is harmless."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("path", nargs="?", help="the pset folder (holding papers.yaml)")
        source.add_argument(
            "--git",
            metavar="URL",
            help="import from this git repository instead (https://; file:// with RCB_INTAKE_ALLOW_FILE_URLS)",
        )
        parser.add_argument(
            "--commit", metavar="SHA", help="with --git: the commit to import (7-40 hex digits)"
        )
        parser.add_argument(
            "--subdir",
            default="",
            metavar="PATH",
            help="with --git: the pset folder inside the repository (default: its root)",
        )
        parser.add_argument(
            "--release", required=True, help="the new release's name (letters, digits, - and _)"
        )
        parser.add_argument("--title", default="", help="a human-readable title for the release")
        parser.add_argument(
            "--by",
            metavar="USER",
            default="",
            help="the user name the imported tasks are recorded as approved by (default: the 'operator' "
            "system account); the benchmark repository's import commits are authored by them",
        )
        parser.add_argument(
            "--default", action="store_true", help="make it the release the leaderboard shows"
        )
        parser.add_argument(
            "--infer-requirements",
            action="store_true",
            help="lock each task's environment (its requirements file, task.yaml, else the imports of its code, "
            "listed here for confirmation) and store the lock with its task version (docs/environments.md)",
        )
        parser.add_argument(
            "--variants",
            action="store_true",
            help="derive the impossible variants of every task version imported (in its environment) and store "
            "them with it, printing per task how many snippets got variants and how long it took; without it, "
            "workers derive them on first use (docs/integrity.md)",
        )
        parser.add_argument(
            "--allow-errors",
            action="store_true",
            help="import even when validation finds errors (duplicate snippet names are still refused)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["git"] is None and (options["commit"] or options["subdir"]):
            raise CommandError("--commit and --subdir go with --git URL")
        if options["git"] is not None and not options["commit"]:
            raise CommandError("--git needs --commit SHA: the one commit to import")
        options["by_user"] = None
        if options["by"]:
            options["by_user"] = get_user_model().objects.filter(username=options["by"]).first()
            if options["by_user"] is None:
                raise CommandError(f"--by: no user named {options['by']!r}")
        try:
            if options["git"] is not None:
                release = self._import_git(options)
            else:
                release = self._import_folder(path=options["path"], options=options)
            if options["default"]:
                services.release_set_default(release=release)
        except (services.CatalogueError, intake.IntakeError) as exc:
            raise CommandError(str(exc)) from exc
        except OSError as exc:
            where = exc.filename or options["path"] or "quarantine folder"
            raise CommandError(f"{where}: cannot read: {exc.strerror}") from exc
        if options["infer_requirements"]:
            self._lock_environments(release)
        if options["variants"]:
            self._derive_variants(release)
        row = release_list().get(pk=release.pk)
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

    def _lock_environments(self, release: Release) -> None:
        """Lock every version's environment and show what each task needs and where that came from."""
        for entry in release.entries.select_related("task_version__task").order_by("position"):
            version = entry.task_version
            outcome = services.task_version_lock_environment(task_version=version)
            needs = ", ".join(outcome.requirements) or "the base only"
            if outcome.inferred:
                needs += " (inferred: " + ", ".join(f"{i} -> {d}" for i, d in outcome.inferred) + ")"
            elif outcome.source != "inferred":
                needs += f" ({outcome.source})"
            if outcome.error:
                self.stderr.write(f"warning: task {version.task.key}: {needs}: {outcome.error}")
            else:
                self.stdout.write(f"task {version.task.key}: {needs}; environment {outcome.lock_hash[:12]}")

    def _derive_variants(self, release: Release) -> None:
        """Derive and store each version's impossible variants (by the evaluation app, which reports a line
        per task as it goes)."""
        ids = list(release.entries.order_by("position").values_list("task_version_id", flat=True))
        answers = variants_wanted.send(sender=self.__class__, task_version_ids=ids, report=self.stdout.write)
        if not answers:
            self.stderr.write("warning: no installed app derives variants: none were stored")
        for _receiver, summary in answers:
            if summary:
                self.stdout.write(str(summary))

    def _import_folder(self, *, path: str | Path, options: dict[str, Any]) -> Release:
        return services.release_create_from_pset(
            path=path,
            name=options["release"],
            title=options["title"],
            allow_errors=options["allow_errors"],
            by=options["by_user"],
        )

    def _import_git(self, options: dict[str, Any]) -> Release:
        """Fetch the commit through the safe intake and import its files from a quarantine folder."""
        root = intake.quarantine_root()
        result = intake.intake_git(
            url=options["git"],
            commit=options["commit"],
            limits=intake.IntakeLimits.from_settings(),
            quarantine=root,
        )
        files = result.files
        subdir = options["subdir"].strip("/")
        if subdir:
            prefix = subdir + "/"
            files = {rel.removeprefix(prefix): data for rel, data in files.items() if rel.startswith(prefix)}
            if not files:
                raise CommandError(f"--subdir {subdir!r}: no files there at commit {result.commit}")
        self.stdout.write(f"fetched {result.origin} at {result.commit}: {len(files)} file(s)")
        with intake.quarantine_folder(root=root, prefix="pset-") as folder:
            intake.intake_write(files=files, dest=folder / "pset")
            try:
                return self._import_folder(path=folder / "pset", options=options)
            except services.CatalogueError as exc:
                # Name the commit, not the quarantine folder that is gone when the operator reads this.
                where = f"{result.origin}@{result.commit[:12]}" + (f"/{subdir}" if subdir else "")
                raise CommandError(str(exc).replace(str(folder / "pset"), where)) from exc
