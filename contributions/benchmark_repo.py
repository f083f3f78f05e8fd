"""The published benchmark as a git repository of original-format pset folders (gitpython).

The repository (``settings.RCB_BENCHMARK_REPO``) is non-bare, so that its work tree *is* the benchmark:

- **The branch holds exactly the published task versions.** Its tree is the newest version with files of
  every task (``task_versions_current``), each as its task folder byte-exact, plus a
  ``papers.yaml`` written from their registry entries (by task key). History has **one commit per published
  version**, in publication order: an approved contribution is authored by its contributor (committer: the
  hub) with the approvers in the message; a version ``import_pset`` added is authored by the operator
  ("import <task> vN (release R)"). Every such commit ends with a ``Task-Version: <content hash> <task key>``
  trailer, which is how ``sync`` knows what the branch already holds: it is a function of the database, so a
  sync that failed (disk full, a crash) is caught up by the next one.
- **A release is a tag** on the commit whose tree is the release's export (``release_export``): the branch
  commit that matches it when there is one (a release cut from the web of every current version), otherwise
  a release commit made for it on top of the branch head but not on the branch (an imported pset, whose own
  ``papers.yaml`` and README are kept verbatim, or a cut of some versions only). Tags are never moved.

A ``.gitattributes`` of ``* -text`` keeps git from converting line endings, so checked-out files stay
byte-identical (CRLF files are part of the format). Contributors' email addresses are never published: a
commit's author address is a no-reply address made from the user name.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import git
from django.conf import settings

from contributions.models import Release, TaskVersion
from contributions.selectors.accounts import user_display_name
from contributions.selectors.proposals import proposal_approvers, task_version_approval
from contributions.selectors.release_export import release_export
from contributions.task_folders import TaskFolderError, files_write, safe_relpath, version_file_bytes
from contributions.task_meta import meta_from_json
from researchcodebench import pset as rcb_pset

logger = logging.getLogger(__name__)

AUTHOR = git.Actor("ResearchCodeBench Hub", "hub@researchcodebench.invalid")
GITATTRIBUTES = "# Files are stored byte-exact: never convert line endings.\n* -text\n"
#: the trailer naming the task version a branch commit publishes: ``Task-Version: <content hash> <task key>``
TRAILER = "Task-Version"
NOREPLY_DOMAIN = "users.noreply.researchcodebench.invalid"


class BenchmarkRepoError(RuntimeError):
    """The benchmark repository refused a release (the message says why)."""


def repo_path() -> Path:
    return Path(settings.RCB_BENCHMARK_REPO)


def open_repo(path: Path | None = None) -> git.Repo:
    """The benchmark repository at ``path`` (default: the setting), created empty when missing."""
    where = path or repo_path()
    if (where / ".git").is_dir():
        return git.Repo(where)
    where.mkdir(parents=True, exist_ok=True)
    repo = git.Repo.init(where)
    with repo.config_writer() as config:
        config.set_value("core", "autocrlf", "false")
    return repo


@contextlib.contextmanager
def _locked(repo: git.Repo) -> Iterator[None]:
    """One writer at a time (web process and workers may commit concurrently)."""
    with open(Path(repo.git_dir) / "rcb-hub.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _restore_head(repo: git.Repo) -> None:
    """Put the work tree back to the last commit, dropping anything left by an interrupted writer."""
    if repo.head.is_valid():
        repo.git.reset("--hard", "--quiet")
    repo.git.clean("-fdxq", "--exclude=.git")


def _task_dir_name(key: str) -> str:
    """``key`` when it is safe as one top-level folder of the work tree (``task_folders.safe_relpath``)."""
    if len(safe_relpath(key, owner=f"task {key!r}")) != 1 or key in (rcb_pset.REGISTRY, ".gitattributes"):
        raise TaskFolderError(f"task {key!r}: the key is not a plain folder name")
    return key


def _registry(state: dict[str, TaskVersion]) -> bytes:
    metas = [meta_from_json(state[key].meta) for key in sorted(state)]
    return rcb_pset.registry_text(metas).encode("utf-8")


def _write_state(folder: Path, state: dict[str, TaskVersion]) -> None:
    """Write the benchmark holding ``state`` (task key -> version) under the new folder ``folder``."""
    for key in sorted(state):
        version = state[key]
        files_write(
            files=version_file_bytes(task_version=version),
            folder=folder / _task_dir_name(key),
            owner=str(version),
        )
    files_write(
        files={rcb_pset.REGISTRY: _registry(state), ".gitattributes": GITATTRIBUTES.encode("utf-8")},
        folder=folder,
        owner="benchmark repository",
    )


def _clear(work: Path, keep: str = ".git") -> None:
    for child in work.iterdir():
        if child.name == keep:
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def _replace_task(work: Path, state: dict[str, TaskVersion], version: TaskVersion) -> None:
    """Put ``version``'s folder in place of its task's and rewrite ``papers.yaml`` for ``state``."""
    folder = work / _task_dir_name(version.task.key)
    if folder.is_symlink() or folder.is_file():
        folder.unlink()
    elif folder.exists():
        shutil.rmtree(folder)
    files_write(files=version_file_bytes(task_version=version), folder=folder, owner=str(version))
    (work / rcb_pset.REGISTRY).write_bytes(_registry(state))


def _committed(repo: git.Repo) -> set[tuple[str, str]]:
    """(content hash, task key) of every version the branch's commits name in their trailer."""
    if not repo.head.is_valid():
        return set()
    found: set[tuple[str, str]] = set()
    prefix = f"{TRAILER}: "
    for commit in repo.iter_commits("HEAD", first_parent=True):
        for line in str(commit.message).splitlines():
            if line.startswith(prefix):
                digest, _, key = line[len(prefix) :].partition(" ")
                found.add((digest, key))
    return found


