"""The published benchmark as a git repository: a commit and a tag per release, files byte-exact."""

from __future__ import annotations

import git
import pytest

from contributions import benchmark_repo, services
from contributions.models import Release
from tests.contributions.conftest import all_files

pytestmark = pytest.mark.django_db


@pytest.fixture
def repo_dir(settings, tmp_path):
    settings.RCB_BENCHMARK_REPO = tmp_path / "benchmark.git"
    return settings.RCB_BENCHMARK_REPO


def tree_files(commit: git.Commit) -> dict[str, bytes]:
    return {b.path: b.data_stream.read() for b in commit.tree.traverse() if b.type == "blob"}


def test_each_imported_release_gets_one_commit_and_a_tag_with_byte_exact_files(
    repo_dir, hostile_pset, small_pset, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        first = services.release_create_from_pset(path=hostile_pset, name="hostile", title="Hostile")
    with django_capture_on_commit_callbacks(execute=True):
        second = services.release_create_from_pset(path=small_pset(), name="small")

    repo = git.Repo(repo_dir)
    assert not repo.bare
    commits = list(repo.iter_commits("HEAD"))
    assert len(commits) == 2
    assert {c.author.name for c in commits} == {"ResearchCodeBench Hub"}
    assert {t.name for t in repo.tags} == {"hostile", "small"}
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.git_tag == "hostile" and first.git_error == ""
    assert repo.tags["hostile"].commit.hexsha == first.git_commit
    assert repo.tags["small"].commit.hexsha == second.git_commit == repo.head.commit.hexsha

    in_git = tree_files(repo.tags["hostile"].commit)
    assert in_git.pop(".gitattributes") == benchmark_repo.GITATTRIBUTES.encode()
    assert in_git == all_files(hostile_pset)
    assert b"\r\n" in in_git["crlf tabs/loss.py"]
    # The work tree is the latest release: the hostile tasks are gone from it.
    work = all_files(repo_dir)
    assert "alpha/model.py" in work and "crlf tabs/loss.py" not in work


def test_reimporting_an_identical_release_adds_no_commit(
    repo_dir, small_pset, django_capture_on_commit_callbacks
):
    root = small_pset()
    with django_capture_on_commit_callbacks(execute=True):
        services.release_create_from_pset(path=root, name="r1")
    with django_capture_on_commit_callbacks(execute=True):
        services.release_create_from_pset(path=root, name="r1")
    release = Release.objects.get(name="r1")
    assert benchmark_repo.commit_release(release) == release.git_commit
    assert len(list(git.Repo(repo_dir).iter_commits("HEAD"))) == 1


def test_a_tag_holding_other_contents_is_never_moved_and_the_failure_is_recorded(
    repo_dir, small_pset, django_capture_on_commit_callbacks
):
    repo = benchmark_repo.open_repo(repo_dir)
    (repo_dir / "stray.txt").write_text("someone else's release\n")
    repo.index.add(["stray.txt"])
    foreign = repo.index.commit("foreign", author=benchmark_repo.AUTHOR, committer=benchmark_repo.AUTHOR)
    repo.create_tag("r1", ref=foreign)

    with django_capture_on_commit_callbacks(execute=True):
        release = services.release_create_from_pset(path=small_pset(), name="r1")
    release.refresh_from_db()
    assert "tag 'r1' already exists with different contents" in release.git_error
    assert release.git_commit == "" and release.entries.count() == 2
    assert repo.tags["r1"].commit == foreign and not repo.is_dirty(untracked_files=True)


def test_an_unusable_repository_path_never_loses_the_import(
    settings, tmp_path, small_pset, django_capture_on_commit_callbacks
):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    settings.RCB_BENCHMARK_REPO = blocker / "benchmark.git"
    with django_capture_on_commit_callbacks(execute=True):
        release = services.release_create_from_pset(path=small_pset(), name="r1")
    release.refresh_from_db()
    assert release.git_error and release.git_commit == ""
    assert release.entries.count() == 2
