"""Cache scopes: what a cached page or API table depends on, and the version that says it changed.

A stored body (``leaderboard.caching``) is keyed by the versions of the scopes its endpoint declares
(``Scope``), so a write moves only the pages that show what it wrote:

- ``release:<id>`` (``release:none`` for runs of no release): the read-model rows of that release's runs,
  its runs' status, cost and counts, and when its per-release step ran;
- ``model:<id>``: the same for one model's runs (a model page shows every release it ran on);
- the catalogue, which every page shows (model names, papers, releases and the default one): the
  counter ``meta`` plus tokens read from the catalogue tables themselves (the latest edit of a model and
  of a paper, the number and newest id of releases, the default release), so an edit through any path,
  ``QuerySet.update`` of ``updated_at`` included, moves it without a call here.

Every writer of what a scope shows calls ``scopes_bump`` in its own transaction (the deltas and rebuilds
of ``leaderboard.services``: ``increments``, ``rebuild``, ``release_step``; for the lower layers' rows, the
receivers of ``leaderboard.receivers``: a run saved or deleted, a bulk import finished). A bump commits with
the write, so a reader never sees the new version with the old rows.

A scope's version is the sum of its ``CacheScope`` shards. A bump adds one to a shard that no other open
transaction holds (``SELECT ... FOR UPDATE SKIP LOCKED``), creating a shard when all are held: many
verdicts a second on one release never wait for each other's commit, and transactions that bump several
scopes in any order cannot deadlock. The number of shards is bounded by the number of transactions that
were ever bumping one scope at once. The sum only grows, and grows at each bump's commit, whatever the
order of commits (a timestamp or a sequence, taken before commit, can be overtaken by a later one that
commits first).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db import connection, transaction
from django.db.models import F

from contributions.models import Paper, Release, ReleaseEntry, Snippet, Task, TaskVersion
from evaluation.models import LanguageModel
from leaderboard.models import CacheScope
from leaderboard.selectors.board import ANY_RELEASE

#: the counter of catalogue changes that the catalogue tables' own tokens do not show (a bulk import's
#: snippets and task versions, a run leaving the board or joining it with a new developer or template:
#: the filters' choices)
META = "meta"


def release_scope(release_id: int | None) -> str:
    """The scope of the runs of ``release_id`` (None: the runs of no release)."""
    return f"release:{'none' if release_id is None else release_id}"


def model_scope(model_id: int) -> str:
    return f"model:{model_id}"


def run_scopes(*, release_id: int | None, model_id: int) -> tuple[str, str]:
    """The scopes a run's rows show in: its release's and its model's."""
    return release_scope(release_id), model_scope(model_id)


@transaction.atomic(savepoint=False)
def scopes_bump(keys: Iterable[str]) -> None:
    """Move the version of every scope in ``keys``, in the current transaction (see the module docstring:
    never waits on another bump). Two statements per scope. Outside a transaction (autocommit), call it
    after the writes it announces: a reader that sees the new version must see them."""
    for key in sorted(set(keys)):
        free = (
            CacheScope.objects.select_for_update(skip_locked=True)
            .filter(key=key)
            .order_by("pk")
            .values_list("pk", flat=True)[:1]
        )
        shard = next(iter(free), None)
        if shard is None:
            CacheScope.objects.create(key=key, n=1)
        else:
            CacheScope.objects.filter(pk=shard).update(n=F("n") + 1)


