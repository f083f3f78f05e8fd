"""Runs: the list, a run's page (live progress, coverage, score, failures, the reaper's events) and its results
as the core library's ``SnippetResult``."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.db.models import Count, Q, QuerySet, Sum
from django.shortcuts import get_object_or_404
from django.utils import timezone

from contributions.models import Snippet
from contributions.roles import can_maintain
from evaluation.models import Completion, EvaluationRun, RunEvent, TestResult
from evaluation.selectors.counts import SCORED_TIERS, RunCounts, run_counts
from researchcodebench import scoring
from researchcodebench.runner import FORGED_CATEGORY
from researchcodebench.scoring import SnippetResult
from researchcodebench.screen import CATEGORY as TAMPERING_CATEGORY

#: the window of recent results from which throughput (and so the ETA) is estimated
THROUGHPUT_WINDOW_S = 300
#: at most this many failed items are listed on a run page
RUN_ERRORS_SHOWN = 50


@dataclass(frozen=True)
class RunFilters:
    """Run list filters; an empty string means "any"."""

    model: str = ""
    status: str = ""
    source: str = ""
    release: str = ""


def run_list(*, filters: RunFilters) -> QuerySet[EvaluationRun]:
    """Runs, newest first, narrowed by model key, status, source and release name. A page of them gets its
    progress from ``runs_with_progress`` (counting every run's items before paging costs seconds on a
    large database)."""
    qs = EvaluationRun.objects.select_related("model", "release", "requester")
    if filters.model:
        qs = qs.filter(model__key=filters.model)
    if filters.status:
        qs = qs.filter(status=filters.status)
    if filters.source:
        qs = qs.filter(source=filters.source)
    if filters.release:
        qs = qs.filter(release__name=filters.release)
    return qs.order_by("-created_at", "-id")


#: the columns of a run the read API shows (``serializers.RunSerializer``): the rest of the run, its model
#: and its release (counts, request options, a release's files) is decoded per row for nothing otherwise
RUN_API_COLUMNS = (
    "id", "template", "with_paper", "n_completions", "source", "verification", "status", "status_reason",
    "cost_usd", "created_at", "finished_at", "model__key", "model__name", "model__developer",
    "model__open_weights", "model__knowledge_cutoff", "release__name", "requester__username",
)  # fmt: skip


def run_list_for_api(*, filters: RunFilters) -> QuerySet[EvaluationRun]:
    """``run_list`` with only ``RUN_API_COLUMNS`` read (a page of 100 runs: 14 -> 10 ms)."""
    return run_list(filters=filters).only(*RUN_API_COLUMNS)


def runs_with_progress(runs: Iterable[EvaluationRun]) -> list[EvaluationRun]:
    """The runs (a page of ``run_list``), each with ``n_items`` (completions) and ``n_final`` (done, failed
    or cancelled) set from one grouped query over these runs' items."""
    runs = list(runs)
    counts = {
        row["run_id"]: row
        for row in Completion.objects.filter(run_id__in=[r.pk for r in runs])
        .values("run_id")
        .annotate(n_items=Count("id"), n_final=Count("id", filter=Q(stage__in=FINAL_STAGES)))
    }
    for run in runs:
        row = counts.get(run.pk, {})
        run.n_items, run.n_final = row.get("n_items", 0), row.get("n_final", 0)
    return runs


def run_get(*, run_id: int) -> EvaluationRun:
    """The run with this id (runs are public); raises Http404 when there is none."""
    return get_object_or_404(EvaluationRun.objects.select_related("model", "release", "requester"), pk=run_id)


def run_requester_for_viewer(
    *, run: EvaluationRun, viewer: AbstractBaseUser | AnonymousUser | None
) -> str | None:
    """The requester's user name as ``viewer`` may see it: only the requester themselves and maintainers
    (``can_maintain``) see who asked for a run (runs are public, the people behind them are not); None for
    everyone else."""
    if run.requester_id is None or viewer is None or not viewer.is_authenticated:
        return None
    if viewer.pk == run.requester_id or can_maintain(viewer):
        return run.requester.get_username()
    return None


FINAL_STAGES = (Completion.Stage.DONE, Completion.Stage.FAILED, Completion.Stage.CANCELLED)
PENDING_STAGES = (Completion.Stage.PENDING_GENERATION, Completion.Stage.PENDING_TEST)
_OUTCOME_LABELS = dict(TestResult.Outcome.choices)


