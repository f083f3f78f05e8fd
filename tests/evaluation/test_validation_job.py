"""The validation job of a contribution: a submitted revision reaches a real Celery worker through the
catalogue's signal, runs the core battery in the sandbox with the worker's shared runner, streams its
stages and moves the proposal; failures to run are retried; the watchdog task fails overdue validations."""

from __future__ import annotations

import io
import time
import zipfile
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from config.celery import route_task
from contributions.intake import IntakeLimits, IntakeResult, intake_archive
from contributions.models import Proposal, ProposalRevision
from contributions.services import (
    proposal_create,
    proposal_submit,
    proposal_validation_start,
    revision_create,
)
from evaluation.services.validation import revision_validate
from evaluation.tasks import validations_watchdog
from tests.conftest import wait_for
from tests.factories import EXAMPLE_MANIFEST, UserFactory, example_upload
from tests.factories.contributions import EXAMPLE_TASK

pytestmark = pytest.mark.slow

State = Proposal.State
FIXTURES = Path(__file__).resolve().parents[1] / "researchcodebench" / "fixtures" / "validation"


def submit(task_key: str, upload: IntakeResult, manifest: dict) -> Proposal:
    author = UserFactory()
    proposal = proposal_create(author=author, task_key=task_key, meta={"title": f"Paper of {task_key}"})
    revision_create(proposal=proposal, by=author, intake_result=upload, manifest=manifest)
    proposal_submit(proposal=proposal, by=author)
    return proposal


