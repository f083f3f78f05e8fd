"""Reads of the benchmark catalogue (papers with their sizes, releases, task versions, snippet trees) and of
the contribution workflow (proposals through their one access guard, the review queue, revision diffs,
notifications)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.db.models import (
    Aggregate,
    Count,
    Exists,
    IntegerField,
    JSONField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    Value,
)
from django.db.models.functions import Coalesce
from django.utils import timezone

from contributions.models import (
    ApiToken,
    Notification,
    Paper,
    Profile,
    Proposal,
    ProposalEvent,
    ProposalRevision,
    Release,
    ReleaseEntry,
    Snippet,
    Task,
    TaskVersion,
)
from contributions.proposal_status import (
    HistoryWords,
    ProposalStatus,
    ValidationOutcome,
    history_words,
    status_of,
    validation_outcome,
)
from contributions.roles import is_maintainer
from contributions.task_folders import blobs_read


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


def profile_for(*, user: Any) -> Profile | None:
    """``user``'s profile, None before they first saved one."""
    return Profile.objects.filter(user=user).first()


def api_token_list(*, user: Any) -> QuerySet[ApiToken]:
    """``user``'s API tokens, newest first (digests only: secrets are never stored)."""
    return ApiToken.objects.filter(user=user).order_by("-created_at", "-pk")


# ------------------------------------------------------------------------------------------- proposals


def proposal_get_for_viewer(*, viewer: Any, proposal_id: Any) -> Proposal:
    """The proposal ``proposal_id`` if ``viewer`` may see it (its author, or a maintainer once it has left
    the draft state); ``Proposal.DoesNotExist`` otherwise, so a page answers 404 and never tells a
    stranger that the proposal exists. The one access guard of proposals: every view and API uses it."""
    try:
        pk = int(proposal_id)
    except (TypeError, ValueError):
        raise Proposal.DoesNotExist(f"no proposal {proposal_id!r}") from None
    if viewer is None or not viewer.is_authenticated:
        raise Proposal.DoesNotExist(f"no proposal {pk}")
    rows = Proposal.objects.select_related("author", "published_version")
    visible = Q(author=viewer)
    if is_maintainer(viewer):
        visible |= ~Q(state=Proposal.State.DRAFT)
    proposal = rows.filter(visible, pk=pk).first()
    if proposal is None:
        raise Proposal.DoesNotExist(f"no proposal {pk}")
    return proposal


def proposal_list_for_viewer(*, viewer: Any) -> QuerySet[Proposal]:
    """The viewer's own proposals, most recently changed first (none for an anonymous viewer)."""
    if viewer is None or not viewer.is_authenticated:
        return Proposal.objects.none()
    return Proposal.objects.filter(author=viewer).order_by("-updated_at", "-pk")


def proposal_open_for_key(*, author: Any, task_key: str, exclude: Proposal | None = None) -> Proposal | None:
    """``author``'s own open proposal (not published, rejected or withdrawn) for task ``task_key``, other
    than ``exclude``; None when there is none (or the key is another author's)."""
    if author is None or not author.is_authenticated:
        return None
    rows = Proposal.objects.filter(author=author, task_key=(task_key or "").strip()).exclude(
        state__in=Proposal.RELEASED_KEY_STATES
    )
    if exclude is not None:
        rows = rows.exclude(pk=exclude.pk)
    return rows.order_by("-pk").first()


#: The states a maintainer's queue shows by default: waiting for a review.
QUEUE_DEFAULT_STATES = (Proposal.State.READY_FOR_REVIEW,)


def proposal_review_queue(
    *,
    states: tuple[str, ...] | list[str] | None = None,
    waiting_longer_than: timedelta | None = None,
    search: str = "",
) -> QuerySet[Proposal]:
    """Proposals for maintainers, longest waiting first, with ``revision_count`` and ``approvals``.

    ``states`` defaults to ready for review (drafts are never listed); ``waiting_longer_than`` keeps those
    whose state changed longer ago; ``search`` matches the task key, title or arXiv id. The waiting time
    of a row is ``proposal_waiting(proposal)``.
    """
    chosen = [s for s in (states or QUEUE_DEFAULT_STATES) if s != Proposal.State.DRAFT]
    rows = Proposal.objects.filter(state__in=chosen).select_related("author")
    if waiting_longer_than is not None:
        rows = rows.filter(state_changed_at__lte=timezone.now() - waiting_longer_than)
    term = (search or "").strip()
    if term:
        rows = rows.filter(
            Q(task_key__icontains=term) | Q(title__icontains=term) | Q(arxiv_id__icontains=term)
        )
    return rows.annotate(
        revision_count=Count("revisions", distinct=True),
        approvals=Count("reviews__reviewer", filter=Q(reviews__decision="approve"), distinct=True),
    ).order_by("state_changed_at", "pk")


