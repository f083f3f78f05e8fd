"""The contribution workflow: one service per move of a ``Proposal``'s state machine.

::

    draft ──submit──> submitted ──validation_start──> validating ──validation_finish──> ready_for_review
      ^                  ^  |                            |  |                              |  |  |
      |                  |  └─(watchdog resend)          |  └─validation_fail (retry)──> submitted
      |                  |                               └─finish (errors) / fail (final)─┐  |  |
      |                  └──────────submit (new revision)──── changes_requested <─────────┘  |  |
      |                                                          ^   review(request_changes)─┘  |
      |                                                          └── upload (author: revise) ───┘
    withdraw (author, from any state but published, rejected, withdrawn)  review(reject) ─> rejected
                                                     review(approve, enough approvals) ─> approved
                                                                 mark_published ─> published

Every move is one conditional update (``Proposal.objects.filter(pk=..., state__in=...).update(...)``), so
two requests (or a request and a worker) never both make it; it writes a ``ProposalEvent`` (who, when,
why, and the status it gave in ``proposal_status``'s words) and notifies the author and the maintainers of
that status (``notifications.notify_event``: one notification per change of status, in plain words, with whose
turn it is and the next step; emails after commit). A
move that is not allowed from the current state, or not by this user, raises ``ProposalError`` naming the
rule; ``ProposalError.field`` names the form field at fault where there is one.

Revisions: the author uploads code as a revision while the proposal is a draft or changes were requested;
an upload replaces the revision not yet submitted. An upload while the proposal is ready for review first
moves it to changes requested ("revise", ``revisions.revision_create``): the author replaces the revision
under review, e.g. to make the test check a snippet its validation found unchecked. ``proposal_submit`` freezes it (``submitted_at``):
afterwards only its validation fields change, and a new upload is a new revision.

Validation runs in the evaluation app (a Celery job, ``evaluation.services.validation``), which hears of a
submission through ``contributions.signals.revision_submitted`` and reports back through
``proposal_validation_start`` / ``_progress`` / ``_finish`` / ``_fail``. The watchdog
(``proposal_validation_watchdog``, run by the beat) fails a validation still running after twice its
limit, so nothing stays validating for ever.

Approval: only maintainers review, never their own proposal; approving needs every rubric item checked and
every blocking finding of the validation report accepted (only "not checked by the test" findings can be
accepted, each with a written reason). When ``RCB_APPROVALS_REQUIRED`` maintainers have approved the
revision, the proposal is ``approved``. Publishing (creating the task version, committing it to the
benchmark repository) is ``contributions.services.publishing``; it ends with ``proposal_mark_published``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import IntegrityError, transaction
from django.utils import timezone

from contributions.models import (
    Comment,
    Proposal,
    ProposalEvent,
    ProposalRevision,
    Task,
    TaskVersion,
)
from contributions.roles import is_maintainer
from contributions.selectors import latest_revision, latest_submitted_revision, proposal_status
from contributions.services.notifications import notify_comment, notify_event
from contributions.task_folders import blobs_read
from contributions.task_meta import meta_from_json, meta_to_json
from researchcodebench import pset as rcb_pset
from researchcodebench.arxiv import arxiv_id as parse_arxiv_id

State = Proposal.State
VStatus = ProposalRevision.ValidationStatus

#: The review rubric (issue 11 item 7): key stored in ``Review.rubric`` -> what the reviewer confirms.
RUBRIC: tuple[tuple[str, str], ...] = (
    ("paper_suffices", "The paper alone suffices to write each snippet."),
    ("names_informative", "Snippet names are informative but give nothing away."),
    ("tests_behaviour", "The test checks behaviour, not text."),
    ("license_redistribution", "The license allows redistribution."),
    ("dates_right", "The dates are right for the contamination rules."),
)
RUBRIC_KEYS = tuple(key for key, _ in RUBRIC)


MAX_TEXT = 20_000
MAX_PROGRESS_ENTRIES = 500
MAX_REASON = 4000


class ProposalError(ValueError):
    """A proposal action that is not allowed; the message names the rule, ``field`` the form field at fault."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field

    @property
    def words(self) -> str:
        """The message for a person: without the leading ``field: `` key (the form shows the error at its
        field, by its label), as a sentence."""
        message = str(self)
        if self.field and message.startswith(f"{self.field}: "):
            message = message[len(self.field) + 2 :]
        return message[:1].upper() + message[1:]

    def words_away(self, label: str | None) -> str:
        """``words`` where they are shown away from their field (on the whole form, or on another field):
        after the field's ``label`` ("Test entry point: ..."), so they still say which answer is at fault."""
        words = self.words
        return f"{label}: {words[:1].lower()}{words[1:]}" if label else words


