"""Reads of the benchmark catalogue: the papers with their sizes (``paper_list``, the papers page's
``paper_catalogue``), task versions (``task_version_get``, the published benchmark ``task_versions_current``),
a version's snippet tree, and who contributed each paper's tasks (``paper_contributors``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import (
    Count,
    OuterRef,
    Subquery,
    Sum,
    Value,
)
from django.db.models.functions import Coalesce

from contributions.models import (
    Paper,
    Proposal,
    Release,
    Snippet,
    Task,
    TaskVersion,
)
from contributions.selectors.accounts import user_display_name
from contributions.selectors.releases import release_default, release_get


@dataclass(frozen=True)
class PaperRow:
    """A paper with the size of its benchmark tasks (the versions chosen by ``paper_list``)."""

    paper: Paper
    task_count: int
    snippet_count: int
    total_lines: int
    latest_version: TaskVersion | None
    versions: tuple[TaskVersion, ...] = ()
    #: display names of the contributors of its tasks (``paper_contributors``)
    contributors: tuple[str, ...] = ()


def paper_list(*, release: Release | None = None) -> list[PaperRow]:
    """Every paper (by key) with task count, snippet count and total lines N.

    Sizes count the latest version of each task, or with ``release`` the release's versions (and only
    the release's papers). ``latest_version`` is the newest of those versions. N sums the lines of every
    snippet, as scoring weighs them, so a release's totals are the board's (``lines`` of a complete run).
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
    # Lines are the snippets' own, as scoring weighs them (every snippet, nested ones too): the one source
    # of the board's counts. ``TaskVersion.total_lines`` is 0 for metadata-only versions (the published
    # results' tasks), whose snippets still carry their line counts.
    versions = (
        TaskVersion.objects.filter(pk__in=version_ids)
        .select_related("task")
        .annotate(snippet_count=Count("snippets"), snippet_lines=Coalesce(Sum("snippets__lines"), Value(0)))
        .order_by("task__key")
    )
    by_paper: dict[int, list[TaskVersion]] = {}
    for version in versions:
        by_paper.setdefault(version.task.paper_id, []).append(version)
    papers = Paper.objects.all() if release is None else Paper.objects.filter(pk__in=list(by_paper))
    credits = paper_contributors_by_key()
    rows = []
    for paper in papers.order_by("key"):
        chosen = by_paper.get(paper.pk, [])
        rows.append(
            PaperRow(
                paper=paper,
                task_count=len(chosen),
                snippet_count=sum(v.snippet_count for v in chosen),
                total_lines=sum(v.snippet_lines for v in chosen),
                latest_version=max(chosen, key=lambda v: v.created_at, default=None),
                versions=tuple(chosen),
                contributors=tuple(credits.get(paper.key, ())),
            )
        )
    return rows


#: ``paper_catalogue``'s ``release_name`` for the latest version of every task, in a release or not
ALL_VERSIONS = "*"


@dataclass(frozen=True)
class PaperCatalogue:
    """The papers page: ``rows`` are the papers of ``release`` with the sizes of its versions (of the
    latest version of every task when ``release`` is None), and the totals count only them, so that they
    are the board's for that release; ``elsewhere`` lists the other papers (latest versions: newer
    contributions not yet released, other releases' papers), outside the totals."""

    release: Release | None
    rows: list[PaperRow]
    elsewhere: list[PaperRow]

    @property
    def snippets(self) -> int:
        return sum(r.snippet_count for r in self.rows)

    @property
    def lines(self) -> int:
        return sum(r.total_lines for r in self.rows)


def paper_catalogue(*, release_name: str = "") -> PaperCatalogue:
    """The papers of one release: ``""`` the default one (``release_default``; every task's latest
    version while there is no release), ``ALL_VERSIONS`` the latest version of every task, else the
    release of that name (``Release.DoesNotExist`` naming the known ones)."""
    if release_name == ALL_VERSIONS:
        release = None
    elif release_name:
        release = release_get(name=release_name)
    else:
        release = release_default()
    if release is None:
        return PaperCatalogue(release=None, rows=paper_list(), elsewhere=[])
    rows = paper_list(release=release)
    inside = {r.paper.pk for r in rows}
    return PaperCatalogue(
        release=release, rows=rows, elsewhere=[r for r in paper_list() if r.paper.pk not in inside]
    )


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


def task_versions_current() -> list[TaskVersion]:
    """The published benchmark: the newest version with files of every task, by task key.

    The benchmark git repository's branch holds exactly these (``contributions.benchmark_repo``), and a
    release cut from the web offers them.
    """
    newest = (
        TaskVersion.objects.filter(task=OuterRef("pk"), has_files=True).order_by("-number").values("pk")[:1]
    )
    ids = [pk for pk in Task.objects.annotate(newest=Subquery(newest)).values_list("newest", flat=True) if pk]
    return list(
        TaskVersion.objects.filter(pk__in=ids)
        .select_related("task", "task__paper")
        .annotate(snippet_count=Count("snippets"))
        .order_by("task__key")
    )


def paper_contributors(*, paper_key: str) -> list[str]:
    """The display names of the people whose approved contributions made the tasks of paper ``paper_key``
    (the operator's imports credit nobody), in the order they were published."""
    return paper_contributors_by_key(paper_key=paper_key).get(paper_key, [])


def paper_contributors_by_key(*, paper_key: str | None = None) -> dict[str, list[str]]:
    """``paper_contributors`` of every paper with a contribution (or only of ``paper_key``), keyed by paper
    key. One query."""
    proposals = Proposal.objects.filter(
        state=Proposal.State.PUBLISHED, published_version__origin=TaskVersion.Origin.CONTRIBUTED
    )
    if paper_key is not None:
        proposals = proposals.filter(published_version__task__paper__key=paper_key)
    proposals = proposals.select_related("author__profile", "published_version__task__paper").order_by(
        "state_changed_at", "pk"
    )
    out: dict[str, list[str]] = {}
    names: dict[int, str] = {}
    for proposal in proposals:
        if proposal.author_id not in names:
            names[proposal.author_id] = user_display_name(proposal.author)
        credited = out.setdefault(proposal.published_version.task.paper.key, [])
        if names[proposal.author_id] not in credited:
            credited.append(names[proposal.author_id])
    return out
