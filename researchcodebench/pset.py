"""Reading and writing original-format pset folders (docs/task-format.md), plus the optional task manifest.

``read_pset`` never raises for problems inside a task: it records them as issues (file:line, message,
hint) and keeps going, so that one report lists everything. It raises ``PsetError`` only when there is no
registry to read at all (missing folder or ``papers.yaml``, unparsable YAML, not a list).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import io
import json
import os
import re
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Any, Protocol

import yaml

from researchcodebench.annotations import (
    ERROR,
    WARNING,
    AnnotationIssue,
    Snippet,
    duplicate_names_across,
    parse_file,
)

REGISTRY = "papers.yaml"
MANIFEST = "task.yaml"
PAPER_FILES = ("paper2code_paper.tex", "paper2code_paper.md")
DATE_KEYS = ("arxiv_date", "arxiv_v1_date", "first_commit_date", "last_commit_date")
META_KEYS = (
    "id",
    "title",
    "arxiv_abs",
    "arxiv_date",
    "arxiv_v1_date",
    "github_url",
    "first_commit_date",
    "last_commit_date",
    "venue",
    "annotated_file_paths",
    "context_file_paths",
)
#: Never part of a task's content: interpreter caches and VCS metadata.
_IGNORED_DIRS = {"__pycache__", ".git", ".pytest_cache"}
_IGNORED_SUFFIXES = (".pyc", ".pyo")
_DATE_TEXT = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})$")

Issue = AnnotationIssue


class PsetError(ValueError):
    """The pset cannot be read at all (the message names the file and, where known, the line)."""


@dataclass(frozen=True)
class TaskManifest:
    """Portal-only task settings, stored as ``task.yaml`` in the task folder; every key is optional."""

    test_entry: str = "paper2code_test.py"
    requirements: tuple[str, ...] = ()
    needs_gpu: bool = False
    timeout_s: float | None = None
    oracle_files: tuple[str, ...] = ()
    contributor: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "test_entry": self.test_entry,
            "requirements": list(self.requirements),
            "needs_gpu": self.needs_gpu,
            "timeout_s": self.timeout_s,
            "oracle_files": list(self.oracle_files),
            "contributor": self.contributor,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskManifest:
        manifest, problems = parse_manifest(data)
        if problems:
            raise ValueError("; ".join(problems))
        return manifest

    def oracles(self, files: Iterable[str]) -> tuple[str, ...]:
        """The task's oracle files among ``files``: every ``*_ref.py`` plus those the manifest names."""
        named = set(self.oracle_files)
        return tuple(f for f in files if f in named or PurePosixPath(f).name.endswith("_ref.py"))


def _str_tuple(value: Any, key: str, problems: list[str]) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    problems.append(f"'{key}' must be a string or a list of strings, got {type(value).__name__}")
    return ()


def parse_manifest(data: Any) -> tuple[TaskManifest, list[str]]:
    """Validate a ``task.yaml`` mapping. Returns the manifest (defaults where invalid) and the problems."""
    problems: list[str] = []
    if data is None:
        return TaskManifest(), problems
    if not isinstance(data, dict):
        return TaskManifest(), [f"must be a mapping of settings, got {type(data).__name__}"]
    known = {f.name for f in fields(TaskManifest)}
    for key in data:
        if key not in known:
            problems.append(f"unknown key '{key}' (known: {', '.join(sorted(known))})")
    kwargs: dict[str, Any] = {}
    entry = data.get("test_entry", "paper2code_test.py")
    if isinstance(entry, str) and entry.strip():
        kwargs["test_entry"] = entry
    else:
        problems.append("'test_entry' must be a non-empty string")
    kwargs["requirements"] = _str_tuple(data.get("requirements"), "requirements", problems)
    kwargs["oracle_files"] = _str_tuple(data.get("oracle_files"), "oracle_files", problems)
    gpu = data.get("needs_gpu", False)
    if isinstance(gpu, bool):
        kwargs["needs_gpu"] = gpu
    else:
        problems.append("'needs_gpu' must be true or false")
    timeout = data.get("timeout_s")
    if timeout is None or (
        isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0
    ):
        kwargs["timeout_s"] = float(timeout) if timeout is not None else None
    else:
        problems.append("'timeout_s' must be a positive number of seconds or null")
    contributor = data.get("contributor")
    if contributor is None or isinstance(contributor, str):
        kwargs["contributor"] = contributor
    else:
        problems.append("'contributor' must be a string or null")
    return TaskManifest(**kwargs), problems