# --------------------------------------------------------------------------------------------- helpers


def _label(state: str) -> str:
    return State(state).label.lower()


def _states(states: tuple[str, ...] | list[str]) -> str:
    return " or ".join(_label(s) for s in states)


def _transition(
    *,
    proposal: Proposal,
    allowed: tuple[str, ...],
    to: str,
    actor: Any,
    reason: str = "",
    revision: ProposalRevision | None = None,
    action: str,
    **fields: Any,
) -> ProposalEvent:
    """Move ``proposal`` from one of ``allowed`` to ``to`` in one conditional update; record the status it
    gives (``selectors.proposal_status``) and notify of it.

    Precondition: whatever else the status depends on (the revision's validation fields, a new revision
    not submitted yet) is written before the call.

    Raises ``ProposalError`` naming ``action`` and the current state when the proposal is in none of
    ``allowed`` (read again from the database: the caller's copy may be stale).
    """
    current = (
        Proposal.objects.select_for_update().filter(pk=proposal.pk).values_list("state", flat=True).first()
    )
    now = timezone.now()
    moved = (
        Proposal.objects.filter(pk=proposal.pk, state__in=allowed).update(
            state=to, state_changed_at=now, updated_at=now, **fields
        )
        if current in allowed
        else 0
    )
    if not moved:
        where = _label(current) if current else "deleted"
        raise ProposalError(
            f"cannot {action} a proposal that is {where} (only one that is {_states(allowed)})"
        )
    from_state = current
    proposal.state = to
    proposal.state_changed_at = now
    for name, value in fields.items():
        setattr(proposal, name, value)
    # The status is read after the move: the caller has already written what it depends on (the revision's
    # validation, a new revision being prepared).
    status = proposal_status(proposal)
    event = ProposalEvent.objects.create(
        proposal=proposal,
        revision=revision,
        actor=actor,
        from_state=from_state,
        to_state=to,
        status=status.key,
        status_label=status.label[:200],
        reason=reason[:MAX_REASON],
    )
    notify_event(event=event, status=status)
    return event


def _require_author(proposal: Proposal, by: Any, action: str) -> None:
    if by is None or by.pk != proposal.author_id:
        raise ProposalError(f"only the author of a proposal can {action} it")


def _text(value: str | None, *, field: str, required: bool = False, limit: int = MAX_TEXT) -> str:
    text = (value or "").strip()
    if required and not text:
        raise ProposalError(f"{field}: give a reason", field=field)
    if len(text) > limit:
        raise ProposalError(f"{field}: at most {limit} characters (got {len(text)})", field=field)
    return text


def _lock(proposal: Proposal) -> Proposal:
    """The proposal's row, locked for this transaction (revision numbering and reviews count under it)."""
    return Proposal.objects.select_for_update().get(pk=proposal.pk)


# ------------------------------------------------------------------------------------ proposal and meta


def _clean_task_key(task_key: str, *, author: Any, exclude: int | None = None) -> str:
    key = (task_key or "").strip()
    try:
        validate_slug(key)
    except ValidationError:
        raise ProposalError(
            f"task_key: the task key “{key}” may hold only letters, digits, hyphens (-) and underscores (_), "
            "without spaces",
            field="task_key",
        ) from None
    if len(key) > 100:
        raise ProposalError("task_key: at most 100 characters", field="task_key")
    if Task.objects.filter(key=key).exists() and not is_maintainer(author):
        raise ProposalError(
            f"task_key: a task {key!r} is already in the benchmark; choose another key "
            "(a new version of a published task is made by a maintainer)",
            field="task_key",
        )
    taken = Proposal.objects.filter(task_key=key).exclude(state__in=Proposal.RELEASED_KEY_STATES)
    if exclude is not None:
        taken = taken.exclude(pk=exclude)
    if taken.exists():
        raise ProposalError(f"task_key: another open proposal already uses {key!r}", field="task_key")
    return key


