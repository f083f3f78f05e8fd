"""The contribution workflow: one service per move of a ``Proposal``'s state machine.

::

    draft ──submit──> submitted ──validation_start──> validating ──validation_finish──> ready_for_review
      ^                  ^  |                            |  |                              |  |  |
      |                  |  └─(watchdog resend)          |  └─validation_fail (retry)──> submitted
      |                  |                               └─finish (errors) / fail (final)─┐  |  |
      |                  └──────────submit (new revision)──── changes_requested <─────────┘  |  |
      |                                                          ^   review(request_changes)─┘  |
    withdraw (author, from any state but published, rejected, withdrawn)  review(reject) ─> rejected
                                                     review(approve, enough approvals) ─> approved
                                                                 mark_published ─> published

Every move is one conditional update (``Proposal.objects.filter(pk=..., state__in=...).update(...)``), so
two requests (or a request and a worker) never both make it; it writes a ``ProposalEvent`` (who, when,
why) and notifies the author and the maintainers (``notifications.notify_event``; emails after commit). A
move that is not allowed from the current state, or not by this user, raises ``ProposalError`` naming the
rule; ``ProposalError.field`` names the form field at fault where there is one.

Revisions: the author uploads code as a revision while the proposal is a draft or changes were requested;
an upload replaces the revision not yet submitted. ``proposal_submit`` freezes it (``submitted_at``):
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

import hashlib
import json
import re
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from contributions.models import (
    UNCHECKED_EXPLANATION_MIN,
    Comment,
    Proposal,
    ProposalEvent,
    ProposalRevision,
    Review,
    Task,
    TaskVersion,
    UncheckedReason,
)
from contributions.roles import is_maintainer
from contributions.services.catalogue import file_blobs_store
from contributions.services.notifications import notify_comment, notify_event
from contributions.signals import revision_submitted
from contributions.task_folders import blobs_read, safe_relpath
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

#: Validation findings a maintainer may accept with a written reason (per snippet): a snippet whose test
#: does not notice a wrong fill. Every other error finding sends the proposal back to its author.
OVERRIDABLE_CHECKS = frozenset({"mutation"})

#: The manifest keys of a revision (``ProposalRevision.manifest``) and their defaults.
MANIFEST_DEFAULTS: dict[str, Any] = {
    "annotated_files": [],
    "context_files": [],
    "oracle_files": [],
    "test_entry": "paper2code_test.py",
    "paper_file": "",
    "requirements_file": "",
    "needs_gpu": False,
}
PAPER_SUFFIXES = (".tex", ".md")

MAX_TEXT = 20_000
MAX_PROGRESS_ENTRIES = 500
MAX_REASON = 4000


class ProposalError(ValueError):
    """A proposal action that is not allowed; the message names the rule, ``field`` the form field at fault."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


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
    """Move ``proposal`` from one of ``allowed`` to ``to`` in one conditional update; record and notify.

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
    event = ProposalEvent.objects.create(
        proposal=proposal,
        revision=revision,
        actor=actor,
        from_state=from_state,
        to_state=to,
        reason=reason[:MAX_REASON],
    )
    notify_event(event=event)
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


def latest_revision(proposal: Proposal) -> ProposalRevision | None:
    """The proposal's newest revision (submitted or not), or None before the first upload."""
    return proposal.revisions.order_by("-number").first()


def latest_submitted_revision(proposal: Proposal) -> ProposalRevision | None:
    """The newest submitted revision: the one validated and reviewed."""
    return proposal.revisions.filter(submitted_at__isnull=False).order_by("-number").first()


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
            f"task_key: {key!r} is not a slug (letters, digits, '-' and '_')", field="task_key"
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
    ProposalEvent.objects.create(proposal=proposal, actor=author, from_state="", to_state=State.DRAFT)
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
        raise ProposalError(f"step {step}: answers are not JSON data: {exc}") from None
    if len(encoded) > 1_000_000:
        raise ProposalError(f"step {step}: answers are too large ({len(encoded)} bytes)")
    proposal = _lock(proposal)
    if proposal.state not in _EDITABLE:
        raise ProposalError(f"cannot edit a proposal that is {_label(proposal.state)}")
    draft = dict(proposal.draft or {})
    draft[str(step)] = json.loads(encoded)
    proposal.draft = draft
    proposal.step = max(proposal.step, step)
    proposal.save(update_fields=["draft", "step", "updated_at"])
    return proposal


