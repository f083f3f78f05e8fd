"""Uploaded predictions: the one upload service (every error names its line; nothing is half-stored) and the
web form in front of it (adversarial files never crash it, errors are bounded, posts are throttled)."""

from __future__ import annotations

import pytest
from django.core.files.base import ContentFile
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import IntegrityError
from rest_framework.throttling import SimpleRateThrottle

from contributions.models import Snippet
from evaluation.models import Completion, EvaluationRun, LanguageModel
from evaluation.services.uploads import (
    IdempotencyKeyReused,
    NewModel,
    PredictionsInvalid,
    predictions_parse,
    predictions_upload,
    upload_create_once,
    upload_limits,
)
from tests.factories import LanguageModelFactory, UserFactory, full_predictions, jsonl
from tests.factories.builders import ADVERSARIAL_LINES, token_api

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_throttle_cache")]

OK = {"task": "alpha", "snippet": "a1", "completion_idx": 0, "code": "return 1"}


def errors_of(data: bytes, release) -> list[str]:
    return predictions_parse(data=data, release=release).errors


def upload(release, data: bytes, **kwargs):
    kwargs.setdefault("template", "rcb-v2")
    if "requester" not in kwargs:
        kwargs["requester"] = UserFactory()
    if "new_model" not in kwargs and "model" not in kwargs:
        kwargs["model"] = LanguageModelFactory(self_reported=True, owner=kwargs["requester"])
    return predictions_upload(release=release, file=ContentFile(data), **kwargs).run


# --- checking a file against a release ----------------------------------------------------------------------


def test_valid_file_parses_every_line_with_code_or_response(release):
    data = jsonl(OK, {"task": "alpha", "snippet": "a2", "completion_idx": 0, "response": "```python\nx\n```"})
    parsed = predictions_parse(data=data, release=release)
    assert parsed.errors == [] and parsed.ok
    assert [(p.line, p.snippet, p.code, p.response) for p in parsed.predictions] == [
        (1, "a1", "return 1", None),
        (2, "a2", None, "```python\nx\n```"),
    ]


def test_missing_snippets_are_allowed_and_reported_as_coverage(release):
    parsed = predictions_parse(data=jsonl(OK), release=release)
    assert parsed.ok
    assert parsed.covered_snippets == 1 and parsed.total_snippets == 3
    assert parsed.missing == [("alpha", "a2"), ("beta", "b1")]


def test_collects_every_error_not_just_the_first(release):
    data = jsonl(
        "not json",
        {"snippet": "a1", "code": "x"},
        {"task": "nope", "snippet": "a1", "code": "x"},
        {"task": "alpha", "snippet": "zzz", "code": "x"},
        OK,
        OK,
    )
    assert errors_of(data, release) == [
        "line 1: not valid JSON (Expecting value at column 1)",
        "line 2: missing field 'task'",
        "line 3: unknown task 'nope' in release 'r1'",
        "line 4: unknown snippet 'zzz' in task 'alpha'",
        "line 6: duplicate of line 5 (task, snippet, completion_idx)",
    ]


def test_blank_lines_are_skipped_but_line_numbers_stay_true(release):
    data = jsonl(OK, "", {"task": "alpha", "snippet": "bad", "code": "x"})
    assert errors_of(data, release) == ["line 3: unknown snippet 'bad' in task 'alpha'"]


def test_task_without_files_in_the_release_cannot_be_tested(release):
    errors = errors_of(jsonl({"task": "gamma", "snippet": "g1", "code": "x"}), release)
    assert errors == [
        "line 1: task 'gamma' in release 'r1' has no task files (published metadata only), so it cannot be tested"
    ]


def test_limits_come_from_the_settings(settings):
    assert upload_limits().max_bytes == 20 * 1024 * 1024
    settings.RCB_UPLOAD_MAX_LINES = 2
    settings.RCB_UPLOAD_MAX_CODE_BYTES = 10
    settings.RCB_UPLOAD_MAX_COMPLETIONS = 3
    limits = upload_limits()
    assert (limits.max_lines, limits.max_code_bytes, limits.max_completions) == (2, 10, 3)


def test_per_completion_and_line_count_limits_are_applied(release, settings):
    settings.RCB_UPLOAD_MAX_CODE_BYTES = 8
    settings.RCB_UPLOAD_MAX_COMPLETIONS = 2
    data = jsonl({**OK, "code": "123456789"}, {**OK, "completion_idx": 2})
    assert errors_of(data, release) == [
        "line 1: field 'code' is too large (9 bytes); the limit is 8 bytes",
        "line 2: field 'completion_idx' must be an integer from 0 to 1, got '2'",
    ]
    settings.RCB_UPLOAD_MAX_LINES = 1
    assert errors_of(data, release) == ["the file has 2 lines; the limit is 1"]


