"""Revisions of a proposal: the code an author uploads (files and manifest), checked and stored.

An upload replaces the revision not yet submitted; ``proposal_validation.proposal_submit`` freezes it.
``revision_upload`` is the form's code step (the upload with its guessed declarations, and the step's draft
answers); ``revision_create`` stores an upload with declarations given; ``revision_update_manifest``
changes the declarations of a revision not yet submitted.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from contributions.intake import IntakeResult
from contributions.models import (
    Proposal,
    ProposalRevision,
)
from contributions.services.catalogue import file_blobs_store
from contributions.services.proposal_state import (
    EDITABLE_STATES,
    UPLOADABLE_STATES,
    ProposalError,
    proposal_lock,
    proposal_transition,
    require_author,
    state_label,
    states_label,
)
from contributions.services.proposals import proposal_save_draft
from contributions.task_folders import safe_relpath
from contributions.upload_manifest import CODE_SUFFIXES, MANIFEST_DEFAULTS, PAPER_SUFFIXES, manifest_guess


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


def revision_manifest_clean(
    manifest: Mapping[str, Any], *, files: Mapping[str, Any], unmarked: bool = False
) -> dict[str, Any]:
    """The author's declarations about an upload, checked against its ``files`` (paths of the upload).

    Keys (``MANIFEST_DEFAULTS``): ``annotated_files`` (at least one), ``context_files``, ``oracle_files``
    (files the test compares against: hidden from completions), ``test_entry``, ``paper_file`` (``.tex``
    or ``.md``), ``requirements_file`` and ``needs_gpu``. Each path must be a file of the upload.
    Raises ``ProposalError`` whose ``field`` is the key at fault. ``unmarked``: the upload holds no tags
    yet (its author marks the snippets in the browser), so no annotated file is named.
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
    if not annotated and not unmarked:
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


def _revise(proposal: Proposal, *, by: Any) -> None:
    """ready for review -> changes requested: the author replaces the revision under review."""
    under_review = proposal.revisions.filter(submitted_at__isnull=False).order_by("-number").first()
    number = under_review.number if under_review is not None else 0
    proposal_transition(
        proposal=proposal,
        allowed=(Proposal.State.READY_FOR_REVIEW,),
        to=Proposal.State.CHANGES_REQUESTED,
        actor=by,
        reason=f"The author is preparing a new revision to replace revision {number}.",
        revision=under_review,
        action="revise",
    )


@transaction.atomic
def revision_create(
    *,
    proposal: Proposal,
    by: Any,
    intake_result: IntakeResult,
    manifest: Mapping[str, Any],
    unmarked: bool = False,
) -> ProposalRevision:
    """Store an upload as the proposal's editable revision (replacing one not yet submitted).

    ``intake_result`` is what ``contributions.intake`` returns: ``files`` (relpath -> bytes, already
    screened by the safe intake), ``source`` ("archive" or "git"), ``origin`` (file name or URL) and
    ``commit``. Only the author, only while the proposal is a draft, changes were requested or it is ready
    for review; a revision already submitted is never changed: the upload becomes the next revision. An
    upload to a proposal ready for review withdraws the revision under review from review first (ready for
    review -> changes requested, "revise"), so no maintainer approves code its author is replacing.
    ``unmarked``: code without tags, whose snippets the author marks in the browser (``services.marking``).
    """
    require_author(proposal, by, "upload code to")
    proposal = proposal_lock(proposal)
    if proposal.state not in UPLOADABLE_STATES:
        raise ProposalError(
            f"cannot upload code to a proposal that is {state_label(proposal.state)} (only {states_label(UPLOADABLE_STATES)})"
        )
    files = dict(intake_result.files)
    if not files:
        raise ProposalError("code: the upload holds no files", field="code")
    for rel in files:
        try:
            safe_relpath(rel, owner=f"proposal {proposal.task_key}")
        except ValueError as exc:
            raise ProposalError(f"code: {exc}", field="code") from None
        if not isinstance(files[rel], bytes):
            raise ProposalError(f"code: {rel!r} is not file bytes", field="code")
    source = intake_result.source
    if source not in _SOURCES:
        raise ProposalError(
            f"code: unknown source {source!r} (known: {', '.join(sorted(_SOURCES))})", field="code"
        )
    cleaned = revision_manifest_clean(manifest, files=files, unmarked=unmarked)
    stored = file_blobs_store(files)
    revise = proposal.state == Proposal.State.READY_FOR_REVIEW
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
        origin=(intake_result.origin or "")[:2000],
        commit=(intake_result.commit or "")[:64],
        files=stored,
        manifest=cleaned,
        content_hash=revision_content_hash(files=stored, manifest=cleaned),
    )
    if revise:
        # After the new revision exists, so that the move records "revision N not submitted yet".
        _revise(proposal, by=by)
    Proposal.objects.filter(pk=proposal.pk).update(updated_at=timezone.now())
    return revision


@transaction.atomic
def revision_upload(*, proposal: Proposal, by: Any, intake_result: IntakeResult) -> ProposalRevision:
    """The contribution form's code step: store an upload with the declarations guessed from its files
    (``upload_manifest.manifest_guess``; the author confirms them in the next step) and save the step's
    draft answers, in one transaction.

    Code without any paper2code tag is stored as it is, with no annotated file: its author marks the
    snippets on it in the browser (``services.marking``). Refuses, with ``ProposalError(field="code")``, an
    upload with no test script; otherwise as ``revision_create`` (whose refusals name their own field).
    """
    manifest = manifest_guess(intake_result.files)
    if not manifest["test_entry"]:
        raise ProposalError(
            "code: the upload has no test script (paper2code_test.py, or a .py file that is not annotated)",
            field="code",
        )
    if not any(rel.endswith(CODE_SUFFIXES) and rel != manifest["test_entry"] for rel in intake_result.files):
        raise ProposalError(
            "code: the upload holds no code besides its test script: a snippet is marked on the code the "
            "test checks",
            field="code",
        )
    revision = revision_create(
        proposal=proposal,
        by=by,
        intake_result=intake_result,
        manifest=manifest,
        unmarked=not manifest["annotated_files"],
    )
    proposal_save_draft(
        proposal=proposal,
        by=by,
        step=2,
        data={
            "source": revision.source,
            "origin": revision.origin,
            "commit": revision.commit,
            "revision": revision.number,
            "content_hash": revision.content_hash,
        },
    )
    return revision


@transaction.atomic
def revision_update_manifest(
    *, revision: ProposalRevision, by: Any, manifest: Mapping[str, Any]
) -> ProposalRevision:
    """Change the declarations (form step c) of a revision not yet submitted; refused once submitted."""
    proposal = revision.proposal
    require_author(proposal, by, "edit")
    proposal = proposal_lock(proposal)
    if proposal.state not in EDITABLE_STATES:
        raise ProposalError(f"cannot edit a proposal that is {state_label(proposal.state)}")
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