def _actor(user: object) -> git.Actor:
    name = user_display_name(user) or "unknown"
    return git.Actor(name, f"{user.get_username()}@{NOREPLY_DOMAIN}")  # type: ignore[attr-defined]


def _commit_identity(version: TaskVersion) -> tuple[git.Actor, str]:
    """The author and message of the branch commit publishing ``version`` (from its approval record)."""
    label = f"{version.task.key} v{version.number}"
    trailer = f"{TRAILER}: {version.content_hash} {version.task.key}"
    record = task_version_approval(task_version=version)
    if record is None:
        return AUTHOR, f"add {label}\n\n{trailer}\n"
    author = _actor(record.author)
    if version.origin == TaskVersion.Origin.CONTRIBUTED:
        approvers = [_actor(user) for user in proposal_approvers(proposal=record)]
        approved = ", ".join(f"{a.name} <{a.email}>" for a in approvers) or "nobody on record"
        body = (
            f"Publish {label} (proposal {record.pk})\n\n"
            f"Contributed by {author.name}; approved by {approved}.\n\n{trailer}\n"
        )
        return author, body
    release = Release.objects.filter(entries__task_version=version).order_by("created_at", "pk").first()
    where = f" (release {release.name})" if release is not None else ""
    return author, f"import {label}{where}\n\n{trailer}\n"


def sync(*, path: Path | None = None) -> list[str]:
    """Commit every published task version the branch does not hold yet, one commit each, in publication
    order; returns the new commits' shas (none when the branch is up to date).

    The first new commit of a sync writes the whole tree (so files nobody published, e.g. from an older
    layout of the repository, disappear with it); the next ones replace one task folder and ``papers.yaml``.
    """
    repo = open_repo(path)
    versions = list(TaskVersion.objects.filter(has_files=True).select_related("task").order_by("pk"))
    with _locked(repo):
        _restore_head(repo)
        done = _committed(repo)
        state: dict[str, TaskVersion] = {}
        pending: list[TaskVersion] = []
        for version in versions:
            if (version.content_hash, version.task.key) in done:
                _newest(state, version)
            else:
                pending.append(version)
        work = Path(repo.working_tree_dir)
        shas: list[str] = []
        try:
            for version in pending:
                newest = _newest(state, version)
                if not shas:
                    with tempfile.TemporaryDirectory(prefix="rcb-sync-") as tmp:
                        _write_state(Path(tmp) / "b", state)
                        _clear(work)
                        for child in (Path(tmp) / "b").iterdir():
                            shutil.move(str(child), str(work / child.name))
                elif newest:
                    _replace_task(work, state, version)
                repo.git.add("--all", ".")
                author, message = _commit_identity(version)
                shas.append(repo.index.commit(message, author=author, committer=AUTHOR).hexsha)
        finally:
            _restore_head(repo)
    return shas


