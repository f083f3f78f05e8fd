"""A release exported as an original-format pset folder: a read of the catalogue (the benchmark repository
commits it, ``benchmark_repo``; ``manage.py export_release`` writes it)."""

from __future__ import annotations

import gzip
import tarfile
import tempfile
from pathlib import Path
from typing import BinaryIO

from contributions.errors import CatalogueError
from contributions.models import Release
from contributions.task_folders import (
    TaskFolderError,
    blobs_read,
    files_write,
    safe_relpath,
    version_file_bytes,
)
from contributions.task_meta import meta_from_json
from researchcodebench import pset as rcb_pset


def _single_name(name: str, *, owner: str) -> str:
    """``name`` when it is safe as one entry of the export's top folder (``task_folders.safe_relpath``)."""
    if len(safe_relpath(name, owner=owner)) != 1:
        raise TaskFolderError(f"{owner}: {name!r} is not a plain file or folder name")
    return name


def release_export(*, release: Release, out_dir: str | Path) -> Path:
    """Write ``release`` as an original-format pset: ``papers.yaml`` plus every task folder byte-exact.

    ``out_dir`` must not exist or be empty. A release imported from a folder gets that folder's own files
    back verbatim (its ``papers.yaml`` included), so the export is byte-identical to the import; for
    other releases ``papers.yaml`` is written from the versions' stored registry entries. Raises
    ``CatalogueError`` naming the tasks when the release holds metadata-only versions (their files are
    not in the portal), and for a missing or corrupt blob or an unsafe stored path.
    """
    out = Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise CatalogueError(f"{out}: output folder exists and is not empty; choose a new or empty folder")
    entries = list(release.entries.select_related("task_version__task").order_by("position", "task__key"))
    no_files = [e.task_version for e in entries if not e.task_version.has_files]
    if no_files:
        names = ", ".join(str(v) for v in no_files)
        raise CatalogueError(
            f"release {release.name!r} cannot be exported: metadata-only task versions have no files "
            f"({names}); import their task folders first"
        )
    out.mkdir(parents=True, exist_ok=True)
    metas = []
    for entry in entries:
        version = entry.task_version
        task_dir = out / _single_name(version.task.key, owner=f"release {release.name}")
        task_dir.mkdir()
        files_write(files=version_file_bytes(task_version=version), folder=task_dir, owner=str(version))
        metas.append(meta_from_json(version.meta))
    owner = f"release {release.name}"
    top_files = blobs_read(release.pset_files, owner=owner)
    for rel in top_files:
        _single_name(rel, owner=owner)
    top_files.setdefault(rcb_pset.REGISTRY, rcb_pset.registry_text(metas).encode("utf-8"))
    files_write(files=top_files, folder=out, owner=owner)
    return out


def _reset_member(info: tarfile.TarInfo) -> tarfile.TarInfo:
    """A member without the exporting machine's owner and time, so one release always gives the same bytes."""
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = 0
    return info


def release_archive(*, release: Release, out: BinaryIO) -> None:
    """Write ``release`` to ``out`` as a gzipped tar of ``release_export``'s folder, under ``<name>/``.

    The members are the export's files (``papers.yaml`` and the task folders) in name order, with their
    modes and no owner or time. Raises what ``release_export`` raises (``CatalogueError`` for a release with
    metadata-only versions) before writing anything.
    """
    with tempfile.TemporaryDirectory(prefix="rcb-release-") as tmp:
        folder = release_export(release=release, out_dir=Path(tmp) / release.name)
        # mtime=0 in the gzip header too: the archive's bytes depend on the release alone.
        with (
            gzip.GzipFile(fileobj=out, mode="wb", mtime=0, filename="") as gz,
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
        ):
            for path in [folder, *sorted(folder.rglob("*"))]:
                arcname = str(path.relative_to(folder.parent))
                tar.add(path, arcname=arcname, recursive=False, filter=_reset_member)
