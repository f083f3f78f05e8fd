"""Publishing (issue 11 item 8): approval makes the approved revision an immutable task version and one
commit by the contributor in the benchmark git repository; maintainers cut releases (tags) through the web;
imports are recorded as approved by the operator; the papers pages credit the contributor."""

from __future__ import annotations

import hashlib
from pathlib import Path

import git
import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from contributions import benchmark_repo
from contributions.models import FileBlob, Profile, Proposal, Release, TaskVersion
from contributions.selectors.catalogue import task_versions_current
from contributions.selectors.proposals import latest_submitted_revision
from contributions.services import (
    ProposalError,
    version_file_bytes,
)
from contributions.services.publishing import proposal_publish
from contributions.task_folders import revision_task
from contributions.task_meta import meta_from_json
from researchcodebench import pset as rcb_pset
from tests.contributions.conftest import write_small_pset
from tests.factories import PASSWORD, MaintainerFactory, UserFactory, example_upload
from tests.factories.builders import proposal_approved, proposal_validated

pytestmark = pytest.mark.django_db


@pytest.fixture
def repo_dir(settings, tmp_path):
    settings.RCB_BENCHMARK_REPO = tmp_path / "benchmark.git"
    return settings.RCB_BENCHMARK_REPO


@pytest.fixture
def contributor():
    user = UserFactory(username="ada")
    Profile.objects.create(user=user, display_name="Ada Lovelace")
    return user


@pytest.fixture
def maintainer():
    return MaintainerFactory(first_name="Grace", last_name="Hopper")


@pytest.fixture
def publish(contributor, maintainer, django_capture_on_commit_callbacks):
    """``publish(**kwargs)``: a new green proposal (``proposal_validated(**kwargs)``, by the contributor
    unless ``author`` is given) approved by the maintainer, so published."""

    def publish(**kwargs) -> Proposal:
        kwargs.setdefault("author", contributor)
        proposal = proposal_validated(**kwargs)
        return proposal_approved(proposal, reviewer=maintainer, capture=django_capture_on_commit_callbacks)

    return publish


def tree_files(commit: git.Commit) -> dict[str, bytes]:
    return {b.path: b.data_stream.read() for b in commit.tree.traverse() if b.type == "blob"}


def assert_repo_is_the_published_versions(repo: git.Repo) -> None:
    """The branch's tree is exactly the export of the current task versions."""
    current = task_versions_current()
    expected = {
        f"{v.task.key}/{rel}": data
        for v in current
        for rel, data in version_file_bytes(task_version=v).items()
    }
    expected[rcb_pset.REGISTRY] = rcb_pset.registry_text(meta_from_json(v.meta) for v in current).encode()
    expected[".gitattributes"] = benchmark_repo.GITATTRIBUTES.encode()
    assert tree_files(repo.head.commit) == expected


# ------------------------------------------------------------------------------------------ approval


def test_approval_publishes_a_contributed_version_and_one_commit_by_the_contributor(
    repo_dir, contributor, maintainer, publish
):
    proposal = publish()

    assert proposal.state == Proposal.State.PUBLISHED
    version = proposal.published_version
    assert (version.origin, version.number, version.created_by) == ("contributed", 1, contributor)
    assert version.task.key == proposal.task_key and version.snippets.exists()
    stored = version_file_bytes(task_version=version)
    for rel, data in example_upload().files.items():
        assert stored[rel] == data
    assert rcb_pset.MANIFEST in stored  # the declared manifest, in the original format
    event = proposal.events.get(to_state=Proposal.State.PUBLISHED)
    assert (event.from_state, event.actor) == (Proposal.State.APPROVED, maintainer)

    repo = git.Repo(repo_dir)
    commits = list(repo.iter_commits("HEAD"))
    assert len(commits) == 1
    commit = commits[0]
    assert (commit.author.name, commit.author.email) == (
        "Ada Lovelace",
        f"ada@{benchmark_repo.NOREPLY_DOMAIN}",
    )
    assert commit.committer.name == "ResearchCodeBench Hub"
    assert commit.summary == f"Publish {proposal.task_key} v1 (proposal {proposal.pk})"
    assert f"approved by Grace Hopper <{maintainer.username}@" in commit.message
    assert contributor.email not in commit.message and maintainer.email not in commit.message
    assert_repo_is_the_published_versions(repo)


def test_a_new_version_of_a_published_task_is_version_2_and_one_more_commit(repo_dir, maintainer, publish):
    first = publish(author=UserFactory(), task_key="rmsnorm-task")
    # A new version of a published task comes from a maintainer (the key is taken for everyone else).
    fixer = MaintainerFactory()
    changed = example_upload().files["rmsnorm.py"] + b"\n# clarified\n"
    second = publish(author=fixer, task_key="rmsnorm-task", **{"rmsnorm.py": changed})

    assert second.published_version.number == 2 and first.published_version.number == 1
    assert version_file_bytes(task_version=second.published_version)["rmsnorm.py"] == changed
    repo = git.Repo(repo_dir)
    commits = list(repo.iter_commits("HEAD"))
    assert len(commits) == 2
    assert commits[0].summary == f"Publish rmsnorm-task v2 (proposal {second.pk})"
    assert set(commits[0].stats.files) == {"rmsnorm-task/rmsnorm.py"}
    assert tree_files(repo.head.commit)["rmsnorm-task/rmsnorm.py"] == changed
    assert_repo_is_the_published_versions(repo)


