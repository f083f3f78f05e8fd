"""Writes to papers, tasks, task versions and snippets: the only code that creates or changes those rows.

Every function here is keyword-only. Problems caused by the input (a broken task folder, a name already
taken) raise ``CatalogueError`` with a message meant for the person who gave the input: it names the file
and line or the task concerned.

Version numbers: every path that creates a ``TaskVersion`` goes through ``_task_version_create``, which
locks the task row (``select_for_update``) before it reads the highest number, so two concurrent imports
of one task never pick the same number. Lock order: task row, then its versions and snippets.
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from contributions.errors import CatalogueError
from contributions.models import (
    UNCHECKED_EXPLANATION_MIN,
    FileBlob,
    Paper,
    Snippet,
    Task,
    TaskVersion,
    UncheckedReason,
)
from contributions.task_meta import meta_to_json
from researchcodebench import envs
from researchcodebench import pset as rcb_pset
from researchcodebench.arxiv import arxiv_id


def _date(value: str | None) -> _dt.date | None:
    return _dt.date.fromisoformat(value) if value else None


def _paper_fields(meta: rcb_pset.PaperMeta) -> dict[str, Any]:
    return {
        "title": meta.title or meta.id,
        "arxiv_id": arxiv_id(meta.arxiv_abs),
        "arxiv_abs": meta.arxiv_abs or "",
        "venue": meta.venue or "",
        "arxiv_date": _date(meta.arxiv_date),
        "arxiv_v1_date": _date(meta.arxiv_v1_date),
        "github_url": meta.github_url or "",
        "first_commit_date": _date(meta.first_commit_date),
        "last_commit_date": _date(meta.last_commit_date),
    }


@transaction.atomic
def paper_get_or_create(*, meta: rcb_pset.PaperMeta) -> tuple[Paper, bool]:
    """The paper keyed ``meta.id``, created from the registry entry ``meta`` when missing; (paper, created)."""
    return Paper.objects.get_or_create(key=meta.id, defaults=_paper_fields(meta))


@transaction.atomic
def paper_update(*, paper: Paper, meta: rcb_pset.PaperMeta, only_empty: bool = False) -> bool:
    """Set ``paper``'s fields from the registry entry ``meta``; True when a field changed.

    ``only_empty`` fills fields that are empty on the paper and given in ``meta``, keeping the rest (a
    paper imported with its task folder keeps its own registry entry).
    """
    values = _paper_fields(meta)
    if only_empty:
        changed = [n for n, v in values.items() if v not in (None, "") and getattr(paper, n) in (None, "")]
    else:
        changed = [n for n, v in values.items() if getattr(paper, n) != v]
    if not changed:
        return False
    for name in changed:
        setattr(paper, name, values[name])
    paper.save(update_fields=[*changed, "updated_at"])
    return True


@transaction.atomic
def task_get_or_create(*, key: str, paper: Paper) -> tuple[Task, bool]:
    """The task keyed ``key``, created for ``paper`` when missing; (task, created)."""
    return Task.objects.get_or_create(key=key, defaults={"paper": paper})


def _task_version_create(*, task: Task, content_hash: str, **fields: Any) -> tuple[TaskVersion, bool]:
    """The version of ``task`` with ``content_hash``, created numbered one above the task's highest when
    missing; (version, created). The one place version numbers are chosen (see the module docstring).

    Precondition: inside a transaction (the task row stays locked until it ends).
    """
    locked = Task.objects.select_for_update().get(pk=task.pk)
    existing = TaskVersion.objects.filter(task=locked, content_hash=content_hash).first()
    if existing is not None:
        return existing, False
    number = (locked.versions.aggregate(top=Max("number"))["top"] or 0) + 1
    version = TaskVersion.objects.create(task=locked, number=number, content_hash=content_hash, **fields)
    return version, True


def _task_content_hash(task: rcb_pset.Task) -> str:
    """The task's content hash: of its folder, or of its files held in memory (the same hash)."""
    if task.contents is not None:
        return rcb_pset.files_content_hash(task.contents)
    return rcb_pset.content_hash(task.root)


def _read_task_files(task: rcb_pset.Task) -> dict[str, bytes]:
    """relpath -> bytes of every content file of the task: those it holds in memory (``Task.contents``,
    as its folder would list them), or its folder's, refusing links and unencodable names."""
    if task.contents is not None:
        return {rel: task.contents[rel] for rel in rcb_pset.content_files(task.contents)}
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


def file_blobs_store(contents: dict[str, bytes]) -> dict[str, str]:
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


