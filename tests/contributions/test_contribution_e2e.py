"""Acceptance of the contribution flow (issue 11), end to end on the real database with a real worker and
the Django test client: a contributor signs in and sends two tasks through the form as zips; the worker
validates them (one green, one whose test ignores a snippet, flagged by name with the fills that passed);
a maintainer reviews each with the full rubric (and a written reason for the unchecked snippet) and
approves; each becomes a published task version on the papers page, credited to the contributor, and in
the release the maintainer then cuts from the web; the benchmark git repository holds exactly the published
task versions, one commit per approval or import; the active portal-run model is queued on each new version
and its run goes through generation (the fake LLM) and testing."""

from __future__ import annotations

import html
import io
import re
import zipfile
from pathlib import Path

import git
import pytest
from django.core.management import call_command
from django.test import Client
from django.utils.html import escape

from contributions import benchmark_repo
from contributions.models import Profile, Proposal, ProposalRevision, Release, TaskVersion
from contributions.selectors.catalogue import task_versions_current
from contributions.selectors.release_export import release_export
from contributions.services.proposals import RUBRIC_KEYS
from evaluation.models import EvaluationRun, LanguageModel, TestResult
from tests.conftest import wait_for
from tests.contributions.conftest import write_small_pset
from tests.evaluation.fake_llm import fake_llm
from tests.factories import PASSWORD, MaintainerFactory, UserFactory, fake_llm_model

pytestmark = pytest.mark.slow

__all__ = ["fake_llm"]  # the fake OpenAI-compatible server, used as a fixture below

State = Proposal.State
REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "pset" / "rmsnorm"
UNCHECKED = REPO / "tests" / "researchcodebench" / "fixtures" / "validation" / "unchecked-snippet"
RUBRIC_POST = {f"rubric_{key}": "on" for key in RUBRIC_KEYS}
WORKER_ENV = {"RCB_VERDICT_CACHE": "0", "RCB_LLM_KEY_FAKE": "sk-test"}

#: (task key, folder, step (a) answers, step (c) declarations) of the two contributions
RMSNORM = (
    "rmsnorm-contrib",
    EXAMPLE,
    {
        "title": "Root Mean Square Layer Normalization",
        "arxiv": "https://arxiv.org/abs/1910.07467v1",
        "arxiv_v1_date": "2019-10-16",
        "arxiv_date": "2019-10-16",
        "venue": "NeurIPS2019",
    },
    {
        "annotated_files": ["rmsnorm.py"],
        "oracle_files": ["rmsnorm_ref.py"],
        "test_entry": "paper2code_test.py",
        "paper_file": "paper2code_paper.md",
    },
)
TOY = (
    "toy-shift",
    UNCHECKED,
    {"title": "Scaling and Shifting Lists", "venue": "ToyConf2025"},
    {"annotated_files": ["toy.py"], "test_entry": "paper2code_test.py", "paper_file": "paper2code_paper.md"},
)


def sign_in(email: str) -> Client:
    """A browser session signed in through allauth's form, as a person does."""
    client = Client()
    response = client.post("/accounts/login/", {"login": email, "password": PASSWORD})
    assert response.status_code == 302, response.content.decode()[:2000]
    return client


def zipped(folder: Path) -> io.BytesIO:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.name != "task.yaml":
                archive.writestr(f"{folder.name}/{path.relative_to(folder).as_posix()}", path.read_bytes())
    buffer.seek(0)
    buffer.name = f"{folder.name}.zip"
    return buffer


def contribute(client: Client, contribution: tuple) -> Proposal:
    """Every step of the form, as the author fills it in; ends submitted, on the proposal page."""
    key, folder, meta, declared = contribution
    answers = {
        "task_key": key,
        "arxiv": "",
        "arxiv_v1_date": "",
        "arxiv_date": "",
        "venue": "",
        "license": "MIT",
        "license_other": "",
        "github_url": "",
        "code_commit": "",
        "first_commit_date": "",
        "last_commit_date": "",
        **meta,
    }
    response = client.post("/contribute/new/", answers)
    assert response.status_code == 302, response.context["form"].errors if response.context else response
    proposal = Proposal.objects.get(task_key=key, state=State.DRAFT)
    steps = f"/contribute/{proposal.pk}/step"
    assert response["Location"] == f"{steps}/2/"

    response = client.post(f"{steps}/2/", {"archive": zipped(folder)})
    assert response["Location"] == f"{steps}/3/", response.context and response.context["form"].errors
    response = client.post(f"{steps}/3/", declared)
    assert response["Location"] == f"{steps}/4/", response.context and response.context["form"].errors
    preview = client.get(f"{steps}/4/")
    assert preview.status_code == 200 and preview.context["preview"].errors == []
    assert client.post(f"{steps}/4/")["Location"] == f"{steps}/5/"
    response = client.post(f"{steps}/5/")
    assert response["Location"] == f"/contribute/{proposal.pk}/"
    proposal.refresh_from_db()
    assert proposal.state == State.SUBMITTED
    return proposal


