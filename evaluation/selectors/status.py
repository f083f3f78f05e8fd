"""The status page: workers alive, validations in progress, the oldest waiting item, throughput."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count, Min, QuerySet, Sum
from django.utils import timezone

from contributions.models import ProposalRevision
from evaluation.models import Completion, EvaluationRun, ResultsPerMinute, WorkerHeartbeat
from evaluation.selectors.runs import PENDING_STAGES, queue_of


def worker_list_alive(*, within_s: int | None = None) -> QuerySet[WorkerHeartbeat]:
    """Workers whose last heartbeat is recent (three heartbeat periods by default) and not stopped."""
    window = within_s if within_s is not None else 3 * settings.CELERY_WORKER_HEARTBEAT_S
    cutoff = timezone.now() - timedelta(seconds=window)
    return WorkerHeartbeat.objects.filter(status=WorkerHeartbeat.Status.ONLINE, last_seen_at__gte=cutoff)


#: the window over which the status page counts recorded results
STATUS_THROUGHPUT_WINDOW_S = 3600
_ACTIVE_RUN_STATUSES = (
    EvaluationRun.Status.QUEUED,
    EvaluationRun.Status.GENERATING,
    EvaluationRun.Status.TESTING,
)


@dataclass(frozen=True)
class ValidationsInProgress:
    """Revisions whose validation battery is running. Counts only: the status page is public and an
    unpublished proposal is visible to its author and the maintainers alone."""

    count: int
    oldest_started_at: datetime | None


def validation_in_progress_summary() -> ValidationsInProgress:
    """How many revisions are being validated now (``ProposalRevision`` in ``RUNNING``) and since when the
    oldest of them runs."""
    agg = ProposalRevision.objects.filter(
        validation_status=ProposalRevision.ValidationStatus.RUNNING
    ).aggregate(n=Count("id"), oldest=Min("validation_started_at"))
    return ValidationsInProgress(count=agg["n"], oldest_started_at=agg["oldest"])


@dataclass(frozen=True)
class WaitingItem:
    """The completion that has waited longest for a worker, and in which queue it waits."""

    completion_id: int
    run_id: int
    stage: str
    queue: str
    queued_at: datetime

    @property
    def stage_label(self) -> str:
        return str(Completion.Stage(self.stage).label)


def completion_oldest_waiting() -> WaitingItem | None:
    """The oldest completion of an unfinished run in a waiting stage (``PENDING_STAGES``), by creation
    (``updated_at`` moves whenever the reaper re-sends an item, so it does not say how long it waited);
    None when nothing waits."""
    row = (
        Completion.objects.filter(stage__in=PENDING_STAGES, run__status__in=_ACTIVE_RUN_STATUSES)
        .order_by("created_at", "id")
        .values_list("id", "run_id", "stage", "snippet__task_version__needs_gpu", "created_at")
        .first()
    )
    if row is None:
        return None
    completion_id, run_id, stage, needs_gpu, created_at = row
    return WaitingItem(
        completion_id=completion_id,
        run_id=run_id,
        stage=stage,
        queue=queue_of(stage, needs_gpu),
        queued_at=created_at,
    )


def result_throughput(
    *, window_s: int = STATUS_THROUGHPUT_WINDOW_S, now: datetime | None = None
) -> dict[str, int]:
    """Test results recorded in the last ``window_s`` seconds, per test queue (``eval-cpu`` and ``eval-gpu``,
    both always present), counted by whole minutes: the minute the window starts in counts whole. Read
    from the per-minute counters ``test_result_record`` keeps (``ResultsPerMinute``), at most a window's
    worth of small rows whatever the throughput. Results of imported runs are not counted: they come from a
    paper's files in one go and never went through a queue."""
    since = ((now or timezone.now()) - timedelta(seconds=window_s)).replace(second=0, microsecond=0)
    counts = {"eval-cpu": 0, "eval-gpu": 0}
    rows = (
        ResultsPerMinute.objects.filter(minute__gte=since)
        .order_by()
        .values("queue")
        .annotate(n=Sum("results"))
        .values_list("queue", "n")
    )
    for queue, n in rows:
        counts[queue] = counts.get(queue, 0) + n
    return counts
