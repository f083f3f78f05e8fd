"""CSV and JSON exports of every leaderboard table: parse with the csv module, header row, same values."""

from __future__ import annotations

import csv
import datetime as dt
import io

import pytest

from evaluation.exports import table_csv
from leaderboard.services import leaderboard_refresh_run
from tests.factories import LanguageModelFactory, make_benchmark, make_run

pytestmark = pytest.mark.django_db

TABLES = [
    "/api/v1/leaderboard/",
    "/api/v1/leaderboard/papers/",
    "/api/v1/leaderboard/errors/",
    "/api/v1/leaderboard/snippets/",
    "/api/v1/models/",
    "/api/v1/papers/",
    "/api/v1/snippets/",
    "/api/v1/runs/",
]


@pytest.fixture
def board(db):
    rel, snippets = make_benchmark({'p, "quoted"': (dt.date(2025, 2, 1), [2, 5]), "q": (None, [1])})
    runs = [
        make_run(
            snippets,
            {'p, "quoted"': "PF F", "q": "P"},
            model=LanguageModelFactory(name="Model, A"),
            release=rel,
        ),
        make_run(snippets, {'p, "quoted"': "PP P", "q": "F"}, release=rel, categories={"q": "syntax"}),
    ]
    for run in runs:
        leaderboard_refresh_run(run=run)
    return runs


def parse_csv(response) -> list[dict[str, str]]:
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(response.content.decode())))


@pytest.mark.parametrize("url", TABLES)
def test_every_table_exports_csv_with_a_header_and_one_row_per_json_record(client, board, url):
    response = client.get(f"{url}?format=csv")
    assert "attachment" in response["Content-Disposition"]
    rows = parse_csv(response)
    records = client.get(f"{url}?format=json").json()["results"]
    assert rows and len(rows) == len(records)


def test_leaderboard_csv_has_the_json_values_under_dotted_columns(client, board):
    rows = parse_csv(client.get("/api/v1/leaderboard/?format=csv"))
    records = client.get("/api/v1/leaderboard/?format=json").json()["results"]
    header = list(rows[0])
    assert header[:3] == ["rank", "model.key", "model.name"]
    for row, record in zip(rows, records, strict=True):
        assert row["model.name"] == record["model"]["name"]
        assert float(row["scaled_pass_at_1"]) == record["scaled_pass_at_1"]
        assert [float(v) for v in row["ci95"].split(";")] == record["ci95"]
    assert "Model, A" in {r["model.name"] for r in rows}  # a comma survives quoting


def test_empty_table_still_has_its_header(client, db):
    response = client.get("/api/v1/leaderboard/?format=csv")
    reader = csv.reader(io.StringIO(response.content.decode()))
    header = next(reader)
    assert "scaled_pass_at_1" in header and list(reader) == []


def test_errors_csv_has_one_row_per_run_and_category(client, board):
    rows = parse_csv(client.get("/api/v1/leaderboard/errors/?format=csv"))
    assert {(r["category"], r["tier"], r["count"]) for r in rows} == {
        ("logic", "model", "2"),
        ("syntax", "model", "1"),
    }


def test_a_rejected_csv_request_says_why_in_csv(client, board):
    response = client.get("/api/v1/leaderboard/?format=csv&contamination=nope")
    assert response.status_code == 400
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert rows[0]["field"] == "contamination" and "nope" in rows[0]["message"]


def test_table_csv_flattens_nested_values_and_marks_nulls_and_booleans():
    text = table_csv([{"a": {"b": 1, "c": None}, "d": [1.5, 2], "e": True}])
    assert list(csv.reader(io.StringIO(text))) == [["a.b", "a.c", "d", "e"], ["1", "", "1.5;2", "true"]]