def test_a_published_version_is_what_the_folder_reader_gives_for_the_revisions_files(repo_dir, publish):
    # Publishing builds the task in memory: files, hashes and parsed snippets are byte for byte what
    # reading the revision's materialised folder gives (line endings, litter and a nested file included).
    crlf = example_upload().files["rmsnorm.py"].replace(b"\n", b"\r\n")
    litter = {"__pycache__/rmsnorm.cpython-311.pyc": b"\x00compiled", "notes/old.pyc": b"\x00"}
    proposal = publish(**{"rmsnorm.py": crlf, "notes/README.txt": b"kept\n", **litter})
    version = proposal.published_version
    folder_task = revision_task(revision=latest_submitted_revision(proposal))
    folder = Path(folder_task.root)
    on_disk = {rel: (folder / rel).read_bytes() for rel in rcb_pset.task_files(folder)}

    assert "notes/README.txt" in on_disk and not set(litter) & set(on_disk)
    assert version_file_bytes(task_version=version) == on_disk
    assert version.files == {rel: hashlib.sha256(data).hexdigest() for rel, data in on_disk.items()}
    assert version.content_hash == rcb_pset.content_hash(folder)
    assert (version.manifest, version.paper_file) == (folder_task.manifest.to_dict(), folder_task.paper_file)
    assert version.validation_report == [issue.to_dict() for issue in folder_task.issues]
    assert version.total_lines == sum(s.lines for s in folder_task.snippets)
    fields = ("name", "file", "start_line", "end_line", "lines", "indent", "depth", "code", "parent__name")
    assert list(version.snippets.order_by("ordinal").values_list(*fields)) == [
        (s.name, s.file, s.start_line, s.end_line, s.lines, s.indent, s.depth, s.code, s.parent)
        for s in folder_task.snippets
    ]


def test_only_an_approved_proposal_is_published(repo_dir, contributor, maintainer):
    proposal = proposal_validated(author=contributor)
    with pytest.raises(ProposalError, match="cannot publish a proposal that is ready for review"):
        proposal_publish(proposal=proposal, by=maintainer)
    assert not TaskVersion.objects.exists()


def test_a_publication_that_fails_keeps_the_approval_and_can_be_retried(
    repo_dir, contributor, maintainer, django_capture_on_commit_callbacks
):
    proposal = proposal_validated(author=contributor)
    revision = proposal.revisions.get()
    saved = {sha: bytes(FileBlob.objects.get(sha256=sha).content) for sha in revision.files.values()}
    FileBlob.objects.filter(sha256__in=list(saved)).delete()

    proposal = proposal_approved(proposal, reviewer=maintainer, capture=django_capture_on_commit_callbacks)
    assert proposal.state == Proposal.State.APPROVED and proposal.published_version is None
    assert not TaskVersion.objects.exists()

    FileBlob.objects.bulk_create(
        FileBlob(sha256=sha, size=len(data), content=data) for sha, data in saved.items()
    )
    with django_capture_on_commit_callbacks(execute=True):
        version = proposal_publish(proposal=proposal, by=maintainer)
    proposal.refresh_from_db()
    assert (proposal.state, proposal.published_version) == (Proposal.State.PUBLISHED, version)
    assert len(list(git.Repo(repo_dir).iter_commits("HEAD"))) == 1


# ------------------------------------------------------------------------------------------ releases


def cut(client, **data):
    return client.post(reverse("contributions:release_cut"), data)


def test_a_maintainer_cuts_a_release_of_every_current_version_tagged_on_the_branch_head(
    client, repo_dir, contributor, maintainer, django_capture_on_commit_callbacks, publish
):
    a = publish().published_version
    b = publish().published_version
    client.force_login(maintainer)
    page = client.get(reverse("contributions:release_cut"))
    assert page.status_code == 200
    body = page.content.decode()
    assert f'value="{a.pk}"' in body and f'value="{b.pk}"' in body and body.count("checked") >= 2

    with django_capture_on_commit_callbacks(execute=True):
        response = cut(client, name="rcb-2026", title="First", task_versions=[a.pk, b.pk], make_default="on")
    assert response.status_code == 302 and response.url == reverse("contributions:release_list")
    release = Release.objects.get(name="rcb-2026")
    assert release.is_default and set(release.task_versions.all()) == {a, b}
    repo = git.Repo(repo_dir)
    assert repo.tags["rcb-2026"].commit == repo.head.commit
    assert release.git_commit == repo.head.commit.hexsha
    assert "rcb-2026" in client.get(reverse("contributions:release_list")).content.decode()