def proposal_waiting(proposal: Proposal) -> timedelta:
    """How long the proposal has been in its current state."""
    return timezone.now() - proposal.state_changed_at


@dataclass(frozen=True)
class HistoryRow:
    """A change of a proposal's status: the event (who, when, why, which revision) and the status it gave,
    in the words its badge showed then."""

    event: ProposalEvent
    status: HistoryWords


def proposal_history(*, proposal: Proposal) -> list[HistoryRow]:
    """Every change of a proposal's status, oldest first, with its actor, revision and status words."""
    events = proposal.events.select_related("actor", "revision").order_by("created_at", "pk")
    return [
        HistoryRow(
            event=event,
            status=history_words(key=event.status, label=event.status_label, state=event.to_state),
        )
        for event in events
    ]


def revision_previous(*, revision: ProposalRevision) -> ProposalRevision | None:
    """The submitted revision before ``revision`` (the one a resubmission is compared with)."""
    return (
        ProposalRevision.objects.filter(
            proposal_id=revision.proposal_id, number__lt=revision.number, submitted_at__isnull=False
        )
        .order_by("-number")
        .first()
    )


@dataclass(frozen=True)
class RevisionDiff:
    """What changed from ``previous`` to a revision: files added, removed and changed, and a unified diff
    of the text files (``truncated`` when it was cut at the bound)."""

    previous: ProposalRevision | None
    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]
    text: str
    truncated: bool
    manifest_changed: bool


def revision_diff(*, revision: ProposalRevision, max_lines: int = 5000) -> RevisionDiff:
    """The unified diff of ``revision`` against the previous submitted revision (from the blob store).

    At most ``max_lines`` diff lines; a file that is not UTF-8 text shows as one line saying it differs.
    With no previous revision every file counts as added and the text is empty.
    """
    previous = revision_previous(revision=revision)
    new_files: dict[str, str] = revision.files or {}
    old_files: dict[str, str] = previous.files if previous is not None else {}
    if previous is None:
        return RevisionDiff(None, tuple(sorted(new_files)), (), (), "", False, False)
    added = tuple(sorted(set(new_files) - set(old_files)))
    removed = tuple(sorted(set(old_files) - set(new_files)))
    changed = tuple(sorted(r for r in set(new_files) & set(old_files) if new_files[r] != old_files[r]))
    wanted_new = {r: new_files[r] for r in (*added, *changed)}
    wanted_old = {r: old_files[r] for r in (*removed, *changed)}
    new_bytes = blobs_read(wanted_new, owner=str(revision))
    old_bytes = blobs_read(wanted_old, owner=str(previous))
    lines: list[str] = []
    truncated = False
    for rel in sorted({*added, *removed, *changed}):
        before, after = old_bytes.get(rel), new_bytes.get(rel)
        try:
            a = before.decode("utf-8").splitlines(keepends=True) if before is not None else []
            b = after.decode("utf-8").splitlines(keepends=True) if after is not None else []
        except UnicodeDecodeError:
            chunk = [f"Binary file {rel} differs\n"]
        else:
            chunk = [
                line if line.endswith("\n") else line + "\n"
                for line in difflib.unified_diff(
                    a,
                    b,
                    fromfile=f"r{previous.number}/{rel}" if before is not None else "/dev/null",
                    tofile=f"r{revision.number}/{rel}" if after is not None else "/dev/null",
                )
            ]
        if len(lines) + len(chunk) > max_lines:
            lines.extend(chunk[: max(0, max_lines - len(lines))])
            truncated = True
            break
        lines.extend(chunk)
    return RevisionDiff(
        previous=previous,
        added=added,
        removed=removed,
        changed=changed,
        text="".join(lines),
        truncated=truncated,
        manifest_changed=(previous.manifest or {}) != (revision.manifest or {}),
    )


def notification_list(*, user: Any, unread_only: bool = False, limit: int = 50) -> QuerySet[Notification]:
    """The user's notifications, newest first (at most ``limit``)."""
    if user is None or not user.is_authenticated:
        return Notification.objects.none()
    rows = Notification.objects.filter(recipient=user).select_related("proposal")
    if unread_only:
        rows = rows.filter(read_at__isnull=True)
    return rows.order_by("-created_at", "-pk")[:limit]


def notification_unread_count(*, user: Any) -> int:
    """How many of the user's notifications are unread (0 for an anonymous user)."""
    if user is None or not user.is_authenticated:
        return 0
    return Notification.objects.filter(recipient=user, read_at__isnull=True).count()


