"""One maintainer rule everywhere (contributions.roles.can_maintain): a member of the "maintainers" group who
is not staff sees and uses every maintainer control of the run and model pages (cancel, re-run, re-judge,
model pages, who asked for a run, tampering details, uploads for any model); a plain contributor does not."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser

from contributions.roles import can_maintain
from evaluation.models import Completion, EvaluationRun, LanguageModel, TestResult
from evaluation.services.language_models import UploadNotAllowed, language_model_upload_check
from evaluation.services.rejudge import RejudgeError, run_rejudge_passes
from tests.factories import (
    EvaluationRunFactory,
    LanguageModelFactory,
    MaintainerFactory,
    StaffUserFactory,
    UserFactory,
    make_release,
    make_staged_run,
)

pytestmark = pytest.mark.django_db

Stage = Completion.Stage
Outcome = TestResult.Outcome
TAMPERING_REASON = "harness tampering: rmsnorm.py:29: use of sys._getframe"


@pytest.fixture
def maintainer():
    user = MaintainerFactory(username="maya")
    assert not user.is_staff and not user.is_superuser
    return user


@pytest.fixture
def contributor():
    return UserFactory(username="carl")


def page(client, user, url: str) -> str:
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def test_group_maintainers_and_staff_may_maintain_contributors_and_visitors_may_not(maintainer, contributor):
    inactive = MaintainerFactory(is_active=False)
    assert can_maintain(maintainer) and can_maintain(StaffUserFactory())
    assert not can_maintain(contributor)
    assert not can_maintain(AnonymousUser()) and not can_maintain(None) and not can_maintain(inactive)


# --- cancel and re-run ------------------------------------------------------------------------------------


def test_a_group_maintainer_sees_cancel_and_cancels_a_running_run(client, maintainer):
    run = make_staged_run(model=LanguageModelFactory(), release=make_release())
    html = page(client, maintainer, f"/runs/{run.pk}/")
    assert f'action="/runs/{run.pk}/cancel/"' in html and "Cancel run" in html
    assert client.post(f"/runs/{run.pk}/cancel/").status_code == 302
    run.refresh_from_db()
    assert run.status == EvaluationRun.Status.CANCELLED and "maya" in run.status_reason


def failed_run() -> EvaluationRun:
    return make_staged_run(
        model=LanguageModelFactory(),
        release=make_release(),
        status=EvaluationRun.Status.FINISHED,
        stages=[Stage.DONE, Stage.DONE, Stage.DONE],
        outcomes={0: Outcome.INFRA_ERROR, 1: Outcome.PASSED, 2: Outcome.FAILED},
    )


def test_a_group_maintainer_sees_rerun_and_requeues_failed_items(client, maintainer):
    run = failed_run()
    html = page(client, maintainer, f"/runs/{run.pk}/")
    assert "Re-run infrastructure errors" in html and "Re-run all failed items" in html
    assert client.post(f"/runs/{run.pk}/rerun/", {"which": "failed"}).status_code == 302
    stages = dict(Completion.objects.filter(run=run).values_list("snippet__name", "stage"))
    assert stages == {"a1": Stage.PENDING_TEST, "a2": Stage.DONE, "b1": Stage.PENDING_TEST}


def test_a_contributor_sees_no_cancel_or_rerun_and_cannot_post_them(client, contributor):
    running = make_staged_run(model=LanguageModelFactory(), release=make_release("r-running"))
    finished = failed_run()
    assert "Cancel run" not in page(client, contributor, f"/runs/{running.pk}/")
    assert "Re-run" not in page(client, contributor, f"/runs/{finished.pk}/")
    assert client.post(f"/runs/{running.pk}/cancel/").status_code == 403
    assert client.post(f"/runs/{finished.pk}/rerun/", {"which": "failed"}).status_code == 403
    running.refresh_from_db()
    assert running.status == EvaluationRun.Status.TESTING
    assert not Completion.objects.filter(run=finished, stage=Stage.PENDING_TEST).exists()


# --- re-judge ---------------------------------------------------------------------------------------------


def uploaded_run() -> EvaluationRun:
    return make_staged_run(
        model=LanguageModelFactory(),
        release=make_release(),
        status=EvaluationRun.Status.FINISHED,
        source=EvaluationRun.Source.UPLOADED,
        stages=[Stage.DONE] * 3,
        outcomes={0: Outcome.PASSED, 1: Outcome.PASSED, 2: Outcome.FAILED},
    )


def test_a_group_maintainer_rejudges_passes_and_sees_who_asked(
    client, maintainer, django_capture_on_commit_callbacks
):
    run = uploaded_run()
    html = page(client, maintainer, f"/runs/{run.pk}/")
    assert "Re-judge passes" in html and "2 passes not yet re-judged conclusively" in html
    with django_capture_on_commit_callbacks(execute=False):
        assert client.post(f"/runs/{run.pk}/rejudge/").status_code == 302
    asked = TestResult.objects.filter(completion__run=run, rejudge_requested_at__isnull=False)
    assert asked.count() == 2 and set(asked.values_list("rejudged_by", flat=True)) == {maintainer.pk}
    after = client.get(f"/runs/{run.pk}/").content.decode()
    assert '<th scope="col">By</th>' in after and "<td>maya</td>" in after


def test_a_contributor_cannot_rejudge_nor_see_who_asked(client, contributor, maintainer):
    run = uploaded_run()
    html = page(client, contributor, f"/runs/{run.pk}/")
    assert "Re-judge passes" not in html
    assert client.post(f"/runs/{run.pk}/rejudge/").status_code == 403
    with pytest.raises(RejudgeError, match="only maintainers"):
        run_rejudge_passes(run=run, by=contributor)
    run_rejudge_passes(run=run, by=maintainer)
    after = client.get(f"/runs/{run.pk}/").content.decode()
    assert after.count('data-rejudge="waiting"') == 2
    assert '<th scope="col">By</th>' not in after and "maya" not in after


# --- model pages ------------------------------------------------------------------------------------------


def test_a_group_maintainer_reaches_the_model_pages_from_the_run_list(client, maintainer):
    model = LanguageModelFactory(key="m-one", management=LanguageModel.Management.MAINTAINER)
    assert 'href="/runs/models/"' in page(client, maintainer, "/runs/")
    listing = page(client, maintainer, "/runs/models/")
    assert "/runs/new/?model=m-one" in listing
    page(client, maintainer, "/runs/models/add/")
    page(client, maintainer, f"/runs/models/{model.pk}/edit/")
    page(client, maintainer, "/runs/new/?model=m-one")


def test_a_contributor_has_no_model_pages(client, contributor):
    model = LanguageModelFactory()
    assert 'href="/runs/models/"' not in page(client, contributor, "/runs/")
    for url in ("/runs/models/", "/runs/models/add/", f"/runs/models/{model.pk}/edit/", "/runs/new/"):
        assert client.get(url).status_code == 403, url


# --- who asked, tampering details, uploads ----------------------------------------------------------------


def test_a_group_maintainer_sees_who_asked_for_a_run_a_contributor_does_not(client, maintainer, contributor):
    run = EvaluationRunFactory(requester=UserFactory(username="rita"), source=EvaluationRun.Source.UPLOADED)
    assert "<dt>Requested by</dt><dd>rita</dd>" in page(client, maintainer, f"/runs/{run.pk}/")
    assert client.get(f"/api/v1/runs/{run.pk}/").json()["requester"] == "rita"
    assert "Requested by" not in page(client, contributor, f"/runs/{run.pk}/")
    assert client.get(f"/api/v1/runs/{run.pk}/").json()["requester"] is None


def test_a_group_maintainer_sees_tampering_details_a_contributor_does_not(client, maintainer, contributor):
    run = uploaded_run()
    item = run.completions.order_by("snippet__task_version__task__key", "snippet__ordinal")[2]
    TestResult.objects.filter(completion=item).update(category="harness_tampering", exception_message="")
    Completion.objects.filter(pk=item.pk).update(error=TAMPERING_REASON)
    assert "use of sys._getframe" in page(client, maintainer, f"/runs/{run.pk}/")
    assert "use of sys._getframe" not in page(client, contributor, f"/runs/{run.pk}/")


def test_a_group_maintainer_may_upload_for_a_maintainer_managed_model_a_contributor_may_not(
    maintainer, contributor
):
    model = LanguageModelFactory(key="m-managed", management=LanguageModel.Management.MAINTAINER)
    language_model_upload_check(model=model, user=maintainer)
    with pytest.raises(UploadNotAllowed, match="managed by the maintainers"):
        language_model_upload_check(model=model, user=contributor)
