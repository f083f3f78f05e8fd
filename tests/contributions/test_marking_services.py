"""Marking snippets at the service boundary (``contributions/services/marking.py``): code uploaded without
tags is stored as it is, the marks an author makes are kept as a draft that every change checks whole, and a
save writes the tags as a new revision. Every example task, uploaded untagged and re-marked through the
services, is stored byte for byte as the hand-tagged original; bad marks are refused with the place and the
reason, and leave the draft and the revisions as they were."""

from __future__ import annotations

from pathlib import Path

import pytest

from contributions.intake import IntakeResult
from contributions.models import ProposalRevision
from contributions.selectors.marking import marks_draft, revision_mark_base
from contributions.services import ProposalError, proposal_submit, revision_upload
from contributions.services.marking import (
    MarksRefused,
    mark_add,
    mark_change,
    mark_delete,
    marks_discard,
    revision_marks_save,
)
from contributions.task_folders import blobs_read
from researchcodebench.marking import strip_task_tags
from researchcodebench.pset import read_pset, task_files, task_from_files
from tests.factories import UserFactory
from tests.factories.builders import proposal_draft

pytestmark = pytest.mark.django_db

REPO = Path(__file__).resolve().parents[2]
TASKS = read_pset(REPO / "examples" / "pset").tasks


def _files(task) -> dict[str, bytes]:
    return {rel: (Path(task.root) / rel).read_bytes() for rel in task_files(task.root)}


def _untagged_upload(task):
    files = _files(task)
    texts = {rel: data.decode("utf-8") for rel, data in files.items() if rel.endswith(".py")}
    untagged, marks = strip_task_tags(texts, task.meta.annotated_file_paths)
    upload = {**files, **{rel: text.encode("utf-8") for rel, text in untagged.items()}}
    return files, IntakeResult(files=upload, source="archive", origin=f"{task.id}.zip", commit=None), marks


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_an_example_task_uploaded_untagged_and_marked_through_the_services_is_stored_byte_for_byte(task):
    original, upload, marks = _untagged_upload(task)
    proposal = proposal_draft()
    unmarked = revision_upload(proposal=proposal, by=proposal.author, intake_result=upload)
    assert unmarked.manifest["annotated_files"] == []
    with pytest.raises(ProposalError, match="mark the snippets on the code before submitting"):
        proposal_submit(proposal=proposal, by=proposal.author)

    for path, file_marks in marks.items():
        for mark in file_marks:
            mark_add(
                proposal=proposal,
                by=proposal.author,
                name=mark.name,
                start=(path, mark.first),
                end=(path, mark.last),
            )
    saved = revision_marks_save(proposal=proposal, by=proposal.author)

    assert saved.source == ProposalRevision.Source.MARKS
    assert blobs_read(saved.files, owner="test") == original
    assert saved.manifest["annotated_files"] == sorted(task.meta.annotated_file_paths)
    reread = task_from_files(blobs_read(saved.files, owner="test"), task.meta)
    assert [(s.name, s.file, s.code) for s in reread.snippets] == [
        (s.name, s.file, s.code) for s in task.snippets
    ]
    proposal.refresh_from_db()
    assert "marks" not in proposal.draft
    assert revision_marks_save(proposal=proposal, by=proposal.author) is None


def _rmsnorm():
    return next(t for t in TASKS if t.id == "rmsnorm")


def _marked_proposal():
    _original, upload, marks = _untagged_upload(_rmsnorm())
    proposal = proposal_draft()
    revision_upload(proposal=proposal, by=proposal.author, intake_result=upload)
    return proposal, marks


def _state(proposal):
    proposal.refresh_from_db()
    revision = proposal.revisions.order_by("-number").first()
    return (
        proposal.revisions.count(),
        revision.content_hash,
        marks_draft(proposal=proposal, base=revision_mark_base(revision=revision))[0],
    )


