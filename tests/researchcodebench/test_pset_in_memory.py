"""Reading a task from its files held in memory parses, renders, lists and hashes exactly as reading its
folder does."""

from __future__ import annotations

from pathlib import Path

import pytest

from researchcodebench import problems
from researchcodebench.pset import (
    content_files,
    content_hash,
    files_content_hash,
    read_pset,
    task_files,
    task_from_files,
)

REPO = Path(__file__).resolve().parents[2]
HOSTILE = Path(__file__).parent / "fixtures" / "hostile_pset"
TASKS = [task for root in (REPO / "examples" / "pset", HOSTILE) for task in read_pset(root).tasks]


def _files(root: str) -> dict[str, bytes]:
    return {rel: Path(root, *rel.split("/")).read_bytes() for rel in task_files(root)}


#: what a folder may hold besides its content: caches, a .git folder, compiled Python (a file named like an
#: ignored folder is content)
LITTER = {
    "__pycache__/model.cpython-311.pyc": b"\x00",
    "sub/.pytest_cache/v/cache": b"{}",
    "sub/.git/config": b"[core]\n",
    "old.pyc": b"\x00",
    "sub/old.pyo": b"\x00",
}
NOT_LITTER = {".git": b"gitdir: elsewhere\n", "sub/__pycache__.py": b"x = 1\n", "data.npy": b"\x93NUMPY"}


@pytest.mark.parametrize("task", TASKS, ids=[task.id for task in TASKS])
def test_a_task_read_from_memory_has_the_folders_snippets_issues_and_prompts(task):
    in_memory = task_from_files(_files(task.root), task.meta, root="label")

    assert in_memory.root == "label"
    assert (in_memory.snippets, in_memory.issues) == (task.snippets, task.issues)
    assert (in_memory.manifest, in_memory.paper_file) == (task.manifest, task.paper_file)
    for snippet in task.snippets:
        assert in_memory.read_text(snippet.file) == task.read_text(snippet.file)
        for template in problems.TEMPLATES:
            for with_paper in (True, False) if task.paper_file else (False,):
                expected = problems.build_prompt(task, snippet, template=template, with_paper=with_paper)
                got = problems.build_prompt(in_memory, snippet, template=template, with_paper=with_paper)
                assert got == expected


def test_a_file_missing_from_memory_is_reported_like_a_missing_file_on_disk():
    task = next(t for t in TASKS if t.meta.annotated_file_paths)
    files = _files(task.root)
    del files[task.meta.annotated_file_paths[0]]

    in_memory = task_from_files(files, task.meta)

    assert "missing_file" in [issue.code for issue in in_memory.issues]
    with pytest.raises(FileNotFoundError, match="not among the task's files"):
        in_memory.read_text(task.meta.annotated_file_paths[0])


def test_reading_from_memory_refuses_a_path_that_leaves_the_task():
    task = TASKS[0]
    in_memory = task_from_files(_files(task.root), task.meta)

    with pytest.raises(ValueError, match="must not leave the task folder"):
        in_memory.read_text("../secret.txt")


def test_carriage_returns_read_as_newlines_as_on_disk():
    task = next(t for t in TASKS if t.id == "crlf tabs")
    files = _files(task.root)
    annotated = task.meta.annotated_file_paths[0]
    assert b"\r\n" in files[annotated]

    in_memory = task_from_files(files, task.meta)

    assert in_memory.read_text(annotated) == task.read_text(annotated)
    assert "\r" not in in_memory.read_text(annotated)


@pytest.mark.parametrize("task", TASKS, ids=[task.id for task in TASKS])
def test_files_in_memory_list_and_hash_as_the_folder_they_make(task, tmp_path):
    files = {**_files(task.root), **LITTER, **NOT_LITTER}
    for rel, data in files.items():
        path = tmp_path.joinpath(*rel.split("/"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    assert content_files(files) == task_files(tmp_path)
    assert not set(LITTER) & set(content_files(files)) and set(NOT_LITTER) <= set(content_files(files))
    assert files_content_hash(files) == content_hash(tmp_path)
    assert files_content_hash(_files(task.root)) == content_hash(task.root)


def test_the_in_memory_hash_changes_with_a_rename_or_a_content_move():
    files = {"a.py": b"x = 1\n", "b.py": b""}
    before = files_content_hash(files)
    assert files_content_hash({"a.py": b"", "b.py": b"x = 1\n"}) != before
    assert files_content_hash({"c.py": b"x = 1\n", "b.py": b""}) != before
    assert files_content_hash({**files, "__pycache__/a.pyc": b"\x00"}) == before