@dataclass(frozen=True)
class Scope:
    """The scopes one endpoint's body depends on: always the catalogue, and

    - ``release``: a release by name, its scope (an unknown name, or ``""``, stands for the default
      release, the one the board then shows; none at all: the runs of no release);
    - ``all_releases``: every release's scope (pages across releases, and those showing snippet
      statistics, which count every run);
    - ``models``: the scopes of the models whose key, display name or developer holds one of these texts
      (case-insensitive): every model the comparison may pick for them
      (``leaderboard.selectors.picking.models_pick`` takes a part of one name);
    - ``paper`` (a key) or ``snippet`` (an id): the scopes of the releases that hold a version of that
      paper's (that snippet's paper's) tasks, and of the runs of no release: the only runs whose verdicts
      can reach its scores, its snippets' statistics or its completions (a run judges its release's
      versions), so a run elsewhere leaves its pages stored.
    """

    release: str | None = None
    all_releases: bool = False
    models: tuple[str, ...] = ()
    paper: str | None = None
    snippet: int | None = None

    @classmethod
    def board(cls, release: str | None) -> Scope:
        """The scope of a page filtered like the board by the ``release`` parameter (missing or empty:
        the default release; ``ANY_RELEASE``: all of them)."""
        if release == ANY_RELEASE:
            return cls(all_releases=True)
        return cls(release=release or "")

    def version(self) -> str:
        """A token that changes whenever any scope of this one does. One query."""
        sql, params = self._sql()
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return "|".join(f"{key}={value}" for key, value in sorted(cursor.fetchall(), key=str))

    def _sql(self) -> tuple[str, list[str]]:
        models, papers, releases = (m._meta.db_table for m in (LanguageModel, Paper, Release))
        default = (
            f"COALESCE((SELECT 'release:' || CAST(id AS TEXT) FROM {releases}"
            " ORDER BY is_default DESC, created_at DESC, id DESC LIMIT 1), 'release:none')"
        )
        wanted, params = ["key = %s"], [META]
        if self.all_releases:
            wanted.append("key LIKE 'release:%%'")
        if self.release is not None:
            wanted.append(
                f"key = COALESCE((SELECT 'release:' || CAST(id AS TEXT) FROM {releases} WHERE name = %s),"
                f" {default})"
            )
            params.append(self.release)
        if self.models:
            contains = " OR ".join(
                ["LOWER(key) LIKE %s ESCAPE '!' OR LOWER(name) LIKE %s ESCAPE '!'"
                 " OR LOWER(developer) LIKE %s ESCAPE '!'"] * len(self.models)
            )  # fmt: skip
            wanted.append(f"key IN (SELECT 'model:' || CAST(id AS TEXT) FROM {models} WHERE {contains})")
            for m in self.models:
                params.extend([_like_part(m)] * 3)
        if self.paper is not None or self.snippet is not None:
            wanted.append(f"key = '{release_scope(None)}' OR key IN ({_holding_releases(self.snippet)})")
            params.append(self.paper if self.snippet is None else self.snippet)
        sql = (
            f"SELECT 'models', CAST(MAX(updated_at) AS TEXT) FROM {models}"
            f" UNION ALL SELECT 'papers', CAST(MAX(updated_at) AS TEXT) FROM {papers}"
            f" UNION ALL SELECT 'releases', CAST(COUNT(*) AS TEXT) || '/' || CAST(COALESCE(MAX(id), 0) AS TEXT)"
            f" FROM {releases}"
            f" UNION ALL SELECT 'default', {default}"
            f" UNION ALL SELECT key, CAST(SUM(n) AS TEXT) FROM {CacheScope._meta.db_table}"
            f" WHERE {' OR '.join(wanted)} GROUP BY key"
        )
        return sql, params


def _like_part(text: str) -> str:
    """A LIKE pattern (escape character ``!``) matching any text that holds ``text``, lower-cased."""
    escaped = text.lower().replace("!", "!!").replace("%", "!%").replace("_", "!_")
    return f"%{escaped}%"


def _holding_releases(snippet: int | None) -> str:
    """SQL for the scope keys of the releases holding a version of one paper's tasks: the paper by key
    (one ``%s``), or, with ``snippet``, the paper of the snippet by id (one ``%s``)."""
    entry, task, version, item = (m._meta.db_table for m in (ReleaseEntry, Task, TaskVersion, Snippet))
    paper = (
        f"(SELECT t.paper_id FROM {item} s JOIN {version} v ON s.task_version_id = v.id"
        f" JOIN {task} t ON v.task_id = t.id WHERE s.id = %s)"
        if snippet is not None
        else f"(SELECT id FROM {Paper._meta.db_table} WHERE key = %s)"
    )
    return (
        f"SELECT 'release:' || CAST(e.release_id AS TEXT) FROM {entry} e"
        f" JOIN {task} t ON e.task_id = t.id WHERE t.paper_id = {paper}"
    )
