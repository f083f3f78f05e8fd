"""Evaluation runs as durable, leased work: creating, cancelling and re-running runs, leases, the reaper.

Life of a completion (``Completion.stage``)::

    pending_generation -> generating -> pending_test -> testing -> done
                 \\-> failed (generation failed for good)        \\-> cancelled (run cancelled)

A worker takes an item with ``lease_acquire`` (a conditional update from the waiting stage, or a takeover
of an expired lease), renews the lease with ``lease_renew`` while it works and records the outcome through
``completion_record_generation`` or ``verdicts.test_result_record``. ``leases_reap`` (beat, every
``RCB_REAPER_INTERVAL_S``) re-queues items whose lease expired and fails an item after
``Completion.MAX_ATTEMPTS`` lost attempts. ``Completion.attempts`` counts leased attempts of the *current*
stage (it restarts at 0 when generation hands the item to testing).

Locking: every writer that touches a run's completions first locks the run row (``run_state.run_lock``),
so that the counts refreshed at the end of each write see every committed result and exactly one writer
finishes the run. Lock order is always run -> completion (model -> completion for generation leases).
Messages are sent after commit; a duplicate or stale message is harmless because a worker that cannot
take the lease returns at once and a second verdict for a completion is ignored.
"""

from __future__ import annotations

import enum
import logging
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from contributions.models import Release, Snippet, TaskVersion
from evaluation import dispatch
from evaluation.models import Completion, EvaluationRun, LanguageModel, RunEvent, TestResult
from evaluation.services.run_state import ACTIVE_STAGES, Stage, run_lock, run_refresh
from evaluation.services.verdicts import test_result_record
from evaluation.signals import results_recorded
from researchcodebench import errors
from researchcodebench.predictions import Prediction, answer_code
from researchcodebench.problems import TEMPLATES
from researchcodebench.runner import Verdict

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

log = logging.getLogger(__name__)

LEASED_STAGES = (Stage.GENERATING, Stage.TESTING)
#: The stage a lost item goes back to.
WAITING_STAGE = {Stage.GENERATING: Stage.PENDING_GENERATION, Stage.TESTING: Stage.PENDING_TEST}
#: Items whose message the reaper sends again in one pass (the rest follow on the next pass).
RESEND_BATCH = 500


class RunError(ValueError):
    """A run cannot be created or changed as asked (the message says which argument is wrong)."""


class LeaseResult(enum.Enum):
    ACQUIRED = "acquired"
    #: the model already has ``max_concurrency`` completions generating: try again shortly
    BUSY = "busy"
    #: someone else holds the item, it is past this stage, cancelled, or out of attempts
    UNAVAILABLE = "unavailable"


@dataclass
class ReapReport:
    """What one reaper pass did (completion ids)."""

    requeued: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    resent: list[int] = field(default_factory=list)
    runs_finished: list[int] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------- messages


def _enqueue(generation: Sequence[int] = (), tests: Sequence[tuple[int, bool]] = ()) -> None:
    """Send the messages once the current transaction commits (never for rolled-back rows)."""
    generation, tests = list(generation), list(tests)
    if generation:
        transaction.on_commit(lambda: dispatch.completion_generate(generation))
    if tests:
        transaction.on_commit(lambda: dispatch.completion_test(tests))


def _test_items(completions: Iterable[Completion]) -> list[tuple[int, bool]]:
    ids = [c.pk for c in completions]
    gpu = dict(Completion.objects.filter(pk__in=ids).values_list("pk", "snippet__task_version__needs_gpu"))
    return [(pk, bool(gpu.get(pk))) for pk in ids]


# ---------------------------------------------------------------------------------------------- counts


def _user_label(by: AbstractBaseUser | str | None) -> str:
    if by is None:
        return "the system"
    return by if isinstance(by, str) else by.get_username()


# ---------------------------------------------------------------------------------------------- runs


def _versions_of(release: Release | None, task_versions: Iterable[TaskVersion] | None) -> list[TaskVersion]:
    if task_versions is not None:
        return list(task_versions)
    if release is not None:
        return list(release.task_versions.select_related("task"))
    raise RunError("give a release or task versions")


