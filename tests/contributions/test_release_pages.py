"""A release's page and its download (issue 22 item 6): tasks and versions, counts, the benchmark
repository's tag and commit, a citation, its board; the download is the archive of ``export_release``'s
folder; release names link to the page. The run forms' default release is
tests/evaluation/test_run_release_default.py."""

from __future__ import annotations

import base64
import hashlib
import io
import re
import tarfile

import pytest
from django.core.management import call_command

from contributions import services
from contributions.models import Release
from tests.contributions.conftest import all_files
from tests.factories import (
    EvaluationRunFactory,
    MaintainerFactory,
    ReleaseEntryFactory,
    TaskVersionFactory,
)

pytestmark = pytest.mark.django_db


def test_release_page_shows_tasks_versions_counts_tag_commit_citation_and_board(client, small_pset):
    release = services.release_create_from_pset(path=small_pset(), name="r1")
    Release.objects.filter(pk=release.pk).update(git_tag="release/r1", git_commit="c" * 40, title="First")

    response = client.get("/releases/r1/")

    assert response.status_code == 200
    html = response.content.decode()
    assert "<h1>Release <code>r1</code>: First" in html
    assert re.search(r"<code>alpha</code>.*?v1", html, re.S) and "<code>beta</code>" in html
    assert "2 tasks from 2 papers" in html
    assert "git tag <code>release/r1</code> at commit <code>" + "c" * 40 + "</code>" in html
    assert 'href="/?release=r1"' in html and 'href="/releases/r1/download/"' in html
    assert "@misc{researchcodebench-r1," in html and "commit " + "c" * 40 in html
    assert "arXiv:2506.02314" in html


def test_release_download_is_the_folder_export_release_writes(client, small_pset, tmp_path):
    services.release_create_from_pset(path=small_pset(), name="r1")
    call_command("export_release", "r1", str(tmp_path / "exported"), stdout=io.StringIO())

    response = client.get("/releases/r1/download/")

    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="r1.tar.gz"'
    body = b"".join(response.streaming_content)
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as tar:
        files = {
            m.name.removeprefix("r1/"): tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()
        }
        assert {m.name.split("/")[0] for m in tar.getmembers()} == {"r1"}
    assert files == all_files(tmp_path / "exported")
    digest = hashlib.sha256(body)
    assert response["Repr-Digest"] == f"sha-256=:{base64.b64encode(digest.digest()).decode()}:"
    assert response["ETag"] == f'"{digest.hexdigest()}"'
    # The same release gives the same bytes (no time or owner in the archive).
    assert b"".join(client.get("/releases/r1/download/").streaming_content) == body


def test_release_download_answers_head_without_a_body(client, small_pset):
    services.release_create_from_pset(path=small_pset(), name="r1")

    response = client.head("/releases/r1/download/")

    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="r1.tar.gz"'
    assert client.head("/releases/r1/").status_code == 200


def test_release_page_offers_visitors_the_download_and_only_maintainers_the_command(client, small_pset):
    services.release_create_from_pset(path=small_pset(), name="r1")

    html = client.get("/releases/r1/").content.decode()
    assert 'href="/releases/r1/download/"' in html and "manage.py" not in html

    client.force_login(MaintainerFactory())
    html = client.get("/releases/r1/").content.decode()
    assert "<code>manage.py export_release r1 FOLDER</code>" in html


def test_metadata_only_release_has_a_page_without_download(client, small_pset):
    release = services.release_create_from_pset(path=small_pset(ids=("alpha",)), name="r1")
    meta_only = TaskVersionFactory(task__paper__key="DyT", content_hash="published:DyT", has_files=False)
    ReleaseEntryFactory(release=release, task_version=meta_only, position=1)

    html = client.get("/releases/r1/").content.decode()

    assert "/releases/r1/download/" not in html and "metadata only" in html
    response = client.get("/releases/r1/download/")
    assert response.status_code == 404


def test_unknown_release_page_is_404(client):
    assert client.get("/releases/nope/").status_code == 404
    assert client.get("/releases/nope/download/").status_code == 404


def test_release_names_link_to_their_page(client, small_pset):
    services.release_create_from_pset(path=small_pset(), name="r1")
    run = EvaluationRunFactory(release=Release.objects.get())
    link = '<a href="/releases/r1/">'

    assert link in client.get("/releases/").content.decode()
    assert link + "r1</a>" in client.get("/runs/").content.decode()
    assert link + "r1</a>" in client.get(f"/runs/{run.pk}/").content.decode()
    assert link in client.get("/papers/", {"release": "r1"}).content.decode()
