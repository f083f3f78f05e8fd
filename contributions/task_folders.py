"""A task version's files outside the database: the one place that turns stored blobs into files.

The catalogue keeps a version's files as content-addressed ``FileBlob`` rows (``TaskVersion.files`` maps
each '/'-relative path to a sha256). This module is the only reader of those blobs for use as files:

- ``version_file_bytes`` returns them in memory, every blob checked against its sha256;
- ``safe_relpath`` is the one rule a stored path must pass before it names a file on disk;
- ``files_write`` writes such files under a folder (``release_export`` and the folders below use it);
- ``task_version_folder`` materialises a version once per content hash under
  ``RCB_VAR_DIR/workspaces/<hash>/<task key>/`` for the sandboxed runner: files read-only, written to a
  staging folder and renamed into place under a per-hash file lock, so a concurrent worker sees the
  complete folder or none, and two workers never both do the work;
- ``task_version_task`` reads that folder as a core ``Task`` (cached per process: versions are immutable);
- ``task_version_read`` reads a version as a core ``Task`` in memory, writing nothing: for pages, which
  show problems but never run them;
- ``revision_task`` materialises a proposal revision the same way (``files_folder``), with the author's
  declarations as ``task.yaml`` (``revision_task_files``), for its validation;
- ``revision_task_read`` reads a revision as a core ``Task`` in memory, writing nothing, for publishing
  (``revision_task_parse`` is its parsing, which the form's preview and the proposal page share).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path, PurePosixPath

import yaml
from django.conf import settings

from contributions.errors import CatalogueError
from contributions.models import FileBlob, ProposalRevision, TaskVersion
from contributions.task_meta import meta_from_json
from researchcodebench import pset as rcb_pset


class TaskFolderError(CatalogueError):
    """A version's files cannot be produced: metadata-only version, missing or corrupt blob, unsafe path."""


_tasks: dict[str, rcb_pset.Task] = {}
_tasks_lock = threading.Lock()


def safe_relpath(rel: str, *, owner: str) -> tuple[str, ...]:
    """The parts of a stored '/'-relative path, refusing any path that could name a file outside its folder.

    The rule: the core's task-path rule (``researchcodebench.pset.relpath_problem``: not empty, '/'
    separators, relative, no '..') and canonical form (no '.' or empty segments, no NUL), which every path
    the catalogue stores has. Raises ``TaskFolderError`` naming ``owner`` and the path.
    """
    problem = rcb_pset.relpath_problem(rel)
    if problem is None and ("\0" in rel or "/".join(PurePosixPath(rel).parts) != rel):
        problem = "not in canonical form (no '.' or empty segments, no NUL)"
    if problem:
        raise TaskFolderError(f"{owner}: stored file path {rel!r} is not safe: {problem}")
    return tuple(rel.split("/"))


def blobs_read(files: Mapping[str, str], *, owner: str) -> dict[str, bytes]:
    """relpath -> bytes for ``files`` (relpath -> sha256), each blob checked against its sha256.

    Raises ``TaskFolderError`` naming ``owner`` and the files whose blob is missing or corrupt.
    """
    blobs = {
        sha: bytes(content)
        for sha, content in FileBlob.objects.filter(sha256__in=set(files.values())).values_list(
            "sha256", "content"
        )
    }
    missing = sorted(rel for rel, sha in files.items() if sha not in blobs)
    if missing:
        raise TaskFolderError(f"{owner}: stored files are missing from the blob store: {', '.join(missing)}")
    corrupt = sorted(rel for rel, sha in files.items() if hashlib.sha256(blobs[sha]).hexdigest() != sha)
    if corrupt:
        raise TaskFolderError(f"{owner}: stored files do not match their sha256: {', '.join(corrupt)}")
    return {rel: blobs[sha] for rel, sha in files.items()}


def version_file_bytes(*, task_version: TaskVersion, only: Iterable[str] | None = None) -> dict[str, bytes]:
    """relpath -> bytes of the files of a version (all, or those of ``only`` it has), exactly as imported."""
    files = task_version.files
    if only is not None:
        wanted = set(only)
        files = {rel: sha for rel, sha in files.items() if rel in wanted}
    return blobs_read(files, owner=str(task_version))