def _run_arguments_check(
    *, template: str, source: str, verification: str, n_completions: int, has_predictions: bool
) -> None:
    """``RunError`` for an unknown template, source or verification level, fewer than one completion per
    snippet, an uploaded run without predictions or a generated run with some."""
    if template not in TEMPLATES:
        raise RunError(f"unknown template {template!r}; choose one of {', '.join(TEMPLATES)}")
    if source not in EvaluationRun.Source.values:
        raise RunError(f"unknown source {source!r}")
    if verification not in EvaluationRun.Verification.values:
        raise RunError(f"unknown verification level {verification!r}")
    if n_completions < 1:
        raise RunError("the number of completions per snippet must be at least 1")
    if source == EvaluationRun.Source.UPLOADED and not has_predictions:
        raise RunError("an uploaded run needs predictions")
    if source == EvaluationRun.Source.GENERATED and has_predictions:
        raise RunError("a generated run takes no predictions")


def _snippets_of(versions: list[TaskVersion]) -> list[Snippet]:
    """The snippets of ``versions`` in the order a run's items are made: by task key, then document order."""
    return list(
        Snippet.objects.filter(task_version__in=versions)
        .select_related("task_version__task")
        .order_by("task_version__task__key", "ordinal")
    )


def _completions_create(
    *, run: EvaluationRun, snippets: list[Snippet], predictions: Iterable[Prediction] | None
) -> None:
    """Create the items of a new ``run`` and queue them after commit: without ``predictions`` one per
    snippet and index, queued for generation; else one per prediction (``_uploaded_completions``), queued
    for testing."""
    if predictions is None:
        rows = [
            Completion(run=run, snippet=s, completion_idx=i, stage=Stage.PENDING_GENERATION)
            for s in snippets
            for i in range(run.n_completions)
        ]
    else:
        rows = _uploaded_completions(run=run, snippets=snippets, predictions=predictions)
    created = Completion.objects.bulk_create(rows, batch_size=500)
    if predictions is None:
        _enqueue(generation=[c.pk for c in created])
    else:
        _enqueue(tests=_test_items(created))


def _uploaded_completions(
    *, run: EvaluationRun, snippets: list[Snippet], predictions: Iterable[Prediction]
) -> list[Completion]:
    """One completion (not saved) per prediction, holding its response and code, waiting for its test.

    ``RunError`` for a prediction naming a task or snippet not among ``snippets``, an index outside the
    run's ``n_completions``, or a second prediction for the same snippet and index."""
    by_key = {(s.task_version.task.key, s.name): s for s in snippets}
    seen: set[tuple[str, str, int]] = set()
    rows = []
    for p in predictions:
        snippet = by_key.get((p.task, p.snippet))
        if snippet is None:
            raise RunError(f"prediction for unknown task/snippet {p.task!r} / {p.snippet!r}")
        if not 0 <= p.completion_idx < run.n_completions:
            raise RunError(
                f"prediction {p.task!r} / {p.snippet!r}: completion index {p.completion_idx} "
                f"is outside 0..{run.n_completions - 1}"
            )
        key = (p.task, p.snippet, p.completion_idx)
        if key in seen:
            raise RunError(f"duplicate prediction for {p.task!r} / {p.snippet!r} #{p.completion_idx}")
        seen.add(key)
        code = answer_code(p, template=run.template, indent=snippet.indent)
        rows.append(
            Completion(
                run=run,
                snippet=snippet,
                completion_idx=p.completion_idx,
                stage=Stage.PENDING_TEST,
                raw_response=p.response or "",
                code=code or "",
                code_extracted=code is not None,
            )
        )
    return rows