@transaction.atomic
def task_version_import(
    *,
    task: rcb_pset.Task,
    origin: str = TaskVersion.Origin.IMPORTED,
    by: AbstractBaseUser | None = None,
    variants: Mapping[str, Mapping[str, Any]] | None = None,
    variants_environment: str = "",
) -> TaskVersion:
    """Store a task folder as an immutable ``TaskVersion`` (with its paper, task, files and snippets).

    ``variants`` (snippet name -> ``SnippetVariants.to_dict()``, derived from this very folder in the
    environment ``variants_environment``) are stored with a new version; an existing version gets them only
    when it has none (``task_version_store_variants``).

    ``task`` is read from its folder, or from its files in memory (``pset.task_from_files``): both store
    the same version. Idempotent: when the task already has a version with the folder's content hash, that
    version is returned unchanged. Otherwise a new version numbered one above the task's highest is
    created, and the paper's metadata is updated to the imported registry entry. Every file of the folder
    is stored byte-exact (content-addressed, shared between versions). Raises ``CatalogueError`` for
    snippet names that repeat within the task, symbolic links and undecodable file names.
    """
    _check_snippet_names(task)
    digest = _task_content_hash(task)
    paper, paper_created = paper_get_or_create(meta=task.meta)
    task_row, _ = task_get_or_create(key=task.id, paper=paper)
    # Fast path without reading the files; _task_version_create checks again under the lock.
    existing = TaskVersion.objects.filter(task=task_row, content_hash=digest).first()
    if existing is not None:
        return existing
    files = file_blobs_store(_read_task_files(task))
    version, created = _task_version_create(
        task=task_row,
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
        **_variants_fields(task, variants, variants_environment),
    )
    if not created:
        if variants:
            task_version_store_variants(
                task_version=version, variants=variants, environment=variants_environment
            )
        return version
    if not paper_created:
        paper_update(paper=paper, meta=task.meta)
    _snippets_create(task_version=version, snippets=task.snippets)
    return version


