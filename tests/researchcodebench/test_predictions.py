"""The predictions format: one parser that never raises, line-numbered bounded errors, answer-to-code rules."""

from __future__ import annotations

import json

import pytest

from researchcodebench.predictions import (
    ParsedPredictions,
    Prediction,
    PredictionError,
    PredictionLimits,
    answer_code,
    extract_answer,
    format_errors,
    parse_predictions,
    reindent,
)

LIMITS = PredictionLimits()
OK = {"task": "toy", "snippet": "scale", "completion_idx": 0, "code": "x = 1"}


def jsonl(*records: dict | str) -> bytes:
    """JSON lines (a str record is written as is, to make broken lines)."""
    return "\n".join(r if isinstance(r, str) else json.dumps(r) for r in records).encode() + b"\n"


def parse(data: bytes, limits: PredictionLimits = LIMITS) -> ParsedPredictions:
    return parse_predictions(data, limits=limits)


def messages(data: bytes, limits: PredictionLimits = LIMITS) -> list[str]:
    return [str(e) for e in parse(data, limits).errors]


def test_valid_lines_become_predictions_with_their_line_numbers() -> None:
    data = jsonl(OK, "", {"task": "toy", "snippet": "other", "response": "```python\ny\n```"})
    parsed = parse(data)
    assert parsed.ok and parsed.errors == ()
    assert parsed.predictions == (
        Prediction(task="toy", snippet="scale", completion_idx=0, code="x = 1", line=1),
        Prediction(task="toy", snippet="other", completion_idx=0, response="```python\ny\n```", line=3),
    )
    assert parsed.n_completions == 1


def test_collects_every_error_naming_line_and_field() -> None:
    data = jsonl(
        "not json",
        {"snippet": "scale", "code": "x"},
        [1, 2],
        {**OK, "code": 5},
        {**OK, "response": "r"},
        {"task": "toy", "snippet": "scale", "completion_idx": 1},
        OK,
        OK,
    )
    assert messages(data) == [
        "line 1: not valid JSON (Expecting value at column 1)",
        "line 2: missing field 'task'",
        "line 3: expected a JSON object, got array",
        "line 4: field 'code' must be a string, got number",
        "line 5: give either 'code' or 'response', not both",
        "line 6: missing field 'code' (or 'response')",
        "line 8: duplicate of line 7 (task, snippet, completion_idx)",
    ]
    assert [p.line for p in parse(data).predictions] == [7]


@pytest.mark.parametrize(
    ("value", "got"),
    [
        (-1, "got '-1'"),
        (100, "got '100'"),
        (1.0, "got '1.0'"),
        (True, "got boolean"),
        ("0", "got string"),
        (None, "got null"),
    ],
)
def test_completion_idx_must_be_an_integer_in_range(value, got) -> None:
    assert messages(jsonl({**OK, "completion_idx": value})) == [
        f"line 1: field 'completion_idx' must be an integer from 0 to 99, {got}"
    ]


def test_a_5000_digit_completion_idx_is_a_line_error_not_a_crash() -> None:
    data = b'{"task": "toy", "snippet": "scale", "completion_idx": ' + b"9" * 5000 + b', "code": "x"}\n'
    assert messages(data) == [
        "line 1: field 'completion_idx' must be an integer from 0 to 99, got a 5000-digit number"
    ]


def test_a_5000_digit_number_in_an_ignored_field_is_harmless() -> None:
    data = b'{"task": "toy", "snippet": "scale", "tokens": -' + b"1" * 5000 + b', "code": "x"}\n'
    assert parse(data).ok


def test_deeply_nested_json_is_a_line_error_not_a_crash() -> None:
    data = jsonl(OK, '{"task": ' + "[" * 200_000 + "]" * 200_000 + "}")
    assert messages(data) == ["line 2: not valid JSON here (nested too deeply)"]


def test_nan_and_infinity_are_not_json() -> None:
    assert messages(jsonl('{"task": "toy", "snippet": "scale", "completion_idx": NaN, "code": "x"}')) == [
        "line 1: not valid JSON (NaN is not a JSON value)"
    ]