def test_error_list_is_capped_with_a_count_of_the_rest(release):
    errors = errors_of(jsonl(*(["nope"] * 250)), release)
    assert len(errors) == 51
    assert errors[-1] == "... and 200 more errors"


# --- the upload service ----------------------------------------------------------------------------------


def test_upload_creates_an_uploaded_run_with_one_item_per_prediction(release):
    user = UserFactory(username="sub", password="pw")
    model = LanguageModelFactory(self_reported=True, owner=user)
    run = upload(release, full_predictions(), model=model, requester=user)
    assert run.source == EvaluationRun.Source.UPLOADED
    assert run.verification == EvaluationRun.Verification.UPLOADED
    assert run.requester == user and run.release == release and run.model == model
    items = Completion.objects.filter(run=run).order_by("snippet__name")
    assert [(c.snippet.name, c.stage, c.code) for c in items] == [
        ("a1", Completion.Stage.PENDING_TEST, "return 1"),
        ("a2", Completion.Stage.PENDING_TEST, "return 1"),
        ("b1", Completion.Stage.PENDING_TEST, "return 1"),
    ]


def test_upload_extracts_code_from_a_response_with_the_template(release):
    run = upload(
        release, jsonl({"task": "alpha", "snippet": "a1", "response": "Sure:\n```python\ny = 2\n```\n"})
    )
    item = Completion.objects.get(run=run)
    assert item.code.strip() == "y = 2" and item.code_extracted


def test_uploaded_code_is_reindented_to_its_snippet_like_the_cli(release):
    Snippet.objects.filter(name="a1").update(indent=8)
    run = upload(release, jsonl({"task": "alpha", "snippet": "a1", "code": "x = 1\nif x:\n    y = 2"}))
    assert Completion.objects.get(run=run).code == "        x = 1\n        if x:\n            y = 2"


def test_invalid_upload_raises_with_every_error_and_creates_nothing(release):
    with pytest.raises(PredictionsInvalid) as info:
        upload(release, jsonl("x", OK, OK))
    assert info.value.errors == [
        "line 1: not valid JSON (Expecting value at column 1)",
        "line 3: duplicate of line 2 (task, snippet, completion_idx)",
    ]
    assert not EvaluationRun.objects.exists()


def test_a_file_over_the_limit_is_refused_from_its_size_before_it_is_read(release, settings):
    settings.RCB_UPLOAD_MAX_BYTES = 1024 * 1024

    class Unreadable(ContentFile):
        def read(self, *args):
            raise AssertionError("the file was read")

    with pytest.raises(PredictionsInvalid) as info:
        predictions_upload(
            release=release,
            file=Unreadable(b"x" * (1024 * 1024 + 1)),
            template="rcb-v2",
            requester=(user := UserFactory()),
            model=LanguageModelFactory(self_reported=True, owner=user),
        )
    assert info.value.field_errors == {"file": ["the file is too large (1.0 MB); the limit is 1 MB"]}
    assert info.value.errors == ["the file is too large (1.0 MB); the limit is 1 MB"]


@pytest.mark.parametrize("data", [b"", b"\n\n  \n"])
def test_rejects_an_empty_file(release, data):
    with pytest.raises(PredictionsInvalid) as info:
        upload(release, data)
    assert info.value.field_errors == {"file": ["the file is empty: expected one JSON object per line"]}


def test_new_model_and_its_run_are_created_together(release):
    run = upload(release, jsonl(OK), new_model=NewModel(key="new", name="New"), template="rcb-2025")
    assert run.model.key == "new" and run.model.name == "New" and run.template == "rcb-2025"
    assert run.counts["total"] == 1


def test_new_model_is_not_created_when_the_file_is_rejected(release):
    with pytest.raises(PredictionsInvalid):
        upload(release, b"", new_model=NewModel(key="new", name="New"))
    assert not LanguageModel.objects.filter(key="new").exists()


