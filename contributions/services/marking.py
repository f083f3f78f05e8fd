"""Marking snippets in the browser: the author's unsaved marks (a draft on the proposal) and saving them as
a revision whose files carry the tags the core's reader expects.

Every change to the draft is checked whole before it is kept (``researchcodebench.marking.write_task_tags``
on the revision's untagged files): a refused change keeps the draft as it was and says why, naming the file,
lines and snippet. ``revision_marks_save`` writes the tags into the revision's files and stores them as a new
revision (``revisions.revision_create``: the revision not yet submitted is replaced, a submitted one never
changes and the save becomes the next revision), so the proposal's history shows the tags that changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction

from contributions.intake import IntakeResult
from contributions.models import Proposal, ProposalRevision
from contributions.selectors.marking import (
    DRAFT_KEY,
    MarkBase,
    marks_draft,
    marks_encode,
    revision_mark_base,
)
from contributions.selectors.proposals import latest_revision
from contributions.services.proposal_state import (
    UPLOADABLE_STATES,
    ProposalError,
    proposal_lock,
    require_author,
    state_label,
    states_label,
)
from contributions.services.revisions import revision_create
from contributions.task_folders import blobs_read
from researchcodebench.marking import Mark, MarkError, mark_from_selection, write_task_tags

#: the most snippets one task may hold (the page and a save stay bounded)
MAX_MARKS = 200


class MarksRefused(ProposalError):
    """Marks that cannot be written: ``problems`` lists every reason (``MarkProblem``), each with its place."""

    def __init__(self, message: str, *, problems: Sequence[Any] = ()) -> None:
        super().__init__(message, field="marks")
        self.problems = tuple(problems)


def _editable(proposal: Proposal, by: Any) -> tuple[Proposal, ProposalRevision, MarkBase]:
    require_author(proposal, by, "mark snippets on")
    proposal = proposal_lock(proposal)
    if proposal.state not in UPLOADABLE_STATES:
        raise ProposalError(
            f"cannot mark snippets on a proposal that is {state_label(proposal.state)} "
            f"(only {states_label(UPLOADABLE_STATES)})"
        )
    revision = latest_revision(proposal)
    if revision is None:
        raise ProposalError("code: upload the task's code before marking snippets on it", field="code")
    return proposal, revision, revision_mark_base(revision=revision)


def _checked(base: MarkBase, marks: Mapping[str, Sequence[Mark]]) -> dict[str, str]:
    """The markable files with ``marks`` written in; raises ``MarksRefused`` with every problem."""
    if sum(len(m) for m in marks.values()) > MAX_MARKS:
        raise MarksRefused(f"a task holds at most {MAX_MARKS} snippets")
    unmarkable = sorted(set(marks) - set(base.texts))
    if unmarkable:
        path = unmarkable[0]
        why = base.skipped.get(path) or ("its tags do not pair up" if path in base.problems else "")
        reason = f": {why}" if why else ": it is not a code file of the task other than its test"
        raise MarksRefused(f"{path} cannot be marked{reason}")
    try:
        return write_task_tags(base.texts, {p: list(m) for p, m in marks.items() if m})
    except MarkError as err:
        raise MarksRefused(str(err), problems=err.problems) from None


def _keep(proposal: Proposal, base: MarkBase, marks: Mapping[str, Sequence[Mark]]) -> dict[str, list[Mark]]:
    _checked(base, marks)
    kept = {p: list(m) for p, m in marks.items() if m}
    draft = dict(proposal.draft or {})
    draft[DRAFT_KEY] = {"content_hash": base.revision.content_hash, "marks": marks_encode(kept)}
    Proposal.objects.filter(pk=proposal.pk).update(draft=draft)
    proposal.draft = draft
    return kept


def _find(marks: Mapping[str, Sequence[Mark]], name: str) -> tuple[str, Mark]:
    for path, file_marks in marks.items():
        for mark in file_marks:
            if mark.name == name:
                return path, mark
    raise MarksRefused(f'no snippet is named "{name}": it may have been deleted or renamed in another tab')


@transaction.atomic
def mark_add(
    *, proposal: Proposal, by: Any, name: str, start: tuple[str, int], end: tuple[str, int]
) -> dict[str, list[Mark]]:
    """Add the snippet ``name`` over the selection from ``start`` to ``end`` (each ``(file, line)`` of the
    untagged text, in either order) to the author's draft; returns the draft's marks."""
    proposal, _revision, base = _editable(proposal, by)
    marks, _ = marks_draft(proposal=proposal, base=base)
    try:
        path, mark = mark_from_selection(name, start, end)
    except MarkError as err:
        raise MarksRefused(str(err), problems=err.problems) from None
    return _keep(proposal, base, {**marks, path: [*marks.get(path, []), mark]})


@transaction.atomic
def mark_change(
    *, proposal: Proposal, by: Any, old_name: str, name: str, first: int, last: int
) -> dict[str, list[Mark]]:
    """Rename, widen, narrow or move the snippet ``old_name`` in the draft (its file stays)."""
    proposal, _revision, base = _editable(proposal, by)
    marks, _ = marks_draft(proposal=proposal, base=base)
    path, old = _find(marks, old_name)
    changed = [Mark(name, first, last) if m is old else m for m in marks[path]]
    return _keep(proposal, base, {**marks, path: changed})


@transaction.atomic
def mark_delete(*, proposal: Proposal, by: Any, name: str) -> dict[str, list[Mark]]:
    """Delete the snippet ``name`` from the draft (the snippets inside it stay)."""
    proposal, _revision, base = _editable(proposal, by)
    marks, _ = marks_draft(proposal=proposal, base=base)
    path, old = _find(marks, name)
    return _keep(proposal, base, {**marks, path: [m for m in marks[path] if m is not old]})


@transaction.atomic
def marks_discard(*, proposal: Proposal, by: Any) -> dict[str, list[Mark]]:
    """Drop the draft: the marks are the newest revision's own again."""
    proposal, _revision, base = _editable(proposal, by)
    draft = dict(proposal.draft or {})
    draft.pop(DRAFT_KEY, None)
    Proposal.objects.filter(pk=proposal.pk).update(draft=draft)
    return {p: list(m) for p, m in base.marks.items()}