def _clean_meta(meta: rcb_pset.PaperMeta | Mapping[str, Any] | None, *, task_key: str) -> dict[str, Any]:
    """A registry entry as stored in ``Proposal.meta`` (its ``id`` is the task key)."""
    if meta is None:
        parsed = rcb_pset.PaperMeta(id=task_key)
    elif isinstance(meta, rcb_pset.PaperMeta):
        parsed = meta
    elif isinstance(meta, Mapping):
        try:
            parsed = meta_from_json({**meta, "id": task_key})
        except (TypeError, ValueError) as exc:
            raise ProposalError(f"meta: not a registry entry: {exc}", field="meta") from None
    else:
        raise ProposalError(f"meta: expected a registry entry, got {type(meta).__name__}", field="meta")
    data = meta_to_json(parsed)
    data["id"] = task_key
    return data


def _meta_columns(meta: dict[str, Any]) -> dict[str, str]:
    return {
        "title": str(meta.get("title") or "")[:500],
        "arxiv_id": parse_arxiv_id(str(meta.get("arxiv_abs") or ""))[:32],
    }


@transaction.atomic
def proposal_create(
    *, author: Any, task_key: str, meta: rcb_pset.PaperMeta | Mapping[str, Any] | None = None
) -> Proposal:
    """A new draft proposal by ``author`` for task ``task_key``.

    ``task_key`` must be a slug not used by another open proposal, nor (unless ``author`` is a maintainer)
    by a task of the benchmark. ``meta`` is the registry entry so far (``PaperMeta`` or its JSON form).
    """
    if author is None or not author.is_authenticated:
        raise ProposalError("sign in to contribute a task")
    key = _clean_task_key(task_key, author=author)
    data = _clean_meta(meta, task_key=key)
    try:
        with transaction.atomic():
            proposal = Proposal.objects.create(author=author, task_key=key, meta=data, **_meta_columns(data))
    except IntegrityError:
        # Two requests for the same key at once: the partial unique constraint let one through.
        raise ProposalError(
            f"task_key: another open proposal already uses {key!r}", field="task_key"
        ) from None
    status = proposal_status(proposal)
    ProposalEvent.objects.create(
        proposal=proposal,
        actor=author,
        from_state="",
        to_state=State.DRAFT,
        status=status.key,
        status_label=status.label,
    )
    return proposal


_EDITABLE = (State.DRAFT, State.CHANGES_REQUESTED)


@transaction.atomic
def proposal_update_meta(
    *,
    proposal: Proposal,
    by: Any,
    meta: rcb_pset.PaperMeta | Mapping[str, Any],
    task_key: str | None = None,
) -> Proposal:
    """Change the paper metadata (and optionally the task key) while the author may still edit."""
    _require_author(proposal, by, "edit")
    proposal = _lock(proposal)
    if proposal.state not in _EDITABLE:
        raise ProposalError(f"cannot edit a proposal that is {_label(proposal.state)}")
    key = proposal.task_key
    if task_key is not None and task_key.strip() != key:
        key = _clean_task_key(task_key, author=by, exclude=proposal.pk)
    data = _clean_meta(meta, task_key=key)
    fields = {"task_key": key, "meta": data, **_meta_columns(data)}
    try:
        with transaction.atomic():
            Proposal.objects.filter(pk=proposal.pk).update(updated_at=timezone.now(), **fields)
    except IntegrityError:
        raise ProposalError(
            f"task_key: another open proposal already uses {key!r}", field="task_key"
        ) from None
    for name, value in fields.items():
        setattr(proposal, name, value)
    return proposal


