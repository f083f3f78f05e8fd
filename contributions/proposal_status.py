"""The one place a proposal's state becomes words: what its author and the maintainers are told it is, whose
turn it is, what each should do next, and how a validation ended.

A ``Proposal.state`` alone does not say enough: a proposal ready for review may still have a snippet its
test does not check, and one with changes requested may be waiting for a fix of its validation's errors,
for an answer to a review, or for a submission the portal could not validate. ``status_of`` derives one
``ProposalStatus`` from the state and the validation of the revision under review, and
``validation_outcome`` one ``ValidationOutcome`` from that validation; every page (the proposal's page and
its live updates, its history, the review queue, the author's list, the form's steps), every notification
and every email shows these, never the raw state. Each status names whose turn it is (``TURNS``: the
author, the maintainers, the portal, or nobody once closed) and the next step of each side
(``NEXT_STEPS``). ``selectors.proposals.proposal_status`` and ``selectors.review_queue.proposal_queue_rows`` read what they need;
a state change records its status on its ``ProposalEvent`` (``history_words`` reads it back).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contributions.models import Proposal, ProposalRevision

State = Proposal.State
VStatus = ProposalRevision.ValidationStatus

#: Validation findings a maintainer may accept with a written reason (per snippet): a snippet whose test
#: does not notice a wrong fill, or has no impossible variant to confirm a pass against (docs/validation.md).
#: Every other error finding sends the proposal back to its author.
OVERRIDABLE_CHECKS = frozenset({"mutation", "variants"})

#: How to fix an error of each check of the validation battery (docs/validation.md), shown to the author.
FIX_HINTS: Mapping[str, str] = {
    "mutation": "Make the test assert on the value the snippet computes (its result, not only that the code "
    "runs), so that a wrong implementation of the snippet fails the test.",
    "variants": "Make a test that runs the snippet's code compare what it computes with an expected value (a "
    "constant, a stored array or the result of the reference module) within a tolerance, so that a version of "
    "the test the reference fails can be made to confirm every pass.",
    "annotations": "Fix the paper2code tags the report points at: every tag opened is closed, names are unique.",
    "oracle": "Keep the reference implementation out of the files a model is shown.",
    "sandbox": "Make the reference pass the test in the sandbox: the report's evidence shows the run's output.",
    "timeout": "Make the test faster, so that the reference and the wrong fills run within the time limit.",
}
#: The hint for a check ``FIX_HINTS`` does not name.
GENERIC_HINT = "Fix what each error below says, then upload a new revision."

#: key -> (label, tone): the words of every status. A label may name ``{n}`` (a count), ``{s}`` ("" or
#: "s") and ``{its}`` ("its" or "their"); the tone is the badge's colour (``badge tone-<tone>`` in review.css).
STATUS_WORDS: Mapping[str, tuple[str, str]] = {
    "draft": ("Draft", "neutral"),
    "waiting": ("Waiting for validation", "info"),
    "validating": ("Validating", "info"),
    "ready": ("Ready for review", "ok"),
    "needs_fix": ("Needs a fix: {n} snippet{s} not checked by {its} test", "warn"),
    "validation_failed": ("Validation failed", "bad"),
    "could_not_run": ("Validation could not run", "bad"),
    "changes_requested": ("Changes requested", "warn"),
    "revising": ("Changes requested: revision {n} not submitted yet", "info"),
    "approved": ("Approved", "ok"),
    "published": ("Published", "ok"),
    "rejected": ("Rejected", "bad"),
    "withdrawn": ("Withdrawn", "neutral"),
}

#: key -> whose turn it is: "author", "maintainers", "portal" (validating, publishing) or "" (closed).
TURNS: Mapping[str, str] = {
    "draft": "author",
    "waiting": "portal",
    "validating": "portal",
    "ready": "maintainers",
    "needs_fix": "author",
    "validation_failed": "author",
    "could_not_run": "author",
    "changes_requested": "author",
    "revising": "author",
    "approved": "portal",
    "published": "",
    "rejected": "",
    "withdrawn": "",
}

#: whose turn -> its words, the same on every page, notification and email.
TURN_WORDS: Mapping[str, str] = {
    "author": "The author's turn",
    "maintainers": "The maintainers' turn",
    "portal": "The portal's turn",
    "": "Closed: nobody's turn",
}

#: Statuses nobody is told of: the portal's work in progress between a submission and its validation's
#: outcome. A validation is told once, by the status its outcome gives (notifications.notify_event).
QUIET: frozenset[str] = frozenset({"waiting", "validating"})

_VALIDATING_STEP = (
    "Nothing to do: the portal validates the revision in its sandbox; this page updates by itself."
)

#: key -> (the author's next step, the maintainers' next step), in plain words; neither is ever empty.
NEXT_STEPS: Mapping[str, tuple[str, str]] = {
    "draft": ("Finish the form's steps and submit the proposal.", "Nothing to do: a draft is its author's."),
    "waiting": (_VALIDATING_STEP, "Nothing to do until the validation ends."),
    "validating": (_VALIDATING_STEP, "Nothing to do until the validation ends."),
    "ready": ("Nothing to do: a maintainer reviews the proposal next.", "Review it."),
    "needs_fix": (
        "Make the test check each snippet named on the proposal's page, then upload a new revision. If a "
        "snippet cannot be checked, say why in a comment: a maintainer may accept it with a written reason.",
        "Wait for the author's new revision, or review it: approve only with a reason for each unchecked "
        "snippet, or request a fix.",
    ),
    "validation_failed": (
        "Fix the errors listed under Validation, then upload a new revision.",
        "Nothing to do: the author fixes the errors the validation found.",
    ),
    "could_not_run": (
        "Submit the same revision again: the validation failed for a reason of the portal's, not the task's.",
        "Check the portal's workers (the status page): the validation could not run for a reason of the "
        "portal's; the author submits the revision again.",
    ),
    "changes_requested": (
        "Read the review, then upload a new revision.",
        "Nothing to do: the author answers the review with a new revision.",
    ),
    "revising": (
        "Continue the form and submit the new revision.",
        "Nothing to do: the author is preparing a new revision.",
    ),
    "approved": (
        "Nothing to do: the portal publishes the task.",
        "Nothing to do: the portal publishes the task.",
    ),
    "published": (
        "Nothing to do: the task is in the benchmark.",
        "Nothing to do: the task is in the benchmark.",
    ),
    "rejected": (
        "Nothing to do: the proposal was rejected; the reason is in its history.",
        "Nothing to do: the proposal was rejected.",
    ),
    "withdrawn": (
        "Nothing to do: the proposal was withdrawn.",
        "Nothing to do: the author withdrew the proposal.",
    ),
}


@dataclass(frozen=True)
class ProposalStatus:
    """What a proposal is, in the words every page, notification and email shows: ``key`` (a
    ``STATUS_WORDS`` key), ``label`` and ``tone``; ``turn`` (a ``TURNS`` value: who acts next) and
    ``turn_words``; ``author_step`` and ``maintainer_step`` (what each should do next, in plain words);
    ``hints`` (how to fix each kind of error, for the author); ``unchecked`` (the snippets the test does not
    check) and ``errors`` (the error findings no review can accept)."""

    key: str
    label: str
    tone: str
    author_step: str
    maintainer_step: str
    hints: tuple[str, ...] = ()
    unchecked: tuple[str, ...] = ()
    errors: int = 0

    @property
    def turn(self) -> str:
        return TURNS[self.key]

    @property
    def turn_words(self) -> str:
        return TURN_WORDS[self.turn]

    def step_for(self, *, author: bool) -> str:
        """The next step of the proposal's author (``author``) or of the maintainers."""
        return self.author_step if author else self.maintainer_step