# ------------------------------------------------------------------------------------------ publishing


def user_display_name(user: Any) -> str:
    """The name the portal credits ``user`` with: the profile's display name, else the full name, else the
    user name ("" for None)."""
    if user is None:
        return ""
    try:
        profile = user.profile  # select_related("profile") makes this free
    except Profile.DoesNotExist:
        profile = None
    if profile is not None and profile.display_name.strip():
        return profile.display_name.strip()
    full = (user.get_full_name() or "").strip()
    return full or user.get_username()


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


def task_version_approval(*, task_version: TaskVersion) -> Proposal | None:
    """The approval record of a published version: the proposal that published it (an imported version's
    record has the operator as author), None for a version published before records were kept."""
    return (
        Proposal.objects.filter(published_version=task_version)
        .select_related("author")
        .order_by("-pk")
        .first()
    )


def proposal_approvers(*, proposal: Proposal) -> list[Any]:
    """The maintainers whose approvals moved ``proposal`` to approved (approvals of the revision named by
    its last move to approved), in the order they approved."""
    event = (
        proposal.events.filter(to_state=Proposal.State.APPROVED, revision__isnull=False)
        .order_by("-created_at", "-pk")
        .first()
    )
    if event is None:
        return []
    reviews = event.revision.reviews.filter(decision="approve").select_related("reviewer").order_by("pk")
    seen: dict[int, Any] = {}
    for review in reviews:
        seen.setdefault(review.reviewer_id, review.reviewer)
    return list(seen.values())


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


# ------------------------------------------------------------------------------------- proposal reads


def latest_revision(proposal: Proposal) -> ProposalRevision | None:
    """The proposal's newest revision (submitted or not), or None before the first upload."""
    return proposal.revisions.order_by("-number").first()


def latest_submitted_revision(proposal: Proposal) -> ProposalRevision | None:
    """The newest submitted revision: the one validated and reviewed."""
    return proposal.revisions.filter(submitted_at__isnull=False).order_by("-number").first()


def proposal_status(proposal: Proposal) -> ProposalStatus:
    """The proposal's status in the words every page shows (``proposal_status.status_of``), from its state
    and the validation of its newest submitted revision (two queries)."""
    submitted = latest_submitted_revision(proposal)
    newest = latest_revision(proposal)
    revising = (
        newest.number
        if newest is not None and newest.submitted_at is None and submitted is not None
        else None
    )
    return status_of(
        state=proposal.state,
        validation_status=submitted.validation_status if submitted is not None else None,
        report=submitted.validation_report if submitted is not None else None,
        revising=revising,
    )


def revision_outcome(revision: ProposalRevision | None) -> ValidationOutcome:
    """The words of a revision's validation (``proposal_status.validation_outcome``); "Not submitted" for
    None or a revision not submitted."""
    if revision is None or revision.submitted_at is None:
        return validation_outcome(status=None, report=None)
    return validation_outcome(status=revision.validation_status, report=revision.validation_report)


@dataclass(frozen=True)
class QueueRow:
    """A row of the review queue: the proposal (with ``revision_count`` and ``approvals``), its status, how
    its newest submitted revision's validation ended and how long it has waited in its state."""

    proposal: Proposal
    status: ProposalStatus
    validation: ValidationOutcome
    waiting: timedelta


def proposal_queue_rows(*, limit: int = 200, **filters: Any) -> list[QueueRow]:
    """The first ``limit`` rows of ``proposal_review_queue(**filters)`` with their statuses (one query)."""
    submitted = ProposalRevision.objects.filter(proposal=OuterRef("pk"), submitted_at__isnull=False).order_by(
        "-number"
    )
    rows = proposal_review_queue(**filters).annotate(
        v_status=Subquery(submitted.values("validation_status")[:1]),
        v_report=Subquery(submitted.values("validation_report")[:1], output_field=JSONField()),
        v_number=Subquery(submitted.values("number")[:1]),
        newest_number=Subquery(
            ProposalRevision.objects.filter(proposal=OuterRef("pk")).order_by("-number").values("number")[:1]
        ),
    )
    out = []
    for proposal in rows[:limit]:
        revising = (
            proposal.newest_number
            if proposal.v_number is not None and (proposal.newest_number or 0) > proposal.v_number
            else None
        )
        out.append(
            QueueRow(
                proposal=proposal,
                status=status_of(
                    state=proposal.state,
                    validation_status=proposal.v_status,
                    report=proposal.v_report,
                    revising=revising,
                ),
                validation=validation_outcome(status=proposal.v_status, report=proposal.v_report),
                waiting=proposal_waiting(proposal),
            )
        )
    return out