def files_write(*, files: Mapping[str, bytes], folder: Path, owner: str, read_only: bool = False) -> None:
    """Write ``files`` (relpath -> bytes) under ``folder``, each path checked by ``safe_relpath`` first.

    Precondition: ``folder`` is new (a fresh staging folder or an empty output folder), so no link inside
    it can redirect a write. Raises ``TaskFolderError`` for an unsafe path or a path that cannot be both a
    file and a folder.
    """
    targets = {rel: folder.joinpath(*safe_relpath(rel, owner=owner)) for rel in files}
    for rel, target in sorted(targets.items()):
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(files[rel])
        except OSError as exc:
            raise TaskFolderError(f"{owner}: cannot write {rel!r}: {exc.strerror or exc}") from exc
        if read_only:
            os.chmod(target, 0o444)


def task_folders_root() -> Path:
    return Path(settings.VAR_DIR) / "workspaces"


def _require_files(task_version: TaskVersion) -> None:
    if not task_version.has_files:
        raise TaskFolderError(f"{task_version} is metadata-only: the portal has no files for it")


def _folder_once(
    *, content_hash: str, key: str, owner: str, files: Callable[[], Mapping[str, bytes]]
) -> Path:
    """``workspaces/<content_hash>/<key>/`` holding ``files()`` read-only, written by the first caller.

    ``files`` is called only by the caller that writes the folder, so the others never read the blobs.
    """
    base = task_folders_root() / content_hash
    folder = base / key
    if folder.is_dir():
        return folder
    base.mkdir(parents=True, exist_ok=True)
    with open(base / ".lock", "a+b") as lock:
        # Serialises materialising one hash across threads and processes; the rename below keeps a
        # reader that skips the lock (the is_dir check above) from seeing a partial folder.
        fcntl.flock(lock, fcntl.LOCK_EX)
        if folder.is_dir():
            return folder
        contents = files()
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=base))
        try:
            files_write(files=contents, folder=staging, owner=owner, read_only=True)
            os.rename(staging, folder)
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
    return folder


def task_version_folder(*, task_version: TaskVersion) -> Path:
    """The folder holding ``task_version``'s files, created on first use; raises ``TaskFolderError``."""
    _require_files(task_version)
    return _folder_once(
        content_hash=task_version.content_hash,
        key=task_version.task.key,
        owner=str(task_version),
        files=lambda: version_file_bytes(task_version=task_version),
    )


def task_version_task(*, task_version: TaskVersion) -> rcb_pset.Task:
    """``task_version`` as a core ``Task`` read from its materialised folder (cached per process)."""
    cache_key = f"{task_version.content_hash}/{task_version.task.key}"
    with _tasks_lock:
        if cache_key in _tasks:
            return _tasks[cache_key]
    folder = task_version_folder(task_version=task_version)
    task = rcb_pset.read_task(folder, meta_from_json(task_version.meta))
    with _tasks_lock:
        _tasks[cache_key] = task
    return task


def task_version_read(*, task_version: TaskVersion) -> rcb_pset.Task:
    """``task_version`` as a core ``Task`` built in memory from its stored bytes; writes nothing to disk.

    Loads only the files a problem is made of (the registry's annotated and context files, the paper, the
    manifest and the test entry point), so the task serves snippets, masked files and prompts, not runs.
    Raises ``TaskFolderError`` for a metadata-only version or a missing or corrupt blob.
    """
    _require_files(task_version)
    meta = meta_from_json(task_version.meta)
    manifest, _problems = rcb_pset.parse_manifest(task_version.manifest or {})
    wanted = {
        *meta.annotated_file_paths,
        *meta.context_file_paths,
        *rcb_pset.PAPER_FILES,
        rcb_pset.MANIFEST,
        manifest.test_entry,
    }
    files = version_file_bytes(task_version=task_version, only=wanted)
    return rcb_pset.task_from_files(files, meta, root=f"{task_version.task.key}@{task_version.content_hash}")


# ------------------------------------------------------------------------------ proposal revisions
#
# A proposal's revision is not a task version yet, but it is checked by running it: its files become a
# task folder in the original format (the manifest the author declared becomes ``task.yaml``, the paper
# file is placed under its canonical name), materialised like a version's, keyed by its content hash.


