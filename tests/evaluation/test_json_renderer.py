"""The read API's JSON encoder (``evaluation.exports.FastJSONRenderer``, orjson) writes what DRF's
``JSONRenderer`` writes, byte for byte, for every kind of value an API answer holds (a float under 1e-4
is the same number written differently: ``1e-7`` where Python writes ``1e-07``); the cases it leaves to
DRF (an indented answer, an integer beyond 64 bits, a value neither encoder knows) go there; a non-finite
float is ``null`` where DRF fails."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from dataclasses import dataclass
from decimal import Decimal

import pytest
from django.utils.safestring import mark_safe
from django.utils.translation import gettext_lazy
from rest_framework.renderers import JSONRenderer

from evaluation.exports import FastJSONRenderer


@dataclass
class _Row:
    name: str


UTC = dt.UTC
VALUES = {
    "text": [
        "plain",
        "naïve 🎉",
        'quote " and \\ backslash',
        "line\nbreak\ttab",
        "\u2028 and \u2029",
        "\x00\x1f",
    ],
    "safe": mark_safe("<b>safe</b>"),
    "lazy": gettext_lazy("Page not found"),
    "numbers": [0, -1, 2**63 - 1, -(2**63), 0.1, 0.0001, 1e21, 1e16, 123456.789, -0.0, 3.0, 5e-324, 1.5e300],
    "decimal": Decimal("1.10"),
    "bools": [True, False, None],
    "date": dt.date(2025, 3, 1),
    "datetime": dt.datetime(2025, 3, 1, 12, 30, 5, 123456, tzinfo=UTC),
    "naive": dt.datetime(2025, 3, 1, 12, 30, 5),
    "offset": dt.datetime(2025, 3, 1, 12, 30, tzinfo=dt.timezone(dt.timedelta(hours=2))),
    "time": dt.time(7, 5, 3, 250000),
    "duration": dt.timedelta(days=1, seconds=5),
    "uuid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
    "nested": {"a": [{"b": (1, 2)}, {}], "empty": []},
    "int keys": {1: "one", 2: "two"},
    "set": {3},
    "bytes": b"raw",
}


@pytest.mark.parametrize("key", list(VALUES))
def test_each_kind_of_value_is_written_as_drf_writes_it(key):
    data = {"results": [{key: VALUES[key]}], "count": 1}
    assert FastJSONRenderer().render(data) == JSONRenderer().render(data)


def test_a_whole_answer_with_every_kind_at_once_is_identical():
    data = {"results": [VALUES] * 3, "count": 3}
    assert FastJSONRenderer().render(data) == JSONRenderer().render(data)


def test_a_tiny_float_is_the_same_number_with_a_shorter_exponent():
    data = {"x": [1e-7, 2.5e-5, 0.00012]}
    fast, drf = FastJSONRenderer().render(data), JSONRenderer().render(data)
    assert fast.startswith(b'{"x":[1e-7,') and drf == b'{"x":[1e-07,2.5e-05,0.00012]}'
    assert json.loads(fast) == json.loads(drf) == data


def test_line_separators_are_escaped_as_javascript_needs():
    assert FastJSONRenderer().render({"t": "a\u2028b\u2029c"}) == b'{"t":"a\\u2028b\\u2029c"}'


def test_what_orjson_cannot_take_or_format_goes_to_drf():
    huge = {"n": 2**70}
    assert FastJSONRenderer().render(huge) == JSONRenderer().render(huge) == b'{"n":1180591620717411303424}'
    indented = "application/json; indent=2"
    assert FastJSONRenderer().render({"a": 1}, indented) == JSONRenderer().render({"a": 1}, indented)
    assert FastJSONRenderer().render(None) == b""
    for renderer in (FastJSONRenderer(), JSONRenderer()):
        with pytest.raises(TypeError, match="_Row is not JSON serializable"):
            renderer.render({"row": _Row("r")})


def test_a_non_finite_float_is_null_where_drf_fails():
    with pytest.raises(ValueError):
        JSONRenderer().render({"x": float("nan")})
    assert FastJSONRenderer().render({"x": float("nan"), "y": float("inf")}) == b'{"x":null,"y":null}'


@pytest.mark.django_db
def test_the_api_answers_with_it(client):
    response = client.get("/api/v1/models/?format=json")
    assert response.status_code == 200
    assert isinstance(response.accepted_renderer, FastJSONRenderer)