@dataclass(frozen=True)
class RunError:
    """A completion that failed, with the reason a person can act on."""

    completion_id: int
    task: str
    snippet: str
    completion_idx: int
    stage: str
    outcome: str
    reason: str
    #: where the snippet page is (``leaderboard:snippet``): its paper and exact snippet row
    paper_key: str = ""
    snippet_id: int | None = None
    #: its verdict of record is harness tampering (``run_progress_for_viewer`` redacts the reason)
    tampering: bool = False
    #: its verdict of record is forged: it passed an impossible variant (redacted the same way)
    forged: bool = False

    @property
    def stage_label(self) -> str:
        return str(Completion.Stage(self.stage).label)


@dataclass(frozen=True)
class RunProgress:
    """Where a run stands, computed from its items (never from a cached counter that could lag)."""

    total: int
    final: int
    stages: dict[str, int]
    outcomes: dict[str, int]
    percent: float
    #: pending items of earlier, unfinished runs in the same queue, per queue this run still waits on
    queue_ahead: dict[str, int]
    #: results per minute of this run over the recent window (None when it had none)
    run_rate_per_min: float | None
    eta_s: float | None
    #: None when nothing is known about it (results imported from the paper carry no cost or tokens)
    cost_usd: Decimal | None
    input_tokens: int
    output_tokens: int
    errors: list[RunError]
    n_errors: int
    covered_snippets: int
    release_snippets: int

    @property
    def stage_rows(self) -> list[tuple[str, str, int]]:
        """(value, label, count) of every stage, in pipeline order."""
        return [(v, label, self.stages.get(v, 0)) for v, label in Completion.Stage.choices]

    @property
    def outcome_rows(self) -> list[tuple[str, str, int]]:
        """(value, label, count) of every test outcome."""
        return [(v, label, self.outcomes.get(v, 0)) for v, label in TestResult.Outcome.choices]

    @property
    def tested(self) -> int:
        return sum(self.outcomes.values())

    @property
    def queue_position(self) -> int | None:
        """Items ahead in the busiest queue this run waits on; None when nothing of the run is pending."""
        return max(self.queue_ahead.values()) if self.queue_ahead else None


def queue_of(stage: str, needs_gpu: bool) -> str:
    """The Celery queue an item waiting in ``stage`` waits in (``evaluation/queues.py``)."""
    if stage == Completion.Stage.PENDING_GENERATION:
        return "site"
    return "eval-gpu" if needs_gpu else "eval-cpu"


def _pending_by_queue(qs: QuerySet[Completion]) -> dict[str, int]:
    counts: dict[str, int] = {}
    rows = (
        qs.filter(stage__in=PENDING_STAGES)
        .order_by()
        .values("stage", "snippet__task_version__needs_gpu")
        .annotate(n=Count("id"))
        .values_list("stage", "snippet__task_version__needs_gpu", "n")
    )
    for stage, needs_gpu, n in rows:
        queue = queue_of(stage, needs_gpu)
        counts[queue] = counts.get(queue, 0) + n
    return counts


def _queue_ahead(*, run: EvaluationRun, items: QuerySet[Completion]) -> dict[str, int]:
    """Per queue that ``run`` still waits in, the pending items of unfinished runs created before it."""
    if run.is_final:
        return {}
    mine = _pending_by_queue(items)
    if not mine:
        return {}
    earlier = Completion.objects.filter(
        run__created_at__lt=run.created_at,
        run__status__in=[
            EvaluationRun.Status.QUEUED,
            EvaluationRun.Status.GENERATING,
            EvaluationRun.Status.TESTING,
        ],
    )
    ahead = _pending_by_queue(earlier)
    return {queue: ahead.get(queue, 0) for queue in mine}


