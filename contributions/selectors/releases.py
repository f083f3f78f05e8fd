"""Reads of releases: the list with their sizes, one release by name, the default one, a release's page
(``release_page``) and the releases runs can test (``releases_runnable``). A release's files as a folder or an
archive are ``release_export``."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import (
    Aggregate,
    Count,
    Exists,
    IntegerField,
    OuterRef,
    QuerySet,
    Subquery,
    Sum,
    Value,
)
from django.db.models.functions import Coalesce

from contributions.models import (
    Release,
    ReleaseEntry,
    Snippet,
)


def _release_snippets(aggregate: Aggregate) -> Coalesce:
    """``aggregate`` over the snippets of the outer query's release (0 for none)."""
    per_release = (
        Snippet.objects.filter(task_version__release_entries__release=OuterRef("pk"))
        .order_by()
        .values("task_version__release_entries__release")
        .annotate(n=aggregate)
        .values("n")
    )
    return Coalesce(Subquery(per_release, output_field=IntegerField()), Value(0))


def release_list() -> QuerySet[Release]:
    """Releases, newest first, annotated with ``task_count``, ``snippet_count`` and ``total_lines``. Each
    count is a subquery per release: a join counted in the outer query would group by the other two,
    which PostgreSQL then evaluates once per release entry."""
    entries = ReleaseEntry.objects.filter(release=OuterRef("pk")).order_by().values("release")
    return Release.objects.annotate(
        task_count=Coalesce(
            Subquery(entries.annotate(n=Count("pk")).values("n"), output_field=IntegerField()), Value(0)
        ),
        snippet_count=_release_snippets(Count("pk")),
        # The snippets' lines (as ``paper_list`` and the board count them), not ``TaskVersion.total_lines``.
        total_lines=_release_snippets(Sum("lines")),
    ).order_by("-created_at", "name")


def release_get(*, name: str) -> Release:
    """The release called ``name``; ``Release.DoesNotExist`` naming the known releases otherwise."""
    release = Release.objects.filter(name=name).first()
    if release is None:
        known = ", ".join(Release.objects.order_by("name").values_list("name", flat=True)) or "none yet"
        raise Release.DoesNotExist(f"no release named {name!r} (releases: {known})")
    return release


def release_default() -> Release | None:
    """The release the leaderboard shows first (the newest release when none is marked default)."""
    return Release.objects.filter(is_default=True).first() or Release.objects.order_by("-created_at").first()


@dataclass(frozen=True)
class ReleaseTaskRow:
    """One task of a release: its paper, the version the release holds, that version's size."""

    task_key: str
    paper_key: str
    paper_title: str
    version: int
    snippets: int
    lines: int
    has_files: bool
    needs_gpu: bool


@dataclass(frozen=True)
class ReleasePage:
    """A release with its tasks in registry order and their totals. ``downloadable`` (and ``runnable``):
    every version has its files in the portal, so ``release_export`` can write it and runs can test it."""

    release: Release
    tasks: list[ReleaseTaskRow]

    @property
    def snippets(self) -> int:
        return sum(t.snippets for t in self.tasks)

    @property
    def lines(self) -> int:
        return sum(t.lines for t in self.tasks)

    @property
    def papers(self) -> int:
        return len({t.paper_key for t in self.tasks})

    @property
    def downloadable(self) -> bool:
        return bool(self.tasks) and all(t.has_files for t in self.tasks)


def release_page(*, name: str) -> ReleasePage:
    """The release called ``name`` with its tasks (two queries); ``Release.DoesNotExist`` as ``release_get``."""
    release = release_get(name=name)
    entries = (
        release.entries.select_related("task_version__task__paper")
        .annotate(
            n_snippets=Count("task_version__snippets"),
            n_lines=Coalesce(Sum("task_version__snippets__lines"), Value(0)),
        )
        .order_by("position", "task__key")
    )
    rows = [
        ReleaseTaskRow(
            task_key=e.task_version.task.key,
            paper_key=e.task_version.task.paper.key,
            paper_title=e.task_version.task.paper.title,
            version=e.task_version.number,
            snippets=e.n_snippets,
            lines=e.n_lines,
            has_files=e.task_version.has_files,
            needs_gpu=e.task_version.needs_gpu,
        )
        for e in entries
    ]
    return ReleasePage(release=release, tasks=rows)


def releases_runnable() -> QuerySet[Release]:
    """Releases whose every task version has its files (runs can test them), the default first."""
    without_files = ReleaseEntry.objects.filter(release=OuterRef("pk"), task_version__has_files=False)
    return (
        Release.objects.annotate(n_entries=Count("entries"))
        .filter(n_entries__gt=0)
        .exclude(Exists(without_files))
        .order_by("-is_default", "-created_at")
    )
