"""The marking page over HTTP (``/contribute/<id>/snippets/``): an untagged upload leads the author there; each
change is a POST that answers the working area (htmx) or redirects back; refusals name the place and keep the
draft; the draft survives a reload; a save writes a revision; a maintainer reads the page with the line comments
and cannot change it; anyone else gets a 404."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from django.urls import reverse

from contributions.models import Comment
from contributions.task_folders import blobs_read
from researchcodebench.marking import strip_tags
from tests.factories import MaintainerFactory, UserFactory
from tests.factories.builders import proposal_draft

pytestmark = pytest.mark.django_db

REPO = Path(__file__).resolve().parents[2]
RMSNORM = REPO / "examples" / "pset" / "rmsnorm"
HTMX = {"HTTP_HX_REQUEST": "true"}


def _untagged_zip() -> tuple[io.BytesIO, str, list]:
    original = (RMSNORM / "rmsnorm.py").read_text()
    untagged, marks = strip_tags(original, "rmsnorm.py")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(RMSNORM.iterdir()):
            data = untagged.encode() if path.name == "rmsnorm.py" else path.read_bytes()
            archive.writestr(path.name, data)
    buffer.seek(0)
    buffer.name = "rmsnorm.zip"
    return buffer, original, marks


def _add(client, url, mark, **extra):
    """Post the "add" of ``mark`` on rmsnorm.py (``extra``: the request's headers)."""
    data = {"action": "add", "file": "rmsnorm.py", "name": mark.name, "first": mark.first, "last": mark.last}
    return client.post(url, data, **extra)


@pytest.fixture
def untagged(client):
    proposal = proposal_draft()
    client.force_login(proposal.author)
    archive, original, marks = _untagged_zip()
    step = reverse("contributions:contribute_code", kwargs={"proposal_id": proposal.pk})
    response = client.post(step, {"archive": archive})
    url = reverse("contributions:proposal_marks", kwargs={"proposal_id": proposal.pk})
    assert response.status_code == 302 and response["Location"] == url
    return proposal, url, original, marks


def test_an_untagged_upload_leads_to_the_marking_page_with_numbered_untagged_lines(client, untagged):
    proposal, url, _original, _marks = untagged
    page = client.get(url)
    body = page.content.decode()
    assert page.status_code == 200
    assert "The code holds no paper2code tags yet" in body
    assert 'data-file="rmsnorm.py"' in body and 'aria-label="Line 43"' in body
    assert "paper2code_test.py</code></a>" not in body  # the test is not offered for marking
    assert "0 snippets, 0 scored lines" in body
    files_step = reverse("contributions:contribute_files", kwargs={"proposal_id": proposal.pk})
    assert client.get(files_step)["Location"] == url


def test_marks_added_by_htmx_are_kept_across_a_reload_and_saved_as_the_hand_tagged_bytes(client, untagged):
    proposal, url, original, marks = untagged
    for mark in marks:
        answer = _add(client, url, mark, **HTMX)
        assert answer.status_code == 200
        assert f"Snippet “{mark.name}” marked on rmsnorm.py" in answer.content.decode()
        assert "<html" not in answer.content.decode()  # only the working area
    reloaded = client.get(url).content.decode()
    assert f"{len(marks)} snippets, 24 scored lines" in reloaded
    assert "Unsaved changes, kept as a draft" in reloaded

    preview = client.get(url, {"preview": "compute rms"}).content.decode()
    assert "What a model sees for “compute rms”" in preview
    assert "TODO: Implement block &quot;compute rms&quot;" in preview

    client.post(url, {"action": "save"})
    revision = proposal.revisions.get()
    assert (
        blobs_read({"rmsnorm.py": revision.files["rmsnorm.py"]}, owner="t")["rmsnorm.py"] == original.encode()
    )
    assert "Unsaved changes" not in client.get(url).content.decode()


@pytest.mark.parametrize(
    ("post", "words"),
    [
        (
            {"file": "rmsnorm.py", "end_file": "paper2code_test.py", "first": 27, "last": 3},
            "a snippet lies in one file",
        ),
        ({"file": "rmsnorm.py", "first": 28, "last": 38}, "without one containing the other"),
        ({"file": "rmsnorm.py", "name": "outer", "first": 38, "last": 38}, "the name is already used"),
        ({"file": "rmsnorm.py", "first": 35, "last": 35}, "holds only blank lines"),
        ({"file": "rmsnorm.py", "first": "two", "last": 3}, "give a line number"),
    ],
    ids=["across files", "overlap", "name used twice", "blank range", "not a number"],
)
def test_bad_input_is_refused_naming_the_place_and_nothing_is_kept(client, untagged, post, words):
    proposal, url, _original, _marks = untagged
    client.post(url, {"action": "add", "file": "rmsnorm.py", "name": "outer", "first": 27, "last": 34})
    proposal.refresh_from_db()
    draft = proposal.draft["marks"]

    answer = client.post(url, {"action": "add", "name": "x", **post})
    htmx_answer = client.post(url, {"action": "add", "name": "x", **post}, **HTMX)

    assert answer.status_code == 400 and htmx_answer.status_code == 200
    for body in (answer.content.decode(), htmx_answer.content.decode()):
        assert "Not changed" in body and words in body
    proposal.refresh_from_db()
    assert proposal.draft["marks"] == draft and proposal.revisions.count() == 1


def test_a_maintainer_reads_the_page_with_line_comments_and_cannot_change_it(client, untagged):
    proposal, url, _original, marks = untagged
    for mark in marks[:2]:
        _add(client, url, mark)
    client.post(url, {"action": "validate"})
    revision = proposal.revisions.get()
    assert revision.submitted_at is not None
    # Line 28 of the stored (tagged) file is untagged line 27: the comment is shown there.
    stored = blobs_read({"rmsnorm.py": revision.files["rmsnorm.py"]}, owner="t")["rmsnorm.py"].decode()
    assert stored.split("\n")[27].strip() == "if 0.0 < self.p < 1.0:"
    maintainer = MaintainerFactory()
    Comment.objects.create(
        proposal=proposal,
        revision=revision,
        author=maintainer,
        body="Is **p** checked?",
        file="rmsnorm.py",
        line=28,
    )

    client.force_login(maintainer)
    body = client.get(url).content.decode()
    assert "read-only" in body and "Is <strong>p</strong> checked?" in body
    assert body.index("Is <strong>p</strong> checked?") > body.index('id="f-rmsnorm.py-L27"')
    assert body.index("Is <strong>p</strong> checked?") < body.index('id="f-rmsnorm.py-L28"')
    assert "Add snippet" not in body and 'class="line-pick"' not in body
    assert client.post(url, {"action": "delete", "name": marks[0].name}).status_code == 404

    client.force_login(UserFactory())
    assert client.get(url).status_code == 404