def zipped(root: Path) -> IntakeResult:
    """A task folder as the form receives it: a .zip upload read by the safe intake."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                archive.writestr(path.relative_to(root).as_posix(), path.read_bytes())
    buffer.seek(0)
    return intake_archive(filename=f"{root.name}.zip", stream=buffer, limits=IntakeLimits.from_settings())


def sleepy_task(folder: Path, *, sleep_s: int) -> Path:
    """The example task with a test that sleeps ``sleep_s`` whenever the code is not the reference."""
    import shutil

    shutil.copytree(EXAMPLE_TASK, folder)
    original = (folder / "rmsnorm.py").read_text()
    test = folder / "paper2code_test.py"
    head = f"import unittest\nimport time\nif open('rmsnorm.py').read() != {original!r}:\n    time.sleep({sleep_s})\n"
    test.write_text(test.read_text().replace("import unittest\n", head, 1))
    return folder


def test_validation_jobs_route_by_gpu_need():
    assert route_task("evaluation.tasks.revision_validate_cpu", (), {}, {}) == {"queue": "eval-cpu"}
    assert route_task("evaluation.tasks.revision_validate_gpu", (), {}, {}) == {"queue": "eval-gpu"}
    assert route_task("evaluation.tasks.validations_watchdog", (), {}, {}) == {"queue": "site"}


class BrokenRunner:
    """A runner whose sandbox is gone: every use fails, as an infrastructure failure does."""

    def __getattr__(self, name):
        raise RuntimeError("sandbox unavailable: bwrap not found")


@pytest.mark.django_db
def test_a_battery_that_cannot_run_is_retried_with_the_reason(settings):
    settings.RCB_VALIDATION_ATTEMPTS = 3
    proposal = submit("broken-runner", example_upload(), EXAMPLE_MANIFEST)
    revision = proposal.revisions.get()
    assert revision_validate(revision_id=revision.pk, runner=BrokenRunner()) == "error"
    proposal.refresh_from_db()
    assert proposal.state == State.SUBMITTED
    assert "sandbox unavailable" in proposal.events.last().reason
    # A duplicate message for a proposal that is not waiting does nothing.
    Proposal.objects.filter(pk=proposal.pk).update(state=State.WITHDRAWN)
    assert revision_validate(revision_id=revision.pk, runner=BrokenRunner()) == "skipped"
    assert revision_validate(revision_id=10**9) == "missing"


@pytest.mark.django_db
def test_the_watchdog_task_fails_validations_past_their_deadline(settings):
    settings.RCB_VALIDATION_LIMIT_S = 5
    proposal = submit("hangs", example_upload(), EXAMPLE_MANIFEST)
    revision = proposal_validation_start(revision=proposal.revisions.get())
    ProposalRevision.objects.filter(pk=revision.pk).update(
        validation_started_at=timezone.now() - timedelta(seconds=11),
        validation_deadline=timezone.now() - timedelta(seconds=1),
    )
    assert validations_watchdog() == {"failed": 1, "jobs": 0, "resent": 0}
    proposal.refresh_from_db()
    assert proposal.state == State.CHANGES_REQUESTED
    assert "timed out, running past its limit of 5 s" in proposal.events.last().reason


def test_a_worker_validates_submitted_revisions_end_to_end(start_worker):
    """The example task validates green; a task whose test ignores a snippet goes to review naming it."""
    start_worker("eval-cpu", concurrency=1, extra_env={"RCB_VERDICT_CACHE": "0"})
    started = time.monotonic()
    green = submit("rmsnorm-contrib", zipped(EXAMPLE_TASK), EXAMPLE_MANIFEST)
    unchecked = submit(
        "unchecked-contrib",
        zipped(FIXTURES / "unchecked-snippet"),
        {"annotated_files": ["toy.py"], "paper_file": "paper2code_paper.md"},
    )

    def finished(proposal: Proposal) -> bool:
        proposal.refresh_from_db()
        return proposal.state not in (State.SUBMITTED, State.VALIDATING)

    wait_for(lambda: finished(green), timeout=300, what="the example task's validation")
    elapsed = time.monotonic() - started
    revision = green.revisions.get()
    assert green.state == State.READY_FOR_REVIEW, (green.events.last().reason, revision.validation_report)
    assert revision.validation_status == ProposalRevision.ValidationStatus.PASSED
    assert revision.validation_report["ok"] is True
    stages = [entry["stage"] for entry in revision.validation_progress]
    assert stages[0] == "annotations" and "reference" in stages and "mutation" in stages
    # Every snippet of the example has impossible variants, derived in the worker's environment.
    found = revision.validation_report["variants"]
    assert found and all(item["variants"] for item in found.values()), found
    assert revision.validation_report["variants_environment"]
    assert all("report" not in entry["data"] for entry in revision.validation_progress)
    print(f"rmsnorm validated by a worker in {elapsed:.1f} s")

    wait_for(lambda: finished(unchecked), timeout=300, what="the unchecked snippet task's validation")
    report = unchecked.revisions.get().validation_report
    assert report["ok"] is False
    flagged = {
        f["snippet"] for f in report["findings"] if f["check"] == "mutation" and f["severity"] == "error"
    }
    assert unchecked.state == State.READY_FOR_REVIEW, unchecked.events.last().reason
    assert flagged and all(name in unchecked.events.last().reason for name in flagged)
    # The snippet no test runs has no variant; the mutation check's finding stands for both causes.
    assert not report["variants"]["shift values"]["variants"] and "shift values" in flagged
    assert not [f for f in report["findings"] if f["check"] == "variants" and f["severity"] == "error"]


def test_a_test_that_sleeps_is_stopped_at_the_validation_limit_and_the_page_says_so(
    start_worker, settings, tmp_path, client
):
    """Item 7 of issue 19: a test that sleeps whenever the code is not the reference would hold a worker
    for every fill and mutant's full timeout; the battery ends at RCB_VALIDATION_LIMIT_S instead."""
    from django.urls import reverse

    limit = 20
    settings.RCB_VALIDATION_LIMIT_S = limit
    folder = sleepy_task(tmp_path / "sleepy", sleep_s=120)
    start_worker(
        "eval-cpu", concurrency=1, extra_env={"RCB_VERDICT_CACHE": "0", "RCB_VALIDATION_LIMIT_S": str(limit)}
    )
    started = time.monotonic()
    proposal = submit("sleepy-contrib", zipped(folder), EXAMPLE_MANIFEST)

    def finished() -> bool:
        proposal.refresh_from_db()
        return proposal.state not in (State.SUBMITTED, State.VALIDATING)

    wait_for(finished, timeout=limit + 120, what="the sleepy task's validation")
    elapsed = time.monotonic() - started
    revision = proposal.revisions.get()
    assert revision.validation_job_id  # the job that ran it, for the watchdog to stop if it must
    timeouts = [f for f in revision.validation_report["findings"] if f["check"] == "timeout"]
    assert timeouts and "validation timed out" in timeouts[0]["message"], revision.validation_report
    assert elapsed < limit + 60, elapsed
    client.force_login(proposal.author)
    page = client.get(reverse("contributions:proposal_detail", kwargs={"proposal_id": proposal.pk}))
    assert "validation timed out" in page.content.decode()
    print(f"a sleeping test's validation ended after {elapsed:.1f} s (limit {limit} s)")


@pytest.mark.django_db
def test_the_watchdog_stops_the_job_of_an_overdue_validation(settings):
    from evaluation.services.validation import validations_watchdog

    proposal = submit("overdue", example_upload(), EXAMPLE_MANIFEST)
    revision = proposal_validation_start(revision=proposal.revisions.get(), job_id="celery-job-7")
    ProposalRevision.objects.filter(pk=revision.pk).update(
        validation_deadline=timezone.now() - timedelta(seconds=1)
    )
    stopped: list[str] = []
    assert validations_watchdog(revoke=stopped.append) == {"failed": 1, "jobs": 1, "resent": 0}
    assert stopped == ["celery-job-7"]