def _throughput(
    *, run: EvaluationRun, remaining: int, queue_ahead: dict[str, int], now: datetime
) -> tuple[float | None, float | None]:
    """``run``'s results per minute over the recent window and its ETA in seconds (see ``run_progress``);
    either is None when unknown."""
    window_start = now - timedelta(seconds=THROUGHPUT_WINDOW_S)
    recent = TestResult.objects.filter(created_at__gte=window_start)
    # Driven from the run's completions (its index), the window a filter of the count: the newest results
    # lie past the planner's statistics, which then expect none in the window and loop over the run's
    # completions once per recent result of every run (37 ms instead of 0.6 ms, measured).
    run_recent = Completion.objects.filter(run=run).aggregate(
        n=Count("result", filter=Q(result__created_at__gte=window_start))
    )["n"]
    run_rate = None
    eta_s = None
    if run_recent:
        # A run younger than the window has had less time to produce its results.
        began = max(window_start, run.started_at or run.created_at)
        elapsed = max((now - began).total_seconds(), 1.0)
        run_rate = run_recent / elapsed * 60
        eta_s = remaining / (run_recent / elapsed)
    elif remaining and not run.is_final:
        all_recent = recent.count()
        if all_recent:
            eta_s = (remaining + sum(queue_ahead.values())) / (all_recent / THROUGHPUT_WINDOW_S)
    if run.is_final:
        eta_s = None
    if run.source == EvaluationRun.Source.IMPORTED:
        # Imported verdicts are written in one go: their "throughput" is the import's speed, not testing's.
        run_rate = None
    return run_rate, eta_s


def _run_errors(items: QuerySet[Completion], n_errors: int) -> list[RunError]:
    """The first ``RUN_ERRORS_SHOWN`` of the ``n_errors`` failed items (failed generation, an error, an
    infrastructure verdict), by id, with only the columns their rows show.

    Two small queries rather than one: the ids of the failed items, whose infrastructure verdicts are found
    through the verdicts' outcome index (they are few), then the rows of the first ones. An ``OR`` across
    the join made PostgreSQL join every item of the run to its verdict, and an ``ORDER BY id`` with a limit
    made it walk the completions' primary key from the first run on (20-40 ms at 600,000 verdicts)."""
    if not n_errors:
        return []
    infra = TestResult.objects.filter(outcome=TestResult.Outcome.INFRA_ERROR, completion__in=items)
    failed = items.filter(
        Q(stage=Completion.Stage.FAILED) | ~Q(error="") | Q(id__in=infra.values("completion_id"))
    )
    shown = sorted(failed.order_by().values_list("id", flat=True))[:RUN_ERRORS_SHOWN]
    rows = (
        items.filter(id__in=shown)
        .order_by("id")
        .values_list(
            "id", "snippet_id", "completion_idx", "stage", "error", "snippet__name",
            "snippet__task_version__task__key", "snippet__task_version__task__paper__key", "result__id",
            "result__outcome", "result__category", "result__exception_type", "result__exception_message",
        )
    )  # fmt: skip
    return [_run_error(*row) for row in rows]


def run_progress(
    *, run: EvaluationRun, now: datetime | None = None, counts: RunCounts | None = None
) -> RunProgress:
    """Counts per stage and outcome, queue position, ETA, cost and errors of ``run``.

    Queue position: queues are first in, first out, so the items ahead of this run are the pending items
    of unfinished runs created before it that wait in a queue this run also waits in. The ETA divides the
    remaining items by this run's throughput over the last ``THROUGHPUT_WINDOW_S`` seconds; before the run
    has results it uses the throughput of all runs and counts the items ahead too; with no recent results
    at all it is None (unknown), never a guess. ``counts`` is ``run_counts(run=run)`` when the caller has it.
    """
    now = now or timezone.now()
    counts = counts or run_counts(run=run)
    items = Completion.objects.filter(run=run)
    stages, outcomes = counts.stages, counts.outcomes
    total = sum(stages.values())
    final = sum(stages.get(s, 0) for s in FINAL_STAGES)
    remaining = total - final
    queue_ahead = _queue_ahead(run=run, items=items)
    run_rate, eta_s = _throughput(run=run, remaining=remaining, queue_ahead=queue_ahead, now=now)
    sums = {"cost": counts.cost_usd, "tin": counts.input_tokens, "tout": counts.output_tokens}
    cost = sums["cost"] if sums["cost"] is not None else run.cost_usd
    errors = _run_errors(items, counts.n_errors)
    coverage = run_coverage(run=run)
    return RunProgress(
        total=total,
        final=final,
        stages=stages,
        outcomes=outcomes,
        percent=round(100 * final / total, 1) if total else (100.0 if run.is_final else 0.0),
        queue_ahead=queue_ahead,
        run_rate_per_min=run_rate,
        eta_s=eta_s,
        cost_usd=None if _cost_unknown(run, sums) else Decimal(cost or 0),
        input_tokens=sums["tin"] or run.input_tokens,
        output_tokens=sums["tout"] or run.output_tokens,
        errors=errors,
        n_errors=counts.n_errors,
        covered_snippets=coverage.covered_snippets,
        release_snippets=coverage.release_snippets,
    )


