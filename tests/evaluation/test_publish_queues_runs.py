"""Approval queues evaluations (issue 11 item 8): publishing a task version queues a generated run of every
active portal-run model (managed by the maintainers) on it, and of no other model. Such a run is on no
release: its setting is the task it covers (issue 34 item 4), under which the model page lists it, its score
shown only once it is scored, and it never stands for the model on its page or in a comparison by default."""

from __future__ import annotations

import re

import pytest
from django.utils import timezone

from contributions.models import Proposal, TaskVersion
from contributions.signals import task_version_published
from evaluation.models import Completion, EvaluationRun, LanguageModel
from leaderboard.selectors.compare import Setting
from leaderboard.selectors.models import model_detail
from leaderboard.services import leaderboard_refresh_run
from tests.factories import LanguageModelFactory, MaintainerFactory, TestResultFactory, UserFactory
from tests.factories.builders import make_benchmark, make_run, proposal_approved, proposal_validated

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def repo_dir(settings, tmp_path):
    settings.RCB_BENCHMARK_REPO = tmp_path / "benchmark.git"


def publish(capture) -> tuple[TaskVersion, object]:
    """Approve a green proposal of the example task (publishing follows the approval's commit)."""
    maintainer = MaintainerFactory()
    proposal = proposal_validated(task_key="rmsnorm-new", meta={"title": "RMSNorm"})
    proposal = proposal_approved(proposal, reviewer=maintainer, capture=capture)
    assert proposal.state == Proposal.State.PUBLISHED
    return proposal.published_version, maintainer


def test_approval_queues_every_active_portal_run_model_on_the_new_task_version(
    django_capture_on_commit_callbacks,
):
    portal = LanguageModelFactory(key="PORTAL", provider="openai", api_key_env="RCB_LLM_KEY_PORTAL")
    LanguageModelFactory(key="RETIRED", active=False)
    LanguageModelFactory(key="PAPER", management=LanguageModel.Management.PUBLISHED)
    LanguageModelFactory(key="MINE", self_reported=True, owner=UserFactory())

    version, maintainer = publish(django_capture_on_commit_callbacks)

    run = EvaluationRun.objects.get()
    assert run.model == portal
    assert list(run.task_versions.all()) == [version]
    assert (run.source, run.verification, run.status) == ("generated", "generated", "queued")
    assert run.requester == maintainer and run.label == "new task rmsnorm-new v1"
    snippets = version.snippets.count()
    assert snippets > 0
    assert Completion.objects.filter(run=run, stage=Completion.Stage.PENDING_GENERATION).count() == snippets
    assert set(Completion.objects.filter(run=run).values_list("snippet__task_version", flat=True)) == {
        version.pk
    }


def test_a_repeated_publication_message_queues_nothing_twice(django_capture_on_commit_callbacks):
    LanguageModelFactory(key="PORTAL")
    version, maintainer = publish(django_capture_on_commit_callbacks)
    assert EvaluationRun.objects.count() == 1
    task_version_published.send(sender=TaskVersion, task_version_id=version.pk, by_user_id=maintainer.pk)
    task_version_published.send(sender=TaskVersion, task_version_id=10**9, by_user_id=None)
    assert EvaluationRun.objects.count() == 1


def test_model_page_shows_a_queued_approval_run_as_queued_with_what_it_covers_not_as_zero(
    client, django_capture_on_commit_callbacks
):
    portal = LanguageModelFactory(key="PORTAL", name="Portal Model")
    release, snippets = make_benchmark({"p1": (None, [1, 1])})
    finished = make_run(snippets, {"p1": "P F"}, model=portal, release=release)
    leaderboard_refresh_run(run=finished)
    publish(django_capture_on_commit_callbacks)
    queued = EvaluationRun.objects.get(status=EvaluationRun.Status.QUEUED)
    leaderboard_refresh_run(run=queued)  # a score row of nothing judged yet

    html = client.get("/models/PORTAL/").content.decode()

    row = re.search(rf"<tr>\s*<td><a href=\"\?run={queued.pk}\">.*?</tr>", html, re.S).group(0)
    text = words(row)
    assert "no release: new task rmsnorm-new v1" in text
    assert "Queued" in text and "queued: no score yet" in text and "0.00" not in text
    assert group_heads(html) == [
        "New task rmsnorm-new v1 (not in a release), template rcb-v2, with the paper · 1 run",
        "Release rel, template rcb-v2, with the paper · 1 run",
    ]
    assert f"the page shows run {finished.pk}" in html

    shown = client.get(f"/models/PORTAL/?run={queued.pk}").content.decode()
    assert "not scored yet: the run is queued" in shown


