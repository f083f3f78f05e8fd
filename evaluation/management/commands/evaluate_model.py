"""`python manage.py evaluate_model KEY --release R [--template T] [--with-paper | --without-paper]
[--samples N] [--temperature X] [--yes] [--wait]`: start a generated evaluation, as the web's "Start
evaluation" does."""

from __future__ import annotations

import time

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from contributions.models import Release
from evaluation.board_links import run_board_url
from evaluation.models import EvaluationRun, LanguageModel
from evaluation.selectors.runs import run_progress
from evaluation.services.estimates import MAX_SAMPLES, EstimateError, release_run_defaults, run_estimate
from evaluation.services.generation import generation_refusal, run_start
from evaluation.services.runs import RunError
from researchcodebench.problems import TEMPLATES


class Command(BaseCommand):
    help = (
        "Start a generated evaluation of a model (by key) on every testable snippet of a release: print the "
        "estimated tokens and cost, ask for confirmation (unless --yes), queue the run for the workers and, "
        "with --wait, print its progress until it is final."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("key", help="the model's key (a model managed by the maintainers)")
        parser.add_argument("--release", required=True, help="name of the benchmark release")
        parser.add_argument(
            "--template", choices=TEMPLATES, default=None, help="prompt template (default: the release's)"
        )
        paper = parser.add_mutually_exclusive_group()
        paper.add_argument(
            "--with-paper", dest="with_paper", action="store_const", const=True, default=None,
            help="put the paper in the prompt (default: the release's setting)",
        )  # fmt: skip
        paper.add_argument(
            "--without-paper", dest="with_paper", action="store_const", const=False,
            help="leave the paper out of the prompt",
        )  # fmt: skip
        parser.add_argument(
            "--samples", type=int, default=1, help=f"completions per snippet, 1-{MAX_SAMPLES} (default 1)"
        )
        parser.add_argument("--temperature", type=float, default=None, help="sampling temperature")
        parser.add_argument("--by", default=None, help="username recorded as the run's requester")
        parser.add_argument("--yes", action="store_true", help="start without asking")
        parser.add_argument("--wait", action="store_true", help="print progress until the run is final")
        parser.add_argument(
            "--poll-s", type=float, default=2.0, help="seconds between progress checks with --wait"
        )
        parser.add_argument(
            "--timeout-s", type=float, default=None, help="give up waiting after this many seconds"
        )

    def handle(self, *args, **options) -> None:
        model = LanguageModel.objects.filter(key=options["key"]).first()
        if model is None:
            raise CommandError(f"no model has the key {options['key']!r}")
        refusal = generation_refusal(model=model)
        if refusal:
            raise CommandError(refusal)
        release = Release.objects.filter(name=options["release"]).first()
        if release is None:
            names = ", ".join(Release.objects.order_by("name").values_list("name", flat=True)) or "none"
            raise CommandError(f"--release: no release is named {options['release']!r} (releases: {names})")
        if options["temperature"] is not None and not 0.0 <= options["temperature"] <= 2.0:
            raise CommandError("--temperature must be between 0 and 2")
        requester = None
        if options["by"]:
            users = get_user_model()
            requester = users.objects.filter(**{users.USERNAME_FIELD: options["by"]}).first()
            if requester is None:
                raise CommandError(f"--by: no user is named {options['by']!r}")
        defaults = release_run_defaults(release=release)
        chosen = {
            "model": model,
            "release": release,
            "template": options["template"] or defaults.template,
            "with_paper": defaults.with_paper if options["with_paper"] is None else options["with_paper"],
            "n_completions": options["samples"],
        }
        try:
            estimate = run_estimate(**chosen)
        except EstimateError as exc:
            raise CommandError(str(exc)) from exc
        for line in estimate.lines():
            self.stdout.write(line)
        if not options["yes"] and not self._confirmed():
            raise CommandError("not started (answer 'y' to start, or pass --yes)")
        try:
            run = run_start(**chosen, temperature=options["temperature"], requester=requester)
        except RunError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Run {run.pk} queued: {run.total_items} items.")
        self.stdout.write(f"It appears on the board {settings.RCB_SITE_URL.rstrip('/')}{run_board_url(run)}")
        if options["wait"]:
            self._wait(run, poll_s=max(0.1, options["poll_s"]), timeout_s=options["timeout_s"])

    def _confirmed(self) -> bool:
        self.stdout.write("Start this evaluation? [y/N] ", ending="")
        self.stdout.flush()
        try:
            answer = input()
        except EOFError:
            return False
        return answer.strip().lower() in ("y", "yes")

    def _wait(self, run: EvaluationRun, *, poll_s: float, timeout_s: float | None) -> None:
        """Print a line whenever the run's progress changes; fail unless it finishes."""
        started = time.monotonic()
        last = ""
        while True:
            run.refresh_from_db()
            progress = run_progress(run=run)
            line = (
                f"run {run.pk}: {run.get_status_display().lower()}, {progress.final} of {progress.total} items "
                f"finished ({progress.percent:.1f}%), {progress.outcomes.get('passed', 0)} of "
                f"{progress.tested} tests passed"
            )
            if line != last:
                self.stdout.write(line)
                last = line
            if run.is_final:
                break
            if timeout_s is not None and time.monotonic() - started > timeout_s:
                raise CommandError(f"run {run.pk} is still {run.status} after {timeout_s:g} s (it goes on)")
            time.sleep(poll_s)
        if run.status_reason:
            self.stdout.write(run.status_reason)
        if run.status != EvaluationRun.Status.FINISHED:
            raise CommandError(f"run {run.pk} {run.status}")
        self.stdout.write(self.style.SUCCESS(f"run {run.pk} finished"))
