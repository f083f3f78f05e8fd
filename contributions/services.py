"""Writes to the benchmark catalogue: importing task folders as immutable versions, releases, export.

Every function here is keyword-only. Problems caused by the input (a broken pset, a name already taken, a
release that cannot be exported) raise ``CatalogueError`` with a message meant for the person who gave
the input: it names the file and line, the task or the release concerned.
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import re
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import transaction
from django.db.models import Max

from contributions.models import FileBlob, Paper, Release, ReleaseEntry, Snippet, Task, TaskVersion
from researchcodebench import pset as rcb_pset


class CatalogueError(ValueError):
    """Input the catalogue refuses; the message says what is wrong and where."""


_ARXIV_ID = re.compile(r"arxiv\.org/(?:abs|pdf)/(.+?)(?:v\d+)?(?:\.pdf)?/?$", re.IGNORECASE)
#: Shown at most this many problems in one error message; the count of the rest is stated.
_MAX_LISTED_PROBLEMS = 50


def arxiv_id_from_url(url: str | None) -> str:
    """The arXiv identifier of an abstract or PDF URL without its version ("2502.10927"); "" if none."""
    if not url:
        return ""
    match = _ARXIV_ID.search(url.strip())
    return match.group(1) if match else ""


def _date(value: str | None) -> _dt.date | None:
    return _dt.date.fromisoformat(value) if value else None


def _json_safe(value: Any) -> Any:
    """Registry values as JSON: YAML dates in unknown keys become ISO text, tuples become lists."""
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def meta_to_json(meta: rcb_pset.PaperMeta) -> dict[str, Any]:
    """A registry entry as stored in ``TaskVersion.meta``.

    ``extra_order`` records the order of unknown keys, because PostgreSQL's jsonb does not keep key order
    and the exported ``papers.yaml`` should list them as the imported one did.
    """
    data = _json_safe(meta.to_dict())
    data["extra_order"] = [key for key, _ in meta.extra]
    return data


def meta_from_json(data: dict[str, Any]) -> rcb_pset.PaperMeta:
    """The inverse of ``meta_to_json``."""
    extra = data.get("extra") or {}
    order = [k for k in data.get("extra_order") or [] if k in extra]
    order += [k for k in extra if k not in order]
    return rcb_pset.PaperMeta.from_dict({**data, "extra": {k: extra[k] for k in order}})


def _paper_fields(meta: rcb_pset.PaperMeta) -> dict[str, Any]:
    return {
        "title": meta.title or meta.id,
        "arxiv_id": arxiv_id_from_url(meta.arxiv_abs),
        "arxiv_abs": meta.arxiv_abs or "",
        "venue": meta.venue or "",
        "arxiv_date": _date(meta.arxiv_date),
        "arxiv_v1_date": _date(meta.arxiv_v1_date),
        "github_url": meta.github_url or "",
        "first_commit_date": _date(meta.first_commit_date),
        "last_commit_date": _date(meta.last_commit_date),
    }


def _read_task_files(task: rcb_pset.Task) -> dict[str, bytes]:
    """relpath -> bytes of every content file of the task folder; refuses links and unencodable names."""
    root = Path(task.root)
    out: dict[str, bytes] = {}
    for rel in rcb_pset.task_files(root):
        try:
            rel.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise CatalogueError(
                f"task {task.id!r}: file name {rel!r} is not valid UTF-8; rename the file"
            ) from exc
        path = root.joinpath(*rel.split("/"))
        # A link could point outside the task folder; the benchmark stores plain files only. (task_files
        # never descends into linked folders, so checking the file itself suffices.)
        if path.is_symlink():
            raise CatalogueError(
                f"task {task.id!r}: {rel} is a symbolic link; replace it with the file it points to"
            )
        out[rel] = path.read_bytes()
    return out


def _check_snippet_names(task: rcb_pset.Task) -> None:
    seen: dict[str, rcb_pset.Snippet] = {}
    for snip in task.snippets:
        first = seen.setdefault(snip.name, snip)
        if first is not snip:
            raise CatalogueError(
                f"task {task.id!r}: {snip.file}:{snip.start_line}: duplicate snippet name {snip.name!r} "
                f"(also at {first.file}:{first.start_line}); snippet names identify results and must be "
                "unique within a task, even when errors are allowed"
            )


def _store_blobs(contents: dict[str, bytes]) -> dict[str, str]:
    """Store file bytes content-addressed (once per distinct content); returns relpath -> sha256."""
    files = {rel: hashlib.sha256(data).hexdigest() for rel, data in contents.items()}
    blobs = {files[rel]: data for rel, data in contents.items()}
    known = set(FileBlob.objects.filter(sha256__in=list(blobs)).values_list("sha256", flat=True))
    FileBlob.objects.bulk_create(
        [
            FileBlob(sha256=sha, size=len(data), content=data)
            for sha, data in blobs.items()
            if sha not in known
        ],
        ignore_conflicts=True,
    )
    return files


def _pset_top_files(root: Path) -> dict[str, bytes]:
    """The pset folder's own files (``papers.yaml``, a README...): plain files directly in the folder."""
    return {
        p.name: p.read_bytes()
        for p in sorted(root.iterdir())
        if p.is_file() and not p.is_symlink() and not p.name.endswith((".pyc", ".pyo"))
    }