@pytest.mark.parametrize("field", ["task", "snippet", "code", "response"])
def test_a_lone_surrogate_escape_is_refused_naming_the_field(field) -> None:
    record = {"task": "toy", "snippet": "scale", field: "ab\ud800"}
    if field in ("task", "snippet"):
        record["code"] = "x"
    line = json.dumps(record)  # ensure_ascii writes the lone surrogate as the escape "\ud800"
    assert "\\ud800" in line
    assert messages(jsonl(line)) == [
        f"line 1: field '{field}' holds a lone surrogate '\\ud800' at character 3 (not valid Unicode)"
    ]


def test_a_nul_character_is_refused_because_it_cannot_be_stored() -> None:
    assert messages(jsonl({**OK, "code": "a\u0000b"})) == [
        "line 1: field 'code' holds a NUL character at character 2"
    ]


def test_a_huge_task_name_is_refused_and_shown_shortened() -> None:
    errors = messages(jsonl({**OK, "task": "T" * 1_000_000}))
    assert len(errors) == 1 and len(errors[0]) < 200
    assert errors[0].startswith("line 1: field 'task' is too long (1000000 characters; at most 500): 'TTTT")
    assert errors[0].endswith("... (1000000 characters)")


def test_code_over_the_per_completion_limit_is_refused() -> None:
    limits = PredictionLimits(max_code_bytes=1024)
    assert parse(jsonl({**OK, "code": "é" * 512}), limits).ok
    assert messages(jsonl({**OK, "code": "é" * 513}), limits) == [
        "line 1: field 'code' is too large (1.0 KB); the limit is 1 KB"
    ]


def test_5_mb_of_code_on_one_line_is_refused_by_default() -> None:
    assert messages(jsonl({**OK, "code": "x" * (5 * 1024 * 1024)})) == [
        "line 1: the line is too long (5.0 MB); the limit is 1.6 MB"
    ]
    assert messages(jsonl({**OK, "code": "x" * (1024 * 1024)})) == [
        "line 1: field 'code' is too large (1 MB); the limit is 256 KB"
    ]


def test_a_line_longer_than_any_valid_line_is_refused_before_parsing() -> None:
    limits = PredictionLimits(max_code_bytes=1024)
    assert limits.max_line_bytes == 6 * 1024 + 64 * 1024
    assert messages(jsonl(OK, "[" * (limits.max_line_bytes + 1)), limits) == [
        "line 2: the line is too long (70.0 KB); the limit is 70 KB"
    ]


def test_a_line_that_is_not_utf8_is_named_and_the_others_still_parsed() -> None:
    data = (
        jsonl(OK) + b'{"task": "toy", "snippet": "b", "code": "\xff"}\n' + jsonl({**OK, "completion_idx": 1})
    )
    parsed = parse(data)
    assert [str(e) for e in parsed.errors] == ["line 2: not UTF-8 text: invalid byte 0xff at byte 42"]
    assert [p.line for p in parsed.predictions] == [1, 3]


def test_bom_crlf_and_unicode_line_separators_inside_strings_are_accepted() -> None:
    code = "a = 1\u2028b = 2\x85"
    data = b"\xef\xbb\xbf" + json.dumps({**OK, "code": code}, ensure_ascii=False).encode() + b"\r\n"
    parsed = parse(data)
    assert parsed.ok and parsed.predictions[0].code == code


@pytest.mark.parametrize(
    ("data", "limits", "message"),
    [
        (b"", LIMITS, "the file is empty: expected one JSON object per line"),
        (b"\n \r\n\t\n", LIMITS, "the file is empty: expected one JSON object per line"),
        (b"x" * 2049, PredictionLimits(max_bytes=2048), "the file is too large (2.0 KB); the limit is 2 KB"),
        (jsonl(OK, OK, OK), PredictionLimits(max_lines=2), "the file has 3 lines; the limit is 2"),
    ],
)
def test_whole_file_problems_stop_parsing_with_one_error(data, limits, message) -> None:
    assert parse(data, limits).errors == (PredictionError(None, message),)


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_lines must be at least 1"):
        PredictionLimits(max_lines=0)


