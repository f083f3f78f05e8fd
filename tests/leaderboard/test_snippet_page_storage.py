"""The snippet page shows the problem from the stored bytes, in memory: viewing a page writes no task folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse

from contributions.models import FileBlob
from contributions.services import task_version_import
from researchcodebench import problems
from researchcodebench.pset import read_pset

pytestmark = pytest.mark.django_db
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def var_dir(settings, tmp_path: Path) -> Path:
    settings.VAR_DIR = tmp_path / "var"
    settings.VAR_DIR.mkdir()
    return settings.VAR_DIR


def _task_files_under(folder: Path, names: set[str]) -> list[Path]:
    return [p for p in folder.rglob("*") if p.name in names or p.name == "workspaces"]


def test_rendering_a_snippet_page_and_its_prompt_writes_no_task_folder(client, var_dir):
    task = read_pset(REPO / "examples" / "pset").task("rmsnorm")
    version = task_version_import(task=task)
    snippet = task.snippets[0]
    key = version.task.paper.key

    page = client.get(reverse("leaderboard:snippet", args=[key, snippet.name]))
    prompt = client.get(reverse("leaderboard:snippet_prompt", args=[key, snippet.name]))

    assert page.status_code == 200 and prompt.status_code == 200
    expected = problems.build_prompt(task, snippet)
    assert prompt.content.decode() == expected.text
    assert "TODO: Implement block" in page.content.decode()
    assert _task_files_under(var_dir, {Path(rel).name for rel in version.files}) == []


def test_a_snippet_page_with_a_corrupt_blob_explains_instead_of_failing(client, var_dir):
    task = read_pset(REPO / "examples" / "pset").task("rmsnorm")
    version = task_version_import(task=task)
    FileBlob.objects.filter(sha256=version.files[task.meta.annotated_file_paths[0]]).update(content=b"x")

    page = client.get(reverse("leaderboard:snippet", args=[version.task.paper.key, task.snippets[0].name]))

    assert page.status_code == 200
    assert "do not match their sha256" in page.content.decode()
