"""Load the demo data that ships with the repository (idempotent; `make demo` runs it).

1. ``examples/pset`` as the release ``demo`` (through the catalogue service; skipped if the folder is absent);
2. the paper's published results, ``demo/rcb-2025-published.json.gz``, as the release
   ``rcb-2025-published`` with one run per model (the default release when no other is);
3. the leaderboard's read models, brought up to date before it returns (no worker needed);
4. with ``DEBUG`` on (``make demo``), or ``--accounts``: a maintainer and a contributor account with verified
   addresses and fixed passwords, printed. Their passwords are public, so a deployment (debug off) gets
   them only when asked for;
5. with the accounts: one proposal by the demo contributor waiting for the maintainer's review, so the
   whole contribution flow can be tried at once. It is a copy of the example task ``label-smoothing``
   under its own key (``demo-label-smoothing``, a paper entry of its own), taken through the same services
   as the contribution form (a zip built in memory through the safe intake, then submitted) and validated
   here, synchronously, by the validation job's service with the same battery and runner as a worker, so
   its report is a real one. An existing demo proposal is left as it is (approved, withdrawn...), except
   one whose validation did not run, which is validated again.

6. with the accounts: the demo model (``DEMO_MODEL_KEY``), maintainer-managed and active, served by the
   demo's fake LLM (``manage.py serve_fake_llm``, which scripts/demo.sh starts) at ``--fake-llm-url``, its
   key read from ``RCB_LLM_KEY_DEMO`` (the demo script exports a dummy one). The demo maintainer starts an
   evaluation of it from the web and sees its score on the board of the example release. Repeating points
   it at ``--fake-llm-url`` again and changes nothing else.
"""

from __future__ import annotations

import dataclasses
import io
import time
import zipfile
from argparse import BooleanOptionalAction
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from contributions.intake import IntakeError, IntakeLimits, intake_archive
from contributions.models import Proposal, Release
from contributions.selectors.proposals import latest_submitted_revision
from contributions.services import (
    CatalogueError,
    ProposalError,
    proposal_create,
    proposal_submit,
    release_create_from_pset,
    revision_create,
)
from contributions.services.accounts import account_create_verified
from contributions.services.notifications import proposal_url
from evaluation.management.commands.serve_fake_llm import DEFAULT_PORT as FAKE_LLM_PORT
from evaluation.models import LanguageModel
from evaluation.services.language_models import language_model_create, language_model_update
from evaluation.services.published import PublishedSourceError, published_import, published_verify
from evaluation.services.validation import revision_validate
from leaderboard.services import leaderboard_refresh_after_bulk_write
from researchcodebench import pset as rcb_pset