#: when the paper's published results were produced, as far as they say: the paper's first arXiv version
#: (arXiv:2506.02314v1, 2 June 2025); their runs' ``finished_at`` is only when they were imported
PUBLISHED_RESULTS_ON = datetime(2025, 6, 2, tzinfo=UTC)


def run_result_date(run: EvaluationRun) -> datetime | None:
    """When ``run``'s results were produced: the paper's publication for its published results, else when
    the run finished (None while it runs). The board's Date column and its date sort read this."""
    if run.verification == EvaluationRun.Verification.PUBLISHED:
        return PUBLISHED_RESULTS_ON
    return run.finished_at


def run_release_snippets(*, run: EvaluationRun) -> int:
    """How many snippets of its release ``run`` is expected to cover: the release's runnable snippets
    (task versions with files), or for results imported from the paper every snippet of the release (the
    paper's tasks may be catalogued without their files, yet its results cover them)."""
    snippets = Snippet.objects.filter(task_version__release_entries__release=run.release)
    if run.source != EvaluationRun.Source.IMPORTED:
        snippets = snippets.filter(task_version__has_files=True)
    return snippets.count()


@dataclass(frozen=True)
class RunCoverage:
    """What an upload's answer says of its run: its items, the snippets they cover and the release's."""

    items: int
    covered_snippets: int
    release_snippets: int


def run_coverage(*, run: EvaluationRun) -> RunCoverage:
    """``run``'s items and snippet coverage, as ``run_progress`` counts them, in two queries: the upload
    answers with these alone, not with the queue position, throughput and errors of a whole progress."""
    agg = Completion.objects.filter(run=run).aggregate(
        items=Count("id"), covered=Count("snippet_id", distinct=True)
    )
    release_snippets = run_release_snippets(run=run) if run.release_id else agg["covered"]
    return RunCoverage(items=agg["items"], covered_snippets=agg["covered"], release_snippets=release_snippets)


def _cost_unknown(run: EvaluationRun, sums: dict) -> bool:
    """No cost to show: an imported run that recorded neither a cost nor tokens (the paper's data has
    none; "$0" would claim the results were free)."""
    recorded = sums["cost"] or sums["tin"] or sums["tout"] or run.cost_usd or run.input_tokens
    return run.source == EvaluationRun.Source.IMPORTED and not recorded


@dataclass(frozen=True)
class RunScoreSummary:
    """A run's scores over the results it has (the core's ``line_rates``/``task_rates``, as the board
    scores it with every paper): percentages, None before any model-tier result."""

    scaled_pass_at_1: float | None
    pass_at_1: float | None
    results: int


def run_score(*, run: EvaluationRun, counts: RunCounts | None = None) -> RunScoreSummary:
    """Scaled Pass@1 and Pass@1 of ``run`` over its tested completions (those of ``run_snippet_results``),
    from the per-index totals of ``run_counts`` (one query unless ``counts`` is given): the same figures as
    ``line_rates``/``task_rates`` of the results, without reading every result."""
    counts = counts or run_counts(run=run)
    if not counts.task_totals:
        return RunScoreSummary(scaled_pass_at_1=None, pass_at_1=None, results=0)
    return RunScoreSummary(
        scaled_pass_at_1=scoring.rates_from_totals(counts.line_totals).mean,
        pass_at_1=scoring.rates_from_totals(counts.task_totals).mean,
        results=sum(n for _, n in counts.task_totals.values()),
    )


#: the most failed snippets a run page lists (the results CSV has every one)
RUN_FAILURES_SHOWN = 100


@dataclass(frozen=True)
class RunFailure:
    """A completion of a run that failed its test (model tier): where its snippet page is and why."""

    paper_key: str
    task: str
    snippet: str
    snippet_id: int
    completion_idx: int
    outcome: str
    category: str


def run_failures(
    *, run: EvaluationRun, limit: int = RUN_FAILURES_SHOWN, counts: RunCounts | None = None
) -> tuple[list[RunFailure], int]:
    """The first ``limit`` failed completions of ``run`` (model tier: an infrastructure failure is the
    portal's, listed under errors) by task, snippet and index, and how many there are (``run_counts``, one
    query unless ``counts`` is given, and the list's query when there are any)."""
    counts = counts or run_counts(run=run)
    if not counts.n_failures:
        return [], 0
    failed = TestResult.objects.filter(completion__run=run, passed=False, tier__in=SCORED_TIERS)
    rows = failed.order_by(
        "completion__snippet__task_version__task__key", "completion__snippet__ordinal", "completion__completion_idx"
    ).values_list(
        "completion__snippet__task_version__task__paper__key", "completion__snippet__task_version__task__key",
        "completion__snippet__name", "completion__snippet_id", "completion__completion_idx", "outcome", "category",
    )[:limit]  # fmt: skip
    return [RunFailure(*row) for row in rows], counts.n_failures


