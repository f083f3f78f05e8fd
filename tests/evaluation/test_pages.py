"""Run list, run detail with live progress, maintainer model pages, the upload form."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from evaluation.models import Completion, EvaluationRun, LanguageModel, TestResult
from evaluation.selectors.runs import run_progress
from tests.evaluation.fake_llm import FakeLLM
from tests.factories import (
    LanguageModelFactory,
    StaffUserFactory,
    UserFactory,
    full_predictions,
    jsonl,
    make_release,
    make_staged_run,
)

pytestmark = pytest.mark.django_db

Stage = Completion.Stage
Outcome = TestResult.Outcome
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def release():
    return make_release()


@pytest.fixture
def llm_server():
    """A local OpenAI-compatible server (canned answers) for connection tests."""
    server = FakeLLM().start()
    yield server
    server.stop()


@pytest.fixture
def staff():
    return StaffUserFactory(username="staff", password="pw")


@pytest.fixture
def member():
    return UserFactory(username="member", password="pw")


def run_ids(html: str) -> list[int]:
    return [int(x) for x in re.findall(r'href="/runs/(\d+)/"', html)]


# --- run list -------------------------------------------------------------------------------------------


def test_run_list_without_runs_shows_the_empty_state(client):
    html = client.get("/runs/").content.decode()
    assert "No runs yet" in html


def test_run_list_filters_change_the_rows(client, release):
    m1, m2 = LanguageModelFactory(key="m1"), LanguageModelFactory(key="m2")
    r_testing = make_staged_run(model=m1, release=release)
    r_done = make_staged_run(model=m1, release=release, status=EvaluationRun.Status.FINISHED)
    r_upload = make_staged_run(model=m2, release=release, source=EvaluationRun.Source.UPLOADED)
    other = make_release("r2", with_metadata_only=False)
    r_other = make_staged_run(model=m2, release=other)

    assert sorted(run_ids(client.get("/runs/").content.decode())) == sorted(
        [r_testing.pk, r_done.pk, r_upload.pk, r_other.pk]
    )
    assert sorted(run_ids(client.get("/runs/?model=m1").content.decode())) == [r_testing.pk, r_done.pk]
    assert run_ids(client.get("/runs/?status=finished").content.decode()) == [r_done.pk]
    assert run_ids(client.get("/runs/?source=uploaded").content.decode()) == [r_upload.pk]
    assert run_ids(client.get("/runs/?release=r2").content.decode()) == [r_other.pk]
    assert run_ids(client.get("/runs/?model=m2&release=r1").content.decode()) == [r_upload.pk]
    assert "No runs match these filters" in client.get("/runs/?model=m2&status=finished").content.decode()


def test_run_list_ignores_an_unknown_filter_value(client, release):
    run = make_staged_run(model=LanguageModelFactory(), release=release)
    response = client.get("/runs/?status=bogus")
    assert response.status_code == 200 and run_ids(response.content.decode()) == [run.pk]


def test_run_list_filters_are_a_get_form_with_htmx_that_keeps_real_urls(client, release):
    make_staged_run(model=LanguageModelFactory(), release=release)
    html = client.get("/runs/").content.decode()
    form = re.search(r'<form class="filters"[^>]*>', html).group(0)
    assert 'method="get"' in form and 'action="/runs/"' in form
    assert 'hx-get="/runs/"' in form and 'hx-push-url="true"' in form and 'hx-target="#run-table"' in form
    assert '<a href="?status=finished"' in html


def test_run_list_htmx_request_gets_only_the_table(client, release):
    run = make_staged_run(model=LanguageModelFactory(key="m1"), release=release)
    html = client.get("/runs/?model=m1", **HTMX).content.decode()
    assert html.lstrip().startswith('<div id="run-table">')
    assert "<html" not in html and run_ids(html) == [run.pk]


def test_run_list_shows_progress_per_run(client, release):
    make_staged_run(
        model=LanguageModelFactory(), release=release, stages=[Stage.DONE, Stage.DONE, Stage.TESTING]
    )
    assert re.search(r'class="num">\s*2 / 3\s*<', client.get("/runs/").content.decode())


# --- run detail -----------------------------------------------------------------------------------------


def test_run_detail_shows_counts_per_stage_and_outcome(client, release):
    run = make_staged_run(
        model=LanguageModelFactory(),
        release=release,
        stages=[Stage.DONE, Stage.DONE, Stage.PENDING_TEST],
        outcomes={0: Outcome.PASSED, 1: Outcome.FAILED},
        errors={1: "AssertionError: outputs differ"},
    )
    html = client.get(f"/runs/{run.pk}/").content.decode()
    assert re.search(r'data-stage="done"><th scope="row">Done</th><td class="num">2<', html)
    assert re.search(r'data-stage="pending_test"><th scope="row">[^<]+</th><td class="num">1<', html)
    assert re.search(r'data-outcome="passed"><th scope="row">Passed</th><td class="num">1<', html)
    assert re.search(r'data-outcome="failed"><th scope="row">Failed</th><td class="num">1<', html)
    assert "2 of 3</strong> items finished (66.7%)" in html
    assert 'style="width: 66.7%"' in html
    assert "AssertionError: outputs differ" in html
    assert "$0.0375" in html  # 3 completions at 0.0125 USD


def test_running_run_polls_every_two_seconds_and_final_run_does_not(client, release):
    run = make_staged_run(model=LanguageModelFactory(), release=release)
    html = client.get(f"/runs/{run.pk}/").content.decode()
    section = re.search(r'<section id="run-progress"[^>]*>', html).group(0)
    assert 'hx-trigger="every 2s"' in section and f'hx-get="/runs/{run.pk}/"' in section

    EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.FINISHED)
    html = client.get(f"/runs/{run.pk}/", HTTP_HX_TARGET="run-progress", **HTMX).content.decode()
    assert html.lstrip().startswith('<section id="run-progress"')
    assert "hx-trigger" not in html and "hx-get" not in html
    assert "Finished" in html


def test_progress_poll_gets_only_the_fragment(client, release):
    run = make_staged_run(model=LanguageModelFactory(), release=release)
    html = client.get(f"/runs/{run.pk}/", HTTP_HX_TARGET="run-progress", **HTMX).content.decode()
    assert html.lstrip().startswith('<section id="run-progress"') and "<html" not in html
    assert 'hx-trigger="every 2s"' in html


def test_errors_list_infrastructure_errors_with_their_reason(client, release):
    run = make_staged_run(
        model=LanguageModelFactory(),
        release=release,
        stages=[Stage.DONE, Stage.FAILED, Stage.DONE],
        outcomes={0: Outcome.INFRA_ERROR, 2: Outcome.PASSED},
        errors={0: "sandbox unavailable: bwrap exited 1", 1: "provider returned 500 three times"},
    )
    progress = run_progress(run=run)
    assert [(e.snippet, e.outcome, e.reason) for e in progress.errors] == [
        ("a1", "infra_error", "sandbox unavailable: bwrap exited 1"),
        ("a2", "", "provider returned 500 three times"),
    ]
    html = client.get(f"/runs/{run.pk}/").content.decode()
    assert "sandbox unavailable: bwrap exited 1" in html and "provider returned 500 three times" in html


def test_queue_position_counts_pending_items_of_earlier_runs_in_the_same_queue(release):
    model = LanguageModelFactory()
    earlier = make_staged_run(model=model, release=release, stages=[Stage.PENDING_TEST] * 3)
    make_staged_run(model=model, release=release, stages=[Stage.PENDING_GENERATION] * 3)  # other queue
    finished = make_staged_run(model=model, release=release, status=EvaluationRun.Status.FINISHED)
    mine = make_staged_run(model=model, release=release, stages=[Stage.PENDING_TEST, Stage.DONE, Stage.DONE])
    for run, minutes in ((earlier, 3), (finished, 2)):
        EvaluationRun.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(minutes=minutes))
    mine.refresh_from_db()
    progress = run_progress(run=mine)
    assert progress.queue_ahead == {"eval-cpu": 3}
    assert progress.queue_position == 3
    first = run_progress(run=EvaluationRun.objects.get(pk=earlier.pk))
    assert first.queue_position == 0


def test_eta_comes_from_the_runs_recent_throughput(release):
    run = make_staged_run(
        model=LanguageModelFactory(),
        release=release,
        stages=[Stage.DONE, Stage.DONE, Stage.PENDING_TEST],
        outcomes={0: Outcome.PASSED, 1: Outcome.PASSED},
    )
    now = timezone.now()
    EvaluationRun.objects.filter(pk=run.pk).update(started_at=now - timedelta(seconds=60))
    run.refresh_from_db()
    progress = run_progress(run=run, now=now)
    # 2 results in 60 s -> 1 remaining item takes about 30 s
    assert progress.run_rate_per_min == pytest.approx(2.0, rel=0.05)
    assert progress.eta_s == pytest.approx(30, rel=0.05)


def test_eta_is_unknown_without_recent_results(release):
    run = make_staged_run(model=LanguageModelFactory(), release=release)
    assert run_progress(run=run).eta_s is None


def test_run_detail_of_an_unknown_run_is_404(client):
    assert client.get("/runs/999999/").status_code == 404


def test_staff_see_cancel_and_can_cancel_a_running_run(client, staff, release):
    run = make_staged_run(model=LanguageModelFactory(), release=release)
    client.force_login(staff)
    html = client.get(f"/runs/{run.pk}/").content.decode()
    assert f'action="/runs/{run.pk}/cancel/"' in html and "csrfmiddlewaretoken" in html
    response = client.post(f"/runs/{run.pk}/cancel/")
    assert response.status_code == 302
    run.refresh_from_db()
    assert run.status == EvaluationRun.Status.CANCELLED and "staff" in run.status_reason
    assert set(Completion.objects.filter(run=run).values_list("stage", flat=True)) == {Stage.CANCELLED}


def test_staff_rerun_requeues_infrastructure_errors(client, staff, release):
    run = make_staged_run(
        model=LanguageModelFactory(),
        release=release,
        status=EvaluationRun.Status.FINISHED,
        stages=[Stage.DONE, Stage.DONE, Stage.DONE],
        outcomes={0: Outcome.INFRA_ERROR, 1: Outcome.PASSED, 2: Outcome.FAILED},
    )
    client.force_login(staff)
    assert "Re-run infrastructure errors" in client.get(f"/runs/{run.pk}/").content.decode()
    response = client.post(f"/runs/{run.pk}/rerun/", {"which": "infra"})
    assert response.status_code == 302
    stages = dict(Completion.objects.filter(run=run).values_list("snippet__name", "stage"))
    assert stages == {"a1": Stage.PENDING_TEST, "a2": Stage.DONE, "b1": Stage.DONE}


def test_visitors_see_no_run_actions_and_cannot_post_them(client, member, release):
    run = make_staged_run(model=LanguageModelFactory(), release=release)
    assert "Cancel run" not in client.get(f"/runs/{run.pk}/").content.decode()
    response = client.post(f"/runs/{run.pk}/cancel/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next=")
    client.force_login(member)
    assert client.post(f"/runs/{run.pk}/cancel/").status_code == 403
    assert client.post(f"/runs/{run.pk}/rerun/").status_code == 403
    run.refresh_from_db()
    assert run.status == EvaluationRun.Status.TESTING


def test_run_actions_refuse_get(client, staff, release):
    run = make_staged_run(model=LanguageModelFactory(), release=release)
    client.force_login(staff)
    assert client.get(f"/runs/{run.pk}/cancel/").status_code == 405


# --- maintainer model pages -----------------------------------------------------------------------------


STAFF_PAGES = ["/runs/models/", "/runs/models/add/"]


@pytest.mark.parametrize("url", STAFF_PAGES)
def test_model_pages_send_anonymous_users_to_login(client, url):
    response = client.get(url)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next=")


@pytest.mark.parametrize("url", STAFF_PAGES)
def test_model_pages_refuse_non_staff(client, member, url):
    client.force_login(member)
    assert client.get(url).status_code == 403


def test_model_edit_and_test_refuse_non_staff(client, member):
    model = LanguageModelFactory()
    client.force_login(member)
    assert client.get(f"/runs/models/{model.pk}/edit/").status_code == 403
    assert client.post(f"/runs/models/{model.pk}/test/").status_code == 403


MODEL_FORM = {
    "key": "gpt-test",
    "name": "GPT Test",
    "provider": "openai",
    "provider_model_id": "gpt-test-1",
    "base_url": "https://api.openai.com/v1",
    "api_key_env": "RCB_LLM_KEY_OPENAI",
    "request_options": '{"temperature": 0}',
    "max_concurrency": "4",
    "open_weights": "unknown",
    "active": "on",
}


def test_staff_add_a_model(client, staff):
    client.force_login(staff)
    response = client.post("/runs/models/add/", MODEL_FORM)
    assert response.status_code == 302
    model = LanguageModel.objects.get(key="gpt-test")
    assert (model.name, model.api_key_env, model.request_options) == (
        "GPT Test",
        "RCB_LLM_KEY_OPENAI",
        {"temperature": 0},
    )
    assert model.open_weights is None
    assert "GPT Test" in client.get("/runs/models/").content.decode()


@pytest.mark.parametrize(
    "pasted",
    [
        "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789",
        "sk-ant-api03-AbCdEf0123456789",
        "xai-0123456789abcdefABCDEF",
        "AIzaSyD0123456789abcdefghijklmno",
        "Bearer abc",
        "a8f5f167f44f4964e6c998dee827110c3b1e",
    ],
)
def test_model_form_rejects_an_api_key_pasted_into_api_key_env_and_does_not_echo_it(client, staff, pasted):
    client.force_login(staff)
    response = client.post("/runs/models/add/", {**MODEL_FORM, "api_key_env": pasted})
    assert response.status_code == 400
    html = response.content.decode()
    assert "This looks like an API key" in html
    assert pasted not in html
    assert not LanguageModel.objects.exists()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("key", "has space", "Use 1-100 letters"),
        ("key", "-leading", "Use 1-100 letters"),
        ("api_key_env", "openai key", "environment variable name"),
        ("base_url", "ftp://example.com", "must start with http:// or https://"),
        ("base_url", "not a url", "Enter a valid URL"),
        ("base_url", "https://user:secret@example.com/v1", "Do not put credentials in the URL"),
        ("request_options", "[1, 2]", "must be a JSON object"),
        ("request_options", '{"api_key": "x"}', "must not hold API keys"),
    ],
)
def test_model_form_validates_fields(client, staff, field, value, message):
    client.force_login(staff)
    response = client.post("/runs/models/add/", {**MODEL_FORM, field: value})
    assert response.status_code == 400
    assert message in response.content.decode()


def test_model_form_refuses_a_taken_name(client, staff):
    LanguageModelFactory(key="other", name="GPT Test")
    client.force_login(staff)
    response = client.post("/runs/models/add/", MODEL_FORM)
    assert response.status_code == 400
    assert "Language model with this Name already exists" in response.content.decode()


def test_staff_edit_a_model(client, staff):
    model = LanguageModelFactory(key="m1")
    client.force_login(staff)
    assert client.get(f"/runs/models/{model.pk}/edit/").status_code == 200
    response = client.post(f"/runs/models/{model.pk}/edit/", {**MODEL_FORM, "key": "m1", "name": "Renamed"})
    assert response.status_code == 302
    model.refresh_from_db()
    assert model.name == "Renamed" and model.base_url == "https://api.openai.com/v1"


def test_test_connection_reports_success_from_a_live_endpoint(client, staff, llm_server, monkeypatch):
    monkeypatch.setenv("RCB_LLM_KEY_TEST_FAKE", "secret-value")
    model = LanguageModelFactory(
        key="fake", name="Fake", base_url=llm_server.base_url, api_key_env="RCB_LLM_KEY_TEST_FAKE"
    )
    client.force_login(staff)
    html = client.get("/runs/models/").content.decode()
    assert f'hx-post="/runs/models/{model.pk}/test/"' in html
    response = client.post(f"/runs/models/{model.pk}/test/", **HTMX)
    assert response.status_code == 200
    body = response.content.decode()
    assert '<span class="badge ok">OK</span>' in body and "answered" in body and "<html" not in body
    assert len(llm_server.requests) == 1


def test_test_connection_reports_why_it_failed(client, staff, llm_server, monkeypatch):
    monkeypatch.delenv("RCB_LLM_KEY_TEST_MISSING", raising=False)
    model = LanguageModelFactory(
        key="fake", name="Fake", base_url=llm_server.base_url, api_key_env="RCB_LLM_KEY_TEST_MISSING"
    )
    client.force_login(staff)
    body = client.post(f"/runs/models/{model.pk}/test/", **HTMX).content.decode()
    assert '<span class="badge bad">Failed</span>' in body
    assert "RCB_LLM_KEY_TEST_MISSING is not set" in body
    assert llm_server.requests == []


def test_test_connection_without_htmx_redirects_with_a_message(client, staff, llm_server, monkeypatch):
    monkeypatch.setenv("RCB_LLM_KEY_TEST_FAKE", "secret-value")
    model = LanguageModelFactory(
        key="fake", name="Fake", base_url=llm_server.base_url, api_key_env="RCB_LLM_KEY_TEST_FAKE"
    )
    client.force_login(staff)
    response = client.post(f"/runs/models/{model.pk}/test/", follow=True)
    assert response.redirect_chain[-1][0] == "/runs/models/"
    assert "Fake: answered" in response.content.decode()


# --- upload form ----------------------------------------------------------------------------------------


def test_upload_page_needs_login(client):
    response = client.get("/runs/upload/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next=")


def test_upload_form_creates_a_run_and_lands_on_its_page(client, member, release):
    LanguageModelFactory(key="m1", self_reported=True, owner=member)
    client.force_login(member)
    response = client.post(
        "/runs/upload/",
        {
            "model": "m1",
            "release": "r1",
            "template": "rcb-v2",
            "file": SimpleUploadedFile("preds.jsonl", full_predictions()),
        },
    )
    run = EvaluationRun.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}/"
    assert run.requester == member and run.source == EvaluationRun.Source.UPLOADED
    page = client.get(response["Location"]).content.decode()
    assert "3 of 3 snippets" in page and 'hx-trigger="every 2s"' in page
    assert "uploaded predictions: no generation" in page


def test_upload_form_with_a_new_model_creates_it(client, member, release):
    client.force_login(member)
    response = client.post(
        "/runs/upload/",
        {
            "model": "",
            "new_model_key": "my-model",
            "new_model_name": "My Model",
            "release": "r1",
            "template": "rcb-v2",
            "file": SimpleUploadedFile("p.jsonl", jsonl({"task": "alpha", "snippet": "a1", "code": "x"})),
        },
    )
    assert response.status_code == 302
    run = EvaluationRun.objects.get()
    assert run.model.key == "my-model"
    assert "1 of 3 snippets" in client.get(response["Location"]).content.decode()


def test_upload_form_shows_every_line_error_and_keeps_its_values(client, member, release):
    client.force_login(member)
    data = jsonl("oops", {"task": "alpha", "snippet": "nope", "code": "x"})
    response = client.post(
        "/runs/upload/",
        {
            "model": "",
            "new_model_key": "kept-key",
            "new_model_name": "Kept Name",
            "release": "r1",
            "template": "rcb-2025",
            "file": SimpleUploadedFile("p.jsonl", data),
        },
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert (
        "line 1: not valid JSON" in html
        and "line 2: unknown snippet &#x27;nope&#x27; in task &#x27;alpha&#x27;" in html
    )
    assert 'value="kept-key"' in html and 'value="Kept Name"' in html
    assert re.search(r'<option value="rcb-2025" selected>', html)
    assert not EvaluationRun.objects.exists() and not LanguageModel.objects.exists()


def test_upload_form_needs_a_model_or_a_new_one(client, member, release):
    client.force_login(member)
    response = client.post(
        "/runs/upload/",
        {"release": "r1", "template": "rcb-v2", "file": SimpleUploadedFile("p.jsonl", full_predictions())},
    )
    assert response.status_code == 400
    assert "Choose a model above or give the new model" in response.content.decode()


def test_upload_form_refuses_a_file_over_the_limit_before_reading_it(client, member, release, settings):
    settings.RCB_UPLOAD_MAX_BYTES = 100
    LanguageModelFactory(key="m1", self_reported=True, owner=member)
    client.force_login(member)
    response = client.post(
        "/runs/upload/",
        {
            "model": "m1",
            "release": "r1",
            "template": "rcb-v2",
            "file": SimpleUploadedFile("p.jsonl", b"x" * 101),
        },
    )
    assert response.status_code == 400
    assert "The file is too large" in response.content.decode()


# --- recovery ---------------------------------------------------------------------------------------------


def test_the_run_page_lists_what_the_reaper_did_and_names_workers_to_maintainers_only(client, release, staff):
    from evaluation.models import RunEvent
    from evaluation.services import lease_acquire, leases_reap

    run = make_staged_run(model=LanguageModelFactory(key="m1"), release=release)
    lost = run.completions.first()
    lease_acquire(
        completion_id=lost.pk,
        owner="gpu-7:<b>41</b>:msg",
        stage_from=Stage.PENDING_TEST,
        stage_to=Stage.TESTING,
        seconds=1,
    )
    leases_reap(now=timezone.now() + timedelta(seconds=30))
    event = RunEvent.objects.get(run=run)
    assert (event.kind, event.completion_id) == ("requeued", lost.pk)

    section = lambda html: html.split('id="run-recovery"', 1)[1].split("</section>", 1)[0]  # noqa: E731
    public = section(client.get(f"/runs/{run.pk}/").content.decode())
    assert '<strong data-recovery="requeued">1</strong> item re-queued after a lost lease' in public
    assert public.count('<tr data-event="requeued">') == 1
    assert lost.snippet.name in public and "attempt 1 of 3 lost while testing" in public
    assert "gpu-7" not in public and "Worker</th>" not in public
    client.force_login(staff)
    maintainer = section(
        client.get(f"/runs/{run.pk}/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="run-progress").content.decode()
    )
    assert "Worker</th>" in maintainer and "gpu-7:&lt;b&gt;41&lt;/b&gt;:msg" in maintainer


def test_a_run_without_recoveries_says_so(client, release):
    run = make_staged_run(model=LanguageModelFactory(key="m1"), release=release)
    html = client.get(f"/runs/{run.pk}/").content.decode()
    assert "Nothing to recover: no worker lost an item of this run so far." in html