@transaction.atomic
def proposal_save_draft(*, proposal: Proposal, by: Any, step: int, data: Mapping[str, Any]) -> Proposal:
    """Store the author's answers of form step ``step`` (JSON-serialisable) so the draft can be resumed.

    ``Proposal.step`` becomes the highest step completed so far.
    """
    _require_author(proposal, by, "edit")
    if not isinstance(step, int) or isinstance(step, bool) or not 0 < step <= 20:
        raise ProposalError(f"step: expected a step number from 1 to 20, got {step!r}", field="step")
    try:
        encoded = json.dumps(dict(data), sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise ProposalError(f"the answers of step {step} cannot be saved: {exc}") from None
    if len(encoded) > 1_000_000:
        raise ProposalError(
            f"the answers of step {step} are too large to save ({len(encoded):,} characters; at most 1,000,000)"
        )
    proposal = _lock(proposal)
    if proposal.state not in _EDITABLE:
        raise ProposalError(f"cannot edit a proposal that is {_label(proposal.state)}")
    draft = dict(proposal.draft or {})
    draft[str(step)] = json.loads(encoded)
    proposal.draft = draft
    proposal.step = max(proposal.step, step)
    proposal.save(update_fields=["draft", "step", "updated_at"])
    return proposal


# ---------------------------------------------------------------------------------------- end of a proposal


@transaction.atomic
def proposal_withdraw(*, proposal: Proposal, by: Any, reason: str = "") -> ProposalEvent:
    """Any state but published, rejected or withdrawn -> withdrawn; only by the author."""
    _require_author(proposal, by, "withdraw")
    allowed = tuple(s for s in State.values if s not in Proposal.FINAL_STATES)
    return _transition(
        proposal=proposal,
        allowed=allowed,
        to=State.WITHDRAWN,
        actor=by,
        reason=_text(reason, field="reason", limit=MAX_REASON),
        revision=latest_submitted_revision(proposal),
        action="withdraw",
    )


@transaction.atomic
def proposal_mark_published(*, proposal: Proposal, by: Any, task_version: TaskVersion) -> ProposalEvent:
    """approved -> published, pointing at the task version publishing created (``services.publishing``)."""
    return _transition(
        proposal=proposal,
        allowed=(State.APPROVED,),
        to=State.PUBLISHED,
        actor=by,
        reason=f"published as {task_version}",
        revision=latest_submitted_revision(proposal),
        action="publish",
        published_version=task_version,
    )


# ----------------------------------------------------------------------------------------------- comments

_LINE_BREAKS = re.compile(r"\r\n|\r|\n")


@transaction.atomic
def comment_add(
    *,
    proposal: Proposal,
    author: Any,
    body: str,
    file: str = "",
    line: int | None = None,
    revision: ProposalRevision | None = None,
) -> Comment:
    """A comment by the proposal's author or a maintainer: in the general thread, or anchored to ``file``
    (and ``line``) of ``revision`` (default: the newest submitted revision)."""
    if author is None or not (author.pk == proposal.author_id or is_maintainer(author)):
        raise ProposalError("only the author and maintainers comment on a proposal")
    if proposal.state == State.DRAFT and author.pk != proposal.author_id:
        raise ProposalError("a draft takes no comments from others")
    text = _text(body, field="body")
    if not text:
        raise ProposalError("body: write a comment", field="body")
    file = (file or "").strip()
    if line is not None and not file:
        raise ProposalError("file: a line belongs to a file", field="file")
    if file:
        revision = revision or latest_submitted_revision(proposal) or latest_revision(proposal)
        if revision is None or revision.proposal_id != proposal.pk:
            raise ProposalError("file: the proposal has no code to comment on", field="file")
        if file not in revision.files:
            raise ProposalError(f"file: {file!r} is not a file of revision {revision.number}", field="file")
        if line is not None:
            content = blobs_read({file: revision.files[file]}, owner=str(revision))[file]
            count = len(_LINE_BREAKS.split(content.decode("utf-8", errors="replace")))
            if not isinstance(line, int) or isinstance(line, bool) or not 1 <= line <= count:
                raise ProposalError(
                    f"line: the file {file} has lines 1 to {count}, not {line!r}", field="line"
                )
    else:
        revision = None
    comment = Comment.objects.create(
        proposal=proposal, revision=revision, author=author, file=file, line=line, body=text
    )
    notify_comment(comment=comment)
    return comment