def words(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).strip()


def group_heads(html: str) -> list[str]:
    return [words(h) for h in re.findall(r'<tr class="group-head">(.*?)</tr>', html, re.S)]


def score(run: EvaluationRun, passing: int) -> None:
    """Judge every completion of ``run`` (the first ``passing`` pass) and finish it."""
    for n, completion in enumerate(Completion.objects.filter(run=run).order_by("snippet__ordinal", "pk")):
        outcome = "passed" if n < passing else "failed"
        TestResultFactory(completion=completion, outcome=outcome, category="" if n < passing else "logic")
    Completion.objects.filter(run=run).update(stage=Completion.Stage.DONE)
    EvaluationRun.objects.filter(pk=run.pk).update(
        status=EvaluationRun.Status.FINISHED, finished_at=timezone.now()
    )
    leaderboard_refresh_run(run=EvaluationRun.objects.get(pk=run.pk))


def test_a_scored_approval_run_is_listed_under_its_task_and_compared_only_with_runs_on_it(
    client, django_capture_on_commit_callbacks
):
    release, snippets = make_benchmark({"p1": (None, [1, 1])})
    models = [LanguageModelFactory(key=key, name=key.title()) for key in ("ALPHA", "BETA")]
    on_release = {}
    for model in models:
        on_release[model.key] = make_run(snippets, {"p1": "P F"}, model=model, release=release)
        leaderboard_refresh_run(run=on_release[model.key])
    publish(django_capture_on_commit_callbacks)
    approval = {run.model.key: run for run in EvaluationRun.objects.filter(release=None)}
    assert set(approval) == {"ALPHA", "BETA"}
    score(approval["ALPHA"], passing=1)

    detail = model_detail(key="ALPHA")
    assert detail.run.run_id == on_release["ALPHA"].pk  # the release's run stands for the model
    runs = {r.run_id: r for r in detail.runs}
    scored = runs[approval["ALPHA"].pk]
    assert scored.scored and Setting.of(scored) == Setting(None, "rcb-v2", True, "new task rmsnorm-new v1")
    assert not model_detail(key="BETA", run_id=approval["BETA"].pk).run.scored

    html = client.get("/models/ALPHA/").content.decode()
    assert group_heads(html)[0] == (
        "New task rmsnorm-new v1 (not in a release), template rcb-v2, with the paper · 1 run"
    )
    row = words(
        re.search(rf"<tr>\s*<td><a href=\"\?run={approval['ALPHA'].pk}\">.*?</tr>", html, re.S).group(0)
    )
    assert "Finished" in row and re.search(r"\d+\.\d\d", row)
    assert f"the page shows run {on_release['ALPHA'].pk}" in html
    beta = words(re.search(rf"<tr>\s*<td><a href=\"\?run={approval['BETA'].pk}\">.*?</tr>",
                           client.get("/models/BETA/").content.decode(), re.S).group(0))  # fmt: skip
    assert "queued: no score yet" in beta and not re.search(r"\d+\.\d\d", beta)

    # compare lines the models up on the release; BETA has no score on the new task yet, so it is not offered
    compare = words(client.get("/compare/", {"models": ["ALPHA", "BETA"]}).content.decode())
    assert "Compared on release rel, template rcb-v2, with the paper" in compare
    assert "not in a release" not in compare
    score(approval["BETA"], passing=0)
    both = client.get("/compare/", {"models": ["ALPHA", "BETA"]}).content.decode()
    link = re.search(r'<a href="([^"]*covers=[^"]*)">new task rmsnorm-new v1 \(not in a release\)', both)
    on_task = words(client.get(link.group(1).replace("&amp;", "&")).content.decode())
    assert (
        "Compared on new task rmsnorm-new v1 (not in a release), template rcb-v2, with the paper" in on_task
    )