def test_error_report_is_capped_in_line_order_with_a_count_of_the_rest() -> None:
    errors = [PredictionError(n, "bad") for n in range(60, 0, -1)] + [PredictionError(None, "whole")]
    report = format_errors(errors, limit=3)
    assert report == ["whole", "line 1: bad", "line 2: bad", "... and 58 more errors"]
    assert format_errors(errors[-2:], limit=5, source="p.jsonl") == ["p.jsonl: whole", "p.jsonl:1: bad"]


def test_adversarial_lines_never_raise_and_every_message_is_short() -> None:
    big = "z" * 300_000
    lines = [
        "{" * 100_000,
        '"' + big,
        json.dumps({"task": big, "snippet": big, "completion_idx": big, "code": big}),
        json.dumps({"task": {"a": [big]}, "snippet": [big], "response": None}),
        '{"task": "t", "snippet": "s", "code": "\\udfff\\ud800"}',
        "1" * 100_000,
    ]
    parsed = parse(jsonl(*lines))
    assert not parsed.predictions
    assert {e.line for e in parsed.errors} == set(range(1, len(lines) + 1))
    assert max(len(str(e)) for e in parsed.errors) < 300


# ------------------------------------------------------------------------------ from an answer to code


def test_code_is_reindented_to_the_snippet_whatever_the_template() -> None:
    prediction = Prediction(task="t", snippet="s", code="if a:\n    b()\n")
    for template in ("rcb-2025", "rcb-v2"):
        assert answer_code(prediction, template=template, indent=4) == "    if a:\n        b()"


def test_a_response_follows_its_templates_indentation_rule() -> None:
    prediction = Prediction(task="t", snippet="s", response="```python\n  y = 2\n```")
    assert answer_code(prediction, template="rcb-2025", indent=8) == "  y = 2\n"
    assert answer_code(prediction, template="rcb-v2", indent=8) == "        y = 2"
    assert (
        answer_code(Prediction(task="t", snippet="s", response="no code"), template="rcb-v2", indent=0)
        is None
    )
    assert answer_code(Prediction(task="t", snippet="s"), template="rcb-v2", indent=0) is None


def test_rcb_2025_extraction_takes_last_python_fence_verbatim() -> None:
    response = "first\n```python\n  a = 1\n```\nthen\n```python\n    b = 2\n```\n```py\nc = 3\n```"
    assert extract_answer(response, template="rcb-2025") == "    b = 2\n"
    assert extract_answer("```py\nx = 1\n```", template="rcb-2025") is None
    assert extract_answer("```Python\nx = 1\n```", template="rcb-2025") is None
    assert extract_answer("no code", template="rcb-2025") is None


def test_rcb_v2_extraction_accepts_variants_and_reindents() -> None:
    assert extract_answer("```py\nx = 1\n```", template="rcb-v2") == "x = 1"
    assert extract_answer("```Python\nif a:\n    b()\n```", template="rcb-v2", indent=8) == (
        "        if a:\n            b()"
    )
    assert extract_answer("text\n```\n  y = 2\n```", template="rcb-v2", indent=4) == "    y = 2"
    assert extract_answer("```python\n\n```", template="rcb-v2") is None
    assert extract_answer("no fences at all", template="rcb-v2") is None


def test_rcb_v2_does_not_mistake_a_closing_fence_for_an_opening() -> None:
    response = "```python\nz = 9\n```\nRun it with:\n```bash\npython x.py\n```\ndone"
    assert extract_answer(response, template="rcb-v2") == "z = 9"


def test_rcb_v2_accepts_an_unclosed_last_fence() -> None:
    assert extract_answer("```python\nq = 1\nr = 2", template="rcb-v2", indent=2) == "  q = 1\n  r = 2"


def test_unknown_template_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown template"):
        extract_answer("x", template="gpt")


def test_reindent_strips_common_prefix_and_blanks_empty_lines() -> None:
    assert reindent("    a\n\n      b\n", 2) == "  a\n\n    b"
    assert reindent("\ta\n\t\tb", 0) == "a\n\tb"