@dataclass(frozen=True)
class ValidationOutcome:
    """How a revision's validation ended, or where it is: ``label`` and ``tone`` as ``ProposalStatus``."""

    label: str
    tone: str


def report_errors(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The error findings of a report (``ValidationReport.to_dict()`` form)."""
    return [f for f in report.get("findings") or [] if isinstance(f, dict) and f.get("severity") == "error"]


def is_overridable(finding: Mapping[str, Any]) -> bool:
    """Whether a maintainer may accept this error finding (a snippet the test does not check)."""
    return finding.get("check") in OVERRIDABLE_CHECKS and bool(finding.get("snippet"))


def report_overridable(report: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Snippet name -> its error findings a maintainer may accept ("not checked by the test")."""
    out: dict[str, list[dict[str, Any]]] = {}
    for finding in report_errors(report):
        if is_overridable(finding):
            out.setdefault(str(finding["snippet"]), []).append(finding)
    return out


def report_blocking(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The error findings of a report that no review can accept."""
    return [f for f in report_errors(report) if not is_overridable(f)]


def status_words(key: str, n: int = 0) -> tuple[str, str]:
    """(label, tone) of status ``key`` (``STATUS_WORDS``) for a count ``n``: "1 snippet", "2 snippets"."""
    label, tone = STATUS_WORDS[key]
    return label.format(n=n, s="" if n == 1 else "s", its="its" if n == 1 else "their"), tone


def validation_outcome(*, status: str | None, report: Mapping[str, Any] | None) -> ValidationOutcome:
    """The words of a validation: "Passed", "1 snippet not checked by its test", "Failed: 2 errors",
    "Could not run", "Running", "Waiting"; "Not submitted" without a submitted revision (``status`` None)."""
    report = report or {}
    if status is None:
        return ValidationOutcome("Not submitted", "neutral")
    if status == VStatus.PENDING:
        return ValidationOutcome("Waiting", "info")
    if status == VStatus.RUNNING:
        return ValidationOutcome("Running", "info")
    if status == VStatus.ERROR:
        return ValidationOutcome("Could not run", "bad")
    blocking, unchecked = report_blocking(report), report_overridable(report)
    if status == VStatus.PASSED or not (blocking or unchecked):
        return ValidationOutcome("Passed", "ok")
    if blocking:
        return ValidationOutcome(f"Failed: {len(blocking)} error{'' if len(blocking) == 1 else 's'}", "bad")
    n = len(unchecked)
    if n == 1:
        return ValidationOutcome("1 snippet not checked by its test", "warn")
    return ValidationOutcome(f"{n} snippets not checked by their tests", "warn")


def _hints(findings: list[dict[str, Any]]) -> tuple[str, ...]:
    checks = list(dict.fromkeys(str(f.get("check") or "") for f in findings))
    return tuple(dict.fromkeys(FIX_HINTS.get(check, GENERIC_HINT) for check in checks))


def _key_of(*, state: str, status: str | None, blocking: int, unchecked: int, revising: int | None) -> str:
    if state == State.READY_FOR_REVIEW:
        return "needs_fix" if unchecked else "ready"
    if state == State.CHANGES_REQUESTED:
        if revising is not None:
            return "revising"
        if status == VStatus.ERROR:
            return "could_not_run"
        return "validation_failed" if status == VStatus.FAILED and blocking else "changes_requested"
    return {State.SUBMITTED: "waiting", State.VALIDATING: "validating"}.get(state, str(state))


def status_of(
    *,
    state: str,
    validation_status: str | None,
    report: Mapping[str, Any] | None,
    revising: int | None = None,
) -> ProposalStatus:
    """The status of a proposal in ``state`` whose revision under review (the newest submitted one) has
    ``validation_status`` and ``report`` (None and None before the first submission); ``revising`` is the
    number of a newer revision not submitted yet (None when there is none)."""
    report = report or {}
    blocking, unchecked = report_blocking(report), report_overridable(report)
    key = _key_of(
        state=state,
        status=validation_status,
        blocking=len(blocking),
        unchecked=len(unchecked),
        revising=revising,
    )
    count = {"needs_fix": len(unchecked), "revising": revising or 0}.get(key, 0)
    label, tone = status_words(key, count)
    if key == "validation_failed":
        label = f"{label}: {len(blocking)} error{'' if len(blocking) == 1 else 's'}"
    author_step, maintainer_step = NEXT_STEPS[key]
    shown = {"validation_failed": blocking, "needs_fix": [f for fs in unchecked.values() for f in fs]}
    return ProposalStatus(
        key=key,
        label=label,
        tone=tone,
        author_step=author_step,
        maintainer_step=maintainer_step,
        hints=_hints(shown.get(key, [])),
        unchecked=tuple(sorted(unchecked)),
        errors=len(blocking),
    )


@dataclass(frozen=True)
class HistoryWords:
    """A history row's status: ``key``, ``label``, ``tone`` and ``turn_words``, as the badge showed them."""

    key: str
    label: str
    tone: str
    turn_words: str


def history_words(*, key: str, label: str, state: str) -> HistoryWords:
    """The status an event recorded (``ProposalEvent.status`` and ``status_label``, the badge's words when
    it happened); for a row that recorded none (a creation, an import), the words of its ``state``."""
    if key not in STATUS_WORDS:
        key = _key_of(state=state, status=None, blocking=0, unchecked=0, revising=None)
        label = status_words(key)[0] if key in STATUS_WORDS else state
    if key not in STATUS_WORDS:
        return HistoryWords(key=key, label=label, tone="neutral", turn_words="")
    return HistoryWords(
        key=key,
        label=label or status_words(key)[0],
        tone=STATUS_WORDS[key][1],
        turn_words=TURN_WORDS[TURNS[key]],
    )