@transaction.atomic
def task_version_import(
    *,
    task: rcb_pset.Task,
    origin: str = TaskVersion.Origin.IMPORTED,
    by: AbstractBaseUser | None = None,
) -> TaskVersion:
    """Store a task folder as an immutable ``TaskVersion`` (with its paper, task, files and snippets).

    Idempotent: when the task already has a version with the folder's content hash, that version is
    returned unchanged. Otherwise a new version numbered one above the task's highest is created, and the
    paper's metadata is updated to the imported registry entry. Every file of the folder is stored
    byte-exact (content-addressed, shared between versions). Raises ``CatalogueError`` for snippet names
    that repeat within the task, symbolic links and undecodable file names.
    """
    _check_snippet_names(task)
    digest = rcb_pset.content_hash(task.root)
    paper_fields = _paper_fields(task.meta)
    paper, paper_created = Paper.objects.get_or_create(key=task.id, defaults=paper_fields)
    task_row, _ = Task.objects.get_or_create(key=task.id, defaults={"paper": paper})
    # Serialise version numbering per task (a no-op lock on SQLite, which serialises writers anyway).
    task_row = Task.objects.select_for_update().get(pk=task_row.pk)
    existing = TaskVersion.objects.filter(task=task_row, content_hash=digest).first()
    if existing is not None:
        return existing
    if not paper_created:
        Paper.objects.filter(pk=paper.pk).update(**paper_fields)

    files = _store_blobs(_read_task_files(task))

    number = (task_row.versions.aggregate(top=Max("number"))["top"] or 0) + 1
    version = TaskVersion.objects.create(
        task=task_row,
        number=number,
        content_hash=digest,
        origin=origin,
        has_files=True,
        files=files,
        meta=meta_to_json(task.meta),
        manifest=task.manifest.to_dict(),
        validation_report=[issue.to_dict() for issue in task.issues],
        paper_file=task.paper_file or "",
        needs_gpu=task.manifest.needs_gpu,
        total_lines=sum(s.lines for s in task.snippets),
        created_by=by,
    )
    rows = Snippet.objects.bulk_create(
        [
            Snippet(
                task_version=version,
                name=snip.name,
                ordinal=ordinal,
                file=snip.file,
                start_line=snip.start_line,
                end_line=snip.end_line,
                lines=snip.lines,
                indent=snip.indent,
                depth=snip.depth,
                code=snip.code,
            )
            for ordinal, snip in enumerate(task.snippets)
        ]
    )
    by_name = {row.name: row for row in rows}
    children = []
    for row, snip in zip(rows, task.snippets, strict=True):
        if snip.parent is not None:
            row.parent = by_name[snip.parent]
            children.append(row)
    Snippet.objects.bulk_update(children, ["parent"])
    return version


def _problem_lines(problems: Iterable[tuple[str | None, rcb_pset.Issue]]) -> list[str]:
    lines = []
    for task_id, issue in problems:
        # Task issues name files relative to the task folder; registry issues name papers.yaml itself.
        where = (
            issue.location()
            if task_id is None or issue.file == rcb_pset.REGISTRY
            else f"{task_id}/{issue.location()}"
        )
        text = f"{where}: {issue.message}"
        lines.append(f"{text} (hint: {issue.hint})" if issue.hint else text)
    return lines


def _limited(lines: list[str]) -> str:
    shown = lines[:_MAX_LISTED_PROBLEMS]
    rest = len(lines) - len(shown)
    return "\n".join(["  " + line for line in shown] + ([f"  ... and {rest} more"] if rest else []))


def _release_contents(release: Release) -> dict[str, str]:
    return dict(release.entries.values_list("task__key", "task_version__content_hash"))


