"""POST /api/v1/runs/upload/: token auth, throttled, 201 with the run or 400 with every error."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient
from rest_framework.throttling import ScopedRateThrottle

from evaluation.models import Completion, EvaluationRun, LanguageModel
from tests.factories import (
    LanguageModelFactory,
    UserFactory,
    full_predictions,
    jsonl,
)
from tests.factories.builders import ADVERSARIAL_LINES, token_api

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_throttle_cache")]

URL = "/api/v1/runs/upload/"


@pytest.fixture
def submitter():
    return UserFactory(username="submitter", password="pw")


@pytest.fixture
def api(submitter) -> APIClient:
    return token_api(submitter)


def payload(data: bytes, **fields) -> dict:
    return {"model": "m1", "release": "r1", "file": SimpleUploadedFile("p.jsonl", data), **fields}


def test_upload_with_a_token_creates_a_run_and_returns_its_id_and_url(api, submitter, release):
    LanguageModelFactory(key="m1", self_reported=True, owner=submitter)
    response = api.post(
        URL, payload(jsonl({"task": "alpha", "snippet": "a1", "code": "x = 1"})), format="multipart"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    run = EvaluationRun.objects.get()
    assert body["id"] == run.pk
    assert body["url"] == f"http://testserver/runs/{run.pk}/"
    assert body["items"] == 1
    assert body["coverage"] == {"covered_snippets": 1, "release_snippets": 3}
    assert run.requester == submitter and run.source == "uploaded" and run.verification == "uploaded"
    assert run.template == "rcb-v2"
    assert Completion.objects.filter(run=run).count() == 1


def test_upload_returns_400_with_every_line_error(api, submitter, release):
    LanguageModelFactory(key="m1", self_reported=True, owner=submitter)
    data = jsonl(
        "{nope", {"task": "x", "snippet": "a1", "code": ""}, {"task": "alpha", "snippet": "a1", "code": ""}
    )
    response = api.post(URL, payload(data), format="multipart")
    assert response.status_code == 400
    assert response.json()["errors"] == [
        "line 1: not valid JSON (Expecting property name enclosed in double quotes at column 2)",
        "line 2: unknown task 'x' in release 'r1'",
    ]
    assert not EvaluationRun.objects.exists()


def test_upload_names_missing_fields_of_the_request(api, release):
    response = api.post(URL, {"release": "r1"}, format="multipart")
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert "model: This field is required." in errors and "file: No file was submitted." in errors


def test_upload_rejects_unknown_release_and_unknown_model_without_a_name(api, submitter, release):
    LanguageModelFactory(key="m1", self_reported=True, owner=submitter)
    response = api.post(URL, payload(full_predictions(), release="nope"), format="multipart")
    assert response.json() == {"errors": ["release: unknown release 'nope'"]}
    response = api.post(URL, payload(full_predictions(), model="ghost"), format="multipart")
    assert response.status_code == 400
    assert response.json() == {
        "errors": ["model_name: no model has the key 'ghost': give a display name to create it"]
    }
    assert not LanguageModel.objects.filter(key="ghost").exists()


def test_upload_checks_a_new_models_key_and_name_and_the_file_together(api, release):
    LanguageModelFactory(key="m1", name="Taken")
    response = api.post(URL, payload(jsonl("{"), model="bad key", model_name="Taken"), format="multipart")
    assert response.status_code == 400
    assert response.json()["errors"] == [
        "model: use 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit (e.g. gpt-4.1)",
        "model_name: a model named 'Taken' exists with another key",
        "line 1: not valid JSON (Expecting property name enclosed in double quotes at column 2)",
    ]
    assert LanguageModel.objects.count() == 1


def test_upload_creates_a_new_model_when_given_its_name(api, release):
    response = api.post(
        URL, payload(full_predictions(), model="fresh", model_name="Fresh"), format="multipart"
    )
    assert response.status_code == 201
    assert LanguageModel.objects.get(key="fresh").name == "Fresh"
    assert response.json()["items"] == 3


def test_upload_rejects_a_file_over_the_limit(api, submitter, release, settings):
    settings.RCB_UPLOAD_MAX_BYTES = 1024 * 1024
    LanguageModelFactory(key="m1", self_reported=True, owner=submitter)
    response = api.post(URL, payload(b"x" * (2 * 1024 * 1024)), format="multipart")
    assert response.status_code == 400
    assert response.json()["errors"] == ["the file is too large (2 MB); the limit is 1 MB"]


@pytest.mark.parametrize("case", ADVERSARIAL_LINES)
def test_adversarial_lines_get_400_with_one_bounded_error_and_nothing_is_stored(api, release, case):
    line, message = ADVERSARIAL_LINES[case]
    data = jsonl({"task": "alpha", "snippet": "a1", "code": "x"}) + line + b"\n"
    response = api.post(URL, payload(data, model="fresh", model_name="Fresh"), format="multipart")
    assert response.status_code == 400
    (error,) = response.json()["errors"]
    assert error.startswith(f"line 2: {message}") and len(response.content) < 1000
    assert not EvaluationRun.objects.exists() and not LanguageModel.objects.exists()


def test_an_invalid_template_is_not_echoed(api, submitter, release):
    LanguageModelFactory(key="m1", self_reported=True, owner=submitter)
    response = api.post(URL, payload(full_predictions(), template="x" * 100_000), format="multipart")
    assert response.status_code == 400
    assert response.json() == {"errors": ["template: choose one of rcb-2025, rcb-v2"]}


def test_unauthenticated_upload_is_401(release):
    LanguageModelFactory(key="m1")
    response = APIClient().post(URL, payload(full_predictions()), format="multipart")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert not EvaluationRun.objects.exists()


def test_a_bad_token_is_401(release):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    assert client.post(URL, payload(full_predictions()), format="multipart").status_code == 401


def test_a_logged_in_session_without_a_token_is_refused(client, submitter, release):
    client.force_login(submitter)
    assert client.post(URL, payload(full_predictions())).status_code == 401


def test_uploads_are_throttled_per_user_with_429_after_the_limit(api, submitter, release, monkeypatch):
    monkeypatch.setattr(ScopedRateThrottle, "THROTTLE_RATES", {"uploads": "2/hour"})
    LanguageModelFactory(key="m1", self_reported=True, owner=submitter)
    statuses = [api.post(URL, payload(full_predictions()), format="multipart").status_code for _ in range(3)]
    assert statuses == [201, 201, 429]
    assert EvaluationRun.objects.count() == 2


def test_upload_rate_comes_from_the_settings():
    from django.conf import settings

    assert settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["uploads"]
    assert (
        ScopedRateThrottle.THROTTLE_RATES["uploads"]
        == settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["uploads"]
    )


def test_upload_endpoint_is_in_the_openapi_schema(client):
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/json").content.decode()
    assert "/api/v1/runs/upload/" in schema


def test_a_retry_with_the_same_idempotency_key_returns_the_first_run_and_creates_nothing(api, release):
    data = jsonl(
        {"task": "alpha", "snippet": "a1", "code": "x = 1"}, {"task": "alpha", "snippet": "a2", "code": "y"}
    )
    fields = {"model_name": "Retried", "model": "retried"}
    first = api.post(URL, payload(data, **fields), format="multipart", HTTP_IDEMPOTENCY_KEY="k-1")
    assert first.status_code == 201, first.content
    again = api.post(URL, payload(data, **fields), format="multipart", HTTP_IDEMPOTENCY_KEY="k-1")
    assert again.status_code == 200, again.content
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]
    assert EvaluationRun.objects.count() == 1 and Completion.objects.count() == 2
    assert LanguageModel.objects.filter(key="retried").count() == 1
    # Another key is another upload.
    other = api.post(URL, payload(data, **fields), format="multipart", HTTP_IDEMPOTENCY_KEY="k-2")
    assert other.status_code == 201 and other.json()["id"] != first.json()["id"]


def test_an_idempotency_key_reused_for_another_file_is_422_and_creates_nothing(api, submitter, release):
    LanguageModelFactory(key="m1", self_reported=True, owner=submitter)
    first = api.post(
        URL, payload(jsonl({"task": "alpha", "snippet": "a1", "code": "x = 1"})), HTTP_IDEMPOTENCY_KEY="key"
    )
    assert first.status_code == 201, first.content
    reused = api.post(
        URL, payload(jsonl({"task": "alpha", "snippet": "a1", "code": "x = 2"})), HTTP_IDEMPOTENCY_KEY="key"
    )
    assert reused.status_code == 422
    assert reused.json()["errors"] == [
        f"Idempotency-Key: this idempotency key was already used for another upload (run {first.json()['id']}); "
        "use a new key for a new file"
    ]
    assert EvaluationRun.objects.count() == 1


def test_idempotency_keys_are_per_submitter(release):
    data = jsonl({"task": "alpha", "snippet": "a1", "code": "x = 1"})
    ids = []
    for name in ("ann", "bob"):
        user = UserFactory(username=name)
        LanguageModelFactory(key=f"m-{name}", self_reported=True, owner=user)
        response = token_api(user).post(
            URL, payload(data, model=f"m-{name}"), format="multipart", HTTP_IDEMPOTENCY_KEY="shared"
        )
        assert response.status_code == 201, response.content
        ids.append(response.json()["id"])
    assert len(set(ids)) == 2


@pytest.mark.parametrize("key", ["has space", "x" * 129, "ünïcode"])
def test_a_malformed_idempotency_key_is_400_naming_the_header(api, submitter, release, key):
    LanguageModelFactory(key="m1", self_reported=True, owner=submitter)
    response = api.post(
        URL, payload(jsonl({"task": "alpha", "snippet": "a1", "code": "x"})), HTTP_IDEMPOTENCY_KEY=key
    )
    assert response.status_code == 400
    assert response.json()["errors"] == [
        "Idempotency-Key: must be 1 to 128 visible ASCII characters (a UUID, say)"
    ]
    assert not EvaluationRun.objects.exists()
