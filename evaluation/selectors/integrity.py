"""Harness tampering, maintainers' re-judges and passes confirmed against impossible variants of their tests,
on the run page (docs/integrity.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.db.models import QuerySet

from contributions.roles import can_maintain
from evaluation.models import Completion, EvaluationRun, TestResult
from evaluation.selectors.counts import RunCounts, forging_rate, run_counts
from evaluation.selectors.runs import RunProgress, run_progress
from researchcodebench.runner import FORGED_CATEGORY
from researchcodebench.screen import CATEGORY as TAMPERING_CATEGORY

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
