"""What the API accepts is bounded and stated: pagination and ids out of range are 400/404 naming the
parameter (never the database's 500), unknown paths under /api/v1/ are JSON 404s, and the schema documents
each operation's error answers and lists the names the database holds."""

from __future__ import annotations

import datetime as dt

import pytest

from leaderboard.services import leaderboard_refresh_run
from tests.factories import LanguageModelFactory, make_benchmark, make_run

pytestmark = pytest.mark.django_db

HUGE = "13988044721937328449257472"


@pytest.fixture
def board(db):
    """One release, one paper, one model with a scored run."""
    release, snippets = make_benchmark({"old": (dt.date(2024, 1, 1), [2])}, release="r1")
    model = LanguageModelFactory(key="GPT", developer="OpenAI")
    run = make_run(snippets, {"old": "P"}, model=model, release=release)
    leaderboard_refresh_run(run=run)
    return run


@pytest.mark.parametrize(
    ("query", "name"),
    [
        (f"limit={HUGE}", "limit"),
        ("limit=abc", "limit"),
        ("limit=", "limit"),
        ("limit=0", "limit"),
        ("limit=100001", "limit"),
        ("offset=null", "offset"),
        (f"offset={HUGE}", "offset"),
        ("offset=-1", "offset"),
    ],
)
def test_pagination_out_of_range_is_a_400_naming_the_parameter(client, board, query, name):
    response = client.get(f"/api/v1/models/?{query}")
    assert response.status_code == 400, response.content
    assert list(response.json()) == [name]


def test_pagination_within_range_pages(client, board):
    response = client.get("/api/v1/models/?limit=100000&offset=0")
    assert response.status_code == 200 and response.json()["count"] == 1
    assert client.get("/api/v1/models/?offset=5").json()["results"] == []


def test_an_id_past_the_databases_range_is_a_json_404(client, board):
    for url in (f"/api/v1/runs/{HUGE}/", f"/api/v1/runs/{HUGE}/results/", f"/api/v1/snippets/{HUGE}/"):
        response = client.get(url)
        assert response.status_code == 404 and response.json() == {"detail": "Not found."}, url


def test_a_run_past_the_databases_range_is_a_400_naming_run(client, board):
    response = client.get(f"/api/v1/models/GPT/?run={HUGE}")
    assert response.status_code == 400 and list(response.json()) == ["run"]
    assert client.get(f"/api/v1/models/GPT/?run={board.pk}").status_code == 200


def test_a_path_under_the_api_that_names_no_operation_is_a_json_404(client):
    response = client.get("/api/v1/no-such-thing/")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json" and response.json() == {"detail": "Not found."}


def test_unknown_names_are_still_a_400_naming_the_parameter(client, board):
    response = client.get("/api/v1/leaderboard/?developer=nobody&release=r9")
    assert response.status_code == 400 and set(response.json()) == {"developer", "release"}


def _schema(client) -> dict:
    return client.get("/api/v1/schema/", {"format": "json"}).json()


def _parameter(operation: dict, name: str) -> dict:
    return next(p for p in operation["parameters"] if p["name"] == name)["schema"]


def test_the_schema_documents_every_operations_errors(client, board):
    schema = _schema(client)
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            assert "404" in responses, (method, path)
            query = [
                p for p in operation.get("parameters", []) if p["in"] == "query" and p["name"] != "format"
            ]
            assert ("400" in responses) == bool(query or "requestBody" in operation), (method, path)
    upload = schema["paths"]["/api/v1/runs/upload/"]["post"]["responses"]
    assert {"400", "401", "403", "422", "429"} <= set(upload)
    assert "429" not in schema["paths"]["/api/v1/models/"]["get"]["responses"]


def test_the_schema_bounds_pagination_and_ids(client, board):
    paths = _schema(client)["paths"]
    models = paths["/api/v1/models/"]["get"]
    assert (_parameter(models, "limit")["minimum"], _parameter(models, "limit")["maximum"]) == (1, 100_000)
    assert _parameter(models, "offset")["minimum"] == 0
    run = _parameter(paths["/api/v1/runs/{run_id}/"]["get"], "run_id")
    assert (run["type"], run["minimum"], run["maximum"]) == ("integer", 0, 2**63 - 1)
    assert _parameter(paths["/api/v1/models/{key}/"]["get"], "run")["maximum"] == 2**63 - 1


def test_the_schema_lists_the_names_the_database_holds(client, board):
    schema = _schema(client)
    board_op = schema["paths"]["/api/v1/leaderboard/"]["get"]
    assert _parameter(board_op, "developer")["enum"] == ["OpenAI"]
    assert _parameter(board_op, "release")["enum"] == ["r1", "*"]
    assert "rcb-v2" in _parameter(board_op, "template")["enum"]
    assert _parameter(schema["paths"]["/api/v1/snippets/"]["get"], "paper")["enum"] == ["old"]
    body = schema["paths"]["/api/v1/runs/upload/"]["post"]["requestBody"]["content"]["multipart/form-data"]
    form = schema["components"]["schemas"][body["schema"]["$ref"].rsplit("/", 1)[1]]["properties"]
    release = schema["components"]["schemas"][form["release"]["allOf"][0]["$ref"].rsplit("/", 1)[1]]
    assert release["enum"] == ["r1"] and form["file"]["format"] == "binary"


def test_an_empty_set_of_names_accepts_nothing_in_the_schema(client):
    developer = _parameter(_schema(client)["paths"]["/api/v1/leaderboard/"]["get"], "developer")
    assert developer["not"] == {} and "enum" not in developer
