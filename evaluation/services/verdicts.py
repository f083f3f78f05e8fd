"""Verdicts of record: judging one completion and writing its one ``TestResult``.

``completion_test`` judges a leased completion with this worker's shared runner and records the verdict with
``test_result_record``, the one place a verdict is written; ``completion_verdict`` is the judging itself,
shared with a maintainer's re-judge (``services/rejudge.py``). Both writers lock the run first
(``run_state``).
"""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from evaluation.models import Completion, EvaluationRun, ResultsPerMinute, TestResult
from evaluation.queues import QUEUE_EVAL_CPU, QUEUE_EVAL_GPU
from evaluation.selectors.status import STATUS_THROUGHPUT_WINDOW_S
from evaluation.services.memorisation import overlap_fields
from evaluation.services.run_state import Stage, run_lock, run_refresh
from researchcodebench import errors
from researchcodebench.runner import Runner, Verdict

log = logging.getLogger(__name__)

#: rows per minute and queue of ``ResultsPerMinute``: concurrent verdicts of runs in different shards never
#: wait on each other's counter
THROUGHPUT_SHARDS = 8
#: how long a minute's counter is kept (the status page reads the last ``STATUS_THROUGHPUT_WINDOW_S``)
THROUGHPUT_KEEP_S = 2 * STATUS_THROUGHPUT_WINDOW_S


def result_fields(verdict: Verdict) -> dict:
    """The ``TestResult`` fields of ``verdict`` (a re-judge writes them over a pass's)."""
    return {
        "outcome": verdict.outcome,
        "passed": verdict.outcome == TestResult.Outcome.PASSED,
        "category": verdict.category,
        "tier": verdict.tier,
        "exception_type": (verdict.exception_type or "")[:200],
        "exception_message": verdict.exception_message or "",
        "exit_code": verdict.exit_code,
        "duration_s": verdict.duration_s,
        "stdout_tail": verdict.stdout_tail,
        "stderr_tail": verdict.stderr_tail,
        "tests_run": verdict.tests_run,
        "tests_failed": verdict.tests_failed,
        "tests_skipped": verdict.tests_skipped,
        "environment": verdict.environment[:200],
        "cached": verdict.cached,
        # The pass's confirmation against an impossible variant (docs/integrity.md); ``verdict.tests``, how
        # each test method ended, is not kept.
        "confirmation": verdict.confirmation,
        "variant": verdict.variant[:200],
        "variant_slate": verdict.variant_slate[:32],
    }


@transaction.atomic
def test_result_record(
    *, completion_id: int, verdict: Verdict, worker_host: str, attempt: int
) -> TestResult | None:
    """Record the verdict of one completion: the one place a verdict is written.

    Idempotent: a completion has at most one ``TestResult`` (one-to-one); a second delivery returns the
    first result and changes nothing. The result keeps the verdict's confirmation against an impossible
    variant (``confirmation``, ``variant``, ``variant_slate``; docs/integrity.md). The item becomes ``done`` (its ``error`` is the verdict's reason
    unless it passed) with its memorisation figures (``memorisation.overlap_fields``, in this transaction:
    they reach the cached pages with the verdict), the run's counts are refreshed and the run finishes
    when no item is left. The verdict is counted in its minute's ``ResultsPerMinute`` row of its test queue (not for an imported run,
    whose verdicts never went through a queue). Returns None, recording nothing, for a cancelled item or an
    unknown id.
    """
    run_id = Completion.objects.filter(pk=completion_id).values_list("run_id", flat=True).first()
    if run_id is None:
        return None
    run = run_lock(run_id)
    existing = TestResult.objects.filter(completion_id=completion_id).first()
    if existing is not None:
        return existing
    item = Completion.objects.annotate(
        needs_gpu=F("snippet__task_version__needs_gpu"), reference=F("snippet__code")
    ).get(pk=completion_id)
    if item.stage == Stage.CANCELLED:
        return None
    try:
        with transaction.atomic():
            result = TestResult.objects.create(
                completion=item,
                worker_host=worker_host[:255],
                attempt=max(1, attempt),
                **result_fields(verdict),
            )
    except IntegrityError:
        return TestResult.objects.get(completion_id=completion_id)
    Completion.objects.filter(pk=item.pk).update(
        stage=Stage.DONE,
        lease_owner="",
        lease_expires_at=None,
        error="" if verdict.passed else verdict.reason,
        updated_at=timezone.now(),
        **overlap_fields(reference=item.reference, code=item.code, code_extracted=item.code_extracted),
    )
    run_refresh(run)
    if run.source != EvaluationRun.Source.IMPORTED:
        _throughput_count(
            queue=QUEUE_EVAL_GPU if item.needs_gpu else QUEUE_EVAL_CPU, shard=run.pk, at=result.created_at
        )
    return result


