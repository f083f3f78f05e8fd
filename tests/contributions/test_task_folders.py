"""Task versions as files: materialised once per hash, blobs checked, one path rule, in memory for pages."""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from pathlib import Path

import pytest
from django.db import connection

from contributions import services, task_folders
from contributions.models import FileBlob, TaskVersion
from contributions.selectors.release_export import release_export
from contributions.task_folders import TaskFolderError
from researchcodebench import problems
from researchcodebench.pset import read_pset, task_files

pytestmark = pytest.mark.django_db


@pytest.fixture
def var_dir(settings, tmp_path: Path) -> Path:
    settings.VAR_DIR = tmp_path / "var"
    return settings.VAR_DIR


@pytest.fixture
def imported(small_pset):
    """(core task, its stored version) of a small task folder."""
    task = read_pset(small_pset()).task("alpha")
    return task, services.task_version_import(task=task)


def _corrupt_one_blob(version: TaskVersion) -> str:
    rel, sha = sorted(version.files.items())[0]
    FileBlob.objects.filter(sha256=sha).update(content=b"tampered")
    return rel


def test_materialised_folder_holds_every_file_byte_exact_and_read_only(var_dir, imported):
    task, version = imported

    folder = task_folders.task_version_folder(task_version=version)

    assert folder == var_dir / "workspaces" / version.content_hash / "alpha"
    assert task_files(folder) == task_files(task.root)
    for rel in task_files(task.root):
        assert (folder / rel).read_bytes() == (Path(task.root) / rel).read_bytes()
        assert not os.stat(folder / rel).st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    assert [p.name for p in folder.parent.iterdir() if p.name.startswith(".staging-")] == []


@pytest.mark.django_db(transaction=True)  # the threads' own connections must see the imported rows
def test_concurrent_materialisation_writes_one_complete_folder(var_dir, imported):
    _task, version = imported
    results: list[Path] = []
    failures: list[BaseException] = []

    def materialise() -> None:
        try:
            results.append(task_folders.task_version_folder(task_version=version))
        except BaseException as exc:  # reported below
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=materialise) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert failures == [] and len(set(results)) == 1
    assert sorted(p.name for p in results[0].parent.iterdir()) == [".lock", "alpha"]


def test_task_read_from_its_folder_is_cached_per_process(var_dir, imported):
    task, version = imported

    first = task_folders.task_version_task(task_version=version)

    assert first is task_folders.task_version_task(task_version=version)
    assert first.snippets == task.snippets


def test_a_corrupt_blob_is_refused_and_leaves_no_folder(var_dir, imported):
    _task, version = imported
    rel = _corrupt_one_blob(version)

    with pytest.raises(TaskFolderError, match=f"do not match their sha256: {rel}"):
        task_folders.task_version_folder(task_version=version)
    assert not (var_dir / "workspaces" / version.content_hash / "alpha").exists()


def test_a_missing_blob_is_named(var_dir, imported):
    _task, version = imported
    rel, sha = sorted(version.files.items())[0]
    FileBlob.objects.filter(sha256=sha).delete()

    with pytest.raises(TaskFolderError, match=f"missing from the blob store: {rel}"):
        task_folders.version_file_bytes(task_version=version)


def test_a_metadata_only_version_has_no_folder_and_no_in_memory_task(var_dir, imported):
    _task, version = imported
    meta_only, _ = services.task_version_create_metadata_only(
        task=version.task,
        content_hash="m" * 64,
        meta=services.meta_from_json(version.meta),
        snippets=[("a", 1)],
    )

    for read in (task_folders.task_version_folder, task_folders.task_version_read):
        with pytest.raises(TaskFolderError, match="metadata-only"):
            read(task_version=meta_only)


@pytest.mark.parametrize(
    "rel",
    ["../escape.py", "/etc/passwd", "a/../../b", "a\\b", "", "./a.py", "a//b.py", "a/", "C:/x", "a\0b"],
)
def test_one_path_rule_refuses_any_path_that_could_leave_the_folder(rel):
    with pytest.raises(TaskFolderError, match="is not safe"):
        task_folders.safe_relpath(rel, owner="test")


def test_a_stored_unsafe_path_is_refused_before_anything_is_written(var_dir, imported, tmp_path):
    _task, version = imported
    sha = next(iter(version.files.values()))
    TaskVersion.objects.filter(pk=version.pk).update(files={**version.files, "../../escape.py": sha})
    version.refresh_from_db()

    with pytest.raises(TaskFolderError, match="'../../escape.py' is not safe"):
        task_folders.task_version_folder(task_version=version)
    assert not any(var_dir.rglob("escape.py")) and not (var_dir.parent / "escape.py").exists()


def test_in_memory_task_gives_the_prompts_of_the_folder_and_writes_nothing(var_dir, imported):
    task, version = imported

    in_memory = task_folders.task_version_read(task_version=version)

    assert in_memory.snippets == task.snippets
    for snippet in task.snippets:
        assert problems.build_prompt(in_memory, snippet) == problems.build_prompt(task, snippet)
    assert not var_dir.exists()


def test_in_memory_task_refuses_a_corrupt_blob(var_dir, imported):
    _task, version = imported
    _corrupt_one_blob(version)

    with pytest.raises(TaskFolderError, match="do not match their sha256"):
        task_folders.task_version_read(task_version=version)


def test_export_refuses_a_corrupt_blob_naming_the_file(imported, tmp_path):
    _task, version = imported
    release, _ = services.release_get_or_create(name="r-corrupt")
    services.release_entry_get_or_create(release=release, task_version=version, position=0)
    rel = _corrupt_one_blob(version)

    with pytest.raises(services.CatalogueError, match=f"do not match their sha256: {rel}"):
        release_export(release=release, out_dir=tmp_path / "out")


def test_blob_check_uses_sha256_of_the_content():
    data = b"print('hi')\n"
    sha = hashlib.sha256(data).hexdigest()
    FileBlob.objects.create(sha256=sha, size=len(data), content=data)

    assert task_folders.blobs_read({"a.py": sha}, owner="test") == {"a.py": data}