@transaction.atomic
def release_create_from_pset(
    *,
    path: str | Path,
    name: str,
    title: str = "",
    by: AbstractBaseUser | None = None,
    allow_errors: bool = False,
) -> Release:
    """Import an original-format pset folder (SPEC section 1) as a new release named ``name``.

    Each task becomes a task version (reused when its content was imported before). Refuses, with every
    problem listed as ``task/file:line: message``, a pset whose validation finds errors, unless
    ``allow_errors``. A name that is taken raises ``CatalogueError``, except when the existing release
    holds exactly the same task contents: then it is returned unchanged, so repeating an import is safe.
    After the transaction commits, the release is committed and tagged in the benchmark git repository;
    a failure there is logged and recorded on the release, never undoing the import.
    """
    try:
        validate_slug(name)
    except ValidationError as exc:
        raise CatalogueError(
            f"release name {name!r} is not valid: use letters, digits, '-' and '_' only"
        ) from exc
    try:
        pset = rcb_pset.read_pset(path)
    except rcb_pset.PsetError as exc:
        raise CatalogueError(str(exc)) from exc
    errors = [(task_id, issue) for task_id, issue in pset.all_issues() if issue.is_error]
    if errors and not allow_errors:
        raise CatalogueError(
            f"{pset.root}: {len(errors)} error(s); fix them (python -m researchcodebench inspect "
            f"shows them too) or import with --allow-errors:\n{_limited(_problem_lines(errors))}"
        )
    if not pset.tasks:
        raise CatalogueError(f"{pset.root}: the registry lists no task with a folder; nothing to import")

    top_files = _pset_top_files(Path(pset.root))
    wanted = {task.id: rcb_pset.content_hash(task.root) for task in pset.tasks}
    wanted_top = {rel: hashlib.sha256(data).hexdigest() for rel, data in top_files.items()}
    existing = Release.objects.filter(name=name).first()
    if existing is not None:
        have = _release_contents(existing)
        if have == wanted and existing.pset_files == wanted_top:
            return existing
        changed = sorted(k for k in set(have) | set(wanted) if have.get(k) != wanted.get(k))
        changed += sorted(
            k
            for k in set(existing.pset_files) | set(wanted_top)
            if existing.pset_files.get(k) != wanted_top.get(k)
        )
        raise CatalogueError(
            f"release {name!r} already exists with different contents (differing: "
            f"{', '.join(changed)}); releases never change: choose a new release name"
        )

    release = Release.objects.create(name=name, title=title, pset_files=_store_blobs(top_files))
    for position, task in enumerate(pset.tasks):
        version = task_version_import(task=task, origin=TaskVersion.Origin.IMPORTED, by=by)
        ReleaseEntry.objects.create(
            release=release, task_version=version, task=version.task, position=position
        )

    from contributions import benchmark_repo  # the repository module builds on this one

    transaction.on_commit(functools.partial(benchmark_repo.commit_release_recorded, release_id=release.pk))
    return release


@transaction.atomic
def release_set_default(*, release: Release) -> Release:
    """Make ``release`` the one the leaderboard shows first (exactly one release is the default)."""
    Release.objects.filter(is_default=True).exclude(pk=release.pk).update(is_default=False)
    Release.objects.filter(pk=release.pk).update(is_default=True)
    release.is_default = True
    return release


def _safe_relpath(task_key: str, rel: str) -> tuple[str, ...]:
    parts = PurePosixPath(rel).parts
    if not parts or rel.startswith("/") or ".." in parts or "\\" in rel:
        raise CatalogueError(f"task {task_key!r}: stored file path {rel!r} is not a relative path")
    return parts


def _blob_bytes(files: dict[str, str], owner: str) -> dict[str, bytes]:
    shas = set(files.values())
    blobs = {
        sha: bytes(content)
        for sha, content in FileBlob.objects.filter(sha256__in=shas).values_list("sha256", "content")
    }
    missing = sorted(rel for rel, sha in files.items() if sha not in blobs)
    if missing:
        raise CatalogueError(f"{owner}: stored files are missing from the blob store: {', '.join(missing)}")
    return {rel: blobs[sha] for rel, sha in files.items()}


def version_file_bytes(*, task_version: TaskVersion) -> dict[str, bytes]:
    """relpath -> bytes of every file of a version, exactly as imported."""
    return _blob_bytes(task_version.files, str(task_version))


def release_export(*, release: Release, out_dir: str | Path) -> Path:
    """Write ``release`` as an original-format pset: ``papers.yaml`` plus every task folder byte-exact.

    ``out_dir`` must not exist or be empty. A release imported from a folder gets that folder's own files
    back verbatim (its ``papers.yaml`` included), so the export is byte-identical to the import; for
    other releases ``papers.yaml`` is written from the versions' stored registry entries. Raises ``CatalogueError`` naming the tasks when the release
    holds metadata-only versions (their files are not in the portal).
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
        task_dir = out / version.task.key
        task_dir.mkdir()
        for rel, data in sorted(version_file_bytes(task_version=version).items()):
            target = task_dir.joinpath(*_safe_relpath(version.task.key, rel))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        metas.append(meta_from_json(version.meta))
    top_files = _blob_bytes(release.pset_files, f"release {release.name}")
    top_files.setdefault(rcb_pset.REGISTRY, rcb_pset.registry_text(metas).encode("utf-8"))
    for rel, data in sorted(top_files.items()):
        (out / _safe_relpath(release.name, rel)[-1]).write_bytes(data)
    return out
