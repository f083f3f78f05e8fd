"""Task versions on disk: the core runner reads tasks from folders, the portal keeps them as FileBlobs.

``task_version_folder`` writes a version's files once per content hash under
``RCB_VAR_DIR/workspaces/<hash>/<task key>/`` (files read-only; written to a temporary folder and renamed
into place, so a concurrent worker either sees the complete folder or none). Every blob is checked
against its sha256 before it is written. ``task_version_task`` reads that folder as a
``researchcodebench`` ``Task`` (cached per process: versions are immutable).

``shared_runner`` is the one core ``Runner`` of a worker process (warm interpreters, calibrated timeouts,
verdict cache), built from ``settings.RCB_SANDBOX`` and ``settings.RCB_EVAL_PYTHON``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import threading
from pathlib import Path

from django.conf import settings

from contributions.models import FileBlob, TaskVersion
from contributions.services import meta_from_json
from researchcodebench.pset import Task, read_task
from researchcodebench.runner import Runner, VerdictCache, make_sandbox


class WorkspaceError(RuntimeError):
    """A task version cannot be materialised (metadata-only version, missing or corrupt blob)."""


_tasks: dict[str, Task] = {}
_runner: Runner | None = None
_lock = threading.Lock()


def workspaces_root() -> Path:
    return Path(settings.VAR_DIR) / "workspaces"


def task_version_folder(*, task_version: TaskVersion) -> Path:
    """The folder holding ``task_version``'s files (created on first use); raises ``WorkspaceError``."""
    if not task_version.has_files:
        raise WorkspaceError(f"{task_version} is metadata-only: the portal has no files to test it with")
    key = task_version.task.key
    base = workspaces_root() / task_version.content_hash
    folder = base / key
    if folder.is_dir():
        return folder
    base.mkdir(parents=True, exist_ok=True)
    wanted = dict(task_version.files)
    blobs = {b.sha256: bytes(b.content) for b in FileBlob.objects.filter(sha256__in=set(wanted.values()))}
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=base))
    try:
        for relpath, sha in sorted(wanted.items()):
            if sha not in blobs:
                raise WorkspaceError(f"{task_version}: file {relpath!r} points at a missing blob {sha[:12]}")
            data = blobs[sha]
            if hashlib.sha256(data).hexdigest() != sha:
                raise WorkspaceError(f"{task_version}: blob of {relpath!r} does not match its sha256")
            target = (staging / relpath).resolve()
            if not target.is_relative_to(staging.resolve()):
                raise WorkspaceError(f"{task_version}: file path {relpath!r} leaves the task folder")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            os.chmod(target, 0o444)
        try:
            os.rename(staging, folder)
        except OSError:
            # Another process won the race: its folder has the same content (same hash).
            if not folder.is_dir():
                raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return folder


def task_version_task(*, task_version: TaskVersion) -> Task:
    """``task_version`` as a core ``Task`` read from its materialised folder (cached per process)."""
    cache_key = f"{task_version.content_hash}/{task_version.task.key}"
    with _lock:
        if cache_key in _tasks:
            return _tasks[cache_key]
    folder = task_version_folder(task_version=task_version)
    task = read_task(folder, meta_from_json(task_version.meta))
    with _lock:
        _tasks[cache_key] = task
    return task


def shared_runner() -> Runner:
    """This process's core runner (created on first use, kept warm for the life of the worker)."""
    global _runner
    with _lock:
        if _runner is None:
            cache = (
                VerdictCache(str(Path(settings.VAR_DIR) / "cache")) if settings.RCB_VERDICT_CACHE else None
            )
            _runner = Runner(
                sandbox=make_sandbox(
                    settings.RCB_SANDBOX,
                    docker_image=settings.RCB_DOCKER_IMAGE,
                    allow_unsandboxed=settings.RCB_ALLOW_UNSANDBOXED,
                ),
                environment=settings.RCB_EVAL_PYTHON or None,
                cache=cache,
                workers=1,
            )
        return _runner
