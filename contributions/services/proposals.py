"""Proposals and their comments: creating a proposal, editing its metadata and saving the form's draft,
withdrawing it, marking it published, and the comment thread.

Every move of the state machine goes through ``proposal_state`` (its states, ``TRANSITIONS``, the lock and
the transition). The other moves are by stage: revisions (the author uploads code as a revision while the
proposal is a draft or changes were requested; an upload while it is ready for review first moves it to
changes requested, "revise": ``revisions.revision_create``); submitting and validation
(``proposal_validation``: ``proposal_submit`` freezes the revision; afterwards only its validation fields
change, and a new upload is a new revision; validation runs in the evaluation app, a Celery job,
``evaluation.services.validation``, which hears of a submission through
``contributions.signals.revision_submitted`` and reports back through ``proposal_validation_start`` /
``_progress`` / ``_finish`` / ``_fail``; the watchdog, run by the beat, fails a validation still running
after twice its limit); and review (``review``: only maintainers review, never their own proposal;
approving needs every rubric item checked and every blocking finding of the validation report accepted;
when ``RCB_APPROVALS_REQUIRED`` maintainers have approved the revision, the proposal is ``approved``).
Publishing (creating the task version, committing it to the benchmark repository) is
``contributions.services.publishing``; it ends with ``proposal_mark_published``.
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
from contributions.selectors.proposals import latest_revision, latest_submitted_revision, proposal_status
from contributions.services.notifications import notify_comment
from contributions.services.proposal_state import (
    EDITABLE_STATES,
    MAX_REASON,
    OPEN_STATES,
    ProposalError,
    bounded_text,
    proposal_lock,
    proposal_transition,
    require_author,
    state_label,
)
from contributions.task_folders import blobs_read
from contributions.task_meta import meta_from_json, meta_to_json
from researchcodebench import pset as rcb_pset
from researchcodebench.arxiv import arxiv_id as parse_arxiv_id

State = Proposal.State

#: The review rubric (issue 11 item 7): key stored in ``Review.rubric`` -> what the reviewer confirms.
RUBRIC: tuple[tuple[str, str], ...] = (
    ("paper_suffices", "The paper alone suffices to write each snippet."),
    ("names_informative", "Snippet names are informative but give nothing away."),
    ("tests_behaviour", "The test checks behaviour, not text."),
    ("license_redistribution", "The license allows redistribution."),
    ("dates_right", "The dates are right for the contamination rules."),
)
RUBRIC_KEYS = tuple(key for key, _ in RUBRIC)


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


@transaction.atomic
def proposal_update_meta(
    *,
    proposal: Proposal,
    by: Any,
    meta: rcb_pset.PaperMeta | Mapping[str, Any],
    task_key: str | None = None,
) -> Proposal:
    """Change the paper metadata (and optionally the task key) while the author may still edit."""
    require_author(proposal, by, "edit")
    proposal = proposal_lock(proposal)
    if proposal.state not in EDITABLE_STATES:
        raise ProposalError(f"cannot edit a proposal that is {state_label(proposal.state)}")
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
    require_author(proposal, by, "edit")
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
    proposal = proposal_lock(proposal)
    if proposal.state not in EDITABLE_STATES:
        raise ProposalError(f"cannot edit a proposal that is {state_label(proposal.state)}")
    draft = dict(proposal.draft or {})
    draft[str(step)] = json.loads(encoded)
    proposal.draft = draft
    proposal.step = max(proposal.step, step)
    proposal.save(update_fields=["draft", "step", "updated_at"])
    return proposal


@transaction.atomic
def proposal_meta_step_save(
    *,
    by: Any,
    proposal: Proposal | None,
    task_key: str,
    meta: Mapping[str, Any],
    answers: Mapping[str, Any],
) -> Proposal:
    """The contribution form's paper step, all or nothing: create the draft by ``by`` (``proposal`` None) or
    update its task key and metadata (``meta`` over the stored entry), then store the step's ``answers``
    (``proposal_save_draft`` step 1)."""
    if proposal is None:
        proposal = proposal_create(author=by, task_key=task_key, meta=meta)
    else:
        proposal = proposal_update_meta(
            proposal=proposal, by=by, meta={**proposal.meta, **meta}, task_key=task_key
        )
    return proposal_save_draft(proposal=proposal, by=by, step=1, data=answers)


# ---------------------------------------------------------------------------------------- end of a proposal


@transaction.atomic
def proposal_withdraw(*, proposal: Proposal, by: Any, reason: str = "") -> ProposalEvent:
    """Any state but published, rejected or withdrawn -> withdrawn; only by the author."""
    require_author(proposal, by, "withdraw")
    return proposal_transition(
        proposal=proposal,
        allowed=OPEN_STATES,
        to=State.WITHDRAWN,
        actor=by,
        reason=bounded_text(reason, field="reason", limit=MAX_REASON),
        revision=latest_submitted_revision(proposal),
        action="withdraw",
    )


@transaction.atomic
def proposal_mark_published(*, proposal: Proposal, by: Any, task_version: TaskVersion) -> ProposalEvent:
    """approved -> published, pointing at the task version publishing created (``services.publishing``)."""
    return proposal_transition(
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
    text = bounded_text(body, field="body")
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