def test_a_release_of_some_versions_is_tagged_on_the_commit_holding_exactly_them(
    client, repo_dir, contributor, maintainer, django_capture_on_commit_callbacks, publish
):
    a = publish().published_version
    b = publish().published_version
    client.force_login(maintainer)
    with django_capture_on_commit_callbacks(execute=True):
        cut(client, name="only-a", task_versions=[a.pk])
        cut(client, name="only-b", task_versions=[b.pk])
    repo = git.Repo(repo_dir)
    first, second = reversed(list(repo.iter_commits("HEAD")))
    # The branch's first commit held exactly a: its release is tagged there.
    assert repo.tags["only-a"].commit == first
    # No branch commit ever held b alone: its release gets its own commit on top of the branch.
    tagged = repo.tags["only-b"].commit
    assert tagged.parents == (second,) and repo.head.commit == second
    assert {path.split("/", 1)[0] for path in tree_files(tagged)} == {
        b.task.key,
        "papers.yaml",
        ".gitattributes",
    }


def test_only_maintainers_cut_releases(client, repo_dir, contributor):
    url = reverse("contributions:release_cut")
    assert client.get(url).status_code == 302  # a visitor signs in first
    client.force_login(contributor)
    assert client.get(url).status_code == 403
    assert cut(client, name="mine", task_versions=[]).status_code == 403
    assert client.post(reverse("contributions:release_default", args=["mine"])).status_code == 403
    assert not Release.objects.exists()
    assert "Cut a release" not in client.get(reverse("contributions:release_list")).content.decode()


def test_a_bad_release_cut_is_an_error_on_its_field_and_creates_nothing(
    client, repo_dir, contributor, maintainer, django_capture_on_commit_callbacks, publish
):
    a = publish().published_version
    client.force_login(maintainer)
    response = cut(client, name="not a slug!", task_versions=[a.pk])
    assert response.status_code == 200 and response.context["form"].errors.keys() == {"name"}
    assert (
        "may hold only letters, digits, hyphens (-) and underscores (_)"
        in response.context["form"].errors["name"][0]
    )
    response = cut(client, name="r1", task_versions=["999999", "x"])
    assert "task_versions" in response.context["form"].errors
    response = cut(client, name="r1")
    assert "task_versions" in response.context["form"].errors
    with django_capture_on_commit_callbacks(execute=True):
        cut(client, name="r1", task_versions=[a.pk])
    response = cut(client, name="r1", task_versions=[a.pk])
    assert "is taken" in response.context["form"].errors["name"][0]
    assert list(Release.objects.values_list("name", flat=True)) == ["r1"]


def test_a_maintainer_chooses_the_default_release(client, repo_dir, maintainer, tmp_path):
    call_command("import_pset", str(write_small_pset(tmp_path / "p1")), "--release", "r1", "--default")
    call_command("import_pset", str(write_small_pset(tmp_path / "p2", ids=("gamma",))), "--release", "r2")
    client.force_login(maintainer)
    response = client.post(reverse("contributions:release_default", args=["r2"]))
    assert response.status_code == 302
    assert Release.objects.get(is_default=True).name == "r2"
    assert client.post(reverse("contributions:release_default", args=["nope"])).status_code == 404


# ------------------------------------------------------------------------------------------ imports


def test_import_pset_records_approvals_by_the_operator_and_one_commit_per_task(
    repo_dir, tmp_path, django_capture_on_commit_callbacks
):
    operator = UserFactory(username="curator", password=PASSWORD)
    with django_capture_on_commit_callbacks(execute=True):
        call_command(
            "import_pset", str(write_small_pset(tmp_path / "p")), "--release", "r1", "--by", "curator"
        )
    records = Proposal.objects.order_by("task_key")
    assert [(p.task_key, p.state, p.author) for p in records] == [
        ("alpha", "published", operator),
        ("beta", "published", operator),
    ]
    assert all(p.events.get().reason.startswith("imported by the operator") for p in records)
    repo = git.Repo(repo_dir)
    assert [c.summary for c in repo.iter_commits("HEAD")] == [
        "import beta v1 (release r1)",
        "import alpha v1 (release r1)",
    ]
    assert_repo_is_the_published_versions(repo)
    assert repo.tags["r1"].commit.parents == (repo.head.commit,)
    with pytest.raises(CommandError, match="--by: no user named 'nobody'"):
        call_command("import_pset", str(tmp_path / "p"), "--release", "r2", "--by", "nobody")


# ------------------------------------------------------------------------------------------ credit


def test_the_papers_pages_credit_the_contributor_and_not_the_operator(
    client, repo_dir, contributor, maintainer, tmp_path, publish
):
    call_command("import_pset", str(write_small_pset(tmp_path / "p", ids=("alpha",))), "--release", "r1")
    proposal = publish()
    papers = client.get(reverse("leaderboard:papers")).content.decode()
    assert papers.count("Contributed by Ada Lovelace") == 1
    assert "Contributed by operator" not in papers
    page = client.get(reverse("leaderboard:paper", args=[proposal.task_key]))
    assert page.status_code == 200 and "Contributed by Ada Lovelace" in page.content.decode()
    imported = client.get(reverse("leaderboard:paper", args=["alpha"])).content.decode()
    assert "Contributed by" not in imported