RUN_EVENTS_SHOWN = 50


@dataclass(frozen=True)
class RunEventRow:
    """One recovery of a run (``RunEvent``) as the run page shows it; ``worker`` is "" unless the viewer
    maintains the portal."""

    at: datetime
    kind: str
    kind_label: str
    items: int
    detail: str
    worker: str
    task: str
    snippet: str
    completion_idx: int | None


@dataclass(frozen=True)
class RunRecovery:
    """What the reaper did to a run: totals per kind over all its events, and the latest ``rows``."""

    totals: dict[str, int]
    n_events: int
    rows: list[RunEventRow]
    max_attempts: int = Completion.MAX_ATTEMPTS


def run_recovery(*, run: EvaluationRun, viewer: AbstractBaseUser | AnonymousUser) -> RunRecovery:
    """The reaper's events of ``run``, newest first (at most ``RUN_EVENTS_SHOWN``), and items per kind
    over all of them (one query when there are none, two otherwise)."""
    events = RunEvent.objects.filter(run=run)
    per_kind = list(events.order_by().values("kind").annotate(n=Sum("items"), events=Count("id")))
    totals = {row["kind"]: row["n"] for row in per_kind}
    n_events = sum(row["events"] for row in per_kind)
    show_worker = can_maintain(viewer)
    rows = (
        [
            RunEventRow(
                at=e.created_at,
                kind=e.kind,
                kind_label=e.get_kind_display(),
                items=e.items,
                detail=e.detail,
                worker=e.worker if show_worker else "",
                task=e.completion.snippet.task_version.task.key if e.completion else "",
                snippet=e.completion.snippet.name if e.completion else "",
                completion_idx=e.completion.completion_idx if e.completion else None,
            )
            for e in events.select_related("completion__snippet__task_version__task")[:RUN_EVENTS_SHOWN]
        ]
        if totals
        else []
    )
    return RunRecovery(totals=totals, n_events=n_events, rows=rows)


def _run_error(
    completion_id: int,
    snippet_id: int,
    completion_idx: int,
    stage: str,
    error: str,
    snippet: str,
    task: str,
    paper_key: str,
    result_id: int | None,
    outcome: str | None,
    category: str | None,
    exception_type: str | None,
    exception_message: str | None,
) -> RunError:
    """A row of ``_run_errors`` (the verdict's columns are None when the item has no verdict)."""
    if error:
        reason = error
    elif result_id is not None:
        detail = ": ".join(x for x in (exception_type, exception_message) if x)
        reason = detail or category or _OUTCOME_LABELS.get(outcome, outcome)
    else:
        reason = "failed without a recorded reason"
    return RunError(
        completion_id=completion_id,
        task=task,
        snippet=snippet,
        completion_idx=completion_idx,
        stage=stage,
        outcome=outcome or "",
        reason=reason,
        paper_key=paper_key,
        snippet_id=snippet_id,
        tampering=category == TAMPERING_CATEGORY,
        forged=category == FORGED_CATEGORY,
    )


def run_snippet_results(*, run: EvaluationRun) -> list[SnippetResult]:
    """Every tested completion of ``run`` as the core library's ``SnippetResult`` (task = task key, lines =
    the snippet's N), ordered by task, snippet order and completion index; feed it to
    ``researchcodebench.scoring``.

    Results of the infrastructure tier are left out: they say nothing about the model and never count
    against it (docs/scoring.md); completions without a test result are not results yet.
    """
    rows = (
        TestResult.objects.filter(completion__run=run)
        .exclude(tier=TestResult.Tier.INFRASTRUCTURE)
        .order_by(
            "completion__snippet__task_version__task__key",
            "completion__snippet__ordinal",
            "completion__completion_idx",
        )
        .values_list(
            "completion__snippet__task_version__task__key",
            "completion__snippet__name",
            "completion__snippet__lines",
            "completion__completion_idx",
            "passed",
        )
    )
    return [
        SnippetResult(task=task, snippet=name, lines=lines, completion_idx=idx, passed=passed)
        for task, name, lines, idx, passed in rows
    ]
