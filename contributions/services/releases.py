"""Writes to releases and their entries: importing a pset as a release, cutting one from the current task
versions, the default release, export.

Every function here is keyword-only and raises ``CatalogueError`` for input it refuses (a release name
that is not a slug or is taken, a pset with errors, a release that cannot be exported).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable
from pathlib import Path

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import IntegrityError, transaction

from contributions.errors import CatalogueError
from contributions.models import Release, ReleaseEntry, TaskVersion
from contributions.services.catalogue import file_blobs_store, task_version_import
from contributions.services.publishing import operator_get_or_create, task_version_record_import
from researchcodebench import pset as rcb_pset

#: Shown at most this many problems in one error message; the count of the rest is stated.
_MAX_LISTED_PROBLEMS = 50


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


def _check_release_name(name: str) -> None:
    try:
        validate_slug(name)
    except ValidationError as exc:
        raise CatalogueError(
            f"release name {name!r} is not valid: use letters, digits, '-' and '_' only"
        ) from exc


@transaction.atomic
def release_get_or_create(
    *, name: str, title: str = "", description: str = "", counts_unchecked_snippets: bool = False
) -> tuple[Release, bool]:
    """The release called ``name``, created empty with ``title`` and ``description`` when missing;
    (release, created). An existing release is returned unchanged. ``counts_unchecked_snippets``: whether
    snippets not checked by their test count in its scores (only the published benchmark's release, which
    keeps the paper's scoring). Raises ``CatalogueError`` for a name that is not a slug."""
    _check_release_name(name)
    defaults = {
        "title": title,
        "description": description,
        "counts_unchecked_snippets": counts_unchecked_snippets,
    }
    return Release.objects.get_or_create(name=name, defaults=defaults)


@transaction.atomic
def release_entry_get_or_create(
    *, release: Release, task_version: TaskVersion, position: int
) -> tuple[ReleaseEntry, bool]:
    """The entry of ``task_version``'s task in ``release``, added at ``position`` when the release holds no
    version of that task; an existing entry (even of another version) is kept. (entry, created)."""
    return ReleaseEntry.objects.get_or_create(
        release=release,
        task=task_version.task,
        defaults={"task_version": task_version, "position": position},
    )


@transaction.atomic
def release_create_from_pset(
    *,
    path: str | Path,
    name: str,
    title: str = "",
    by: AbstractBaseUser | None = None,
    allow_errors: bool = False,
) -> Release:
    """Import an original-format pset folder (docs/task-format.md) as a new release named ``name``.

    Each task becomes a task version (reused when its content was imported before). Refuses, with every
    problem listed as ``task/file:line: message``, a pset whose validation finds errors, unless
    ``allow_errors``. A name that is taken raises ``CatalogueError``, except when the existing release
    holds exactly the same task contents: then it is returned unchanged, so repeating an import is safe.
    Every version is recorded as approved by the operator ``by`` (default: the ``operator`` system
    account; ``publishing.task_version_record_import``). After the transaction commits, the benchmark git
    repository gets one commit per version it did not hold, and the release a tag
    (``benchmark_repo.commit_release``); a failure there is logged and recorded on the release, never
    undoing the import.
    """
    _check_release_name(name)
    pset = _pset_to_import(path, allow_errors=allow_errors)
    top_files = _pset_top_files(Path(pset.root))
    existing = _same_release(
        name,
        wanted={task.id: rcb_pset.content_hash(task.root) for task in pset.tasks},
        wanted_top={rel: hashlib.sha256(data).hexdigest() for rel, data in top_files.items()},
    )
    if existing is not None:
        return existing

    release = Release.objects.create(name=name, title=title, pset_files=file_blobs_store(top_files))
    operator = by if by is not None else operator_get_or_create()
    for position, task in enumerate(pset.tasks):
        version = task_version_import(task=task, origin=TaskVersion.Origin.IMPORTED, by=operator)
        release_entry_get_or_create(release=release, task_version=version, position=position)
        task_version_record_import(task_version=version, by=operator, release_name=name)

    from contributions import benchmark_repo  # the repository module builds on this one

    transaction.on_commit(functools.partial(benchmark_repo.commit_release_recorded, release_id=release.pk))
    return release


def _pset_to_import(path: str | Path, *, allow_errors: bool) -> rcb_pset.Pset:
    """The pset folder at ``path``, refused when it cannot be read, has errors (unless ``allow_errors``)
    or lists no task with a folder."""
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
    return pset


def _same_release(name: str, *, wanted: dict[str, str], wanted_top: dict[str, str]) -> Release | None:
    """The release called ``name`` when it holds exactly ``wanted`` (task key -> content hash) and the pset
    files ``wanted_top`` (name -> sha256); None when there is none; refused, naming what differs, when it
    holds anything else (releases never change)."""
    existing = Release.objects.filter(name=name).first()
    if existing is None:
        return None
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


def _pset_top_files(root: Path) -> dict[str, bytes]:
    """The pset folder's own files (``papers.yaml``, a README...): plain files directly in the folder."""
    return {
        p.name: p.read_bytes()
        for p in sorted(root.iterdir())
        if p.is_file() and not p.is_symlink() and not p.name.endswith((".pyc", ".pyo"))
    }


@transaction.atomic
def release_cut(
    *,
    name: str,
    title: str = "",
    description: str = "",
    task_versions: Iterable[TaskVersion],
    by: AbstractBaseUser | None = None,
    make_default: bool = False,
) -> Release:
    """A new release of ``task_versions`` (a maintainer's choice among the current versions), tagged in the
    benchmark git repository after the transaction commits (``benchmark_repo.commit_release``).

    Raises ``CatalogueError`` for a name that is not a slug or is taken, an empty choice, two versions of
    one task, and a version without files (a release must be exportable). ``by`` is who cut it (the tag
    commit is the hub's). ``make_default`` makes it the release the leaderboard shows first.
    """
    _check_release_name(name)
    if Release.objects.filter(name=name).exists():
        raise CatalogueError(f"release name {name!r} is taken; releases never change: choose a new name")
    chosen = sorted({v.pk: v for v in task_versions}.values(), key=lambda v: (v.task.key, v.number))
    if not chosen:
        raise CatalogueError("choose at least one task version for the release")
    keys = [v.task.key for v in chosen]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise CatalogueError(f"a release holds one version per task; two chosen for: {', '.join(twice)}")
    no_files = [str(v) for v in chosen if not v.has_files]
    if no_files:
        raise CatalogueError(f"metadata-only versions cannot be released: {', '.join(no_files)}")
    try:
        with transaction.atomic():
            release = Release.objects.create(
                name=name, title=title.strip()[:200], description=description.strip()
            )
    except IntegrityError:
        # Two maintainers cut a release of that name at once: the unique name let one through.
        raise CatalogueError(
            f"release name {name!r} is taken; releases never change: choose a new name"
        ) from None
    for position, version in enumerate(chosen):
        release_entry_get_or_create(release=release, task_version=version, position=position)
    if make_default:
        release_set_default(release=release)

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


@transaction.atomic
def release_set_default_if_none(*, release: Release) -> bool:
    """Make ``release`` the default release when there is none; True when it became the default."""
    if release.is_default or Release.objects.select_for_update().filter(is_default=True).exists():
        return False
    release_set_default(release=release)
    return True