def revision_task_files(*, files: Mapping[str, bytes], manifest: Mapping[str, object]) -> dict[str, bytes]:
    """The task folder of a proposal revision: its ``files`` (relpath -> bytes) with ``task.yaml``
    written from the declared ``manifest`` (``ProposalRevision.manifest``) and the declared paper file
    copied to ``paper2code_paper.tex``/``.md`` when it has another name."""
    out = dict(files)
    requirements: tuple[str, ...] = ()
    req_file = str(manifest.get("requirements_file") or "")
    if req_file and req_file in files:
        text = files[req_file].decode("utf-8", errors="replace")
        requirements = tuple(
            line.split("#", 1)[0].strip() for line in text.splitlines() if line.split("#", 1)[0].strip()
        )
    task_manifest = rcb_pset.TaskManifest(
        test_entry=str(manifest.get("test_entry") or rcb_pset.TaskManifest.test_entry),
        requirements=requirements,
        needs_gpu=bool(manifest.get("needs_gpu")),
        oracle_files=tuple(str(p) for p in manifest.get("oracle_files") or ()),
    )
    out[rcb_pset.MANIFEST] = yaml.safe_dump(task_manifest.to_dict(), sort_keys=False).encode("utf-8")
    paper = str(manifest.get("paper_file") or "")
    if paper and paper in files and paper not in rcb_pset.PAPER_FILES:
        canonical = rcb_pset.PAPER_FILES[0] if paper.endswith(".tex") else rcb_pset.PAPER_FILES[1]
        out.setdefault(canonical, files[paper])
    return out


def revision_meta(
    *, task_key: str, meta: Mapping[str, object], manifest: Mapping[str, object]
) -> rcb_pset.PaperMeta:
    """The registry entry of a revision: the proposal's paper metadata with the declared file lists."""
    data = {
        **dict(meta),
        "id": task_key,
        "annotated_file_paths": list(manifest.get("annotated_files") or ()),
        "context_file_paths": list(manifest.get("context_files") or ()),
    }
    return meta_from_json(data)


def files_folder(*, files: Mapping[str, bytes], key: str, content_hash: str) -> Path:
    """``files`` materialised read-only as ``RCB_VAR_DIR/workspaces/<content_hash>/<key>/`` (created once,
    under the same per-hash lock and staging rename as ``task_version_folder``).

    ``content_hash`` must name ``files`` exactly (callers pass a stored hash of them); ``key`` must be a
    single path segment. Raises ``TaskFolderError``.
    """
    safe_relpath(key, owner=f"folder {key!r}")
    if "/" in key or not content_hash.isalnum():
        raise TaskFolderError(f"folder {key!r}/{content_hash!r}: key and hash must be single path segments")
    return _folder_once(content_hash=content_hash, key=key, owner=key, files=lambda: files)


def revision_task(*, revision: ProposalRevision) -> rcb_pset.Task:
    """A proposal revision as a core ``Task`` read from its materialised folder, ready for the runner
    (``RCB_VAR_DIR/workspaces/rev<content hash>/<task key>/``). Raises ``TaskFolderError`` for a missing
    or corrupt blob or an unsafe path."""
    proposal = revision.proposal
    owner = f"proposal {proposal.task_key} r{revision.number}"
    contents = revision_task_files(files=blobs_read(revision.files, owner=owner), manifest=revision.manifest)
    folder = files_folder(files=contents, key=proposal.task_key, content_hash=f"rev{revision.content_hash}")
    return rcb_pset.read_task(
        folder, revision_meta(task_key=proposal.task_key, meta=proposal.meta, manifest=revision.manifest)
    )


def revision_task_parse(
    *, revision: ProposalRevision, files: Mapping[str, bytes], root: str
) -> rcb_pset.Task:
    """``revision`` as a core ``Task`` parsed in memory from its uploaded ``files`` (relpath -> bytes, as
    ``blobs_read`` returns them), laid out as its task folder (``revision_task_files``) with its registry
    entry (``revision_meta``); writes nothing. ``root`` only labels the task."""
    proposal = revision.proposal
    manifest = revision.manifest or {}
    contents = revision_task_files(files=files, manifest=manifest)
    meta = revision_meta(task_key=proposal.task_key, meta=proposal.meta or {}, manifest=manifest)
    return rcb_pset.task_from_files(contents, meta, root=root)


def revision_task_read(*, revision: ProposalRevision) -> rcb_pset.Task:
    """A proposal revision as a core ``Task`` in memory, its blobs read once: the same files, parse and
    content hash as ``revision_task``'s folder, without writing it. Every stored path must pass
    ``safe_relpath``, as it must to be written. Raises ``TaskFolderError`` for a missing or corrupt blob or
    an unsafe path."""
    proposal = revision.proposal
    files = blobs_read(revision.files, owner=f"proposal {proposal.task_key} r{revision.number}")
    for rel in files:
        safe_relpath(rel, owner=proposal.task_key)
    return revision_task_parse(revision=revision, files=files, root=f"{proposal.task_key}@r{revision.number}")
