"""A maintainer's re-judge of a run's passes: a second verdict on a cold, independent path.

Why: a pass was judged once, by a worker's shared runner (a warm forked interpreter, the verdict cache, a
timeout calibrated on a warm reference run). A completion that fooled that path, a verdict served from a
poisoned cache, or a row changed behind the service's back would stand unchallenged. A re-judge tests the
same completion again with ``evaluation.workspace.cold_runner``: a fresh interpreter per run, no cache,
its own cold reference run for the test-count check, the task's cap as the timeout. Only passes are
re-judged: a failure never counts for the model, so nobody gains from forging one.

Flow::

    run_rejudge_passes(run, by)            marks the passes (when, by whom); queues one message per pass
      -> evaluation.tasks.completion_rejudge_cpu / _gpu         (after commit, dispatch.completion_rejudge;
                                                                 queue eval-cpu / eval-gpu)
        -> completion_rejudge(completion_id)                    judges cold through verdicts.completion_verdict
          -> test_result_rejudge_record(...)                    the one place a re-judge is written

Outcomes of a re-judge (``TestResult.rejudge_agreed``): True, it passed too; False, it failed (model tier)
and became the verdict of record, so the run's counts and the leaderboard change (``post_save`` of the
result); None with ``rejudged_at`` set, it hit an infrastructure error and says nothing about the model
(inconclusive: the verdict of record stays; asking again re-judges it).

Nothing is leased and the completion stays ``done``: a duplicate message is harmless because a re-judge is
recorded only while one is pending, and a lost message leaves the pass visibly waiting on the run page,
where asking again re-sends every pass not yet re-judged conclusively.

Every run whose completions hold code can be re-judged: uploaded and generated runs alike (the portal's
own generations are judged by the same shared runner, and a verdict that fooled it would stand the same).
Imported runs hold the paper's verdicts and no code: there is nothing to run.

Verification: when every pass of a run has been re-judged conclusively (and at least one re-judge
happened), the run's verification becomes ``rerun`` ("Re-run by a maintainer"): every verdict that counts
for the model was reproduced by a maintainer. Its source stays what it was (``uploaded`` still says the
generations are self-reported).

Locking: run -> test result, as in ``runs.py``.
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

from django.db import transaction
from django.utils import timezone

from contributions.roles import can_maintain
from evaluation import dispatch
from evaluation.models import Completion, EvaluationRun, TestResult
from evaluation.services.run_state import run_lock, run_refresh
from evaluation.services.runs import UNVERIFIED_LEVEL
from evaluation.services.verdicts import completion_verdict, result_fields
from researchcodebench import errors
from researchcodebench.runner import Verdict

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

#: the fields a new request clears (the previous re-judge's verdict, if any)
_CLEARED = {
    "rejudged_at": None,
    "rejudge_outcome": "",
    "rejudge_category": "",
    "rejudge_reason": "",
    "rejudge_worker_host": "",
    "rejudge_confirmation": "",
    "rejudge_variant": "",
    "rejudge_variant_slate": "",
    "rejudge_agreed": None,
}


class RejudgeError(ValueError):
    """A re-judge cannot be asked for (the message says why)."""


@transaction.atomic
def run_rejudge_passes(*, run: EvaluationRun, by: AbstractBaseUser) -> int:
    """Queue a cold re-judge of every pass of ``run`` not yet re-judged conclusively; returns how many.

    Passes still waiting for a re-judge, and those whose re-judge was inconclusive, are asked for again
    (a lost message is recovered this way). Raises ``RejudgeError`` when ``by`` is not a maintainer
    (``contributions.roles.can_maintain``), the run is imported (the paper's verdicts, no code to run), or it
    is not final yet (its passes are still coming).
    """
    if not can_maintain(by):
        raise RejudgeError("only maintainers may re-judge a run's passes")
    run = run_lock(run.pk)
    if run.source == EvaluationRun.Source.IMPORTED:
        raise RejudgeError(
            f"run {run.pk} holds imported results ({run.get_source_display().lower()}): they carry no code "
            "to judge again"
        )
    if not run.is_final:
        raise RejudgeError(
            f"run {run.pk} is still {run.get_status_display().lower()}: re-judge it once final"
        )
    todo = TestResult.objects.filter(completion__run=run, outcome=TestResult.Outcome.PASSED).exclude(
        rejudge_agreed=True
    )
    items = list(todo.values_list("completion_id", "completion__snippet__task_version__needs_gpu"))
    if items:
        todo.update(rejudge_requested_at=timezone.now(), rejudged_by=by, **_CLEARED)
        transaction.on_commit(lambda: dispatch.completion_rejudge([(pk, bool(gpu)) for pk, gpu in items]))
    return len(items)


def completion_rejudge(*, completion_id: int, worker_host: str = "") -> TestResult | None:
    """Re-judge one completion cold and record it; None (nothing done) when no re-judge of it is pending.

    The completion is judged by ``verdicts.completion_verdict``, the same judging code as a worker's test, with
    a fresh ``cold_runner`` instead of the worker's shared warm runner.
    """
    from evaluation.workspace import cold_runner

    item = (
        Completion.objects.select_related("run", "snippet__task_version__task", "result")
        .filter(pk=completion_id)
        .first()
    )
    result = getattr(item, "result", None) if item is not None else None
    if result is None or not result.rejudge_pending:
        return None
    verdict = completion_verdict(item=item, runner=cold_runner)
    return test_result_rejudge_record(
        completion_id=completion_id, verdict=verdict, worker_host=worker_host or socket.gethostname()
    )


@transaction.atomic
def test_result_rejudge_record(
    *, completion_id: int, verdict: Verdict, worker_host: str
) -> TestResult | None:
    """Record a re-judge's ``verdict``: the one place a re-judge is written.

    Idempotent: only a pending re-judge of a pass is recorded; otherwise the result is returned unchanged
    (None for an unknown completion or one without a verdict). A re-judge that fails for the model's
    reasons becomes the verdict of record (outcome, category, tier, details, its confirmation against an
    impossible variant; the completion's ``error`` says it was re-judged), the run's counts are refreshed and the result's ``post_save`` has the board
    aggregate again. An infrastructure verdict is recorded as inconclusive and changes nothing else.
    """
    run_id = Completion.objects.filter(pk=completion_id).values_list("run_id", flat=True).first()
    if run_id is None:
        return None
    run = run_lock(run_id)
    result = TestResult.objects.select_for_update().filter(completion_id=completion_id).first()
    if result is None or not result.rejudge_pending or result.outcome != TestResult.Outcome.PASSED:
        return result
    now = timezone.now()
    changes = {
        "rejudged_at": now,
        "rejudge_outcome": verdict.outcome,
        "rejudge_category": verdict.category,
        "rejudge_reason": verdict.reason,
        "rejudge_worker_host": worker_host[:255],
        # The re-judge confirms its pass against an impossible variant too; a forged one becomes the verdict
        # of record below, with its variant (``result_fields``).
        "rejudge_confirmation": verdict.confirmation,
        "rejudge_variant": verdict.variant[:200],
        "rejudge_variant_slate": verdict.variant_slate[:32],
        "rejudge_agreed": None if verdict.tier == errors.INFRASTRUCTURE else verdict.passed,
    }
    if changes["rejudge_agreed"] is False:
        changes.update(result_fields(verdict), worker_host=worker_host[:255])
        Completion.objects.filter(pk=completion_id).update(
            error=f"re-judged by a maintainer: {verdict.reason or verdict.category}", updated_at=now
        )
    for name, value in changes.items():
        setattr(result, name, value)
    result.save(update_fields=list(changes))
    run_refresh(run)
    _run_verification_refresh(run)
    return result


# The name starts with "test_": keep pytest from collecting it where a test module imports it.
test_result_rejudge_record.__test__ = False  # type: ignore[attr-defined]


def _run_verification_refresh(run: EvaluationRun) -> None:
    """``rerun`` once every pass of a run was re-judged conclusively, the source's own level otherwise
    (``uploaded``, ``generated``).

    Precondition: the caller holds the run's row lock. Other verification levels are left alone.
    """
    if run.source not in UNVERIFIED_LEVEL:
        return
    levels = (UNVERIFIED_LEVEL[run.source], EvaluationRun.Verification.RERUN)
    if run.verification not in levels:
        return
    results = TestResult.objects.filter(completion__run=run)
    rejudged = results.filter(rejudged_at__isnull=False).exclude(rejudge_agreed__isnull=True).exists()
    open_passes = results.filter(outcome=TestResult.Outcome.PASSED).exclude(rejudge_agreed=True).exists()
    level = levels[1] if rejudged and not open_passes else levels[0]
    if run.verification != level:
        run.verification = level
        run.save(update_fields=["verification"])