@transaction.atomic
def run_create(
    *,
    model: LanguageModel,
    release: Release | None = None,
    task_versions: Iterable[TaskVersion] | None = None,
    template: str = "rcb-v2",
    with_paper: bool = True,
    n_completions: int = 1,
    temperature: float | None = None,
    source: str,
    verification: str,
    requester: AbstractBaseUser | None = None,
    predictions: Iterable[Prediction] | None = None,
    label: str = "",
    upload_key: str = "",
    upload_sha256: str = "",
) -> EvaluationRun:
    """Create a run and its completions, and queue the work after commit.

    ``source="generated"``: one completion per (snippet, index < n_completions) of every task version with
    files; each is queued for generation. ``source="uploaded"``: ``predictions`` (required) become
    completions that already hold their response/code and are queued for testing; snippets without a
    prediction are simply absent (``counts["expected"]`` versus ``counts["total"]`` is the coverage).
    Each answer becomes code through ``researchcodebench.predictions.answer_code`` (as the CLI does).
    Raises ``RunError`` for an unknown template/source, a prediction naming an unknown task or snippet,
    an index out of range, or a duplicate prediction.
    """
    _run_arguments_check(
        template=template,
        source=source,
        verification=verification,
        n_completions=n_completions,
        has_predictions=predictions is not None,
    )
    versions = [v for v in _versions_of(release, task_versions) if v.has_files]
    snippets = _snippets_of(versions)
    run = EvaluationRun.objects.create(
        model=model,
        release=release,
        template=template,
        with_paper=with_paper,
        n_completions=n_completions,
        temperature=temperature,
        source=source,
        verification=verification,
        requester=requester,
        label=label,
        upload_key=upload_key,
        upload_sha256=upload_sha256,
        counts={"expected": len(snippets) * n_completions},
    )
    if task_versions is not None:
        run.task_versions.set(versions)
    _completions_create(run=run, snippets=snippets, predictions=predictions)
    return run_refresh(run_lock(run.pk))


@transaction.atomic
def runs_create_for_new_task_version(
    *, task_version: TaskVersion, requester: AbstractBaseUser | None = None
) -> list[EvaluationRun]:
    """Queue a generated run of every active portal-run model (``management`` maintainer: the portal calls
    its API) on a newly published ``task_version``; returns the runs, by model key.

    Published and self-reported models are never queued: the portal does not generate their completions.
    A version without files, or a model that already has a run on exactly this version, gets none.
    """
    if not task_version.has_files:
        return []
    models = LanguageModel.objects.filter(active=True, management=LanguageModel.Management.MAINTAINER)
    queued = EvaluationRun.objects.filter(task_versions=task_version).values_list("model_id", flat=True)
    return [
        run_create(
            model=model,
            task_versions=[task_version],
            source=EvaluationRun.Source.GENERATED,
            verification=EvaluationRun.Verification.GENERATED,
            requester=requester,
            label=f"new task {task_version.task.key} v{task_version.number}",
        )
        for model in models.exclude(pk__in=list(queued)).order_by("key")
    ]


@transaction.atomic
def run_cancel(*, run: EvaluationRun, by: AbstractBaseUser | str | None) -> EvaluationRun:
    """Cancel a run: waiting and running items become ``cancelled``; workers drop them (their lease and
    their verdict are refused). A final run is returned unchanged."""
    run = run_lock(run.pk)
    if run.is_final:
        return run
    Completion.objects.filter(run=run, stage__in=ACTIVE_STAGES).update(
        stage=Stage.CANCELLED, lease_owner="", lease_expires_at=None, updated_at=timezone.now()
    )
    run.status = EvaluationRun.Status.CANCELLED
    run.status_reason = f"cancelled by {_user_label(by)}"
    run.finished_at = timezone.now()
    run.save(update_fields=["status", "status_reason", "finished_at"])
    return run_refresh(run)


#: A run's verification before a maintainer re-judged every pass, by its source (services/rejudge.py).
UNVERIFIED_LEVEL = {
    EvaluationRun.Source.UPLOADED: EvaluationRun.Verification.UPLOADED,
    EvaluationRun.Source.GENERATED: EvaluationRun.Verification.GENERATED,
}
#: ``run_rerun`` outcome keys besides the test outcomes.
RERUN_GENERATION_FAILED = "generation_failed"
RERUN_CANCELLED = "cancelled"


