"""POST /api/v1/runs/upload/ with ``Prefer: respond-async``: 202 at once, a worker checks the file exactly as
a synchronous upload is checked, and the upload's receipt says the run it started or every error
(``evaluation.services.received_uploads``)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import OperationalError
from django.utils import timezone

from evaluation.models import Completion, EvaluationRun, LanguageModel, PredictionsUpload
from evaluation.services import received_uploads
from evaluation.services.received_uploads import predictions_upload_check, uploads_resend_waiting
from tests.conftest import wait_for
from tests.factories import LanguageModelFactory, MaintainerFactory, UserFactory, jsonl
from tests.factories.builders import token_api

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_throttle_cache")]

URL = "/api/v1/runs/upload/"
ASYNC = {"HTTP_PREFER": "respond-async"}
GOOD = jsonl(
    {"task": "alpha", "snippet": "a1", "code": "x = 1"}, {"task": "alpha", "snippet": "a2", "code": "y"}
)
BAD = jsonl(
    "{nope", {"task": "x", "snippet": "a1", "code": ""}, {"task": "alpha", "snippet": "a1", "code": ""}
)


@pytest.fixture
def submitter():
    return UserFactory(username="submitter")


@pytest.fixture
def api(submitter):
    return token_api(submitter)


def payload(data: bytes, **fields) -> dict:
    return {"model": "m1", "release": "r1", "file": SimpleUploadedFile("p.jsonl", data), **fields}


def post(api, data: bytes, django_capture_on_commit_callbacks, headers=ASYNC, **fields):
    """The upload's answer, and the worker's messages it sent once it committed (not run: the test checks)."""
    with django_capture_on_commit_callbacks() as sent:
        response = api.post(URL, payload(data, **fields), format="multipart", **headers)
    return response, sent


def test_the_answer_is_202_with_where_to_ask_and_nothing_is_created_before_a_worker_checks(
    api, submitter, release, django_capture_on_commit_callbacks
):
    LanguageModelFactory(key="m1", self_reported=True, owner=submitter)
    response, sent = post(api, GOOD, django_capture_on_commit_callbacks)
    assert response.status_code == 202, response.content
    body = response.json()
    upload = PredictionsUpload.objects.get()
    assert body["id"] == upload.pk and body["status"] == "received" and body["run"] is None
    assert response["Location"] == body["url"] == f"http://testserver/api/v1/runs/uploads/{upload.pk}/"
    assert response["Preference-Applied"] == "respond-async"
    assert bytes(upload.data) == GOOD and len(sent) == 1
    assert not EvaluationRun.objects.exists()
    assert api.get(body["url"]).json()["status"] == "received"

    checked = predictions_upload_check(upload_id=upload.pk)
    run = EvaluationRun.objects.get()
    assert checked.status == "started" and checked.run == run and bytes(checked.data) == b""
    receipt = api.get(body["url"]).json()
    assert receipt["status"] == "started" and receipt["errors"] == [] and receipt["checked_at"]
    assert receipt["run"]["id"] == run.pk and receipt["run"]["items"] == 2
    assert receipt["run"]["url"] == f"http://testserver/runs/{run.pk}/"
    assert run.requester == submitter and run.source == "uploaded" and Completion.objects.count() == 2


@pytest.mark.parametrize(
    ("data", "fields"),
    [
        (BAD, {}),
        (GOOD, {"model": "theirs"}),  # a model another user owns
        (GOOD, {"model": "new one", "model_name": ""}),  # a new model with a bad key and no name
        (b"\n\n", {}),
    ],
)
def test_a_refusal_says_exactly_what_the_synchronous_upload_says_and_creates_nothing(
    api, submitter, release, django_capture_on_commit_callbacks, data, fields
):
    LanguageModelFactory(key="m1", self_reported=True, owner=submitter)
    LanguageModelFactory(key="theirs", self_reported=True, owner=UserFactory())
    synchronous = api.post(URL, payload(data, **fields), format="multipart")
    assert synchronous.status_code == 400
    response, _ = post(api, data, django_capture_on_commit_callbacks, **fields)
    assert response.status_code == 202
    upload = predictions_upload_check(upload_id=response.json()["id"])
    receipt = api.get(response["Location"]).json()
    assert receipt["status"] == "refused" and receipt["run"] is None
    assert receipt["errors"] == synchronous.json()["errors"] and receipt["errors"]
    assert not EvaluationRun.objects.exists() and bytes(upload.data) == b""
    assert set(LanguageModel.objects.values_list("key", flat=True)) == {"m1", "theirs"}


def test_what_the_request_can_tell_is_refused_at_once(
    api, submitter, release, settings, django_capture_on_commit_callbacks
):
    settings.RCB_UPLOAD_MAX_BYTES = 10
    cases = [
        ({}, {"HTTP_IDEMPOTENCY_KEY": "has space"}, "Idempotency-Key: must be 1 to 128 visible ASCII"),
        ({"release": "nope"}, {}, "release: "),
        ({}, {}, "the file is too large"),
    ]
    for fields, headers, error in cases:
        response, sent = post(
            api, GOOD, django_capture_on_commit_callbacks, headers={**ASYNC, **headers}, **fields
        )
        assert response.status_code == 400 and response.json()["errors"][0].startswith(error), (
            response.content
        )
        assert not sent
    assert not PredictionsUpload.objects.exists()


def test_a_retry_with_the_key_is_the_same_upload_and_another_file_with_it_is_422(
    api, submitter, release, django_capture_on_commit_callbacks
):
    LanguageModelFactory(key="m1", self_reported=True, owner=submitter)
    headers = {**ASYNC, "HTTP_IDEMPOTENCY_KEY": "k-1"}
    first, _ = post(api, GOOD, django_capture_on_commit_callbacks, headers=headers)
    again, sent = post(api, GOOD, django_capture_on_commit_callbacks, headers=headers)
    assert (first.status_code, again.status_code) == (202, 200) and not sent
    assert again["Idempotent-Replayed"] == "true" and again.json()["id"] == first.json()["id"]
    predictions_upload_check(upload_id=first.json()["id"])
    checked, _ = post(api, GOOD, django_capture_on_commit_callbacks, headers=headers)
    assert (
        checked.json()["status"] == "started"
        and checked.json()["run"]["id"] == EvaluationRun.objects.get().pk
    )
    other, _ = post(api, BAD, django_capture_on_commit_callbacks, headers=headers)
    assert other.status_code == 422
    assert other.json()["errors"] == [
        f"Idempotency-Key: this idempotency key was already used for another upload "
        f"(run {EvaluationRun.objects.get().pk}); use a new key for a new file"
    ]
    assert PredictionsUpload.objects.count() == 1


def test_a_second_delivery_of_the_check_creates_nothing_more(
    api, submitter, release, django_capture_on_commit_callbacks
):
    LanguageModelFactory(key="m1", self_reported=True, owner=submitter)
    response, _ = post(api, GOOD, django_capture_on_commit_callbacks)
    first = predictions_upload_check(upload_id=response.json()["id"])
    second = predictions_upload_check(upload_id=response.json()["id"])
    assert first.run == second.run and EvaluationRun.objects.count() == 1 and Completion.objects.count() == 2
    assert predictions_upload_check(upload_id=10**9) is None


def test_an_upload_is_its_submitters_and_maintainers_to_see(
    api, submitter, release, client, django_capture_on_commit_callbacks
):
    LanguageModelFactory(key="m1", self_reported=True, owner=submitter)
    response, _ = post(api, GOOD, django_capture_on_commit_callbacks)
    url = response["Location"]
    assert token_api(UserFactory()).get(url).status_code == 404
    assert token_api(UserFactory()).get(url).json() == {
        "detail": f"no upload {response.json()['id']} of yours."
    }
    assert client.get(url).status_code == 401
    maintainer = MaintainerFactory()
    client.force_login(maintainer)
    seen = client.get(url, HTTP_ACCEPT="application/json")
    assert seen.status_code == 200 and seen.json()["id"] == response.json()["id"]
    assert "no-cache" in seen["Cache-Control"] and "private" in seen["Cache-Control"]


@pytest.mark.parametrize(
    ("prefer", "expected"),
    [
        ("respond-async", 202),
        ("Respond-Async; foo=1", 202),
        ("wait=5, respond-async", 202),
        ("return=minimal", 201),
        ("", 201),
    ],
)
def test_the_preference_is_read_as_rfc_7240_writes_it(
    api, submitter, release, django_capture_on_commit_callbacks, prefer, expected
):
    LanguageModelFactory(key="m1", self_reported=True, owner=submitter)
    response, _ = post(api, GOOD, django_capture_on_commit_callbacks, headers={"HTTP_PREFER": prefer})
    assert response.status_code == expected, response.content


def test_the_reaper_sends_again_what_waits_too_long_and_only_that(
    api, submitter, release, settings, django_capture_on_commit_callbacks
):
    LanguageModelFactory(key="m1", self_reported=True, owner=submitter)
    waiting, _ = post(api, GOOD, django_capture_on_commit_callbacks)
    done, _ = post(
        api, GOOD, django_capture_on_commit_callbacks, headers={**ASYNC, "HTTP_IDEMPOTENCY_KEY": "other"}
    )
    predictions_upload_check(upload_id=done.json()["id"])
    later = timezone.now() + dt.timedelta(seconds=settings.RCB_UPLOAD_RESEND_S + 1)
    assert uploads_resend_waiting() == []
    with django_capture_on_commit_callbacks():
        assert uploads_resend_waiting(now=later) == [waiting.json()["id"]]
    assert uploads_resend_waiting(now=later) == []  # once per interval
    assert PredictionsUpload.objects.get(pk=waiting.json()["id"]).sent_at == later


def test_a_check_that_keeps_ending_in_the_portals_own_error_fails_the_upload_and_says_so(
    api, submitter, release, settings, monkeypatch, django_capture_on_commit_callbacks
):
    """A fault of the portal's (here the database gone mid-check) is not the file's: the check is tried again,
    and after ``RCB_UPLOAD_MAX_CHECKS`` the receipt says the portal failed, instead of waiting for ever."""
    settings.RCB_UPLOAD_MAX_CHECKS = 2
    LanguageModelFactory(key="m1", self_reported=True, owner=submitter)
    response, _ = post(api, GOOD, django_capture_on_commit_callbacks)
    upload_id = response.json()["id"]

    def database_gone(**kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(received_uploads, "predictions_upload", database_gone)
    for _ in range(2):
        with pytest.raises(OperationalError):
            predictions_upload_check(upload_id=upload_id)
        assert api.get(response["Location"]).json()["status"] == "received"
    predictions_upload_check(upload_id=upload_id)
    receipt = api.get(response["Location"]).json()
    assert receipt["status"] == "failed" and receipt["run"] is None and receipt["checked_at"]
    assert receipt["errors"] == [
        "file: the portal could not check this upload: its 2 checks all ended in an error on the portal's "
        "side, not in a problem found in the file; nothing was created. Send the file again later, or tell "
        f"the portal's maintainers (upload {upload_id})."
    ]
    assert EvaluationRun.objects.count() == 0 and PredictionsUpload.objects.get().data == b""
    # Given up: neither another delivery nor the reaper tries it again.
    assert predictions_upload_check(upload_id=upload_id).status == "failed"
    later = timezone.now() + dt.timedelta(seconds=settings.RCB_UPLOAD_RESEND_S + 1)
    assert uploads_resend_waiting(now=later) == []


def test_a_check_that_failed_once_and_then_works_starts_the_run(
    api, submitter, release, monkeypatch, django_capture_on_commit_callbacks
):
    LanguageModelFactory(key="m1", self_reported=True, owner=submitter)
    response, _ = post(api, GOOD, django_capture_on_commit_callbacks)
    real = received_uploads.predictions_upload
    calls = []

    def flaky(**kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise OperationalError("server closed the connection unexpectedly")
        return real(**kwargs)

    monkeypatch.setattr(received_uploads, "predictions_upload", flaky)
    with pytest.raises(OperationalError):
        predictions_upload_check(upload_id=response.json()["id"])
    assert predictions_upload_check(upload_id=response.json()["id"]).status == "started"
    assert api.get(response["Location"]).json()["run"]["id"] == EvaluationRun.objects.get().pk


@pytest.mark.slow
def test_a_worker_checks_an_upload_and_its_run_starts(start_worker, release):
    """Over the real broker: the request's message reaches a ``site`` worker, which starts the run."""
    submitter = UserFactory(username="async-submitter")
    LanguageModelFactory(key="m1", self_reported=True, owner=submitter)
    start_worker("site")
    api = token_api(submitter)
    response = api.post(URL, payload(GOOD), format="multipart", **ASYNC)
    assert response.status_code == 202, response.content
    wait_for(
        lambda: api.get(response["Location"]).json()["status"] != "received", timeout=60, what="the check"
    )
    receipt = api.get(response["Location"]).json()
    assert receipt["status"] == "started" and receipt["run"]["id"] == EvaluationRun.objects.get().pk