def validated(proposal: Proposal) -> bool:
    proposal.refresh_from_db()
    return proposal.state not in (State.SUBMITTED, State.VALIDATING)


def tree_files(commit: git.Commit) -> dict[str, bytes]:
    return {b.path: b.data_stream.read() for b in commit.tree.traverse() if b.type == "blob"}


def folder_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_contribution_goes_from_the_form_through_validation_and_review_into_the_benchmark(
    start_worker, settings, tmp_path, fake_llm
):
    settings.RCB_BENCHMARK_REPO = tmp_path / "benchmark"
    start_worker("site,eval-cpu,eval-gpu", concurrency=1, extra_env=WORKER_ENV)
    # An operator's import comes first: its versions are commits of the repository too.
    call_command("import_pset", str(write_small_pset(tmp_path / "pset")), release="imported")
    imported = set(TaskVersion.objects.values_list("pk", flat=True))
    assert len(imported) == 2
    model = fake_llm_model(fake_llm.base_url, key="portal-model")
    assert (model.management, model.active) == (LanguageModel.Management.MAINTAINER, True)
    assert not EvaluationRun.objects.exists()  # imports queue no evaluation

    author = UserFactory(username="ada")
    Profile.objects.create(user=author, display_name="Ada Lovelace")
    maintainer = MaintainerFactory()
    contributor = sign_in(author.email)

    # ---- the contributor sends both tasks through the form; the worker validates them
    toy = contribute(contributor, TOY)
    rms = contribute(contributor, RMSNORM)
    wait_for(lambda: validated(toy), timeout=300, what="the unchecked-snippet task's validation")
    wait_for(lambda: validated(rms), timeout=300, what="the rmsnorm task's validation")

    revision = rms.revisions.get()
    assert rms.state == State.READY_FOR_REVIEW, (rms.events.last().reason, revision.validation_report)
    assert revision.validation_status == ProposalRevision.ValidationStatus.PASSED

    report = toy.revisions.get().validation_report
    assert toy.state == State.READY_FOR_REVIEW, toy.events.last().reason
    assert report["ok"] is False
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert [(f["check"], f["snippet"]) for f in errors] == [("mutation", "shift values")]
    flagged = errors[0]
    assert "is not checked by the test" in flagged["message"] and "'pass'" in flagged["message"]
    assert "fill 'pass' passed the test" in flagged["detail"]
    # The author sees the snippet's name and the fills that passed on the proposal page, at its line.
    page = contributor.get(f"/contribute/{toy.pk}/").content.decode()
    assert escape(flagged["message"]) in page
    assert f"toy.py:{flagged['line']}" in page

    # ---- the maintainer reviews both from the queue and approves
    reviewer = sign_in(maintainer.email)
    queue = reviewer.get("/review/").content.decode()
    assert f'href="/contribute/{toy.pk}/"' in queue and f'href="/contribute/{rms.pk}/"' in queue

    refused = reviewer.post(f"/contribute/{toy.pk}/review/", {"decision": "approve", **RUBRIC_POST})
    assert refused.status_code == 400
    assert "shift values" in refused.content.decode()
    approved = reviewer.post(
        f"/contribute/{toy.pk}/review/",
        {
            "decision": "approve",
            "override_reason_0": "setup",
            "override_0": "shift is the paper's trivial step; scale is the method the test checks",
            **RUBRIC_POST,
        },
    )
    assert approved.status_code == 302
    assert (
        reviewer.post(f"/contribute/{rms.pk}/review/", {"decision": "approve", **RUBRIC_POST}).status_code
        == 302
    )
    for proposal in (toy, rms):
        proposal.refresh_from_db()
        assert proposal.state == State.PUBLISHED, proposal.events.last().reason
        version = proposal.published_version
        assert (version.origin, version.created_by, version.task.key) == (
            "contributed",
            author,
            proposal.task_key,
        )
    explanation = "shift is the paper's trivial step; scale is the method the test checks"
    assert toy.reviews.get().snippet_overrides == {
        "shift values": {"reason": "setup", "explanation": explanation}
    }
    # ---- the accepted snippet is published "not checked by its test", with the reason, on the public pages
    shift = toy.published_version.snippets.get(name="shift values")
    assert (shift.checked_by_test, shift.unchecked_reason, shift.unchecked_explanation) == (
        False,
        "setup",
        explanation,
    )
    assert all(s.checked_by_test for s in toy.published_version.snippets.exclude(pk=shift.pk))
    paper_page = Client().get(f"/papers/{toy.published_version.task.paper.key}/").content.decode()
    assert "not checked by its test" in paper_page
    from leaderboard.links import snippet_url

    snippet_page = Client().get(snippet_url(toy.published_version.task.paper.key, shift.name, shift.pk))
    assert snippet_page.status_code == 200
    snippet_page = snippet_page.content.decode()
    assert "not checked by its test" in snippet_page and html.escape(explanation) in snippet_page
    api = Client().get("/api/v1/snippets/", {"paper": toy.published_version.task.paper.key}).json()
    rows = {row["name"]: row for row in api["results"]}
    assert (
        rows["shift values"]["checked_by_test"] is False and rows["scale values"]["checked_by_test"] is True
    )
    published = {toy.published_version, rms.published_version}

    # ---- the papers page lists both, crediting the contributor
    papers = Client().get("/papers/").content.decode()
    for title in (TOY[2]["title"], RMSNORM[2]["title"]):
        assert title in papers
    assert papers.count("Contributed by Ada Lovelace") == 2

    # ---- the maintainer cuts the next release from the web: every current version, both new ones in it
    form = reviewer.get("/releases/new/")
    assert form.status_code == 200
    current = [int(v) for v in form.context["form"].initial["task_versions"]]
    assert set(current) == imported | {v.pk for v in published}
    cut = reviewer.post(
        "/releases/new/", {"name": "rcb-next", "title": "Next", "description": "", "task_versions": current}
    )
    assert cut.status_code == 302, cut.context["form"].errors if cut.context else cut
    release = Release.objects.get(name="rcb-next")
    assert published <= {e.task_version for e in release.entries.all()}
    assert release.counts_unchecked_snippets is False  # a release cut now leaves the unchecked snippet out
    in_release = Client().get("/papers/", {"release": "rcb-next"}).content.decode()
    assert TOY[2]["title"] in in_release and RMSNORM[2]["title"] in in_release

    # ---- the repository holds exactly the published versions: one commit each, the tree is the export
    repo = git.Repo(settings.RCB_BENCHMARK_REPO)
    commits = list(repo.iter_commits("HEAD"))
    trailers = [re.findall(rf"^{benchmark_repo.TRAILER}: (\S+) (\S+)$", c.message, re.M) for c in commits]
    assert all(len(found) == 1 for found in trailers)
    every_version = TaskVersion.objects.select_related("task")
    assert sorted(found[0] for found in trailers) == sorted(
        (v.content_hash, v.task.key) for v in every_version
    )
    assert [c.author.name for c in commits[:2]] == ["Ada Lovelace", "Ada Lovelace"]
    assert {v.pk for v in task_versions_current()} == {v.pk for v in every_version}
    export = release_export(release=release, out_dir=tmp_path / "export")
    expected = {**folder_files(export), ".gitattributes": benchmark_repo.GITATTRIBUTES.encode()}
    assert tree_files(repo.head.commit) == expected
    assert repo.tags["rcb-next"].commit == repo.head.commit

    # ---- the portal-run model was queued on each new version, and its runs were generated and tested
    runs = list(EvaluationRun.objects.filter(model=model))
    assert sorted(v.pk for run in runs for v in run.task_versions.all()) == sorted(v.pk for v in published)

    def finished() -> bool:
        return all(run.is_final for run in EvaluationRun.objects.filter(model=model))

    wait_for(finished, timeout=300, interval=0.5, what="the portal-run model's runs")
    for run in EvaluationRun.objects.filter(model=model):
        assert run.status == EvaluationRun.Status.FINISHED, run.status_reason
        assert TestResult.objects.filter(completion__run=run).count() == run.total_items
    assert fake_llm.requests