@pytest.mark.parametrize(
    ("new_model", "field_errors"),
    [
        (NewModel(key="bad key!", name="N"), {"model_key": ["use 1-100 letters, digits"]}),
        (
            NewModel(key="m1", name="N"),
            {"model_key": ["a model with the key 'm1' exists: choose it instead"]},
        ),
        (
            NewModel(key="k", name="Model m1"),
            {"model_name": ["a model named 'Model m1' exists with another key"]},
        ),
        (
            NewModel(key="k", name=""),
            {"model_name": ["no model has the key 'k': give a display name to create it"]},
        ),
        (NewModel(key="k", name="N" * 201), {"model_name": ["use at most 200 characters (it has 201)"]}),
    ],
)
def test_new_model_key_and_name_are_checked_together_with_the_file(release, new_model, field_errors):
    LanguageModelFactory(key="m1", name="Model m1")
    with pytest.raises(PredictionsInvalid) as info:
        upload(release, jsonl("oops"), new_model=new_model)
    got = info.value.field_errors
    assert set(got) == set(field_errors)
    for name, (message,) in field_errors.items():
        assert got[name][0].startswith(message)
    assert info.value.line_errors == ["line 1: not valid JSON (Expecting value at column 1)"]
    assert LanguageModel.objects.count() == 1 and not EvaluationRun.objects.exists()


@pytest.mark.parametrize(
    ("key", "name", "field"),
    [
        ("claude-3-5-sonnet-new", "\u0421laude-3.5-Sonnet", "model_name"),  # a Cyrillic "С"
        ("Claude_3_5_Sonnet_2024_10_22", "Something else", "model_key"),  # case and punctuation
        ("fresh", "Claude 3.5 Sonnet", "model_name"),  # spaces for hyphens
        ("fresh", "Clau\u0301de-3.5-Sonnet\u200b", "model_name"),  # an accent and a zero-width space
        ("c1aude-3-5-sonnet-2024-10-22-x", "Сlаudе-3.5-Sоnnеt", "model_name"),  # every vowel Cyrillic
    ],
)
def test_a_self_reported_model_that_reads_like_an_existing_one_is_refused_naming_it(
    release, key, name, field
):
    """Issue 18 item 7: Unicode confusables, case and punctuation do not make a new model."""
    LanguageModelFactory(key="CLAUDE_3_5_SONNET_2024_10_22", name="Claude-3.5-Sonnet")
    with pytest.raises(PredictionsInvalid) as info:
        upload(release, jsonl(OK), new_model=NewModel(key=key, name=name))
    (message,) = info.value.field_errors[field]
    assert (
        "reads the same as the existing model 'Claude-3.5-Sonnet' (key 'CLAUDE_3_5_SONNET_2024_10_22')"
        in message
    )
    assert LanguageModel.objects.count() == 1


def test_distinct_models_that_share_words_are_not_lookalikes(release):
    LanguageModelFactory(key="CLAUDE_3_5_SONNET_2024_10_22", name="Claude-3.5-Sonnet")
    for key, name in (("claude-3-7-sonnet", "Claude-3.7-Sonnet"), ("claude-3-5-haiku", "Claude 3.5 Haiku")):
        run = upload(release, jsonl(OK), new_model=NewModel(key=key, name=name))
        assert run.model.name == name


@pytest.mark.parametrize("case", ADVERSARIAL_LINES)
def test_adversarial_lines_are_line_errors_and_nothing_is_stored(release, case):
    line, message = ADVERSARIAL_LINES[case]
    with pytest.raises(PredictionsInvalid) as info:
        upload(release, jsonl(OK) + line + b"\n", new_model=NewModel(key="new", name="New"))
    (error,) = info.value.errors
    assert error.startswith(f"line 2: {message}") and len(error) < 300
    assert not EvaluationRun.objects.exists() and not LanguageModel.objects.exists()


# --- the web form --------------------------------------------------------------------------------------------


@pytest.fixture
def member(client):
    user = UserFactory(username="member", password="pw")
    client.force_login(user)
    return user


def post_form(client, data: bytes, **fields):
    form = {
        "model": "",
        "new_model_key": "fresh",
        "new_model_name": "Fresh",
        "release": "r1",
        "template": "rcb-v2",
    }
    return client.post("/runs/upload/", {**form, **fields, "file": SimpleUploadedFile("p.jsonl", data)})


@pytest.mark.parametrize("case", ADVERSARIAL_LINES)
def test_form_answers_400_with_a_bounded_line_error_and_stores_nothing(client, member, release, case):
    line, message = ADVERSARIAL_LINES[case]
    response = post_form(client, jsonl(OK) + line + b"\n")
    assert response.status_code == 400
    html = response.content.decode()
    assert f"line 2: {message}".replace("'", "&#x27;") in html
    assert len(response.content) < 50_000
    assert not EvaluationRun.objects.exists() and not LanguageModel.objects.exists()