# ---------------------------------------------------------------------------------------------- revisions


def _path_list(value: Any, *, key: str, files: Mapping[str, Any]) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ProposalError(f"{key}: expected a list of file paths", field=key)
    out: list[str] = []
    for rel in value:
        rel = rel.strip()
        if rel not in files:
            raise ProposalError(f"{key}: {rel!r} is not a file of the upload", field=key)
        if rel not in out:
            out.append(rel)
    return out


def _one_path(value: Any, *, key: str, files: Mapping[str, Any], required: bool = False) -> str:
    if value in (None, ""):
        if required:
            raise ProposalError(f"{key}: name a file of the upload", field=key)
        return ""
    if not isinstance(value, str):
        raise ProposalError(f"{key}: expected a file path", field=key)
    rel = value.strip()
    if rel not in files:
        raise ProposalError(f"{key}: {rel!r} is not a file of the upload", field=key)
    return rel


def revision_manifest_clean(manifest: Mapping[str, Any], *, files: Mapping[str, Any]) -> dict[str, Any]:
    """The author's declarations about an upload, checked against its ``files`` (paths of the upload).

    Keys (``MANIFEST_DEFAULTS``): ``annotated_files`` (at least one), ``context_files``, ``oracle_files``
    (files the test compares against: hidden from completions), ``test_entry``, ``paper_file`` (``.tex``
    or ``.md``), ``requirements_file`` and ``needs_gpu``. Each path must be a file of the upload.
    Raises ``ProposalError`` whose ``field`` is the key at fault.
    """
    if not isinstance(manifest, Mapping):
        raise ProposalError("manifest: expected a mapping of declarations", field="manifest")
    unknown = sorted(set(manifest) - set(MANIFEST_DEFAULTS))
    if unknown:
        raise ProposalError(
            f"manifest: unknown key(s) {', '.join(unknown)} (known: {', '.join(MANIFEST_DEFAULTS)})",
            field="manifest",
        )
    annotated = _path_list(manifest.get("annotated_files"), key="annotated_files", files=files)
    if not annotated:
        raise ProposalError("annotated_files: name at least one annotated file", field="annotated_files")
    context = _path_list(manifest.get("context_files"), key="context_files", files=files)
    both = sorted(set(annotated) & set(context))
    if both:
        raise ProposalError(
            f"context_files: {', '.join(both)} cannot be both annotated and context", field="context_files"
        )
    oracle = _path_list(manifest.get("oracle_files"), key="oracle_files", files=files)
    clash = sorted(set(oracle) & (set(annotated) | set(context)))
    if clash:
        raise ProposalError(
            f"oracle_files: {', '.join(clash)} cannot be shown to models and hidden from them",
            field="oracle_files",
        )
    test_entry = _one_path(
        manifest.get("test_entry") or MANIFEST_DEFAULTS["test_entry"], key="test_entry", files=files
    )
    paper = _one_path(manifest.get("paper_file"), key="paper_file", files=files)
    if paper and not paper.endswith(PAPER_SUFFIXES):
        raise ProposalError(
            f"paper_file: {paper!r} is not LaTeX (.tex) or Markdown (.md)", field="paper_file"
        )
    requirements = _one_path(manifest.get("requirements_file"), key="requirements_file", files=files)
    gpu = manifest.get("needs_gpu", False)
    if not isinstance(gpu, bool):
        raise ProposalError("needs_gpu: expected true or false", field="needs_gpu")
    return {
        "annotated_files": annotated,
        "context_files": context,
        "oracle_files": oracle,
        "test_entry": test_entry,
        "paper_file": paper,
        "requirements_file": requirements,
        "needs_gpu": gpu,
    }


