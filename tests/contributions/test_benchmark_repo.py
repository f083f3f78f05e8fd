"""The published benchmark as a git repository: the branch holds exactly the published task versions (one
commit per version), a release is a tag on the commit holding its export, files byte-exact."""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from contributions import benchmark_repo, services
from contributions.models import Proposal, Release
from contributions.selectors.catalogue import task_versions_current
from researchcodebench import pset as rcb_pset
from tests.contributions.conftest import all_files
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

NEW_MODEL = """def scale(x, k):
    # <paper2code name="scale input">
    return x * k + 1
    # </paper2code name="scale input">
"""


@pytest.fixture
def repo_dir(settings, tmp_path):
    settings.RCB_BENCHMARK_REPO = tmp_path / "benchmark.git"
    return settings.RCB_BENCHMARK_REPO


def tree_files(commit: git.Commit) -> dict[str, bytes]:
    return {b.path: b.data_stream.read() for b in commit.tree.traverse() if b.type == "blob"}


def task_files_of(root: Path, *keys: str) -> dict[str, bytes]:
    """The files of the task folders ``keys`` of a pset, '/'-relative to the pset."""
    files = all_files(root)
    return {rel: data for rel, data in files.items() if rel.split("/", 1)[0] in keys}


def assert_branch_is_the_current_versions(repo: git.Repo) -> None:
    """HEAD's tree = every current version's folder byte-exact + papers.yaml of their entries + .gitattributes."""
    head = tree_files(repo.head.commit)
    assert head.pop(".gitattributes") == benchmark_repo.GITATTRIBUTES.encode()
    registry = head.pop(rcb_pset.REGISTRY).decode()
    expected: dict[str, bytes] = {}
    for version in task_versions_current():
        expected.update({f"{version.task.key}/{rel}": data for rel, data in _version_files(version).items()})
    assert head == expected
    entries = [line for line in registry.splitlines() if line.startswith("- id:")]
    assert len(entries) == len(task_versions_current())


def _version_files(version) -> dict[str, bytes]:
    return services.version_file_bytes(task_version=version)


def test_each_imported_task_version_is_one_commit_by_the_operator_and_a_release_a_tag_with_byte_exact_files(
    repo_dir, hostile_pset, small_pset, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        first = services.release_create_from_pset(path=hostile_pset, name="hostile", title="Hostile")
    with django_capture_on_commit_callbacks(execute=True):
        second = services.release_create_from_pset(path=small_pset(), name="small")

    repo = git.Repo(repo_dir)
    assert not repo.bare
    commits = list(repo.iter_commits("HEAD"))
    assert len(commits) == 5  # 3 hostile tasks + alpha + beta, oldest first below
    assert {c.author.name for c in commits} == {"operator"}
    assert {c.committer.name for c in commits} == {"ResearchCodeBench Hub"}
    assert [c.summary for c in reversed(commits)][-2:] == [
        "import alpha v1 (release small)",
        "import beta v1 (release small)",
    ]
    assert "import crlf tabs v1 (release hostile)" in {c.summary for c in commits}
    assert {t.name for t in repo.tags} == {"hostile", "small"}
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.git_tag == "hostile" and first.git_error == ""
    assert repo.tags["hostile"].commit.hexsha == first.git_commit
    assert repo.tags["small"].commit.hexsha == second.git_commit

    # A release tag holds the imported pset verbatim (its own papers.yaml), on top of the branch.
    in_git = tree_files(repo.tags["hostile"].commit)
    assert in_git.pop(".gitattributes") == benchmark_repo.GITATTRIBUTES.encode()
    assert in_git == all_files(hostile_pset)
    assert b"\r\n" in in_git["crlf tabs/loss.py"]
    assert repo.tags["hostile"].commit.parents[0] in commits
    # The branch holds every published version: both imports.
    assert_branch_is_the_current_versions(repo)
    work = all_files(repo_dir)
    assert "alpha/model.py" in work and "crlf tabs/loss.py" in work
    assert not repo.is_dirty(untracked_files=True)


def test_import_records_every_version_as_approved_by_the_operator_or_the_named_user(
    repo_dir, small_pset, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        services.release_create_from_pset(path=small_pset(), name="r1")
    records = Proposal.objects.order_by("task_key")
    assert [(p.task_key, p.state, p.author.username) for p in records] == [
        ("alpha", "published", "operator"),
        ("beta", "published", "operator"),
    ]
    assert not records[0].author.is_active and not records[0].author.has_usable_password()
    event = records[0].events.get()
    assert (event.to_state, event.actor) == ("published", records[0].author)
    assert event.reason == "imported by the operator as alpha v1 (release r1)"

    someone = UserFactory(username="curator", first_name="Ada", last_name="Curator")
    with django_capture_on_commit_callbacks(execute=True):
        services.release_create_from_pset(path=small_pset("other", ids=("gamma",)), name="r2", by=someone)
    assert Proposal.objects.get(task_key="gamma").author == someone
    head = git.Repo(repo_dir).head.commit
    assert (head.author.name, head.author.email) == (
        "Ada Curator",
        "curator@" + benchmark_repo.NOREPLY_DOMAIN,
    )
    assert head.summary == "import gamma v1 (release r2)"


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
    assert len(list(git.Repo(repo_dir).iter_commits("HEAD"))) == 2
    assert Proposal.objects.count() == 2


def test_a_new_version_of_a_task_is_one_more_commit_replacing_its_folder(
    repo_dir, small_pset, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        services.release_create_from_pset(path=small_pset("one"), name="r1")
    changed = small_pset("two", model=NEW_MODEL)
    with django_capture_on_commit_callbacks(execute=True):
        services.release_create_from_pset(path=changed, name="r2")

    repo = git.Repo(repo_dir)
    commits = list(repo.iter_commits("HEAD"))
    assert [c.summary for c in commits[:2]] == ["import beta v2 (release r2)", "import alpha v2 (release r2)"]
    assert len(commits) == 4
    assert set(commits[0].stats.files) == {"beta/model.py"}  # the same registry entry
    assert tree_files(repo.head.commit)["alpha/model.py"] == (changed / "alpha" / "model.py").read_bytes()
    assert_branch_is_the_current_versions(repo)


def test_a_sync_that_failed_is_caught_up_by_the_next(
    settings, tmp_path, repo_dir, small_pset, django_capture_on_commit_callbacks
):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    settings.RCB_BENCHMARK_REPO = blocker / "benchmark.git"
    with django_capture_on_commit_callbacks(execute=True):
        services.release_create_from_pset(path=small_pset(), name="r1")
    settings.RCB_BENCHMARK_REPO = repo_dir

    shas = benchmark_repo.sync()
    assert len(shas) == 2
    assert benchmark_repo.sync() == []
    assert_branch_is_the_current_versions(git.Repo(repo_dir))


def test_files_nobody_published_leave_the_branch_with_the_first_new_commit(
    repo_dir, small_pset, django_capture_on_commit_callbacks
):
    repo = benchmark_repo.open_repo(repo_dir)
    (repo_dir / "stray.txt").write_text("left by an older layout\n")
    repo.index.add(["stray.txt"])
    repo.index.commit("older layout", author=benchmark_repo.AUTHOR, committer=benchmark_repo.AUTHOR)
    with django_capture_on_commit_callbacks(execute=True):
        services.release_create_from_pset(path=small_pset(), name="r1")
    assert "stray.txt" not in tree_files(repo.head.commit)
    assert_branch_is_the_current_versions(repo)


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