@dataclass(frozen=True)
class PaperMeta:
    """One ``papers.yaml`` entry. Dates are 'YYYY-MM-DD' strings (or None); paths are '/'-separated.

    ``extra`` keeps unknown keys (in file order) so that writing the registry back loses nothing.
    """

    id: str
    title: str | None = None
    arxiv_abs: str | None = None
    arxiv_date: str | None = None
    arxiv_v1_date: str | None = None
    github_url: str | None = None
    first_commit_date: str | None = None
    last_commit_date: str | None = None
    venue: str | None = None
    annotated_file_paths: tuple[str, ...] = ()
    context_file_paths: tuple[str, ...] = ()
    extra: tuple[tuple[str, Any], ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {key: getattr(self, key) for key in META_KEYS}
        data["annotated_file_paths"] = list(self.annotated_file_paths)
        data["context_file_paths"] = list(self.context_file_paths)
        data["extra"] = {k: v for k, v in self.extra}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PaperMeta:
        kwargs = {key: data.get(key) for key in META_KEYS}
        kwargs["annotated_file_paths"] = tuple(data.get("annotated_file_paths") or ())
        kwargs["context_file_paths"] = tuple(data.get("context_file_paths") or ())
        return cls(**kwargs, extra=tuple((data.get("extra") or {}).items()))


@dataclass(frozen=True)
class Task:
    """A task folder as read: metadata, manifest, snippets of all annotated files and every issue."""

    id: str
    root: str
    meta: PaperMeta
    manifest: TaskManifest
    paper_file: str | None
    snippets: tuple[Snippet, ...]
    issues: tuple[AnnotationIssue, ...]
    #: the files of a task read from memory (``task_from_files``); None for a task read from its folder
    contents: Mapping[str, bytes] | None = field(default=None, compare=False, repr=False)

    @property
    def errors(self) -> tuple[AnnotationIssue, ...]:
        return tuple(i for i in self.issues if i.is_error)

    def snippet(self, name: str) -> Snippet:
        """The snippet called ``name``; KeyError naming the task and listing the valid names otherwise."""
        for snip in self.snippets:
            if snip.name == name:
                return snip
        names = ", ".join(repr(s.name) for s in self.snippets) or "none"
        raise KeyError(f"task {self.id!r} has no snippet {name!r} (snippets: {names})")

    def read_text(self, relpath: str) -> str:
        """A task file as text (UTF-8, universal newlines: CRLF reads as LF, as the original read it)."""
        path = _resolve_inside(self.root, relpath)
        if self.contents is not None:
            return _MemoryFiles(self.contents).read_text(relpath)
        with open(path, encoding="utf-8") as handle:
            return handle.read()

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "root": self.root,
            "meta": self.meta.to_dict(),
            "manifest": self.manifest.to_dict(),
            "paper_file": self.paper_file,
            "snippets": [s.to_dict() for s in self.snippets],
            "issues": [i.to_dict() for i in self.issues],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Task:
        return cls(
            id=str(data["id"]),
            root=str(data["root"]),
            meta=PaperMeta.from_dict(data["meta"]),
            manifest=TaskManifest.from_dict(data.get("manifest") or {}),
            paper_file=data.get("paper_file"),
            snippets=tuple(Snippet.from_dict(s) for s in data.get("snippets", ())),
            issues=tuple(AnnotationIssue.from_dict(i) for i in data.get("issues", ())),
        )


@dataclass(frozen=True)
class Pset:
    """A whole pset: its tasks (registry order) and the registry-level issues."""

    root: str
    tasks: tuple[Task, ...]
    issues: tuple[AnnotationIssue, ...]

    def task(self, task_id: str) -> Task:
        for task in self.tasks:
            if task.id == task_id:
                return task
        ids = ", ".join(repr(t.id) for t in self.tasks) or "none"
        raise KeyError(f"pset {self.root!r} has no task {task_id!r} (tasks: {ids})")

    def all_issues(self) -> list[tuple[str | None, AnnotationIssue]]:
        """Every issue as (task id or None for registry-level, issue)."""
        out: list[tuple[str | None, AnnotationIssue]] = [(None, i) for i in self.issues]
        for task in self.tasks:
            out.extend((task.id, i) for i in task.issues)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "tasks": [t.to_dict() for t in self.tasks],
            "issues": [i.to_dict() for i in self.issues],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Pset:
        return cls(
            root=str(data["root"]),
            tasks=tuple(Task.from_dict(t) for t in data.get("tasks", ())),
            issues=tuple(AnnotationIssue.from_dict(i) for i in data.get("issues", ())),
        )


def normalise_date(value: Any) -> str | None:
    """A registry date as 'YYYY-MM-DD' (YAML date, datetime or text 'Y-M-D'); None for null/'null'/''.

    Raises ValueError for anything else.
    """
    if value is None:
        return None
    if isinstance(value, _dt.datetime):
        return value.date().isoformat()
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, str):
        text = value.strip()
        if text in ("", "null", "None", "~"):
            return None
        match = _DATE_TEXT.match(text)
        if match:
            year, month, day = (int(g) for g in match.groups())
            return _dt.date(year, month, day).isoformat()
    raise ValueError(f"expected a date YYYY-MM-DD or null, got {value!r}")