def revision_content_hash(*, files: Mapping[str, str], manifest: Mapping[str, Any]) -> str:
    """sha256 over the sorted (relpath, blob sha256) pairs and the manifest: equal uploads hash equal."""
    payload = json.dumps({"files": sorted(files.items()), "manifest": dict(manifest)}, sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


_SOURCES = {choice.value for choice in ProposalRevision.Source}


@transaction.atomic
def revision_create(
    *, proposal: Proposal, by: Any, intake_result: Any, manifest: Mapping[str, Any]
) -> ProposalRevision:
    """Store an upload as the proposal's editable revision (replacing one not yet submitted).

    ``intake_result`` is what ``contributions.intake`` returns: ``files`` (relpath -> bytes, already
    screened by the safe intake), ``source`` ("archive" or "git"), ``origin`` (file name or URL) and
    ``commit``. Only the author, only while the proposal is a draft or changes were requested; a revision
    already submitted is never changed: the upload becomes the next revision.
    """
    _require_author(proposal, by, "upload code to")
    proposal = _lock(proposal)
    if proposal.state not in _EDITABLE:
        raise ProposalError(
            f"cannot upload code to a proposal that is {_label(proposal.state)} (only {_states(_EDITABLE)})"
        )
    files = dict(getattr(intake_result, "files", None) or {})
    if not files:
        raise ProposalError("code: the upload holds no files", field="code")
    for rel in files:
        try:
            safe_relpath(rel, owner=f"proposal {proposal.task_key}")
        except ValueError as exc:
            raise ProposalError(f"code: {exc}", field="code") from None
        if not isinstance(files[rel], bytes):
            raise ProposalError(f"code: {rel!r} is not file bytes", field="code")
    source = str(getattr(intake_result, "source", ""))
    if source not in _SOURCES:
        raise ProposalError(f"code: unknown source {source!r} (known: {', '.join(sorted(_SOURCES))})")
    cleaned = revision_manifest_clean(manifest, files=files)
    stored = file_blobs_store(files)
    pending = proposal.revisions.filter(submitted_at__isnull=True).first()
    if pending is not None:
        number = pending.number
        pending.delete()
    else:
        number = (proposal.revisions.aggregate(n=Max("number"))["n"] or 0) + 1
    revision = ProposalRevision.objects.create(
        proposal=proposal,
        number=number,
        created_by=by,
        source=source,
        origin=str(getattr(intake_result, "origin", "") or "")[:2000],
        commit=str(getattr(intake_result, "commit", "") or "")[:64],
        files=stored,
        manifest=cleaned,
        content_hash=revision_content_hash(files=stored, manifest=cleaned),
    )
    Proposal.objects.filter(pk=proposal.pk).update(updated_at=timezone.now())
    return revision


@transaction.atomic
def revision_update_manifest(
    *, revision: ProposalRevision, by: Any, manifest: Mapping[str, Any]
) -> ProposalRevision:
    """Change the declarations (form step c) of a revision not yet submitted; refused once submitted."""
    proposal = revision.proposal
    _require_author(proposal, by, "edit")
    proposal = _lock(proposal)
    if proposal.state not in _EDITABLE:
        raise ProposalError(f"cannot edit a proposal that is {_label(proposal.state)}")
    cleaned = revision_manifest_clean(manifest, files=revision.files)
    updated = ProposalRevision.objects.filter(pk=revision.pk, submitted_at__isnull=True).update(
        manifest=cleaned, content_hash=revision_content_hash(files=revision.files, manifest=cleaned)
    )
    if not updated:
        raise ProposalError(
            f"revision {revision.number} was submitted and cannot change; upload a new revision"
        )
    revision.refresh_from_db()
    return revision


# ------------------------------------------------------------------------------------------ submission


def _queue_validation(revision: ProposalRevision) -> None:
    revision_id, needs_gpu = revision.pk, revision.needs_gpu
    transaction.on_commit(
        lambda: revision_submitted.send(sender=ProposalRevision, revision_id=revision_id, needs_gpu=needs_gpu)
    )


@transaction.atomic
def proposal_submit(*, proposal: Proposal, by: Any) -> ProposalEvent:
    """draft | changes requested -> submitted: freeze the newest revision and queue its validation.

    The revision submitted is the one not yet submitted or, when the last validation could not run at
    all (infrastructure), the same revision again. Refused without a paper title.
    """
    _require_author(proposal, by, "submit")
    proposal = _lock(proposal)
    if proposal.state not in _EDITABLE:
        raise ProposalError(f"cannot submit a proposal that is {_label(proposal.state)}")
    if not proposal.title:
        raise ProposalError("title: give the paper's title before submitting", field="title")
    revision = latest_revision(proposal)
    if revision is None:
        raise ProposalError("code: upload the task's code before submitting", field="code")
    now = timezone.now()
    if revision.submitted_at is None:
        ProposalRevision.objects.filter(pk=revision.pk, submitted_at__isnull=True).update(submitted_at=now)
        revision.submitted_at = now
        reason = f"revision {revision.number} submitted"
    elif revision.validation_status == VStatus.ERROR:
        reason = f"revision {revision.number} submitted again (its validation could not run)"
    else:
        raise ProposalError(
            f"code: revision {revision.number} was already submitted; upload a new revision", field="code"
        )
    ProposalRevision.objects.filter(pk=revision.pk).update(
        validation_status=VStatus.PENDING,
        validation_report={},
        validation_progress=[],
        validation_started_at=None,
        validation_finished_at=None,
        validation_deadline=None,
        validation_attempts=0,
    )
    event = _transition(
        proposal=proposal,
        allowed=_EDITABLE,
        to=State.SUBMITTED,
        actor=by,
        reason=reason,
        revision=revision,
        action="submit",
    )
    _queue_validation(revision)
    return event


# ------------------------------------------------------------------------------------------ validation


def _validated_revision(revision: ProposalRevision) -> ProposalRevision:
    """``revision`` locked, checked to be the proposal's newest submitted revision."""
    revision = ProposalRevision.objects.select_for_update().select_related("proposal").get(pk=revision.pk)
    newest = latest_submitted_revision(revision.proposal)
    if revision.submitted_at is None or newest is None or newest.pk != revision.pk:
        raise ProposalError(f"{revision} is not the proposal's revision under validation")
    return revision


def _running_revision(revision: ProposalRevision) -> ProposalRevision:
    """``revision`` locked, checked to be under validation with its validation running."""
    revision = _validated_revision(revision)
    if revision.validation_status != VStatus.RUNNING:
        raise ProposalError(f"{revision}: its validation is not running (it is {revision.validation_status})")
    return revision


def _validation_move(
    revision: ProposalRevision,
    *,
    allowed: tuple[str, ...],
    to: str,
    reason: str,
    action: str,
    **validation: Any,
) -> ProposalEvent:
    """A transition the validation job makes (no actor) for ``revision``, then its ``validation`` fields."""
    event = _transition(
        proposal=revision.proposal,
        allowed=allowed,
        to=to,
        actor=None,
        reason=reason,
        revision=revision,
        action=action,
    )
    ProposalRevision.objects.filter(pk=revision.pk).update(**validation)
    return event


def _validation_end(
    revision: ProposalRevision, *, to: str, reason: str, action: str, status: str, report: dict[str, Any]
) -> ProposalEvent:
    """validating -> ``to`` with the final ``status`` and ``report``; the watchdog stops watching it."""
    return _validation_move(
        revision,
        allowed=(State.VALIDATING,),
        to=to,
        reason=reason,
        action=action,
        validation_status=status,
        validation_report=report,
        validation_finished_at=timezone.now(),
        validation_deadline=None,
    )


def validation_job_limits() -> tuple[int, int]:
    """(soft, hard) Celery time limits of a validation job: the battery stops itself at
    ``RCB_VALIDATION_LIMIT_S`` (or earlier, by its own budget); the soft limit leaves it time to report,
    the hard one kills a job that ignores the soft one. The watchdog acts after the hard one."""
    limit = settings.RCB_VALIDATION_LIMIT_S
    return limit + VALIDATION_SOFT_GRACE_S, limit + VALIDATION_SOFT_GRACE_S + VALIDATION_HARD_GRACE_S


#: Seconds past ``RCB_VALIDATION_LIMIT_S`` before the soft, then the hard time limit of a validation job.
VALIDATION_SOFT_GRACE_S = 60
VALIDATION_HARD_GRACE_S = 30


@transaction.atomic
def proposal_validation_start(*, revision: ProposalRevision, job_id: str = "") -> ProposalRevision:
    """submitted -> validating: the validation job ``job_id`` has begun; sets the deadline the watchdog
    enforces (after the job's hard time limit, ``validation_job_limits``).

    Raises ``ProposalError`` when the proposal is not waiting for validation (a duplicate message, a
    withdrawn proposal): the job then does nothing.
    """
    revision = _validated_revision(revision)
    now = timezone.now()
    attempt = revision.validation_attempts + 1
    _validation_move(
        revision,
        allowed=(State.SUBMITTED,),
        to=State.VALIDATING,
        reason=f"validating revision {revision.number} (attempt {attempt})",
        action="start validating",
        validation_status=VStatus.RUNNING,
        validation_started_at=now,
        validation_finished_at=None,
        validation_deadline=now + timedelta(seconds=validation_job_limits()[1] + VALIDATION_HARD_GRACE_S),
        validation_job_id=(job_id or "")[:255],
        validation_attempts=attempt,
        validation_progress=[],
        validation_report={},
    )
    revision.refresh_from_db()
    return revision


@transaction.atomic
def proposal_validation_progress(
    *, revision: ProposalRevision, stage: str, data: Mapping[str, Any] | None = None
) -> bool:
    """Append a finished stage of the running validation to ``validation_progress`` (the page streams it).

    Returns False (and records nothing) when the revision's validation is no longer running, e.g. after
    the watchdog failed it. Keeps the newest ``MAX_PROGRESS_ENTRIES`` entries.
    """
    locked = ProposalRevision.objects.select_for_update().filter(pk=revision.pk).first()
    if locked is None or locked.validation_status != VStatus.RUNNING:
        return False
    try:
        payload = json.loads(json.dumps(dict(data or {}), default=str))
    except (TypeError, ValueError):
        payload = {"note": "progress data was not JSON"}
    entry = {"stage": str(stage)[:200], "at": timezone.now().isoformat(), "data": payload}
    progress = [*(locked.validation_progress or []), entry][-MAX_PROGRESS_ENTRIES:]
    ProposalRevision.objects.filter(pk=locked.pk).update(validation_progress=progress)
    revision.validation_progress = progress
    return True


def _report_dict(report: Any) -> dict[str, Any]:
    data = report.to_dict() if hasattr(report, "to_dict") else report
    if not isinstance(data, Mapping) or not isinstance(data.get("ok"), bool):
        raise ProposalError("a validation report must be a ValidationReport or its to_dict() with 'ok'")
    return json.loads(json.dumps(dict(data), default=str))


def report_errors(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The error findings of a report (``ValidationReport.to_dict()`` form)."""
    return [f for f in report.get("findings") or [] if isinstance(f, dict) and f.get("severity") == "error"]


def report_overridable(report: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Snippet name -> its error findings a maintainer may accept ("not checked by the test")."""
    out: dict[str, list[dict[str, Any]]] = {}
    for finding in report_errors(report):
        if finding.get("check") in OVERRIDABLE_CHECKS and finding.get("snippet"):
            out.setdefault(str(finding["snippet"]), []).append(finding)
    return out


def _finding_line(finding: Mapping[str, Any]) -> str:
    where = finding.get("file") or ""
    if where and finding.get("line"):
        where = f"{where}:{finding['line']}"
    text = str(finding.get("message") or finding.get("check") or "error")
    return f"{text} ({where})" if where else text


@transaction.atomic
def proposal_validation_finish(*, revision: ProposalRevision, report: Any) -> ProposalEvent:
    """validating -> ready for review (report ok, or only findings a maintainer may accept) or
    changes requested (any other error finding, listed in the reason).

    ``report`` is a ``researchcodebench.validation.ValidationReport`` or its ``to_dict()``.
    """
    data = _report_dict(report)
    revision = _running_revision(revision)
    errors = report_errors(data)
    overridable = report_overridable(data)
    blocking = [f for f in errors if not (f.get("check") in OVERRIDABLE_CHECKS and f.get("snippet"))]
    if data["ok"] or not blocking:
        to = State.READY_FOR_REVIEW
        if data["ok"]:
            reason = f"revision {revision.number} validated green"
        else:
            names = ", ".join(sorted(overridable))
            reason = (
                f"revision {revision.number} validated; not checked by the test: {names} "
                "(a maintainer must accept each with a written reason)"
            )
    else:
        to = State.CHANGES_REQUESTED
        shown = "; ".join(_finding_line(f) for f in blocking[:5])
        more = f"; and {len(blocking) - 5} more" if len(blocking) > 5 else ""
        reason = f"validation found {len(blocking)} error(s): {shown}{more}"
    return _validation_end(
        revision,
        to=to,
        reason=reason,
        action="finish validating",
        status=VStatus.PASSED if data["ok"] else VStatus.FAILED,
        report=data,
    )


@transaction.atomic
def proposal_validation_fail(*, revision: ProposalRevision, reason: str, retry: bool = True) -> ProposalEvent:
    """The validation could not run (infrastructure, not the task's fault).

    With ``retry`` and fewer than ``RCB_VALIDATION_ATTEMPTS`` attempts: validating -> submitted and the
    job is queued again. Otherwise validating -> changes requested with "validation could not run:
    <reason>"; the author may submit the same revision again.
    """
    revision = _running_revision(revision)
    reason = (reason or "unknown error").strip()[:MAX_REASON]
    attempts = revision.validation_attempts
    if retry and attempts < settings.RCB_VALIDATION_ATTEMPTS:
        event = _validation_move(
            revision,
            allowed=(State.VALIDATING,),
            to=State.SUBMITTED,
            reason=f"validation attempt {attempts} could not run, trying again: {reason}",
            action="retry validating",
            validation_status=VStatus.PENDING,
            validation_deadline=None,
        )
        _queue_validation(revision)
        return event
    return _validation_end(
        revision,
        to=State.CHANGES_REQUESTED,
        reason=f"validation could not run: {reason}",
        action="fail validating",
        status=VStatus.ERROR,
        report={"ok": False, "error": reason, "findings": []},
    )


def proposal_validation_watchdog(*, now: Any = None) -> dict[str, list[Any]]:
    """Fail every validation running past its deadline; re-send the message of a long-submitted proposal.

    A validation past its deadline (its job's hard time limit has passed: the worker died, froze or the
    job ignored its limits) goes back to the author with the reason "validation timed out: ...". A proposal
    submitted longer than ``RCB_PENDING_RESEND_S`` ago whose job never started (a lost message) is queued
    again. Returns ``{"failed": [revision ids], "jobs": [their job ids, for the caller to stop],
    "resent": [revision ids]}``.
    """
    now = now or timezone.now()
    failed: list[int] = []
    jobs: list[str] = []
    overdue = ProposalRevision.objects.filter(
        validation_status=VStatus.RUNNING,
        validation_deadline__lt=now,
        proposal__state=State.VALIDATING,
    ).order_by("pk")
    for revision in overdue:
        job = revision.validation_job_id
        try:
            proposal_validation_fail(
                revision=revision,
                reason=(
                    f"it timed out, running past its limit of {settings.RCB_VALIDATION_LIMIT_S} s "
                    "(RCB_VALIDATION_LIMIT_S), and its job was stopped; make the test faster"
                ),
                retry=False,
            )
        except ProposalError:
            continue  # finished or failed by the job meanwhile
        failed.append(revision.pk)
        if job:
            jobs.append(job)
    resent: list[int] = []
    stale = now - timedelta(seconds=settings.RCB_PENDING_RESEND_S)
    waiting = ProposalRevision.objects.filter(
        validation_status=VStatus.PENDING,
        submitted_at__isnull=False,
        proposal__state=State.SUBMITTED,
        proposal__updated_at__lt=stale,
    ).order_by("pk")
    for revision in waiting:
        # updated_at marks the resend, so a worker-less site is sent one message per RCB_PENDING_RESEND_S.
        Proposal.objects.filter(pk=revision.proposal_id).update(updated_at=now)
        revision_submitted.send(
            sender=ProposalRevision, revision_id=revision.pk, needs_gpu=revision.needs_gpu
        )
        resent.append(revision.pk)
    return {"failed": failed, "jobs": jobs, "resent": resent}


# ------------------------------------------------------------------------------------------------ review


def _clean_rubric(rubric: Mapping[str, Any] | None) -> dict[str, bool]:
    rubric = dict(rubric or {})
    unknown = sorted(set(rubric) - set(RUBRIC_KEYS))
    if unknown:
        raise ProposalError(
            f"rubric: unknown item(s) {', '.join(unknown)} (items: {', '.join(RUBRIC_KEYS)})", field="rubric"
        )
    if not all(isinstance(v, bool) for v in rubric.values()):
        raise ProposalError("rubric: every item is checked (true) or not (false)", field="rubric")
    return {key: rubric.get(key, False) for key in RUBRIC_KEYS}


def _clean_overrides(
    overrides: Mapping[str, Any] | None, *, report: Mapping[str, Any]
) -> dict[str, dict[str, str]]:
    """snippet name -> {"reason": an ``UncheckedReason``, "explanation": at least
    ``UNCHECKED_EXPLANATION_MIN`` characters}: a reason of substance for each snippet accepted although its
    test does not check it (issue 18 item 5)."""
    overrides = dict(overrides or {})
    allowed = report_overridable(report)
    cleaned: dict[str, dict[str, str]] = {}
    reasons = ", ".join(UncheckedReason.values)
    for name, given in overrides.items():
        if name not in allowed:
            raise ProposalError(
                f"snippet_overrides: {name!r} has no 'not checked by the test' finding to accept",
                field="snippet_overrides",
            )
        given = given if isinstance(given, Mapping) else {"explanation": given}
        reason = given.get("reason")
        if reason not in UncheckedReason.values:
            raise ProposalError(
                f"snippet_overrides: pick why {name!r} may stay unchecked (one of {reasons})",
                field="snippet_overrides",
            )
        raw = given.get("explanation")
        text = _text(raw if isinstance(raw, str) else "", field="snippet_overrides", limit=MAX_REASON)
        if len(text) < UNCHECKED_EXPLANATION_MIN:
            raise ProposalError(
                f"snippet_overrides: give a written reason for accepting {name!r}: explain it in at least "
                f"{UNCHECKED_EXPLANATION_MIN} characters (it is shown with the snippet on every public page)",
                field="snippet_overrides",
            )
        cleaned[name] = {"reason": reason, "explanation": text}
    return cleaned


# Decisions that move the proposal at once, with the word their refusal uses.
_REVIEW_MOVES: dict[str, tuple[str, str]] = {
    Review.Decision.REQUEST_CHANGES: (State.CHANGES_REQUESTED, "request changes to"),
    Review.Decision.REJECT: (State.REJECTED, "reject"),
}


@transaction.atomic
def proposal_review(
    *,
    proposal: Proposal,
    reviewer: Any,
    decision: str,
    rubric: Mapping[str, Any] | None = None,
    body: str = "",
    overrides: Mapping[str, Any] | None = None,
) -> Review:
    """A maintainer's review of the revision under review (the newest submitted one).

    Rules: only maintainers review, never their own proposal; only a proposal ready for review (a
    ``comment`` also while it is submitted, validating or changes were requested). ``request_changes``
    and ``reject`` need a reason (``body``). ``approve`` needs every rubric item checked and every
    error finding of the report accepted through ``overrides`` (snippet name -> {"reason": an
    ``UncheckedReason``, "explanation": a written one of at least ``UNCHECKED_EXPLANATION_MIN``
    characters}; only "not checked by the test" findings can be). With ``RCB_APPROVALS_REQUIRED`` distinct approvals of
    the revision the proposal moves to approved; publishing follows (``services.publishing``).
    """
    if not is_maintainer(reviewer):
        raise ProposalError("only maintainers review proposals")
    if reviewer.pk == proposal.author_id:
        raise ProposalError("nobody reviews their own proposal")
    if decision not in Review.Decision.values:
        raise ProposalError(
            f"decision: {decision!r} is not one of {', '.join(Review.Decision.values)}", field="decision"
        )
    proposal = _lock(proposal)
    revision = latest_submitted_revision(proposal)
    reviewable = (
        (State.READY_FOR_REVIEW, State.SUBMITTED, State.VALIDATING, State.CHANGES_REQUESTED)
        if decision == Review.Decision.COMMENT
        else (State.READY_FOR_REVIEW,)
    )
    if proposal.state not in reviewable or revision is None:
        raise ProposalError(
            f"cannot {Review.Decision(decision).label.lower()} a proposal that is {_label(proposal.state)} "
            f"(only one that is {_states(reviewable)})"
        )
    report = revision.validation_report or {}
    needs_reason = decision in (Review.Decision.REQUEST_CHANGES, Review.Decision.REJECT)
    text = _text(body, field="body", required=needs_reason)
    if decision == Review.Decision.COMMENT and not text:
        raise ProposalError("body: write a comment", field="body")
    checked = _clean_rubric(rubric)
    accepted = _clean_overrides(overrides, report=report)
    if decision == Review.Decision.APPROVE:
        unchecked = [key for key, value in checked.items() if not value]
        if unchecked:
            raise ProposalError(
                f"rubric: check every item before approving (unchecked: {', '.join(unchecked)})",
                field="rubric",
            )
        if not report.get("ok"):
            overridable = report_overridable(report)
            cannot = [
                _finding_line(f)
                for f in report_errors(report)
                if not (f.get("check") in OVERRIDABLE_CHECKS and f.get("snippet"))
            ]
            if not report or cannot:
                raise ProposalError(
                    "the validation report has errors no review can accept: "
                    + ("; ".join(cannot[:5]) or "there is no report")
                )
            missing = sorted(set(overridable) - set(accepted))
            if missing:
                raise ProposalError(
                    "snippet_overrides: accept each snippet not checked by the test with a written reason: "
                    + ", ".join(missing),
                    field="snippet_overrides",
                )
        if revision.reviews.filter(reviewer=reviewer, decision=Review.Decision.APPROVE).exists():
            raise ProposalError(f"you already approved revision {revision.number}")
    review = Review.objects.create(
        proposal=proposal,
        revision=revision,
        reviewer=reviewer,
        decision=decision,
        rubric=checked,
        body=text,
        snippet_overrides=accepted,
    )
    if decision == Review.Decision.APPROVE:
        approvals = (
            revision.reviews.filter(decision=Review.Decision.APPROVE).values("reviewer").distinct().count()
        )
        required = settings.RCB_APPROVALS_REQUIRED
        if approvals >= required:
            _transition(
                proposal=proposal,
                allowed=(State.READY_FOR_REVIEW,),
                to=State.APPROVED,
                actor=reviewer,
                reason=f"revision {revision.number} approved ({approvals} of {required} approvals)",
                revision=revision,
                action="approve",
            )
            from contributions.services import publishing  # publishing builds on this module

            # Approval publishes at once, in its own transaction: a failure there keeps the approval.
            transaction.on_commit(
                lambda: publishing.proposal_publish_approved(proposal_id=proposal.pk, by_id=reviewer.pk)
            )
    elif decision in _REVIEW_MOVES:
        to, action = _REVIEW_MOVES[decision]
        _transition(
            proposal=proposal,
            allowed=(State.READY_FOR_REVIEW,),
            to=to,
            actor=reviewer,
            reason=text,
            revision=revision,
            action=action,
        )
    return review


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
                raise ProposalError(f"line: {file} has lines 1 to {count}, not {line!r}", field="line")
    else:
        revision = None
    comment = Comment.objects.create(
        proposal=proposal, revision=revision, author=author, file=file, line=line, body=text
    )
    notify_comment(comment=comment)
    return comment
