"""Predictions JSONL: every validation error names its line; a valid file becomes an uploaded run."""

from __future__ import annotations

import json

import pytest

from contributions.models import Snippet
from evaluation.models import Completion, EvaluationRun, LanguageModel
from evaluation.services.uploads import (
    PredictionsInvalid,
    predictions_parse,
    predictions_upload,
    predictions_upload_new_model,
    upload_limit_bytes,
)
from tests.evaluation.runs_fixtures import full_predictions, jsonl, make_model, make_release

pytestmark = pytest.mark.django_db

OK = {"task": "alpha", "snippet": "a1", "completion_idx": 0, "code": "return 1"}


@pytest.fixture
def release():
    return make_release()


def errors_of(data: bytes, release) -> list[str]:
    return predictions_parse(data=data, release=release).errors


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


def test_line_that_is_not_json_names_the_line_and_the_reason(release):
    errors = errors_of(jsonl(OK, '{"task": "alpha", "snippet":'), release)
    assert len(errors) == 1
    assert errors[0].startswith("line 2 is not JSON (")


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
        errors_of(jsonl("not json"), release)[0],
        "line 2: missing field 'task'",
        "line 3: unknown task 'nope' in release r1",
        "line 4: unknown snippet 'zzz' in task alpha",
        "line 6: duplicate of line 5 (task, snippet, completion_idx)",
    ]


def test_missing_snippet_and_answer_fields_are_named(release):
    errors = errors_of(jsonl({"task": "alpha"}), release)
    assert errors == ["line 1: missing field 'snippet'", "line 1: missing field 'code' (or 'response')"]


def test_same_snippet_with_another_completion_index_is_not_a_duplicate(release):
    parsed = predictions_parse(data=jsonl(OK, {**OK, "completion_idx": 1}), release=release)
    assert parsed.ok and parsed.n_completions == 2


def test_blank_lines_are_skipped_but_line_numbers_stay_true(release):
    data = jsonl(OK, "", {"task": "alpha", "snippet": "bad", "code": "x"})
    assert errors_of(data, release) == ["line 3: unknown snippet 'bad' in task alpha"]


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ([1, 2], "line 1: expected a JSON object, got array"),
        ({**OK, "completion_idx": -1}, "line 1: field 'completion_idx' must be an integer from 0 to 99"),
        ({**OK, "completion_idx": "0"}, "line 1: field 'completion_idx' must be an integer from 0 to 99"),
        ({**OK, "code": 5}, "line 1: field 'code' must be a string, got number"),
        ({**OK, "response": "x"}, "line 1: give either 'code' or 'response', not both"),
        ({**OK, "task": ""}, "line 1: field 'task' must be a non-empty string"),
    ],
)
def test_rejects_badly_typed_fields(release, record, message):
    assert errors_of(jsonl(record), release) == [message]


def test_task_without_files_in_the_release_cannot_be_tested(release):
    errors = errors_of(jsonl({"task": "gamma", "snippet": "g1", "code": "x"}), release)
    assert errors == [
        "line 1: task 'gamma' in release r1 has no task files (published metadata only), so it cannot be tested"
    ]


def test_rejects_a_file_over_the_size_limit_naming_the_limit(release, settings):
    settings.RCB_UPLOAD_MAX_BYTES = 1024 * 1024
    errors = errors_of(b"x" * (1024 * 1024 + 1), release)
    assert errors == ["the file is too large (1.0 MB); the limit is 1 MB"]


def test_the_default_size_limit_is_20_mb():
    assert upload_limit_bytes() == 20 * 1024 * 1024


@pytest.mark.parametrize("data", [b"", b"\n\n  \n"])
def test_rejects_an_empty_file(release, data):
    assert errors_of(data, release) == ["the file is empty: expected one JSON object per line"]


def test_rejects_a_file_that_is_not_utf8_naming_the_line(release):
    data = jsonl(OK) + b'{"task": "alpha", "snippet": "a2", "code": "\xff"}\n'
    assert errors_of(data, release) == ["the file is not UTF-8 text: line 2 has the invalid byte 0xff"]


def test_a_utf8_byte_order_mark_is_accepted(release):
    assert predictions_parse(data=b"\xef\xbb\xbf" + jsonl(OK), release=release).ok


def test_error_list_is_capped_with_a_count_of_the_rest(release):
    data = jsonl(*(["nope"] * 250))
    errors = errors_of(data, release)
    assert len(errors) == 201
    assert errors[-1] == "... and 50 more errors"


def test_upload_creates_an_uploaded_run_with_one_item_per_prediction(release, django_user_model):
    user = django_user_model.objects.create_user("sub", password="pw")
    model = make_model()
    run = predictions_upload(
        model=model, release=release, data=full_predictions(), template="rcb-v2", requester=user
    )
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
    data = jsonl({"task": "alpha", "snippet": "a1", "response": "Sure:\n```python\ny = 2\n```\n"})
    run = predictions_upload(
        model=make_model(), release=release, data=data, template="rcb-v2", requester=None
    )
    item = Completion.objects.get(run=run)
    assert item.code.strip() == "y = 2" and item.code_extracted


def test_invalid_upload_raises_with_every_error_and_creates_nothing(release):
    with pytest.raises(PredictionsInvalid) as info:
        predictions_upload(
            model=make_model(), release=release, data=jsonl("x", OK, OK), template="rcb-v2", requester=None
        )
    assert info.value.errors[0].startswith("line 1 is not JSON")
    assert info.value.errors[1] == "line 3: duplicate of line 2 (task, snippet, completion_idx)"
    assert not EvaluationRun.objects.exists()


def test_new_model_is_not_created_when_the_file_is_rejected(release):
    with pytest.raises(PredictionsInvalid):
        predictions_upload_new_model(
            model_fields={"key": "new", "name": "New"},
            release=release,
            data=b"",
            template="rcb-v2",
            requester=None,
        )
    assert not LanguageModel.objects.filter(key="new").exists()


def test_new_model_and_its_run_are_created_together(release):
    run = predictions_upload_new_model(
        model_fields={"key": "new", "name": "New"},
        release=release,
        data=jsonl(OK),
        template="rcb-2025",
        requester=None,
    )
    assert run.model.key == "new" and run.template == "rcb-2025"
    assert json.loads(json.dumps(run.counts))["total"] == 1


def test_uploaded_code_is_reindented_to_its_snippet_like_the_cli(release):
    Snippet.objects.filter(name="a1").update(indent=8)
    data = jsonl({"task": "alpha", "snippet": "a1", "code": "x = 1\nif x:\n    y = 2"})
    run = predictions_upload(
        model=make_model(), release=release, data=data, template="rcb-v2", requester=None
    )
    assert Completion.objects.get(run=run).code == "        x = 1\n        if x:\n            y = 2"