def _resolve_inside(root: str, relpath: str) -> str:
    """Absolute path of ``relpath`` under ``root``; ValueError if it is absolute or escapes the folder."""
    problem = _path_problem(relpath)
    if problem:
        raise ValueError(f"{relpath!r}: {problem}")
    return os.path.join(root, *relpath.split("/"))


def relpath_problem(relpath: str) -> str | None:
    """Why ``relpath`` is not a '/'-separated path inside a task folder (None when it is)."""
    return _path_problem(relpath)


def _path_problem(relpath: str) -> str | None:
    if not relpath or not relpath.strip():
        return "empty path"
    if "\\" in relpath:
        return "use '/' as the path separator, not '\\'"
    if relpath.startswith("/") or re.match(r"^[A-Za-z]:", relpath):
        return "must be relative to the task folder"
    if any(part == ".." for part in relpath.split("/")):
        return "must not leave the task folder ('..')"
    return None


def _id_problem(task_id: str) -> str | None:
    if not task_id.strip():
        return "empty id"
    if "/" in task_id or "\\" in task_id or task_id in (".", "..") or task_id.startswith("."):
        return "an id is a folder name: no '/', '\\' and no leading '.'"
    if task_id != task_id.strip():
        return "leading or trailing whitespace"
    return None


def _line_map(text: str, registry: str) -> list[int]:
    """1-based line of each top-level list entry of the registry (0 where unknown)."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return []
    if not isinstance(node, yaml.SequenceNode):
        return []
    return [item.start_mark.line + 1 for item in node.value]


def _load_registry(root: Path) -> tuple[list[Any], list[int], str]:
    registry = root / REGISTRY
    if not root.is_dir():
        raise PsetError(f"{root}: not a folder (expected a pset folder holding {REGISTRY})")
    if not registry.is_file():
        raise PsetError(f"{registry}: missing (a pset folder must hold {REGISTRY}, the task registry)")
    try:
        text = registry.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PsetError(f"{registry}: cannot be read as UTF-8 text ({exc})") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{registry}:{mark.line + 1}" if mark is not None else str(registry)
        problem = getattr(exc, "problem", None) or str(exc)
        raise PsetError(f"{where}: invalid YAML: {problem}") from exc
    if data is None:
        data = []
    if not isinstance(data, list):
        raise PsetError(f"{registry}: must be a YAML list of task entries, got {type(data).__name__}")
    return data, _line_map(text, str(registry)), text


class _TextDatesLoader(yaml.SafeLoader):
    """A safe YAML loader that leaves dates as text, so that a bad date is reported by ``normalise_date``
    with its entry and field (PyYAML's own date constructor fails on '2024-13-45' without saying where)."""


_TextDatesLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def read_registry_entries(path: str | Path) -> dict[str, dict[str, Any]]:
    """A ``papers.yaml``-style file on its own (no task folders) as ``{id: entry}``, dates left as text.

    Used where only the registry's metadata is wanted (e.g. the dates that contamination rules use).
    Raises ``PsetError`` naming the file, and the line for invalid YAML.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PsetError(f"{path}: cannot be read as UTF-8 text ({exc})") from exc
    try:
        data = yaml.load(text, Loader=_TextDatesLoader)  # noqa: S506 (a SafeLoader subclass)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise PsetError(f"{where}: invalid YAML: {getattr(exc, 'problem', None) or exc}") from exc
    if not isinstance(data, list):
        raise PsetError(f"{path}: expected a YAML list of paper entries")
    entries: dict[str, dict[str, Any]] = {}
    for index, entry in enumerate(data, start=1):
        if not isinstance(entry, dict) or not entry.get("id"):
            raise PsetError(f"{path}: entry {index}: expected a mapping with an 'id'")
        entries[str(entry["id"])] = entry
    return entries


def _paths(value: Any, key: str, required: bool) -> tuple[tuple[str, ...], str | None]:
    if value is None or value == "null":
        return (), (f"'{key}' is missing or null" if required else None)
    if isinstance(value, str):
        return (value.strip(),), None
    if isinstance(value, list):
        bad = [v for v in value if not isinstance(v, str)]
        if bad:
            return (), f"'{key}' entries must be strings, got {bad[0]!r}"
        if required and not value:
            return (), f"'{key}' is an empty list"
        return tuple(v.strip() for v in value), None
    return (), f"'{key}' must be a path or a list of paths, got {type(value).__name__}"


def _meta_from_entry(entry: dict[str, Any], where: tuple[str, int]) -> tuple[PaperMeta, list[Issue]]:
    file, line = where
    issues: list[Issue] = []
    task_id = str(entry["id"])
    kwargs: dict[str, Any] = {"id": task_id}
    for key in ("title", "arxiv_abs", "github_url", "venue"):
        value = entry.get(key)
        if key not in entry:
            issues.append(
                Issue(file, line, f"task {task_id!r}: key '{key}' is missing", "", "missing_key", WARNING)
            )
        kwargs[key] = None if value is None or value == "null" else str(value)
    for key in DATE_KEYS:
        if key not in entry:
            issues.append(
                Issue(file, line, f"task {task_id!r}: key '{key}' is missing", "", "missing_key", WARNING)
            )
        try:
            kwargs[key] = normalise_date(entry.get(key))
        except ValueError as exc:
            issues.append(Issue(file, line, f"task {task_id!r}: '{key}': {exc}", "", "bad_date"))
            kwargs[key] = None
    for key, required in (("annotated_file_paths", True), ("context_file_paths", False)):
        paths, problem = _paths(entry.get(key), key, required)
        if problem:
            issues.append(
                Issue(
                    file,
                    line,
                    f"task {task_id!r}: {problem}",
                    "give a path or a YAML list of paths",
                    "bad_paths",
                )
            )
        for path in paths:
            path_problem = _path_problem(path)
            if path_problem:
                issues.append(
                    Issue(file, line, f"task {task_id!r}: {key} {path!r}: {path_problem}", "", "bad_path")
                )
        kwargs[key] = tuple(p for p in paths if not _path_problem(p))
    extra = tuple((k, v) for k, v in entry.items() if k not in META_KEYS)
    return PaperMeta(**kwargs, extra=extra), issues


class _FolderFiles:
    """The files of a task folder on disk, as ``_read_task`` asks for them."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def is_file(self, relpath: str) -> bool:
        return (self.folder / relpath).is_file()

    def read_text(self, relpath: str) -> str:
        return (self.folder / relpath).read_text(encoding="utf-8")


class _MemoryFiles:
    """The files of a task held in memory (``relpath -> bytes``), read exactly as ``_FolderFiles`` reads
    them: UTF-8 with universal newlines (the same text layer ``open`` uses)."""

    def __init__(self, files: Mapping[str, bytes]) -> None:
        self.files = files

    def is_file(self, relpath: str) -> bool:
        return "/".join(PurePosixPath(relpath).parts) in self.files

    def read_text(self, relpath: str) -> str:
        key = "/".join(PurePosixPath(relpath).parts)
        if key not in self.files:
            raise FileNotFoundError(f"{relpath!r} is not among the task's files held in memory")
        with io.TextIOWrapper(io.BytesIO(self.files[key]), encoding="utf-8") as handle:
            return handle.read()


def read_task(root: str | Path, meta: PaperMeta, *, registry_where: tuple[str, int] = (REGISTRY, 0)) -> Task:
    """Read one task folder given its registry entry; all problems end up in ``Task.issues``."""
    folder = Path(root).resolve()
    return _read_task(_FolderFiles(folder), str(folder), meta, registry_where, contents=None)


def task_from_files(files: Mapping[str, bytes], meta: PaperMeta, *, root: str = "") -> Task:
    """A task read from its files held in memory (``'/'-relpath -> bytes``) instead of a folder.

    Parses exactly as ``read_task`` does; a file missing from ``files`` counts as absent. The returned
    task's ``read_text`` serves ``files``; ``root`` only labels it (nothing is read from or written to
    disk), so such a task can be shown (snippets, masked file, prompt) but not run.
    """
    contents = MappingProxyType(dict(files))
    return _read_task(_MemoryFiles(contents), root, meta, (REGISTRY, 0), contents=contents)


class _TaskFiles(Protocol):
    """What ``_read_task`` and its helpers ask of a task's files (``_FolderFiles``, ``_MemoryFiles``):
    whether a '/'-relative path is a file, and its text (UTF-8, universal newlines)."""

    def is_file(self, relpath: str) -> bool: ...

    def read_text(self, relpath: str) -> str: ...


def _read_task(
    files: _TaskFiles,
    root: str,
    meta: PaperMeta,
    registry_where: tuple[str, int],
    *,
    contents: Mapping[str, bytes] | None,
) -> Task:
    manifest, issues = _read_manifest(files)
    paper_file = next((name for name in PAPER_FILES if files.is_file(name)), None)
    issues.extend(_missing_parts(files, manifest, paper_file))
    snippets, snippet_issues = _read_snippets(files, meta, registry_where)
    issues.extend(snippet_issues)
    issues.extend(_missing_context_files(files, meta, registry_where))
    # Only when nothing else explains it: a broken or missing annotated file is already reported.
    explained = any(
        i.code == "missing_file" or (i.is_error and i.file in meta.annotated_file_paths) for i in issues
    )
    if meta.annotated_file_paths and not snippets and not explained:
        issues.append(Issue(".", 0, "the task has no snippets", "tag at least one block", "no_snippets"))
    return Task(
        id=meta.id,
        root=root,
        meta=meta,
        manifest=manifest,
        paper_file=paper_file,
        snippets=tuple(snippets),
        issues=tuple(issues),
        contents=contents,
    )


def _read_manifest(files: _TaskFiles) -> tuple[TaskManifest, list[Issue]]:
    """The task's ``task.yaml`` (defaults without one, or where it is invalid) and its problems."""
    if not files.is_file(MANIFEST):
        return TaskManifest(), []
    issues: list[Issue] = []
    try:
        data = yaml.safe_load(files.read_text(MANIFEST))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        mark = getattr(exc, "problem_mark", None)
        issues.append(
            Issue(MANIFEST, mark.line + 1 if mark else 0, f"invalid YAML: {exc}", "", "bad_manifest")
        )
        data = None
    manifest, problems = parse_manifest(data)
    issues.extend(Issue(MANIFEST, 0, p, "", "bad_manifest") for p in problems)
    return manifest, issues


def _missing_parts(files: _TaskFiles, manifest: TaskManifest, paper_file: str | None) -> list[Issue]:
    """The paper text (``paper_file``, None when there is none) and the test entry point, where missing."""
    issues: list[Issue] = []
    if paper_file is None:
        issues.append(
            Issue(
                ".",
                0,
                "no paper text: neither paper2code_paper.tex nor paper2code_paper.md exists",
                "add the paper (LaTeX or Markdown) so that models can be given it",
                "missing_paper",
                WARNING,
            )
        )
    if not files.is_file(manifest.test_entry):
        issues.append(
            Issue(
                manifest.test_entry,
                0,
                f"test entry point {manifest.test_entry!r} does not exist",
                "add the test script, or set 'test_entry' in task.yaml",
                "missing_test",
            )
        )
    return issues


def _read_snippets(
    files: _TaskFiles, meta: PaperMeta, registry_where: tuple[str, int]
) -> tuple[list[Snippet], list[Issue]]:
    """The snippets of every annotated file ``meta`` names, and every issue of those files (missing, not
    UTF-8, no tags, annotation problems, a name used in two files); ``registry_where`` is the registry
    entry's file and line, where a missing file is reported."""
    reg_file, reg_line = registry_where
    snippets: list[Snippet] = []
    issues: list[Issue] = []
    for relpath in meta.annotated_file_paths:
        if not files.is_file(relpath):
            issues.append(
                Issue(
                    reg_file,
                    reg_line,
                    f"task {meta.id!r}: annotated file {relpath!r} does not exist in the task folder",
                    "fix annotated_file_paths (paths are relative to the task folder, '/' separated)",
                    "missing_file",
                )
            )
            continue
        try:
            text = files.read_text(relpath)
        except UnicodeDecodeError as exc:
            issues.append(Issue(relpath, 0, f"not UTF-8 text: {exc}", "", "bad_encoding"))
            continue
        file_snippets, file_issues = parse_file(text, relpath)
        if not file_snippets and not any(i.is_error for i in file_issues):
            issues.append(
                Issue(relpath, 0, "annotated file holds no paper2code tags", "", "no_snippets", WARNING)
            )
        snippets.extend(file_snippets)
        issues.extend(file_issues)
    issues.extend(duplicate_names_across(snippets))
    return snippets, issues


def _missing_context_files(
    files: _TaskFiles, meta: PaperMeta, registry_where: tuple[str, int]
) -> list[Issue]:
    """A problem, on the registry entry, for every context file ``meta`` names that is not among ``files``."""
    reg_file, reg_line = registry_where
    return [
        Issue(
            reg_file,
            reg_line,
            f"task {meta.id!r}: context file {relpath!r} does not exist in the task folder",
            "fix context_file_paths or add the file",
            "missing_file",
        )
        for relpath in meta.context_file_paths
        if not files.is_file(relpath)
    ]


def read_pset(path: str | Path) -> Pset:
    """Read a pset folder (``papers.yaml`` + one folder per id). See the module docstring for errors."""
    root = Path(path).resolve()
    entries, lines, _ = _load_registry(root)
    issues: list[Issue] = []
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(entries):
        line = lines[index] if index < len(lines) else 0
        if not isinstance(entry, dict):
            issues.append(
                Issue(REGISTRY, line, f"entry {index + 1} is not a mapping of keys", "", "bad_entry")
            )
            continue
        raw_id = entry.get("id")
        if raw_id is None or isinstance(raw_id, (list, dict)):
            issues.append(Issue(REGISTRY, line, f"entry {index + 1} has no usable 'id'", "", "bad_entry"))
            continue
        task_id = str(raw_id)
        id_problem = _id_problem(task_id)
        if id_problem:
            issues.append(Issue(REGISTRY, line, f"task id {task_id!r}: {id_problem}", "", "bad_id"))
            continue
        if task_id in seen:
            issues.append(
                Issue(
                    REGISTRY,
                    line,
                    f"duplicate task id {task_id!r} (first on line {seen[task_id]})",
                    "ids name task folders and must be unique; this entry is skipped",
                    "duplicate_id",
                )
            )
            continue
        seen[task_id] = line
        meta, meta_issues = _meta_from_entry(entry, (REGISTRY, line))
        folder = root / task_id
        if not folder.is_dir():
            issues.extend(meta_issues)
            issues.append(
                Issue(
                    REGISTRY,
                    line,
                    f"task folder {task_id!r} does not exist",
                    f"create {folder} or remove the entry",
                    "missing_folder",
                )
            )
            continue
        task = read_task(folder, meta, registry_where=(REGISTRY, line))
        tasks.append(
            Task(
                **{
                    **{f.name: getattr(task, f.name) for f in fields(Task)},
                    "issues": tuple(meta_issues) + task.issues,
                }
            )
        )
    return Pset(root=str(root), tasks=tuple(tasks), issues=tuple(issues))


def _yaml_scalar(value: Any) -> str:
    """A scalar as the registry writes it: plain when it reads back identical, else JSON-quoted."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    text = str(value)
    if _DATE_TEXT.match(text) and normalise_date(text) == text:
        return text  # unquoted, so the original's YAML loader sees a date, as in its own registry
    if text and "\n" not in text and text == text.strip():
        try:
            if yaml.safe_load(f"k: {text}") == {"k": text}:
                return text
        except yaml.YAMLError:
            pass
    return json.dumps(text, ensure_ascii=False)


def _yaml_paths(paths: tuple[str, ...], nullable: bool) -> str:
    if not paths:
        return " null" if nullable else " []"
    if len(paths) == 1:
        return " " + _yaml_scalar(paths[0])
    return "".join(f"\n    - {_yaml_scalar(p)}" for p in paths)


def registry_text(metas: Iterable[PaperMeta]) -> str:
    """``papers.yaml`` text in the original layout (keys in order, blank lines between entries)."""
    chunks: list[str] = []
    for meta in metas:
        lines = [f"- id: {_yaml_scalar(meta.id)}"]
        for key in META_KEYS[1:9]:
            lines.append(f"  {key}: {_yaml_scalar(getattr(meta, key))}")
        lines.append("")
        lines.append(f"  annotated_file_paths:{_yaml_paths(meta.annotated_file_paths, False)}")
        lines.append(f"  context_file_paths:{_yaml_paths(meta.context_file_paths, True)}")
        for key, value in meta.extra:
            dumped = yaml.safe_dump({key: value}, default_flow_style=True, allow_unicode=True, width=10**6)
            lines.append("  " + dumped.strip().removeprefix("{").removesuffix("}"))
        chunks.append("\n".join(lines) + "\n")
    return "\n\n".join(chunks)


def task_files(task_root: str | Path) -> list[str]:
    """Every content file of a task folder, '/'-relative and sorted (caches and .git excluded)."""
    root = Path(task_root)
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _IGNORED_DIRS)
        for name in filenames:
            if name.endswith(_IGNORED_SUFFIXES):
                continue
            rel = Path(dirpath, name).relative_to(root)
            out.append("/".join(rel.parts))
    return sorted(out)


def content_files(files: Mapping[str, bytes]) -> list[str]:
    """The paths of ``files`` (a task's ``'/'-relpath -> bytes`` held in memory) that ``task_files`` lists
    for the folder they make, sorted: files under a cache or ``.git`` folder and compiled Python are left
    out as there."""
    return sorted(rel for rel in files if _is_content_file(rel))


def _is_content_file(relpath: str) -> bool:
    *folders, name = relpath.split("/")
    return not _IGNORED_DIRS.intersection(folders) and not name.endswith(_IGNORED_SUFFIXES)


def content_hash(task_root: str | Path) -> str:
    """sha256 hex over the sorted (relpath, bytes) of every content file: a task version id.

    Each file contributes ``relpath NUL size NUL bytes``, so renames and content moves change the hash.
    """
    root = Path(task_root)
    return _files_digest((rel, (root / rel).read_bytes()) for rel in task_files(root))


def files_content_hash(files: Mapping[str, bytes]) -> str:
    """``content_hash`` of the folder ``files`` (``'/'-relpath -> bytes``) would make, from the bytes in
    memory: the same files (``content_files``) in the same order give the same hash."""
    return _files_digest((rel, files[rel]) for rel in content_files(files))


def _files_digest(files: Iterable[tuple[str, bytes]]) -> str:
    digest = hashlib.sha256()
    for rel, data in files:
        digest.update(rel.encode("utf-8") + b"\0" + str(len(data)).encode() + b"\0")
        digest.update(data)
    return digest.hexdigest()


def _manifest_yaml(manifest: TaskManifest) -> str:
    return yaml.safe_dump(manifest.to_dict(), sort_keys=False, allow_unicode=True)


def write_pset(pset_or_tasks: Pset | Iterable[Task], out_dir: str | Path) -> None:
    """Write an original-format pset: ``papers.yaml`` plus a byte-identical copy of each task folder.

    ``out_dir`` must not exist or be empty. A task whose manifest differs from what its folder's
    ``task.yaml`` says (or from the defaults, without one) gets a fresh ``task.yaml`` in the copy.
    """
    tasks = list(pset_or_tasks.tasks if isinstance(pset_or_tasks, Pset) else pset_or_tasks)
    out = Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise PsetError(f"{out}: output folder exists and is not empty")
    ids = [t.id for t in tasks]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise PsetError(f"duplicate task ids: {', '.join(dupes)}")
    out.mkdir(parents=True, exist_ok=True)
    for task in tasks:
        dest = out / task.id
        dest.mkdir()
        for rel in task_files(task.root):
            target = dest.joinpath(*rel.split("/"))
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(os.path.join(task.root, *rel.split("/")), target)
        current, _ = (
            parse_manifest(yaml.safe_load((dest / MANIFEST).read_text(encoding="utf-8")))
            if (dest / MANIFEST).is_file()
            else (TaskManifest(), [])
        )
        if current != task.manifest:
            (dest / MANIFEST).write_text(_manifest_yaml(task.manifest), encoding="utf-8")
    (out / REGISTRY).write_text(registry_text(t.meta for t in tasks), encoding="utf-8")


__all__ = [
    "ERROR",
    "WARNING",
    "Issue",
    "PaperMeta",
    "Pset",
    "PsetError",
    "Task",
    "TaskManifest",
    "content_files",
    "content_hash",
    "files_content_hash",
    "normalise_date",
    "read_pset",
    "read_task",
    "registry_text",
    "relpath_problem",
    "task_from_files",
    "task_files",
    "write_pset",
]
