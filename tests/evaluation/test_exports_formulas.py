"""CSV exports neutralise spreadsheet formulas (issue 12, item 7): a text cell starting with ``=``, ``+``,
``-``, ``@``, a tab or a carriage return gets a leading ``'``; numbers and ordinary text are unchanged."""

from __future__ import annotations

import csv
import io

import pytest

from evaluation.exports import table_csv
from leaderboard.services import leaderboard_refresh_run
from tests.factories import make_benchmark, make_run

pytestmark = pytest.mark.django_db

HOSTILE = [
    '=HYPERLINK("http://evil.example","x")',
    "+1+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(A1:A9)",
    "\t=1+1",
    "\r=1+1",
]


def rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


@pytest.mark.parametrize("value", HOSTILE)
def test_text_cells_that_start_a_formula_get_a_leading_quote(value):
    assert rows(table_csv([{"name": value}]))[1] == [f"'{value}"]


def test_numbers_booleans_and_plain_text_are_written_as_they_are():
    out = rows(table_csv([{"delta": -3.5, "n": -2, "ok": True, "name": "GPT-4o", "empty": None}]))
    assert out[1] == ["-3.5", "-2", "true", "GPT-4o", ""]


def test_a_list_cell_that_starts_a_formula_is_neutralised():
    assert rows(table_csv([{"papers": ["=cmd", "b"]}]))[1] == ["'=cmd;b"]


def test_board_and_model_exports_neutralise_a_hostile_model_name(client):
    rel, snippets = make_benchmark({"p1": (None, [2])})
    name = HOSTILE[0]
    leaderboard_refresh_run(
        run=make_run(snippets, {"p1": "P"}, release=rel, model__key="evil", model__name=name)
    )
    for url in ("/api/v1/leaderboard/?format=csv", "/api/v1/models/?format=csv"):
        response = client.get(url)
        assert response.status_code == 200
        table = list(csv.DictReader(io.StringIO(response.content.decode())))
        names = [r.get("model.name", r.get("name")) for r in table]
        assert names == [f"'{name}"], url
        assert all(not (cell or "").startswith(("=", "+", "@")) for r in table for cell in r.values()), url
