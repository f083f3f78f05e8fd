"""Reads of the benchmark catalogue: papers with their sizes, releases, task versions, snippet trees."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery, Sum, Value
from django.db.models.functions import Coalesce

from contributions.models import Paper, Release, ReleaseEntry, Snippet, Task, TaskVersion


@dataclass(frozen=True)
class PaperRow:
    """A paper with the size of its benchmark tasks (the versions chosen by ``paper_list``)."""

    paper: Paper
    task_count: int
    snippet_count: int
    total_lines: int
    latest_version: TaskVersion | None
    versions: tuple[TaskVersion, ...] = ()


def paper_list(*, release: Release | None = None) -> list[PaperRow]:
    """Every paper (by key) with task count, snippet count and total lines N.

    Sizes count the latest version of each task, or with ``release`` the release's versions (and only
    the release's papers). ``latest_version`` is the newest of those versions.
    """
    if release is not None:
        version_ids = list(release.entries.values_list("task_version_id", flat=True))
    else:
        newest = TaskVersion.objects.filter(task=OuterRef("pk")).order_by("-number").values("pk")[:1]
        version_ids = [
            pk
            for pk in Task.objects.annotate(newest=Subquery(newest)).values_list("newest", flat=True)
            if pk is not None
        ]
    versions = (
        TaskVersion.objects.filter(pk__in=version_ids)
        .select_related("task")
        .annotate(snippet_count=Count("snippets"))
        .order_by("task__key")
    )
    by_paper: dict[int, list[TaskVersion]] = {}
    for version in versions:
        by_paper.setdefault(version.task.paper_id, []).append(version)
    papers = Paper.objects.all() if release is None else Paper.objects.filter(pk__in=list(by_paper))
    rows = []
    for paper in papers.order_by("key"):
        chosen = by_paper.get(paper.pk, [])
        rows.append(
            PaperRow(
                paper=paper,
                task_count=len(chosen),
                snippet_count=sum(v.snippet_count for v in chosen),
                total_lines=sum(v.total_lines for v in chosen),
                latest_version=max(chosen, key=lambda v: v.created_at, default=None),
                versions=tuple(chosen),
            )
        )
    return rows


def release_list() -> QuerySet[Release]:
    """Releases, newest first, annotated with ``task_count``, ``snippet_count`` and ``total_lines``."""
    snippets = (
        Snippet.objects.filter(task_version__release_entries__release=OuterRef("pk"))
        .order_by()
        .values("task_version__release_entries__release")
        .annotate(n=Count("pk"))
        .values("n")
    )
    lines = (
        ReleaseEntry.objects.filter(release=OuterRef("pk"))
        .order_by()
        .values("release")
        .annotate(n=Sum("task_version__total_lines"))
        .values("n")
    )
    return Release.objects.annotate(
        task_count=Count("entries", distinct=True),
        snippet_count=Coalesce(Subquery(snippets, output_field=IntegerField()), Value(0)),
        total_lines=Coalesce(Subquery(lines, output_field=IntegerField()), Value(0)),
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


def task_version_get(*, task_key: str, number: int | None = None) -> TaskVersion:
    """Version ``number`` of task ``task_key`` (its newest without a number).

    ``TaskVersion.DoesNotExist`` names the task and the versions that exist.
    """
    versions = TaskVersion.objects.filter(task__key=task_key).select_related("task", "task__paper")
    version = (versions.filter(number=number) if number is not None else versions.order_by("-number")).first()
    if version is None:
        numbers = ", ".join(str(n) for n in versions.order_by("number").values_list("number", flat=True))
        which = f"version {number} of task {task_key!r}" if number is not None else f"task {task_key!r}"
        raise TaskVersion.DoesNotExist(f"no {which} (versions: {numbers or 'none'})")
    return version


@dataclass
class SnippetNode:
    """A snippet with its child snippets, in document order."""

    snippet: Snippet
    children: list[SnippetNode] = field(default_factory=list)


def snippet_tree(*, task_version: TaskVersion) -> list[SnippetNode]:
    """The snippets of a version as a forest: top-level snippets (document order) with nested children."""
    nodes = {s.pk: SnippetNode(s) for s in task_version.snippets.order_by("ordinal")}
    roots: list[SnippetNode] = []
    for node in nodes.values():
        parent = nodes.get(node.snippet.parent_id) if node.snippet.parent_id else None
        (parent.children if parent is not None else roots).append(node)
    return roots
