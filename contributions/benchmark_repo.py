"""The published benchmark as a git repository of original-format pset folders (gitpython).

The repository (``settings.RCB_BENCHMARK_REPO``, a non-bare repository so that its work tree *is* the
latest pset) gets one commit per imported or approved release, authored by the hub, and a lightweight tag
named after the release. Anyone can clone it and run the benchmark elsewhere. A ``.gitattributes`` of
``* -text`` keeps git from converting line endings, so checked-out files stay byte-identical (CRLF files
are part of the format).
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

from contributions.models import Release
from contributions.services import release_export

logger = logging.getLogger(__name__)

AUTHOR = git.Actor("ResearchCodeBench Hub", "hub@researchcodebench.invalid")
GITATTRIBUTES = "# Files are stored byte-exact: never convert line endings.\n* -text\n"


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


def _replace_work_tree(repo: git.Repo, source: Path) -> None:
    work = Path(repo.working_tree_dir)
    for child in work.iterdir():
        if child.name == ".git":
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    for child in source.iterdir():
        shutil.move(str(child), str(work / child.name))
    (work / ".gitattributes").write_bytes(GITATTRIBUTES.encode("utf-8"))


def _restore_head(repo: git.Repo) -> None:
    """Put the work tree back to the last commit after a refused release (nothing to restore before one)."""
    if repo.head.is_valid():
        repo.git.reset("--hard", "--quiet")
        repo.git.clean("-fdxq")


def commit_release(release: Release, *, path: Path | None = None) -> str:
    """Commit ``release`` as the repository's work tree and tag it with the release name.

    Returns the commit sha and records it (and the tag) on the release. Repeating it for a release whose
    tag already holds the same tree is a no-op that returns the tagged commit; a tag of that name holding
    a different tree raises ``BenchmarkRepoError`` (tags are never moved).
    """
    repo = open_repo(path)
    with _locked(repo):
        with tempfile.TemporaryDirectory(prefix="rcb-release-") as tmp:
            release_export(release=release, out_dir=Path(tmp) / "pset")
            _replace_work_tree(repo, Path(tmp) / "pset")
        repo.git.add("--all", ".")
        tree = repo.git.write_tree()
        tag = next((t for t in repo.tags if t.name == release.name), None)
        if tag is not None:
            if tag.commit.tree.hexsha != tree:
                _restore_head(repo)
                raise BenchmarkRepoError(
                    f"{repo.working_tree_dir}: tag {release.name!r} already exists with different contents; "
                    "tags are never moved (use another release name or another repository)"
                )
            sha = tag.commit.hexsha
            _restore_head(repo)
        else:
            tasks = release.entries.count()
            message = f"Release {release.name}: {tasks} task(s)"
            if release.title:
                message += f"\n\n{release.title}"
            commit = repo.index.commit(message, author=AUTHOR, committer=AUTHOR)
            repo.create_tag(release.name, ref=commit)
            sha = commit.hexsha
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