@transaction.atomic
def run_rerun(
    *,
    run: EvaluationRun,
    outcomes: Sequence[str] = ("infra_error",),
    by: AbstractBaseUser | str | None,
) -> int:
    """Queue items of ``run`` again; returns how many.

    ``outcomes`` names test outcomes (their ``TestResult`` is deleted and the item re-tested), and may
    include ``"generation_failed"`` and ``"cancelled"`` (those items restart at generation when they have
    no response yet). ``"infra_error"`` implies ``"generation_failed"``: both are failures of the
    infrastructure, not of the model. The run goes back to ``queued``.
    """
    wanted = set(outcomes)
    unknown = wanted - set(TestResult.Outcome.values) - {RERUN_GENERATION_FAILED, RERUN_CANCELLED}
    if unknown:
        raise RunError(f"unknown outcomes to re-run: {', '.join(sorted(unknown))}")
    if "infra_error" in wanted:
        wanted.add(RERUN_GENERATION_FAILED)
    run = run_lock(run.pk)
    now = timezone.now()
    retest = list(Completion.objects.filter(run=run, result__outcome__in=wanted))
    if TestResult.objects.filter(completion__in=retest).delete()[0]:
        # A delete sends no post_save: subscribers re-read the run's results (the board would otherwise
        # keep counting these verdicts until the items are judged again, or forever if the run is
        # cancelled first).
        results_recorded.send(sender=TestResult, run_id=run.pk)
    restart_stages = []
    if RERUN_GENERATION_FAILED in wanted:
        restart_stages.append(Stage.FAILED)
    if RERUN_CANCELLED in wanted:
        restart_stages.append(Stage.CANCELLED)
    restart = list(Completion.objects.filter(run=run, stage__in=restart_stages, result__isnull=True))
    generate = [
        c
        for c in restart
        if run.source == EvaluationRun.Source.GENERATED and not c.raw_response and c.code_extracted
    ]
    test = retest + [c for c in restart if c not in generate]
    reset = {"lease_owner": "", "lease_expires_at": None, "attempts": 0, "error": "", "updated_at": now}
    Completion.objects.filter(pk__in=[c.pk for c in generate]).update(stage=Stage.PENDING_GENERATION, **reset)
    Completion.objects.filter(pk__in=[c.pk for c in test]).update(stage=Stage.PENDING_TEST, **reset)
    count = len(generate) + len(test)
    if count:
        run.status = EvaluationRun.Status.QUEUED
        run.status_reason = f"re-run of {count} items requested by {_user_label(by)}"
        run.finished_at = None
        fields = ["status", "status_reason", "finished_at"]
        if run.verification == EvaluationRun.Verification.RERUN and run.source in UNVERIFIED_LEVEL:
            # New verdicts have not been re-judged by a maintainer (services/rejudge.py).
            run.verification = UNVERIFIED_LEVEL[run.source]
            fields.append("verification")
        run.save(update_fields=fields)
        _enqueue(generation=[c.pk for c in generate], tests=_test_items(test))
    run_refresh(run)
    return count


# ---------------------------------------------------------------------------------------------- leases


def _expired_lease_take(
    *, items: QuerySet[Completion], lease: dict, run_id: int, stage: Stage, now: datetime
) -> bool:
    """Take over the expired lease of the item (``items``: it alone) in ``stage`` with ``lease``, recording
    the lost attempt and its worker on the run; False when it holds no expired lease (or another taker won)."""
    lost = (
        items.select_for_update(no_key=True)
        .filter(stage=stage, lease_expires_at__lt=now)
        .values("id", "lease_owner", "lease_expires_at", "attempts")
        .first()
    )
    # Still conditional: where the row lock is a no-op (SQLite), only one taker's update matches.
    if lost is None or not items.filter(stage=stage, lease_expires_at__lt=now).update(**lease):
        return False
    _lost_attempt_record(
        run_id=run_id,
        completion_id=lost["id"],
        worker=lost["lease_owner"],
        attempts=lost["attempts"],
        stage=stage,
        expired_at=lost["lease_expires_at"].isoformat(timespec="seconds"),
        then=f"taken over by {lease['lease_owner']}",
    )
    return True


