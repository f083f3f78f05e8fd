"""Uploads at the service boundary (``contributions/services/revisions.py``): an upload replaces the revision
not yet submitted, declarations naming files the upload lacks are refused on their field, only the author
uploads, a submitted revision never changes, and a revision is a task folder with its declarations; the
form's code step (``revision_upload``) stores an upload with its guessed declarations or refuses it on the
code field."""

from __future__ import annotations

import pytest

from contributions.intake import IntakeResult
from contributions.models import ProposalRevision
from contributions.services import (
    ProposalError,
    proposal_validation_finish,
    proposal_validation_start,
    revision_create,
    revision_upload,
)
from contributions.task_folders import revision_task
from tests.contributions.conftest import FLAKY
from tests.factories import EXAMPLE_MANIFEST, UserFactory, example_upload
from tests.factories.builders import proposal_draft, proposal_submitted, proposal_upload, validation_report

pytestmark = pytest.mark.django_db


def test_an_upload_replaces_the_revision_not_yet_submitted():
    first = proposal_upload(proposal_draft())
    second = proposal_upload(
        first.proposal, **{"rmsnorm.py": b"# changed\n" + example_upload().files["rmsnorm.py"]}
    )
    assert list(first.proposal.revisions.values_list("number", flat=True)) == [1]
    assert second.number == 1
    assert second.content_hash != first.content_hash
    assert not ProposalRevision.objects.filter(pk=first.pk).exists()


def test_refuses_a_manifest_naming_a_file_the_upload_does_not_have_naming_the_field():
    proposal = proposal_draft()
    with pytest.raises(ProposalError, match="'missing.py' is not a file of the upload") as caught:
        revision_create(
            proposal=proposal,
            by=proposal.author,
            intake_result=example_upload(),
            manifest={**EXAMPLE_MANIFEST, "context_files": ["missing.py"]},
        )
    assert caught.value.field == "context_files"
    with pytest.raises(ProposalError, match="hidden") as caught:
        revision_create(
            proposal=proposal,
            by=proposal.author,
            intake_result=example_upload(),
            manifest={**EXAMPLE_MANIFEST, "oracle_files": ["rmsnorm.py"]},
        )
    assert caught.value.field == "oracle_files"


def test_only_the_author_uploads_code():
    proposal = proposal_draft()
    with pytest.raises(ProposalError, match="only the author"):
        revision_create(
            proposal=proposal, by=UserFactory(), intake_result=example_upload(), manifest=EXAMPLE_MANIFEST
        )


def test_a_submitted_revision_is_immutable_and_a_new_upload_waits_for_changes_requested():
    proposal = proposal_submitted()
    with pytest.raises(ProposalError, match="cannot upload code to a proposal that is submitted"):
        proposal_upload(proposal)
    revision = proposal.revisions.get()
    proposal_validation_start(revision=revision)
    proposal_validation_finish(revision=revision, report=validation_report(FLAKY))
    second = proposal_upload(proposal, **{"paper2code_test.py": b"# steadier\n"})
    revision.refresh_from_db()
    assert (revision.number, second.number) == (1, 2)
    assert revision.files["paper2code_test.py"] != second.files["paper2code_test.py"]
    assert revision.submitted_at is not None


def test_a_revision_is_a_task_folder_with_the_declared_manifest():
    revision = proposal_upload(proposal_draft())
    task = revision_task(revision=revision)
    assert task.id == revision.proposal.task_key
    assert task.manifest.oracle_files == ("rmsnorm_ref.py",)
    assert [s.name for s in task.snippets][:2] == [
        "root mean square",
        "partial rms over the first k features",
    ]
    assert not task.errors


# ------------------------------------------------------------------------------------------- the form's code step

TAGGED = b'# <paper2code name="double">\ny = 2 * x\n# </paper2code name="double">\n'


def test_the_code_step_stores_the_upload_with_its_guessed_declarations_and_the_steps_answers():
    proposal = proposal_draft()
    revision = revision_upload(proposal=proposal, by=proposal.author, intake_result=example_upload())
    proposal.refresh_from_db()
    assert (revision.manifest["annotated_files"], revision.manifest["test_entry"]) == (
        ["rmsnorm.py"],
        "paper2code_test.py",
    )
    assert proposal.draft["2"] == {
        "source": "archive",
        "origin": "rmsnorm.zip",
        "commit": "",
        "revision": 1,
        "content_hash": revision.content_hash,
    }


@pytest.mark.parametrize(
    ("files", "refusal"),
    [
        (
            {"paper2code_test.py": b"import model\n", "README.md": b"# model\n"},
            "no code besides its test script",
        ),
        ({"model.py": TAGGED}, "the upload has no test script"),
    ],
)
def test_the_code_step_refuses_an_upload_without_code_to_mark_or_a_test_on_the_code_field(files, refusal):
    proposal = proposal_draft()
    upload = IntakeResult(files=files, source="archive", origin="task.zip", commit=None)
    with pytest.raises(ProposalError, match=refusal) as caught:
        revision_upload(proposal=proposal, by=proposal.author, intake_result=upload)
    assert caught.value.field == "code"
    proposal.refresh_from_db()
    assert not proposal.revisions.exists() and "2" not in proposal.draft