DEMO_RELEASE = "demo"
#: (email, password, maintainer, display name): for trying the site locally, never for a deployment
DEMO_ACCOUNTS = (
    ("maintainer@example.org", "demo-maintainer-password", True, "Demo Maintainer"),
    ("contributor@example.org", "demo-contributor-password", False, "Demo Contributor"),
)
#: the example task the demo proposal copies, and the key it is proposed under
DEMO_PROPOSAL_SOURCE = "label-smoothing"
DEMO_PROPOSAL_KEY = "demo-label-smoothing"
#: the model the demo's fake LLM serves (evaluation/management/commands/serve_fake_llm.py)
DEMO_MODEL_KEY = "demo-fake-llm"
DEMO_MODEL_KEY_ENV = "RCB_LLM_KEY_DEMO"


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
        parser.add_argument(
            "--fake-llm-url",
            default=f"http://127.0.0.1:{FAKE_LLM_PORT}/v1",
            help="the endpoint of the demo's fake LLM (manage.py serve_fake_llm), for the demo model",
        )

    def handle(self, *args, **options) -> None:
        self._load_examples(options["examples"])
        self._load_published(options["published"])
        # Bulk imports send no per-result signal: aggregate now so the first page view shows the board.
        refreshed = leaderboard_refresh_after_bulk_write()
        self.stdout.write(f"leaderboard: {len(refreshed)} runs aggregated")
        accounts = options["accounts"] if options["accounts"] is not None else settings.DEBUG
        if accounts:
            users = self._load_accounts()
            self._load_demo_model(options["fake_llm_url"])
            self._load_proposal(
                options["examples"], author=users["contributor"], reviewer=users["maintainer"]
            )
        else:
            self.stdout.write("demo accounts: skipped (DEBUG is off; --accounts creates them)")

    def _load_accounts(self) -> dict[str, Any]:
        users = {}
        for email, password, maintainer, name in DEMO_ACCOUNTS:
            role = "maintainer" if maintainer else "contributor"
            users[role] = account_create_verified(
                email=email, password=password, maintainer=maintainer, display_name=name
            )
            self.stdout.write(f"demo account ({role}): sign in as {email} with password {password}")
        return users

    def _load_demo_model(self, url: str) -> None:
        """The model served by the demo's fake LLM (module docstring, 6)."""
        model = LanguageModel.objects.filter(key=DEMO_MODEL_KEY).first()
        if model is None:
            model = language_model_create(
                key=DEMO_MODEL_KEY,
                name="Demo model (fake LLM)",
                developer="ResearchCodeBench demo",
                provider=LanguageModel.Provider.OTHER,
                provider_model_id="demo-fake",
                base_url=url,
                api_key_env=DEMO_MODEL_KEY_ENV,
                input_cost_per_mtok=0,
                output_cost_per_mtok=0,
                management=LanguageModel.Management.MAINTAINER,
                active=True,
            )
            state = "created"
        elif model.base_url != url:
            model = language_model_update(model=model, base_url=url)
            state = "pointed at the fake LLM again"
        else:
            state = "already there"
        self.stdout.write(
            f"demo model: {model.key!r} {state}, served by the fake LLM at {model.base_url} "
            f"(manage.py serve_fake_llm; key from {model.api_key_env}); start an evaluation at "
            f"/runs/new/?model={model.key}"
        )

    def _load_proposal(self, examples: Path, *, author: Any, reviewer: Any) -> None:
        """The demo contributor's proposal, submitted and validated (see the module docstring)."""
        proposal = Proposal.objects.filter(author=author, task_key=DEMO_PROPOSAL_KEY).order_by("pk").last()
        if proposal is None:
            source = examples / DEMO_PROPOSAL_SOURCE
            if not source.is_dir():
                self.stdout.write(f"demo proposal: {source} not found; skipped")
                return
            try:
                proposal = self._submit_proposal(examples, author=author)
            except (rcb_pset.PsetError, KeyError, IntakeError, ProposalError) as exc:
                raise CommandError(f"demo proposal: {exc}") from exc
            created = True
        else:
            created = False
        if proposal.state == Proposal.State.SUBMITTED:
            # Validate here rather than wait for a worker: the demo starts its worker after this command.
            revision = latest_submitted_revision(proposal)
            started = time.monotonic()
            outcome = revision_validate(revision_id=revision.pk)
            took = f"validated ({outcome}) in {time.monotonic() - started:.1f} s"
            proposal.refresh_from_db()
        else:
            took = "created before" if not created else "validated by a worker"
        label = Proposal.State(proposal.state).label.lower()
        # Said last: the console email backend prints the workflow's notification emails above it.
        self.stdout.write(
            f"demo proposal: {proposal.task_key!r} by {author.email}, {label} ({took}): "
            f"{proposal_url(proposal) or f'proposal {proposal.pk}'} (review it signed in as {reviewer.email})"
        )

    @transaction.atomic
    def _submit_proposal(self, examples: Path, *, author: Any) -> Proposal:
        """A draft with the example task's files as a zip upload and its declarations, then submitted
        (one transaction: a failure leaves no half-made proposal behind)."""
        task = rcb_pset.read_pset(examples).task(DEMO_PROPOSAL_SOURCE)
        meta = dataclasses.replace(task.meta, id=DEMO_PROPOSAL_KEY)
        proposal = proposal_create(author=author, task_key=DEMO_PROPOSAL_KEY, meta=meta)
        root = Path(task.root)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            # task.yaml is not uploaded: the declarations below are its source, as in the form.
            for rel in rcb_pset.task_files(root):
                if rel != rcb_pset.MANIFEST:
                    archive.writestr(rel, (root / rel).read_bytes())
        buffer.seek(0)
        upload = intake_archive(
            filename=f"{DEMO_PROPOSAL_KEY}.zip", stream=buffer, limits=IntakeLimits.from_settings()
        )
        manifest = {
            "annotated_files": list(task.meta.annotated_file_paths),
            "context_files": list(task.meta.context_file_paths),
            "oracle_files": list(task.manifest.oracle_files),
            "test_entry": task.manifest.test_entry,
            "paper_file": task.paper_file or "",
            "needs_gpu": task.manifest.needs_gpu,
        }
        revision_create(proposal=proposal, by=author, intake_result=upload, manifest=manifest)
        proposal_submit(proposal=proposal, by=author)
        proposal.refresh_from_db()
        return proposal

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