def lease_acquire(
    *, completion_id: int, owner: str, stage_from: str, stage_to: str, seconds: int
) -> LeaseResult:
    """Take an item: ``stage_from`` -> ``stage_to`` for ``seconds``, or take over an expired lease in
    ``stage_to`` (recorded on the run like the reaper's re-queue: the lost attempt and its worker); conditional
    updates, so exactly one worker wins. Refused after ``MAX_ATTEMPTS``
    attempts (the reaper fails the item). Generation leases also respect the model's
    ``max_concurrency`` across all processes (the model row is locked, FOR NO KEY UPDATE, while live leases
    are counted)."""
    now = timezone.now()
    with transaction.atomic():
        row = Completion.objects.filter(pk=completion_id).values("run_id", "run__model_id").first()
        if row is None:
            return LeaseResult.UNAVAILABLE
        if stage_to == Stage.GENERATING:
            # FOR NO KEY UPDATE: it serialises lease takers as FOR UPDATE would, but does not block the
            # FOR KEY SHARE that a foreign-key check on this model takes (a verdict's or a cancel's
            # commit), which would deadlock against a lease waiting on that transaction's rows.
            model = LanguageModel.objects.select_for_update(no_key=True).get(pk=row["run__model_id"])
            live = Completion.objects.filter(
                run__model=model, stage=Stage.GENERATING, lease_expires_at__gt=now
            ).count()
            if live >= model.max_concurrency:
                return LeaseResult.BUSY
        open_items = Completion.objects.filter(pk=completion_id, attempts__lt=Completion.MAX_ATTEMPTS)
        lease = {
            "stage": stage_to,
            "lease_owner": owner,
            "lease_expires_at": now + timedelta(seconds=seconds),
            "heartbeat_at": now,
            "attempts": F("attempts") + 1,
            "updated_at": now,
        }
        taken = open_items.filter(stage=stage_from).update(**lease) or _expired_lease_take(
            items=open_items, lease=lease, run_id=row["run_id"], stage=Stage(stage_to), now=now
        )
        if not taken:
            return LeaseResult.UNAVAILABLE
        status = (
            EvaluationRun.Status.GENERATING if stage_to == Stage.GENERATING else EvaluationRun.Status.TESTING
        )
        EvaluationRun.objects.filter(pk=row["run_id"], status=EvaluationRun.Status.QUEUED).update(
            status=status, started_at=now
        )
    return LeaseResult.ACQUIRED


def _lost_attempt_record(
    *, run_id: int, completion_id: int, worker: str, attempts: int, stage: Stage, expired_at: str, then: str
) -> None:
    """The run page's re-queued event of an attempt whose lease expired, whoever takes the item back: the
    reaper (``_requeue_lost``) or a worker taking the expired lease over (``lease_acquire``)."""
    RunEvent.objects.create(
        run_id=run_id,
        completion_id=completion_id,
        kind=RunEvent.Kind.REQUEUED,
        worker=worker,
        detail=(
            f"attempt {attempts} of {Completion.MAX_ATTEMPTS} lost while {stage.label.lower()} "
            f"(no heartbeat; lease expired at {expired_at}); {then}"
        ),
    )


def lease_renew(*, completion_id: int, owner: str, seconds: int) -> bool:
    """Heartbeat: extend the lease ``owner`` holds; False when it holds it no longer."""
    now = timezone.now()
    return bool(
        Completion.objects.filter(pk=completion_id, lease_owner=owner, stage__in=LEASED_STAGES).update(
            lease_expires_at=now + timedelta(seconds=seconds), heartbeat_at=now
        )
    )


def worker_lost_verdict(*, attempts: int, last_owner: str, expired_at: datetime | None) -> Verdict:
    """The verdict of an item whose workers were lost ``attempts`` times (infrastructure, never the model's)."""
    when = expired_at.isoformat(timespec="seconds") if expired_at else "unknown time"
    reason = (
        f"worker lost {attempts} times: the lease of the last worker ({last_owner or 'unknown'}) "
        f"expired at {when} without a result"
    )
    return Verdict(
        outcome="infra_error",
        category="worker_lost",
        tier=errors.INFRASTRUCTURE,
        reason=reason,
        exception_type="WorkerLost",
        exception_message=reason,
    )