def _snippets_create(*, task_version: TaskVersion, snippets: Sequence[rcb_pset.Snippet]) -> None:
    """One ``Snippet`` row per parsed snippet of a new version, in order, each linked to its parent.

    Precondition: the names are unique (``_check_snippet_names``).
    """
    rows = Snippet.objects.bulk_create(
        [
            Snippet(
                task_version=task_version,
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
            for ordinal, snip in enumerate(snippets)
        ]
    )
    by_name = {row.name: row for row in rows}
    children = []
    for row, snip in zip(rows, snippets, strict=True):
        if snip.parent is not None:
            row.parent = by_name[snip.parent]
            children.append(row)
    Snippet.objects.bulk_update(children, ["parent"])


@transaction.atomic
def task_version_create_metadata_only(
    *,
    task: Task,
    content_hash: str,
    meta: rcb_pset.PaperMeta,
    snippets: Sequence[tuple[str, int]],
    snippet_file: str = "",
    origin: str = TaskVersion.Origin.PUBLISHED,
) -> tuple[TaskVersion, bool]:
    """A version of ``task`` without files (results whose task folder the portal lacks); (version, created).

    ``snippets`` are ``(name, line count)`` in order; ``snippet_file`` is the file every snippet is in
    ("" when not known). Idempotent on ``content_hash``: an existing version is returned unchanged. Raises
    ``CatalogueError`` for a repeated snippet name or a negative line count.
    """
    names = [name for name, _lines in snippets]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise CatalogueError(f"task {task.key!r}: duplicate snippet names: {', '.join(map(repr, repeated))}")
    negative = [name for name, lines in snippets if lines < 0]
    if negative:
        raise CatalogueError(f"task {task.key!r}: negative line count for {', '.join(map(repr, negative))}")
    version, created = _task_version_create(
        task=task,
        content_hash=content_hash,
        origin=origin,
        has_files=False,
        files={},
        meta=meta_to_json(meta),
        manifest={},
        validation_report=[],
        total_lines=0,
    )
    if created:
        Snippet.objects.bulk_create(
            Snippet(task_version=version, name=name, ordinal=i, file=snippet_file, lines=lines)
            for i, (name, lines) in enumerate(snippets)
        )
    return version, created


def _variants_fields(
    task: rcb_pset.Task, variants: Mapping[str, Mapping[str, Any]] | None, environment: str
) -> dict[str, Any]:
    """The ``variants`` and ``variants_environment`` fields of a version of ``task``: the sets of its own
    snippets (a name it lacks is dropped), or nothing without an environment to say where they hold."""
    names = {s.name for s in task.snippets}
    kept = {str(k): dict(v) for k, v in (variants or {}).items() if k in names and isinstance(v, Mapping)}
    if not kept or not environment:
        return {"variants": {}, "variants_environment": ""}
    return {"variants": kept, "variants_environment": environment[:200]}


@transaction.atomic
def task_version_store_variants(
    *, task_version: TaskVersion, variants: Mapping[str, Mapping[str, Any]], environment: str
) -> bool:
    """Store the impossible variants of ``task_version``'s snippets (snippet name ->
    ``SnippetVariants.to_dict()``, derived from the version's own files in the environment ``environment``)
    once: a version that has variants keeps them (a published version never changes what its passes are
    confirmed against). True when they were stored."""
    names = set(task_version.snippets.values_list("name", flat=True))
    kept = {str(k): dict(v) for k, v in variants.items() if k in names and isinstance(v, Mapping)}
    if not kept or not environment:
        return False
    stored = TaskVersion.objects.filter(pk=task_version.pk, variants_environment="").update(
        variants=kept, variants_environment=environment[:200]
    )
    task_version.refresh_from_db(fields=["variants", "variants_environment"])
    return bool(stored)


# ---------------------------------------------------------------------------------------------- environments


@transaction.atomic
def snippets_mark_unchecked(*, task_version: TaskVersion, accepted: Mapping[str, Mapping[str, str]]) -> int:
    """Mark the snippets of ``task_version`` named in ``accepted`` "not checked by its test" with their
    reason; returns how many were marked. A snippet is marked, never unmarked, here."""
    marked = 0
    for name, given in accepted.items():
        reason = (
            given.get("reason") if given.get("reason") in UncheckedReason.values else UncheckedReason.OTHER
        )
        marked += Snippet.objects.filter(task_version=task_version, name=name).update(
            checked_by_test=False, unchecked_reason=reason, unchecked_explanation=given.get("explanation", "")
        )
    return marked


@transaction.atomic
def snippet_mark_unchecked(*, snippet: Snippet, reason: str, explanation: str) -> Snippet:
    """Mark one snippet "not checked by its test" (a maintainer's decision, e.g. a known weak snippet of an
    imported release): ``reason`` one of ``UncheckedReason``, ``explanation`` at least
    ``UNCHECKED_EXPLANATION_MIN`` characters. Raises ``CatalogueError`` naming what is wrong. The paper's
    pages show it at once (their cache is keyed by the paper's last change)."""
    if reason not in UncheckedReason.values:
        raise CatalogueError(f"the reason {reason!r} is not one of {', '.join(UncheckedReason.values)}")
    text = (explanation or "").strip()
    if len(text) < UNCHECKED_EXPLANATION_MIN:
        raise CatalogueError(
            f"the explanation needs at least {UNCHECKED_EXPLANATION_MIN} characters (it has {len(text)})"
        )
    Snippet.objects.filter(pk=snippet.pk).update(
        checked_by_test=False, unchecked_reason=reason, unchecked_explanation=text
    )
    Paper.objects.filter(pk=snippet.task_version.task.paper_id).update(updated_at=timezone.now())
    snippet.refresh_from_db()
    return snippet


def environment_sources() -> envs.Sources:
    """The package sources task environments are resolved and installed from: settings ``RCB_ENV_*`` when
    any is set, else pip's own configuration on this host (read once per process)."""
    return _environment_sources(
        tuple(settings.RCB_ENV_FIND_LINKS),
        settings.RCB_ENV_INDEX_URL or None,
        tuple(settings.RCB_ENV_EXTRA_INDEX_URLS),
    )


@functools.lru_cache(maxsize=4)
def _environment_sources(
    find_links: tuple[str, ...], index_url: str | None, extra_index_urls: tuple[str, ...]
) -> envs.Sources:
    return envs.default_sources(find_links=find_links, index_url=index_url, extra_index_urls=extra_index_urls)


@dataclass(frozen=True)
class EnvironmentOutcome:
    """What ``task_version_lock_environment`` did: the requirements and where they came from (a file,
    ``task.yaml`` or ``inferred``, with the imports behind each inferred one), the lock's hash, or why there
    is none (``error``, naming the package)."""

    task_version: TaskVersion
    requirements: tuple[str, ...]
    source: str
    inferred: tuple[tuple[str, str], ...]
    lock_hash: str
    error: str = ""


def task_version_lock_environment(*, task_version: TaskVersion) -> EnvironmentOutcome:
    """Resolve the version's requirements (docs/environments.md: its requirements file, else ``task.yaml``,
    else the imports of its code) into a lock and store both on the version, once: a version that already
    has a lock keeps it (a published version's environment never changes). A requirement that cannot be
    resolved stores the requirements without a lock and reports the error; workers then give its runs an
    infrastructure verdict naming the package. Runs uv (seconds), outside any transaction."""
    from contributions.task_folders import task_version_task

    if task_version.environment_hash:
        return EnvironmentOutcome(
            task_version,
            tuple(task_version.environment_requirements),
            "stored",
            (),
            task_version.environment_hash,
        )
    task = task_version_task(task_version=task_version)
    try:
        needs = envs.task_requirements(task.root, manifest_requirements=task.manifest.requirements)
    except envs.RequirementsError as exc:
        return EnvironmentOutcome(task_version, (), "invalid", (), "", f"{task.id}/{exc}")
    error = ""
    lock_text = lock_hash = ""
    try:
        lock = envs.lock_requirements(
            needs.requirements, sources=environment_sources(), cache_root=str(settings.RCB_ENV_DIR)
        )
        lock_text, lock_hash = lock.text, lock.hash
    except envs.EnvironmentBuildError as exc:
        error = str(exc)
    TaskVersion.objects.filter(pk=task_version.pk, environment_hash="").update(
        environment_requirements=list(needs.requirements),
        environment_lock=lock_text,
        environment_hash=lock_hash,
    )
    task_version.refresh_from_db()
    return EnvironmentOutcome(
        task_version, needs.requirements, needs.source, needs.inferred, lock_hash, error
    )