def _throughput_count(*, queue: str, shard: int, at: datetime) -> None:
    """One more verdict in ``queue`` in the minute of ``at`` (last in the verdict's transaction: the counter's
    row is locked only until the commit). The first verdict of a minute in its row also deletes that
    queue's and shard's rows older than ``THROUGHPUT_KEEP_S``."""
    minute = at.replace(second=0, microsecond=0)
    key = {"minute": minute, "queue": queue, "shard": shard % THROUGHPUT_SHARDS}
    if ResultsPerMinute.objects.filter(**key).update(results=F("results") + 1):
        return
    try:
        with transaction.atomic():
            ResultsPerMinute.objects.create(**key, results=1)
    except IntegrityError:  # a concurrent verdict created the row first (and waited for by the insert)
        ResultsPerMinute.objects.filter(**key).update(results=F("results") + 1)
        return
    ResultsPerMinute.objects.filter(
        queue=key["queue"], shard=key["shard"], minute__lt=minute - timedelta(seconds=THROUGHPUT_KEEP_S)
    ).delete()


# The name starts with "test_": keep pytest from collecting it where a test module imports it.
test_result_record.__test__ = False  # type: ignore[attr-defined]


def completion_test(*, completion_id: int, owner: str, worker_host: str = "") -> TestResult | None:
    """Test one leased completion with this process's core runner and record the verdict.

    Precondition: ``owner`` holds the testing lease. Any failure to set the test up (metadata-only task,
    corrupt blob, sandbox or environment unavailable) is recorded as an ``infra_error`` verdict with its
    reason, so it can be re-run (``run_rerun``) and never counts against the model.
    """
    from evaluation.workspace import shared_runner

    item = Completion.objects.select_related("run", "snippet__task_version__task").get(pk=completion_id)
    verdict = completion_verdict(item=item, runner=lambda: contextlib.nullcontext(shared_runner()))
    return test_result_record(
        completion_id=completion_id,
        verdict=verdict,
        worker_host=worker_host or socket.gethostname(),
        attempt=item.attempts,
    )


def completion_verdict(*, item: Completion, runner: Callable[[], AbstractContextManager[Runner]]) -> Verdict:
    """The verdict that the runner ``runner()`` opens gives ``item`` (loaded with ``run`` and
    ``snippet__task_version__task``); it records nothing. The worker's tests (the shared warm runner) and a
    maintainer's re-judge (a cold one, ``services/rejudge.py``) both judge through here. Any failure to set
    the test up (metadata-only task, corrupt blob, sandbox or environment unavailable, the runner itself)
    becomes an ``infra_error`` verdict with its reason."""
    from contributions.task_folders import task_version_task
    from evaluation.workspace import runner_assign_environment, runner_seed_variants

    try:
        task = task_version_task(task_version=item.snippet.task_version)
        snippet = task.snippet(item.snippet.name)
        code = item.code if item.code_extracted else None
        with runner() as opened:
            # The version's own environment (docs/environments.md); one that cannot be built gives an
            # infrastructure verdict naming the package, which no model is charged for.
            runner_assign_environment(runner=opened, task=task, task_version=item.snippet.task_version)
            # The variants a pass is confirmed against: the version's own when it stores them.
            runner_seed_variants(runner=opened, task=task, task_version=item.snippet.task_version)
            return opened.evaluate(task, snippet, code, template=item.run.template)
    except Exception as exc:  # any set-up failure becomes a recorded infrastructure verdict
        log.exception("could not test completion %s", item.pk)
        reason = f"could not run the test: {type(exc).__name__}: {exc}"[:1000]
        return Verdict(
            outcome="infra_error",
            category="sandbox_failure",
            tier=errors.INFRASTRUCTURE,
            reason=reason,
            exception_type=type(exc).__name__,
            exception_message=str(exc)[:1000],
        )