@transaction.atomic
def revision_marks_save(*, proposal: Proposal, by: Any) -> ProposalRevision | None:
    """Write the draft's marks as tags and store the files as a new revision (``revision_create``); None when
    the draft is the revision's own marks (nothing to save).

    The new revision's annotated files are the files with marks; a file whose marks were all deleted
    becomes a context file. Every other file, and the rest of the declarations, are the revision's own.
    """
    proposal, revision, base = _editable(proposal, by)
    marks, is_draft = marks_draft(proposal=proposal, base=base)
    if not is_draft:
        return None
    if not any(marks.values()):
        raise MarksRefused("mark at least one snippet: a task without snippets has nothing to test")
    tagged = _checked(base, marks)
    files = blobs_read(revision.files, owner=str(revision))
    for path, text in tagged.items():
        files[path] = text.encode("utf-8")
    manifest = dict(revision.manifest or {})
    annotated = sorted(p for p, m in marks.items() if m)
    unmarked = [p for p in manifest.get("annotated_files") or () if p not in annotated]
    manifest["annotated_files"] = annotated
    manifest["context_files"] = sorted(
        {*(p for p in manifest.get("context_files") or () if p not in annotated), *unmarked}
    )
    upload = IntakeResult(
        files=files,
        source=ProposalRevision.Source.MARKS,
        # Where the code came from: the marks are the revision's source ("snippets marked in the browser").
        origin=revision.origin,
        commit=revision.commit or None,
    )
    saved = revision_create(proposal=proposal, by=by, intake_result=upload, manifest=manifest)
    draft = dict(Proposal.objects.get(pk=proposal.pk).draft or {})
    draft.pop(DRAFT_KEY, None)
    Proposal.objects.filter(pk=proposal.pk).update(draft=draft)
    return saved