def test_bad_marks_are_refused_with_their_place_and_leave_the_draft_and_revisions_as_they_were():
    proposal, marks = _marked_proposal()
    author = proposal.author
    (path,) = marks
    outer, inner = marks[path][:2]
    mark_add(proposal=proposal, by=author, name=outer.name, start=(path, outer.first), end=(path, outer.last))
    before = _state(proposal)
    text = revision_mark_base(revision=proposal.revisions.get()).texts[path]
    blank = next(n for n, line in enumerate(text.split("\n"), start=1) if not line.strip())

    attempts = {
        "across files": dict(name="x", start=(path, 2), end=("paper2code_test.py", 3)),
        "overlap": dict(name="x", start=(path, outer.first + 1), end=(path, outer.last + 1)),
        "a name used twice": dict(name=outer.name, start=(path, inner.first), end=(path, inner.last)),
        "blank lines": dict(name="x", start=(path, blank), end=(path, blank)),
        "outside the file": dict(name="x", start=(path, 1), end=(path, 10_000)),
        "no name": dict(name="  ", start=(path, inner.first), end=(path, inner.last)),
        "a file that is not marked": dict(
            name="x", start=("paper2code_test.py", 1), end=("paper2code_test.py", 2)
        ),
    }
    words = {
        "across files": "a snippet lies in one file",
        "overlap": "without one containing the other",
        "a name used twice": "the name is already used",
        "blank lines": "holds only blank lines",
        "outside the file": "lies outside the file",
        "no name": "a snippet needs a name",
        "a file that is not marked": "paper2code_test.py cannot be marked",
    }
    for label, kwargs in attempts.items():
        with pytest.raises(MarksRefused) as caught:
            mark_add(proposal=proposal, by=author, **kwargs)
        assert words[label] in str(caught.value), label
        assert _state(proposal) == before, label
    with pytest.raises(MarksRefused, match="no snippet is named"):
        mark_change(proposal=proposal, by=author, old_name="gone", name="x", first=1, last=2)
    assert _state(proposal) == before


def test_rename_widen_narrow_nest_and_delete_change_only_the_draft_until_saved():
    proposal, marks = _marked_proposal()
    author = proposal.author
    (path,) = marks
    outer, inner = marks[path][:2]
    mark_add(proposal=proposal, by=author, name="outer", start=(path, outer.last), end=(path, outer.first))
    mark_add(proposal=proposal, by=author, name="inner", start=(path, inner.first), end=(path, inner.last))
    mark_change(
        proposal=proposal,
        by=author,
        old_name="inner",
        name="the inner one",
        first=inner.first,
        last=inner.last,
    )
    mark_change(
        proposal=proposal, by=author, old_name="outer", name="outer", first=outer.first, last=outer.last - 1
    )
    draft = _state(proposal)[2][path]
    assert [(m.name, m.first, m.last) for m in draft] == [
        ("outer", outer.first, outer.last - 1),
        ("the inner one", inner.first, inner.last),
    ]
    assert proposal.revisions.count() == 1

    mark_delete(proposal=proposal, by=author, name="outer")
    assert [m.name for m in _state(proposal)[2][path]] == ["the inner one"]
    marks_discard(proposal=proposal, by=author)
    assert _state(proposal)[2] == {}

    mark_add(proposal=proposal, by=author, name="only", start=(path, inner.first), end=(path, inner.last))
    saved = revision_marks_save(proposal=proposal, by=author)
    assert saved.number == 1  # the revision not yet submitted is replaced, as by an upload
    text = blobs_read({path: saved.files[path]}, owner="test")[path].decode()
    assert '# <paper2code name="only">' in text and text.count("paper2code") == 2


def test_a_save_after_submitting_is_the_next_revision_and_the_submitted_one_never_changes():
    proposal, marks = _marked_proposal()
    author = proposal.author
    (path,) = marks
    for mark in marks[path]:
        mark_add(
            proposal=proposal, by=author, name=mark.name, start=(path, mark.first), end=(path, mark.last)
        )
    first = revision_marks_save(proposal=proposal, by=author)
    proposal_submit(proposal=proposal, by=author)
    with pytest.raises(ProposalError, match="cannot mark snippets on a proposal that is submitted"):
        mark_delete(proposal=proposal, by=author, name=marks[path][1].name)
    proposal.refresh_from_db()
    proposal.state = proposal.State.CHANGES_REQUESTED
    proposal.save(update_fields=["state"])

    mark_change(
        proposal=proposal,
        by=author,
        old_name=marks[path][1].name,
        name=marks[path][1].name,
        first=marks[path][1].first,
        last=marks[path][1].last - 1,
    )
    second = revision_marks_save(proposal=proposal, by=author)

    assert (first.number, second.number) == (1, 2)
    assert ProposalRevision.objects.get(pk=first.pk).files == first.files
    assert (second.source, second.origin) == (ProposalRevision.Source.MARKS, "rmsnorm.zip")


def test_only_the_author_marks_snippets():
    proposal, marks = _marked_proposal()
    (path,) = marks
    with pytest.raises(ProposalError):
        mark_add(proposal=proposal, by=UserFactory(), name="x", start=(path, 2), end=(path, 3))