def leases_reap(*, now: datetime | None = None) -> ReapReport:
    """Re-queue items whose lease expired (fail them after ``MAX_ATTEMPTS``), resend messages of items
    waiting longer than ``RCB_PENDING_RESEND_S`` (a message lost with a broker that drops unacked
    messages), and finish runs with nothing left to do. Each item is handled in its own transaction."""
    now = now or timezone.now()
    report = ReapReport()
    _reap_expired_leases(now, report)
    _resend_waiting(now, report)
    _finish_idle_runs(report)
    return report


def _reap_expired_leases(now: datetime, report: ReapReport) -> None:
    """Phase 1: every item whose lease expired goes back to its waiting stage, or fails after its last
    attempt."""
    expired = list(
        Completion.objects.filter(stage__in=LEASED_STAGES, lease_expires_at__lt=now).values_list(
            "pk", "run_id"
        )
    )
    for completion_id, run_id in expired:
        with transaction.atomic():
            run_lock(run_id)
            item = Completion.objects.filter(
                pk=completion_id, stage__in=LEASED_STAGES, lease_expires_at__lt=now
            ).first()
            if item is None:
                continue
            if item.attempts < Completion.MAX_ATTEMPTS:
                _requeue_lost(item, run_id, now)
                report.requeued.append(item.pk)
            else:
                _fail_lost(item, run_id, now)
                report.failed.append(item.pk)


def _requeue_lost(item: Completion, run_id: int, now: datetime) -> None:
    """A lost attempt with attempts left: back to the waiting stage, its message sent again."""
    expired_at = item.lease_expires_at.isoformat(timespec="seconds")
    waiting = WAITING_STAGE[Stage(item.stage)]
    Completion.objects.filter(pk=item.pk).update(
        stage=waiting,
        lease_owner="",
        lease_expires_at=None,
        updated_at=now,
        error=(
            f"attempt {item.attempts}: worker lost (lease of {item.lease_owner} expired at "
            f"{expired_at}); re-queued"
        ),
    )
    _lost_attempt_record(
        run_id=run_id,
        completion_id=item.pk,
        worker=item.lease_owner,
        attempts=item.attempts,
        stage=Stage(item.stage),
        expired_at=expired_at,
        then=f"queued for {Stage(waiting).label.lower()} again",
    )
    if waiting == Stage.PENDING_GENERATION:
        _enqueue(generation=[item.pk])
    else:
        _enqueue(tests=_test_items([item]))


def _fail_lost(item: Completion, run_id: int, now: datetime) -> None:
    """The last attempt lost: a worker-lost verdict (testing) or a failed generation."""
    verdict = worker_lost_verdict(
        attempts=item.attempts, last_owner=item.lease_owner, expired_at=item.lease_expires_at
    )
    if item.stage == Stage.TESTING:
        test_result_record(
            completion_id=item.pk, verdict=verdict, worker_host="reaper", attempt=item.attempts
        )
    else:
        Completion.objects.filter(pk=item.pk).update(
            stage=Stage.FAILED,
            lease_owner="",
            lease_expires_at=None,
            error=verdict.reason + " (during generation)",
            updated_at=now,
        )
        run_refresh(run_lock(run_id))
    RunEvent.objects.create(
        run_id=run_id,
        completion_id=item.pk,
        kind=RunEvent.Kind.FAILED,
        worker=item.lease_owner,
        detail=f"{verdict.reason} ({'testing' if item.stage == Stage.TESTING else 'generation'})",
    )


