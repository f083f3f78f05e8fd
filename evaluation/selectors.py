"""Reads of the evaluation app."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.db.models import BooleanField, Count, ExpressionWrapper, Min, Prefetch, Q, QuerySet, Sum
from django.shortcuts import get_object_or_404
from django.utils import timezone

from contributions.models import ProposalRevision, Snippet
from contributions.roles import can_maintain
from evaluation.models import (
    Completion,
    EvaluationRun,
    LanguageModel,
    PredictionsUpload,
    ResultsPerMinute,
    RunEvent,
    TestResult,
    WorkerHeartbeat,
)
from researchcodebench import scoring
from researchcodebench.runner import FORGED_CATEGORY
from researchcodebench.scoring import SnippetResult
from researchcodebench.screen import CATEGORY as TAMPERING_CATEGORY


def worker_list_alive(*, within_s: int | None = None) -> QuerySet[WorkerHeartbeat]:
    """Workers whose last heartbeat is recent (three heartbeat periods by default) and not stopped."""
    window = within_s if within_s is not None else 3 * settings.CELERY_WORKER_HEARTBEAT_S
    cutoff = timezone.now() - timedelta(seconds=window)
    return WorkerHeartbeat.objects.filter(status=WorkerHeartbeat.Status.ONLINE, last_seen_at__gte=cutoff)


# --- Runs: list, detail and live progress (pages and API) ---------------------------------------------------

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
#: the tiers whose verdicts score the model (an infrastructure verdict never counts for or against it)
SCORED_TIERS = (TestResult.Tier.NONE, TestResult.Tier.MODEL)
_OUTCOME_LABELS = dict(TestResult.Outcome.choices)


@dataclass(frozen=True)
class RunCounts:
    """What the run page counts over a run's completions and their verdicts of record, read in one pass
    (``run_counts``). Stages and outcomes list only those present, like a ``GROUP BY``."""

    stages: dict[str, int]
    outcomes: dict[str, int]
    #: sums over the completions, None when none recorded any
    cost_usd: Decimal | None
    input_tokens: int | None
    output_tokens: int | None
    #: failed items (failed generation, an error, or an infrastructure verdict), as ``run_progress`` lists them
    n_errors: int
    #: failed verdicts of the scored tiers, as ``run_failures`` lists them
    n_failures: int
    n_tampering: int
    #: verdicts of record by ``confirmation_kind``: passes confirmed and unconfirmed, verdicts forged
    n_confirmed: int
    n_unconfirmed: int
    n_forged: int
    #: verdicts whose re-judge was asked for, and passes not re-judged conclusively
    n_rejudges: int
    open_passes: int
    #: per completion index with scored verdicts: (lines passed, lines) and (results passed, results)
    line_totals: dict[int, tuple[int, int]]
    task_totals: dict[int, tuple[int, int]]


def run_counts(*, run: EvaluationRun) -> RunCounts:
    """Counts per stage and outcome, cost and tokens, errors, failures, tampering, confirmations, re-judges and
    the score's totals of ``run``: one query that joins the run's completions to their verdicts once and groups them by
    the facts the figures are made of (a few dozen groups, whatever the run's size), tallied here. Asking
    the database for each figure as a filtered aggregate cost 8 ms of query building per page."""
    rows = (
        Completion.objects.filter(run=run)
        .order_by()
        .annotate(
            has_error=ExpressionWrapper(~Q(error=""), output_field=BooleanField()),
            rejudge_asked=ExpressionWrapper(
                Q(result__rejudge_requested_at__isnull=False), output_field=BooleanField()
            ),
        )
        .values(
            "completion_idx", "stage", "has_error", "rejudge_asked", "result__outcome", "result__tier",
            "result__passed", "result__category", "result__confirmation", "result__rejudge_agreed",
        )
        .annotate(
            n=Count("id"), cost=Sum("cost_usd"), tin=Sum("input_tokens"), tout=Sum("output_tokens"),
            lines=Sum("snippet__lines"),
        )
    )  # fmt: skip
    tally = _RunTally()
    for row in rows:
        tally.add(row)
    return tally.counts()


class _RunTally:
    """``run_counts``' sums over its groups."""

    def __init__(self) -> None:
        self.stages: Counter[str] = Counter()
        self.outcomes: Counter[str] = Counter()
        self.figures: Counter[str] = Counter()
        self.sums: dict[str, int | Decimal] = {}
        self.lines: dict[int, list[int]] = {}
        self.tasks: dict[int, list[int]] = {}

    def add(self, row: dict) -> None:
        n, outcome = row["n"], row["result__outcome"]
        self.stages[row["stage"]] += n
        if outcome is not None:
            self.outcomes[outcome] += n
        for key in ("cost", "tin", "tout"):
            if row[key] is not None:
                self.sums[key] = self.sums.get(key, 0) + row[key]
        figures = self.figures
        figures["errors"] += n * (
            row["stage"] == Completion.Stage.FAILED
            or row["has_error"]
            or outcome == TestResult.Outcome.INFRA_ERROR
        )
        figures["tampering"] += n * (row["result__category"] == TAMPERING_CATEGORY)
        kind = confirmation_kind(
            outcome=outcome or "",
            category=row["result__category"] or "",
            confirmation=row["result__confirmation"] or "",
        )
        if kind:
            figures[kind] += n
        figures["rejudges"] += n * bool(row["rejudge_asked"])
        figures["open_passes"] += n * (
            outcome == TestResult.Outcome.PASSED and not row["result__rejudge_agreed"]
        )
        if row["result__tier"] in SCORED_TIERS:
            passed = bool(row["result__passed"])
            figures["failures"] += n * (not passed)
            lines = self.lines.setdefault(row["completion_idx"], [0, 0])
            tasks = self.tasks.setdefault(row["completion_idx"], [0, 0])
            lines[0] += (row["lines"] or 0) * passed
            lines[1] += row["lines"] or 0
            tasks[0] += n * passed
            tasks[1] += n

    def counts(self) -> RunCounts:
        return RunCounts(
            stages={v: self.stages[v] for v in Completion.Stage.values if self.stages[v]},
            outcomes={v: self.outcomes[v] for v in TestResult.Outcome.values if self.outcomes[v]},
            cost_usd=self.sums.get("cost"),
            input_tokens=self.sums.get("tin"),
            output_tokens=self.sums.get("tout"),
            n_errors=self.figures["errors"],
            n_failures=self.figures["failures"],
            n_tampering=self.figures["tampering"],
            n_confirmed=self.figures[TestResult.Confirmation.CONFIRMED],
            n_unconfirmed=self.figures[TestResult.Confirmation.UNCONFIRMED],
            n_forged=self.figures[TestResult.Confirmation.FORGED],
            n_rejudges=self.figures["rejudges"],
            open_passes=self.figures["open_passes"],
            line_totals={idx: (passed, total) for idx, (passed, total) in sorted(self.lines.items())},
            task_totals={idx: (passed, total) for idx, (passed, total) in sorted(self.tasks.items())},
        )


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


def _queue_of(stage: str, needs_gpu: bool) -> str:
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
        queue = _queue_of(stage, needs_gpu)
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


def language_model_list() -> QuerySet[LanguageModel]:
    """Every language model, by display name, with its number of runs."""
    return LanguageModel.objects.annotate(n_runs=Count("runs")).order_by("name")


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


# --- Runs and their results for the read API --------------------------------------------------------------


def run_result_list(*, run: EvaluationRun, outcome: str = "", paper: str = "") -> QuerySet[Completion]:
    """The completions of ``run`` with their verdict of record (``result``, absent until tested), by task,
    snippet and completion index; ``outcome`` and ``paper`` (a paper key) narrow it, empty = any.

    Only the columns the results table shows are read (a task version's files and a completion's answer are
    large), and the verdicts come in a second query for the page's completions only: joined, PostgreSQL
    hashed every verdict of the benchmark to find a page's hundred (420 ms at 600,000 verdicts)."""
    qs = (
        Completion.objects.filter(run=run)
        .select_related("snippet__task_version__task__paper")
        .only(
            "id", "run_id", "snippet_id", "completion_idx", "stage", "overlap_reference_tokens",
            "overlap_longest_run", "overlap_ngram_share", "near_verbatim", "snippet__name", "snippet__lines",
            "snippet__ordinal", "snippet__checked_by_test", "snippet__task_version__task__key",
            "snippet__task_version__task__paper__key",
        )
        .prefetch_related(
            Prefetch(
                "result",
                queryset=TestResult.objects.only(
                    "id", "completion_id", "outcome", "passed", "category", "tier", "exit_code", "duration_s"
                ),
            )
        )
        .order_by("snippet__task_version__task__key", "snippet__ordinal", "completion_idx", "id")
    )  # fmt: skip
    if outcome:
        qs = qs.filter(result__outcome=outcome)
    if paper:
        qs = qs.filter(snippet__task_version__task__paper__key=paper)
    return qs


# --- Harness tampering and maintainers' re-judges on the run page (docs/integrity.md) -------------------

#: what the public sees instead of a tampering verdict's reason (the construct and line are for maintainers)
TAMPERING_REDACTED = "harness tampering (the details are shown to maintainers)"
_TAMPERING_PREFIX = "harness tampering: "
#: "file.py:12: " in front of each finding of a reason (``screen.Finding.describe``)
_FINDING_AT = re.compile(r"(?:^|; )([^\s:;]+):(\d+): ")


@dataclass(frozen=True)
class TamperingFinding:
    """One construct a tampering verdict names; ``file``/``line`` empty for the harness's runtime checks,
    which name what was replaced rather than where."""

    construct: str
    file: str = ""
    line: int | None = None


@dataclass(frozen=True)
class TamperingHit:
    """A completion of a run failed as harness tampering, with the constructs its reason names."""

    completion_id: int
    paper_key: str
    task: str
    snippet: str
    completion_idx: int
    reason: str
    findings: list[TamperingFinding]


def tampering_findings(reason: str) -> list[TamperingFinding]:
    """The constructs of a harness-tampering reason, e.g. ``harness tampering: m.py:29: use of
    sys._getframe; m.py:30: use of the frame attribute f_back`` -> two findings with file and line; a
    reason without locations (a runtime check) is one finding without them."""
    start = reason.find(_TAMPERING_PREFIX)
    text = reason[start + len(_TAMPERING_PREFIX) :] if start >= 0 else reason
    marks = list(_FINDING_AT.finditer(text))
    if not marks or marks[0].start() != 0:
        return [TamperingFinding(construct=text.strip())] if text.strip() else []
    findings = []
    for mark, following in zip(marks, [*marks[1:], None], strict=True):
        end = following.start() if following is not None else len(text)
        findings.append(
            TamperingFinding(
                construct=text[mark.end() : end].strip(), file=mark.group(1), line=int(mark.group(2))
            )
        )
    return findings


def run_tampering_list(*, run: EvaluationRun, counts: RunCounts | None = None) -> list[TamperingHit]:
    """The completions of ``run`` whose verdict of record is harness tampering, in task, snippet and index
    order (for maintainers: the reason names the construct and its line); no query when ``counts``
    (``run_counts``) has none."""
    if counts is not None and not counts.n_tampering:
        return []
    items = (
        Completion.objects.filter(run=run, result__category=TAMPERING_CATEGORY)
        .select_related("snippet__task_version__task__paper", "result")
        .order_by("snippet__task_version__task__key", "snippet__ordinal", "completion_idx", "id")
    )
    return [
        TamperingHit(
            completion_id=c.pk,
            paper_key=c.snippet.task_version.task.paper.key,
            task=c.snippet.task_version.task.key,
            snippet=c.snippet.name,
            completion_idx=c.completion_idx,
            reason=c.error,
            findings=tampering_findings(c.error),
        )
        for c in items
    ]


def run_progress_for_viewer(
    *,
    run: EvaluationRun,
    viewer: AbstractBaseUser | AnonymousUser | None,
    now: datetime | None = None,
    counts: RunCounts | None = None,
) -> RunProgress:
    """``run_progress`` as ``viewer`` may see it: for everyone but maintainers (``can_maintain``), the reason
    of a harness-tampering verdict in the error list is replaced by ``TAMPERING_REDACTED``, and that of a
    forged verdict by ``FORGED_REDACTED`` (the outcome counts stay). Both are accusations a maintainer
    should look at before the construct and line, or the variant, are public."""
    progress = run_progress(run=run, now=now, counts=counts)
    if not progress.errors or can_maintain(viewer):
        return progress
    if not any(e.tampering or e.forged for e in progress.errors):
        return progress
    errors = [
        replace(e, reason=TAMPERING_REDACTED if e.tampering else FORGED_REDACTED)
        if e.tampering or e.forged
        else e
        for e in progress.errors
    ]
    return replace(progress, errors=errors)


@dataclass(frozen=True)
class RejudgeRow:
    """One re-judged (or waiting) pass of a run. ``by`` is None unless the viewer is a maintainer."""

    completion_id: int
    paper_key: str
    task: str
    snippet: str
    completion_idx: int
    requested_at: datetime
    rejudged_at: datetime | None
    outcome: str
    category: str
    reason: str
    agreed: bool | None
    by: str | None

    @property
    def state(self) -> str:
        """One of "waiting", "agreed", "changed" (the re-judge became the verdict of record), "inconclusive"."""
        if self.rejudged_at is None:
            return "waiting"
        if self.agreed is None:
            return "inconclusive"
        return "agreed" if self.agreed else "changed"


@dataclass(frozen=True)
class RejudgeSummary:
    """Where the maintainers' re-judge of a run's passes stands."""

    #: passes of record not yet re-judged conclusively (what "Re-judge passes" would queue)
    open_passes: int
    rows: list[RejudgeRow]

    def _count(self, state: str) -> int:
        return sum(1 for r in self.rows if r.state == state)

    @property
    def waiting(self) -> int:
        return self._count("waiting")

    @property
    def agreed(self) -> int:
        return self._count("agreed")

    @property
    def changed(self) -> int:
        return self._count("changed")

    @property
    def inconclusive(self) -> int:
        return self._count("inconclusive")


def run_rejudge_summary(
    *, run: EvaluationRun, viewer: AbstractBaseUser | AnonymousUser | None, counts: RunCounts | None = None
) -> RejudgeSummary:
    """Every re-judge asked for on ``run`` (waiting, agreed, changed, inconclusive), in task, snippet and
    index order. Public: which verdicts were re-judged, when, and with what outcome; the maintainer who
    asked (``by``) only for maintainers (``can_maintain``). The counts come from ``run_counts`` (one query
    unless ``counts`` is given), the rows from a second one when there are any, plus the viewer's
    permissions."""
    maintainer = can_maintain(viewer)
    counts = counts or run_counts(run=run)
    open_passes = counts.open_passes if run.source != EvaluationRun.Source.IMPORTED else 0
    if not counts.n_rejudges:
        return RejudgeSummary(open_passes=open_passes, rows=[])
    rows = (
        TestResult.objects.filter(completion__run=run, rejudge_requested_at__isnull=False)
        .select_related("completion__snippet__task_version__task__paper", "rejudged_by")
        .order_by(
            "completion__snippet__task_version__task__key",
            "completion__snippet__ordinal",
            "completion__completion_idx",
            "id",
        )
    )
    return RejudgeSummary(
        open_passes=open_passes,
        rows=[
            RejudgeRow(
                completion_id=r.completion_id,
                paper_key=r.completion.snippet.task_version.task.paper.key,
                task=r.completion.snippet.task_version.task.key,
                snippet=r.completion.snippet.name,
                completion_idx=r.completion.completion_idx,
                requested_at=r.rejudge_requested_at,
                rejudged_at=r.rejudged_at,
                outcome=r.rejudge_outcome,
                category=r.rejudge_category,
                reason=_REDACTED.get(r.rejudge_category, r.rejudge_reason)
                if not maintainer
                else r.rejudge_reason,
                agreed=r.rejudge_agreed,
                by=(r.rejudged_by.get_username() if r.rejudged_by else "—") if maintainer else None,
            )
            for r in rows
        ],
    )


def run_tampering_count(*, run: EvaluationRun, counts: RunCounts | None = None) -> int:
    """How many verdicts of record of ``run`` are harness tampering (public, like the other counts)."""
    return (counts or run_counts(run=run)).n_tampering


# --- Passes confirmed against impossible variants of their tests (docs/integrity.md) -------------------------

#: what the public sees instead of a forged verdict's reason (the variant is for maintainers)
FORGED_REDACTED = "verdict forged (the details are shown to maintainers)"
#: the reasons the public sees in place of an accusation's, by category
_REDACTED = {TAMPERING_CATEGORY: TAMPERING_REDACTED, FORGED_CATEGORY: FORGED_REDACTED}
#: the most unconfirmed passes and forged verdicts a run page lists
RUN_CONFIRMATION_SHOWN = 100


def confirmation_kind(*, outcome: str, category: str, confirmation: str) -> str:
    """What a verdict of record counts as in the forging rate (docs/scoring.md#forging-rate): "forged" for a
    forged verdict (category ``verdict_forged``: a test the reference fails on an impossible variant passed),
    "confirmed" and "unconfirmed" for passes so confirmed, "" for anything else: failures, passes recorded
    without a confirmation (results imported without code), and passes that no confirmation run could judge
    (``pass_unconfirmable``: failed, yet no test of a variant passed, so nothing was proved forged)."""
    if category == FORGED_CATEGORY:
        return TestResult.Confirmation.FORGED
    if outcome == TestResult.Outcome.PASSED and confirmation in (
        TestResult.Confirmation.CONFIRMED,
        TestResult.Confirmation.UNCONFIRMED,
    ):
        return confirmation
    return ""


def forging_rate(*, forged: int, confirmed: int) -> float | None:
    """The forging rate in percent: forged / (forged + confirmed) passes (ImpossibleBench's "cheating rate");
    None (not measured) without a confirmed or forged pass. Unconfirmed passes, whose test cannot tell, count
    on neither side."""
    judged = forged + confirmed
    return 100 * forged / judged if judged else None


@dataclass(frozen=True)
class ConfirmationItem:
    """A completion of a run whose pass is unconfirmed, or whose verdict was forged; ``variant``,
    ``variant_slate`` and ``reason`` only in the maintainers' list of forged verdicts."""

    completion_id: int
    paper_key: str
    task: str
    snippet: str
    snippet_id: int
    completion_idx: int
    variant: str = ""
    variant_slate: str = ""
    reason: str = ""


@dataclass(frozen=True)
class RunConfirmation:
    """How a run's passes stood up to impossible variants of their tests. ``measured`` is False for results
    imported without code (nothing could be run against a variant); ``forged_rows`` is None for a viewer who
    may not see which verdicts were forged and against which variant (everyone but maintainers)."""

    measured: bool
    confirmed: int
    unconfirmed: int
    forged: int
    unconfirmed_rows: list[ConfirmationItem]
    forged_rows: list[ConfirmationItem] | None

    @property
    def forging_rate(self) -> float | None:
        return forging_rate(forged=self.forged, confirmed=self.confirmed) if self.measured else None

    @property
    def judged(self) -> int:
        """Passes confirmed or forged: the forging rate's denominator."""
        return self.confirmed + self.forged


def _confirmation_items(items: QuerySet[Completion], *, details: bool) -> list[ConfirmationItem]:
    rows = (
        items.order_by("snippet__task_version__task__key", "snippet__ordinal", "completion_idx", "id")
        .values_list(
            "id", "snippet__task_version__task__paper__key", "snippet__task_version__task__key",
            "snippet__name", "snippet_id", "completion_idx", "result__variant", "result__variant_slate", "error",
        )[:RUN_CONFIRMATION_SHOWN]
    )  # fmt: skip
    return [ConfirmationItem(*row[:6], *(row[6:] if details else ())) for row in rows]


def run_confirmation(
    *, run: EvaluationRun, viewer: AbstractBaseUser | AnonymousUser | None, counts: RunCounts | None = None
) -> RunConfirmation:
    """The run page's confirmation of passes against impossible variants: how many passes were confirmed and
    unconfirmed and how many verdicts forged (public), the unconfirmed passes (public: their tests do not
    check their snippets) and, for maintainers only (``can_maintain``), the forged verdicts with their variant.
    A forged verdict is an accusation, as harness tampering is: the count is public, which completion and the
    evidence only after a maintainer looked. Each list is the first ``RUN_CONFIRMATION_SHOWN`` by task, snippet
    and index, read only when its count (``run_counts``, one query unless ``counts`` is given) is not 0."""
    counts = counts or run_counts(run=run)
    items = Completion.objects.filter(run=run)
    unconfirmed = (
        _confirmation_items(
            items.filter(
                result__outcome=TestResult.Outcome.PASSED,
                result__confirmation=TestResult.Confirmation.UNCONFIRMED,
            ),
            details=False,
        )
        if counts.n_unconfirmed
        else []
    )
    forged: list[ConfirmationItem] | None = None
    if can_maintain(viewer):
        forged = (
            _confirmation_items(items.filter(result__category=FORGED_CATEGORY), details=True)
            if counts.n_forged
            else []
        )
    return RunConfirmation(
        measured=run.source != EvaluationRun.Source.IMPORTED,
        confirmed=counts.n_confirmed,
        unconfirmed=counts.n_unconfirmed,
        forged=counts.n_forged,
        unconfirmed_rows=unconfirmed,
        forged_rows=forged,
    )


# --- The status page: validations in progress, the oldest waiting item, throughput ---------------------------

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
        queue=_queue_of(stage, needs_gpu),
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


def upload_for_viewer(
    *, upload_id: int, viewer: AbstractBaseUser | AnonymousUser
) -> PredictionsUpload | None:
    """The upload ``upload_id`` when ``viewer`` submitted it or maintains the portal, else None (whether it
    exists is theirs to know), with its run."""
    uploads = PredictionsUpload.objects.select_related("run", "run__release").defer("data")
    if not can_maintain(viewer):
        uploads = uploads.filter(requester_id=viewer.pk)
    return uploads.filter(pk=upload_id).first()
