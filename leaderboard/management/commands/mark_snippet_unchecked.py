"""``mark_snippet_unchecked``: mark a snippet "not checked by its test", with a reason and an explanation.

For a snippet whose test is known to be weak after the fact, e.g. one of the published benchmark's (its tests
accept some wrong bodies; the published data carry no code, so the validation battery cannot find them). The
snippet is marked on every public page and export; the runs of every release that leaves such snippets out
of its scores are re-aggregated (the published benchmark's release keeps the paper's scoring)::

    python manage.py mark_snippet_unchecked PAPER SNIPPET --reason setup \\
        --explanation "..." [--release NAME | --task-version ID]
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from contributions.errors import CatalogueError
from contributions.models import Snippet, UncheckedReason
from contributions.services import snippet_mark_unchecked
from evaluation.models import EvaluationRun
from leaderboard.services import leaderboard_refresh_runs


class Command(BaseCommand):
    help = 'Mark a snippet "not checked by its test" (reason + explanation) and re-aggregate what it changes.'

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paper", help="the paper's key")
        parser.add_argument("snippet", help="the snippet's name")
        parser.add_argument("--reason", required=True, choices=UncheckedReason.values)
        parser.add_argument("--explanation", required=True, help="why (at least 40 characters)")
        parser.add_argument("--release", help="the snippet of the version in this release")
        parser.add_argument("--task-version", type=int, help="the snippet of this task version (its id)")

    def handle(self, *args: Any, **options: Any) -> None:
        found = Snippet.objects.filter(
            task_version__task__paper__key=options["paper"], name=options["snippet"]
        )
        if options["release"]:
            found = found.filter(task_version__release_entries__release__name=options["release"])
        if options["task_version"]:
            found = found.filter(task_version_id=options["task_version"])
        snippets = list(found.select_related("task_version__task"))
        if not snippets:
            raise CommandError(f"no snippet {options['snippet']!r} of paper {options['paper']!r} matches")
        if len(snippets) > 1:
            versions = ", ".join(
                f"{s.task_version.task.key} v{s.task_version.number} (id {s.task_version_id})"
                for s in snippets
            )
            raise CommandError(
                f"{len(snippets)} snippets match ({versions}): name one with --release or --task-version"
            )
        (snippet,) = snippets
        try:
            snippet_mark_unchecked(
                snippet=snippet, reason=options["reason"], explanation=options["explanation"]
            )
        except CatalogueError as exc:
            raise CommandError(str(exc)) from exc
        runs = EvaluationRun.objects.filter(
            completions__snippet=snippet, release__counts_unchecked_snippets=False
        ).distinct()
        leaderboard_refresh_runs(runs=list(runs))
        self.stdout.write(
            f"{options['paper']} / {snippet.name}: marked not checked by its test ({options['reason']}); "
            f"{runs.count()} run(s) re-aggregated"
        )