def test_form_shows_model_errors_on_their_fields_with_the_file_errors(client, member, release):
    LanguageModelFactory(key="taken")
    response = post_form(client, jsonl("oops"), new_model_key="taken", new_model_name="")
    assert response.status_code == 400
    html = response.content.decode()
    assert "A model with the key &#x27;taken&#x27; exists: choose it instead." in html
    assert "Give the new model&#x27;s display name." in html
    assert "line 1: not valid JSON (Expecting value at column 1)" in html
    assert LanguageModel.objects.count() == 1


def test_form_puts_a_whole_file_problem_on_the_file_field(client, member, release, settings):
    settings.RCB_UPLOAD_MAX_LINES = 1
    response = post_form(client, jsonl(OK, OK))
    assert response.status_code == 400
    assert "The file has 2 lines; the limit is 1." in response.content.decode()


def test_form_does_not_echo_an_invalid_template(client, member, release):
    response = post_form(client, jsonl(OK), template="x" * 100_000)
    assert response.status_code == 400
    assert "Choose one of rcb-2025, rcb-v2." in response.content.decode()
    assert len(response.content) < 50_000


def test_form_posts_are_throttled_with_429_and_a_message(client, member, release, monkeypatch):
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"uploads": "2/hour"})
    LanguageModelFactory(key="m1", self_reported=True, owner=member)
    statuses = [post_form(client, jsonl(OK), model="m1").status_code for _ in range(2)]
    response = post_form(client, jsonl(OK), model="m1")
    assert statuses == [302, 302] and response.status_code == 429
    assert int(response["Retry-After"]) > 3500
    assert (
        "You have reached the upload limit of 2/hour (web form and API together)."
        in response.content.decode()
    )
    assert "Try again in 60 minutes." in response.content.decode()
    assert EvaluationRun.objects.count() == 2
    assert client.get("/runs/upload/").status_code == 200


def test_form_and_api_share_one_upload_budget_per_user(client, member, release, monkeypatch):
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"uploads": "2/hour"})
    LanguageModelFactory(key="m1", self_reported=True, owner=member)
    assert post_form(client, jsonl(OK), model="m1").status_code == 302
    api = token_api(member)
    payload = {"model": "m1", "release": "r1", "file": SimpleUploadedFile("p.jsonl", jsonl(OK))}
    assert api.post("/api/v1/runs/upload/", payload, format="multipart").status_code == 201
    assert post_form(client, jsonl(OK), model="m1").status_code == 429


def test_the_upload_form_carries_a_fresh_key_and_a_resent_form_starts_one_run(client, release):
    user = UserFactory()
    LanguageModelFactory(key="mine", self_reported=True, owner=user)
    client.force_login(user)
    page = client.get("/runs/upload/").content.decode()
    key = page.split('name="upload_key" value="', 1)[1].split('"', 1)[0]
    assert len(key) == 32 and key not in client.get("/runs/upload/").content.decode()
    data = jsonl(OK)
    posts = [
        client.post(
            "/runs/upload/",
            {"model": "mine", "release": release.name, "template": "rcb-v2", "with_paper": "with",
             "upload_key": key, "file": SimpleUploadedFile("p.jsonl", data)},
        )
        for _ in range(2)
    ]  # fmt: skip
    run = EvaluationRun.objects.get()
    assert [p.status_code for p in posts] == [302, 302]
    assert {p.headers["Location"] for p in posts} == {f"/runs/{run.pk}/"}
    other = client.post(
        "/runs/upload/",
        {"model": "mine", "release": release.name, "template": "rcb-v2", "with_paper": "with",
         "upload_key": key, "file": SimpleUploadedFile("p.jsonl", jsonl({**OK, "code": "return 2"}))},
    )  # fmt: skip
    assert other.status_code == 400
    assert f"This form already started run {run.pk} with another file" in other.content.decode()
    assert EvaluationRun.objects.count() == 1


def test_a_request_that_loses_the_race_for_its_key_answers_with_the_winners_row():
    """``upload_create_once``, the idempotency of both upload paths: when a concurrent request with the
    same key committed first (the unique constraint refuses the second row), the answer is its row,
    replayed; without a key the refusal stands."""
    stored: list[str] = []

    def create() -> str:
        stored.append("the winner's row")
        raise IntegrityError("duplicate key value violates unique constraint")

    def once(key: str) -> tuple[str, bool]:
        return upload_create_once(
            key=key,
            earlier=lambda: stored[0] if stored else None,
            matches=lambda row: True,
            reused=lambda row: IdempotencyKeyReused(),
            create=create,
        )

    assert once("k-1") == ("the winner's row", True)
    stored.clear()
    with pytest.raises(IntegrityError):
        once("")