def _newest(state: dict[str, TaskVersion], version: TaskVersion) -> bool:
    """Record ``version`` in ``state`` when it is its task's newest so far; True when it is."""
    current = state.get(version.task.key)
    if current is not None and current.number > version.number:
        return False
    state[version.task.key] = version
    return True


def sync_recorded(*, path: Path | None = None) -> list[str]:
    """``sync`` for after-commit hooks: a failure is logged, never raised (the publication stands; the next
    sync commits what this one could not)."""
    try:
        return sync(path=path)
    except Exception:  # any failure (git, disk, a corrupt blob) must be logged, not undo a publication
        logger.exception("syncing the benchmark repository with the published task versions failed")
        return []


def _tree_of(repo: git.Repo, folder: Path) -> str:
    """The sha of the git tree holding ``folder``'s files, written through a scratch index (the branch's
    index and work tree stay as they are)."""
    with tempfile.TemporaryDirectory(prefix="rcb-index-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        base = ["git", "-C", str(folder), "--git-dir", str(repo.git_dir), "--work-tree", "."]
        repo.git.execute([*base, "add", "--all", "."], env=env)
        return str(repo.git.execute([*base, "write-tree"], env=env)).strip()


def _branch_commit_with_tree(repo: git.Repo, tree: str) -> git.Commit | None:
    if not repo.head.is_valid():
        return None
    for commit in repo.iter_commits("HEAD", first_parent=True):
        if commit.tree.hexsha == tree:
            return commit
    return None


def commit_release(release: Release, *, path: Path | None = None) -> str:
    """Tag ``release`` (after ``sync``) on the commit holding its export; returns that commit's sha and
    records it (and the tag) on the release.

    Repeating it for a release whose tag already holds the same tree is a no-op that returns the tagged
    commit; a tag of that name holding a different tree raises ``BenchmarkRepoError`` (tags are never moved).
    """
    sync(path=path)
    repo = open_repo(path)
    with _locked(repo), tempfile.TemporaryDirectory(prefix="rcb-release-") as tmp:
        out = release_export(release=release, out_dir=Path(tmp) / "pset")
        (out / ".gitattributes").write_bytes(GITATTRIBUTES.encode("utf-8"))
        tree = _tree_of(repo, out)
        tag = next((t for t in repo.tags if t.name == release.name), None)
        if tag is not None:
            if tag.commit.tree.hexsha != tree:
                raise BenchmarkRepoError(
                    f"{repo.working_tree_dir}: tag {release.name!r} already exists with different contents; "
                    "tags are never moved (use another release name or another repository)"
                )
            sha = tag.commit.hexsha
        else:
            target = _branch_commit_with_tree(repo, tree)
            if target is None:
                message = f"Release {release.name}: {release.entries.count()} task(s)"
                if release.title:
                    message += f"\n\n{release.title}"
                parents = [repo.head.commit] if repo.head.is_valid() else []
                target = git.Commit.create_from_tree(
                    repo, repo.tree(tree), message, parent_commits=parents, author=AUTHOR, committer=AUTHOR
                )
            repo.create_tag(release.name, ref=target)
            sha = target.hexsha
    Release.objects.filter(pk=release.pk).update(git_tag=release.name, git_commit=sha, git_error="")
    release.git_tag, release.git_commit, release.git_error = release.name, sha, ""
    return sha


def commit_release_recorded(*, release_id: int, path: Path | None = None) -> str | None:
    """``commit_release`` for after-commit hooks: a failure is logged and stored on the release.

    The database import stands whatever happens here; ``Release.git_error`` says what went wrong.
    """
    release = Release.objects.filter(pk=release_id).first()
    if release is None:
        logger.warning(
            "release %s vanished before it could be committed to the benchmark repository", release_id
        )
        return None
    try:
        return commit_release(release, path=path)
    except Exception as exc:  # any failure (git, disk, export) must be recorded, not lost
        logger.exception("committing release %r to the benchmark repository failed", release.name)
        Release.objects.filter(pk=release_id).update(git_error=f"{type(exc).__name__}: {exc}")
        return None