def _resend_waiting(now: datetime, report: ReapReport) -> None:
    """Phase 2: send again the messages of items that waited too long for a worker (up to
    ``RESEND_BATCH``; the rest follow on the next pass)."""
    stale = now - timedelta(seconds=settings.RCB_PENDING_RESEND_S)
    waiting_items = list(
        Completion.objects.filter(
            stage__in=(Stage.PENDING_GENERATION, Stage.PENDING_TEST),
            updated_at__lt=stale,
            run__status__in=(
                EvaluationRun.Status.QUEUED,
                EvaluationRun.Status.GENERATING,
                EvaluationRun.Status.TESTING,
            ),
        ).values_list("pk", "stage", "run_id")[:RESEND_BATCH]
    )
    if not waiting_items:
        return
    with transaction.atomic():
        ids = [pk for pk, _, _ in waiting_items]
        Completion.objects.filter(pk__in=ids).update(updated_at=now)
        per_run = Counter(run_id for _, _, run_id in waiting_items)
        RunEvent.objects.bulk_create(
            RunEvent(
                run_id=run_id,
                kind=RunEvent.Kind.RESENT,
                items=n,
                detail=(
                    f"{n} item{'s' if n != 1 else ''} waited over {settings.RCB_PENDING_RESEND_S} s "
                    "for a worker (a message lost by the broker, or never sent): sent again"
                ),
            )
            for run_id, n in sorted(per_run.items())
        )
        _enqueue(
            generation=[pk for pk, stage, _ in waiting_items if stage == Stage.PENDING_GENERATION],
            tests=_test_items(
                Completion(pk=pk) for pk, stage, _ in waiting_items if stage == Stage.PENDING_TEST
            ),
        )
    report.resent.extend(pk for pk, _, _ in waiting_items)


def _finish_idle_runs(report: ReapReport) -> None:
    """Phase 3: a run still open with no active item left is refreshed, which finishes it."""
    idle = EvaluationRun.objects.filter(
        status__in=(
            EvaluationRun.Status.QUEUED,
            EvaluationRun.Status.GENERATING,
            EvaluationRun.Status.TESTING,
        )
    ).exclude(completions__stage__in=ACTIVE_STAGES)
    for run_id in idle.values_list("pk", flat=True):
        with transaction.atomic():
            run = run_refresh(run_lock(run_id))
            if run.is_final:
                RunEvent.objects.create(
                    run_id=run.pk,
                    kind=RunEvent.Kind.FINISHED,
                    items=0,
                    detail=f"nothing was left to do: the run ended {run.get_status_display().lower()}",
                )
                report.runs_finished.append(run.pk)


# ---------------------------------------------------------------------------------------------- records


@transaction.atomic
def completion_record_generation(
    *,
    completion_id: int,
    owner: str,
    prompt_hash: str = "",
    response: str = "",
    code: str | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    cost_usd: Decimal | None = None,
    latency_s: float | None = None,
    error: str = "",
) -> Completion | None:
    """Record the end of a generation attempt by the lease holder ``owner``.

    ``error`` set: the item fails for good with that text (``stage=failed``). Otherwise the response and
    extracted ``code`` (None: no code could be extracted; the item is still tested and gets ``no_code``)
    are stored and the item is queued for testing. Returns None, changing nothing, when ``owner`` no
    longer holds the lease (lost it to the reaper, or the run was cancelled).
    """
    run_id = Completion.objects.filter(pk=completion_id).values_list("run_id", flat=True).first()
    if run_id is None:
        return None
    run = run_lock(run_id)
    item = Completion.objects.filter(pk=completion_id, stage=Stage.GENERATING, lease_owner=owner).first()
    if item is None:
        return None
    item.prompt_hash = prompt_hash
    item.raw_response = response
    item.input_tokens = input_tokens
    item.output_tokens = output_tokens
    item.cost_usd = cost_usd
    item.latency_s = latency_s
    item.lease_owner = ""
    item.lease_expires_at = None
    if error:
        item.stage = Stage.FAILED
        item.error = error
    else:
        item.stage = Stage.PENDING_TEST
        item.code = code or ""
        item.code_extracted = code is not None
        item.error = ""
        item.attempts = 0
    item.save()
    if not error:
        _enqueue(tests=_test_items([item]))
    run_refresh(run)
    return item
