"""What the API accepts is bounded and stated: pagination and ids out of range are 400/404 naming the
parameter (never the database's or Python's 500, whatever the number's size, sign or spelling), unknown paths
under /api/v1/ are JSON 404s, the schema documents each operation's error answers and lists the names the
database holds, and each refusal the schema can state only in words (tests/config/test_api_schemathesis.py's
``DOCUMENTED_REFUSALS``) is a 400 naming its field."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from contributions.models import Snippet
from evaluation.models import LanguageModel
from evaluation.services.uploads import IDEMPOTENCY_KEY_RE, MODEL_KEY_RE
from leaderboard.models import SnippetStat
from leaderboard.services import leaderboard_refresh_run
from tests.factories import (
    LanguageModelFactory,
    UserFactory,
    full_predictions,
    make_benchmark,
    make_release,
    make_run,
)
from tests.factories.builders import token_api

pytestmark = pytest.mark.django_db

HUGE = "13988044721937328449257472"
#: past Python's 4,300-digit limit on ``int()`` of decimal text (a ValueError, not an OverflowError)
ENORMOUS = "9" * 5000
#: numbers no numeric parameter accepts: past any range, past ``int()``'s limit, negative, not numbers
BAD_NUMBERS = [
    HUGE,
    ENORMOUS,
    "1" + "0" * 4400,
    "-1",
    "-" + ENORMOUS,
    "abc",
    "1.5",
    "1e3",
    "+5",
    " 5",
    "\uff15",
    "\u00b2",
]
#: every paginated list of the API
PAGINATED = [
    "/api/v1/models/",
    "/api/v1/papers/",
    "/api/v1/snippets/",
    "/api/v1/runs/",
    "/api/v1/runs/{run}/results/",
]
#: every path that takes an id
ID_PATHS = [
    "/api/v1/runs/{}/",
    "/api/v1/runs/{}/results/",
    "/api/v1/snippets/{}/",
    "/api/v1/runs/uploads/{}/",
]


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


@pytest.mark.parametrize("path", PAGINATED)
def test_every_paginated_list_refuses_any_bad_number_with_a_400_naming_it(client, board, path):
    for name in ("limit", "offset"):
        for value in BAD_NUMBERS:
            response = client.get(path.format(run=board.pk), {name: value})
            assert response.status_code == 400, (name, value[:40], response.content[:200])
            assert list(response.json()) == [name]


def test_leading_zeros_do_not_count_against_a_number(client, board):
    for value in ("0" * 5000 + "1", "00100000"):
        assert client.get("/api/v1/models/", {"limit": value, "offset": value}).status_code == 200


def test_a_bad_run_number_is_a_400_naming_run(client, board):
    for value in BAD_NUMBERS:
        response = client.get("/api/v1/models/GPT/", {"run": value})
        assert response.status_code == 400 and list(response.json()) == ["run"], (
            value[:40],
            response.content,
        )


@pytest.mark.parametrize("path", ID_PATHS)
def test_a_bad_id_in_a_path_is_a_json_404(client, board, path):
    client.force_login(UserFactory(username="viewer"))
    for value in BAD_NUMBERS:
        response = client.get(path.format(value.strip()))
        assert response.status_code == 404, (value[:40], response.content[:200])
        assert response["Content-Type"] == "application/json"


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


def test_a_snippet_without_results_has_0_results_never_null(client, board):
    unscored = Snippet.objects.first()
    SnippetStat.objects.filter(snippet=unscored).delete()
    rows = {row["id"]: row for row in client.get("/api/v1/snippets/").json()["results"]}
    assert rows[unscored.pk]["results"] == 0 and rows[unscored.pk]["solve_rate"] is None
    assert all(isinstance(row["results"], int) for row in rows.values())
    row = _schema(client)["components"]["schemas"]["SnippetRow"]["properties"]
    assert row["results"]["type"] == "integer" and not row["results"].get("nullable")
    assert row["solve_rate"]["nullable"] is True


def test_the_schema_states_the_uploads_key_patterns(client, board):
    upload = _schema(client)["paths"]["/api/v1/runs/upload/"]["post"]
    assert _parameter(upload, "Idempotency-Key")["pattern"] == "^[!-~]{1,128}$"
    assert all(IDEMPOTENCY_KEY_RE.match(chr(c)) for c in range(ord("!"), ord("~") + 1))
    assert not any(IDEMPOTENCY_KEY_RE.match(c) for c in (" ", "\x7f", "\u00e9"))
    model = _upload_form(client)["model"]
    assert model["pattern"] == MODEL_KEY_RE.pattern and "needs `model_name`" in model["description"]


def test_a_model_key_outside_the_pattern_is_listed_as_known(client, board):
    LanguageModelFactory(key="old key (2024)", name="Old")
    model = _upload_form(client)["model"]
    assert model["anyOf"] == [{"pattern": MODEL_KEY_RE.pattern}, {"enum": ["old key (2024)"]}]


def _upload_form(client) -> dict:
    schema = _schema(client)
    body = schema["paths"]["/api/v1/runs/upload/"]["post"]["requestBody"]["content"]["multipart/form-data"]
    return schema["components"]["schemas"][body["schema"]["$ref"].rsplit("/", 1)[1]]["properties"]


@pytest.fixture
def submitter(db):
    """The release ``r1`` and a submitter; another user owns the model ``theirs`` (``Theirs``)."""
    make_release()
    LanguageModelFactory(key="theirs", name="Theirs", self_reported=True, owner=UserFactory(username="other"))
    return UserFactory(username="submitter")


def _upload(user, fields: dict[str, object]):
    """An upload by ``user`` of a model key no model has, for ``r1``, with ``fields`` changed (None: left out)."""
    form = {"model": "mine", "model_name": "Mine", "release": "r1", "file": full_predictions(), **fields}
    form["file"] = SimpleUploadedFile("p.jsonl", form["file"])
    api = token_api(user)
    return api.post(
        "/api/v1/runs/upload/", {k: v for k, v in form.items() if v is not None}, format="multipart"
    )


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        pytest.param({"model": "theirs"}, "model: 'theirs' belongs to another user", id="model-not-theirs"),
        pytest.param(
            {"model_name": "Theirs"},
            "model_name: a model named 'Theirs' exists with another key",
            id="name-taken",
        ),
        pytest.param(
            {"model_name": None}, "model_name: no model has the key 'mine': give a display name", id="no-name"
        ),
        pytest.param(
            {"file": b"\xff\xfe{}\n"}, "line 1: not UTF-8 text: invalid byte 0xff at byte 1", id="not-utf8"
        ),
        pytest.param({"file": b""}, "file: ", id="empty-file"),
    ],
)
def test_documented_refusals_are_400s_naming_the_field(submitter, fields, error):
    """The upload's refusals that the schema states only in words (``DOCUMENTED_REFUSALS``): nothing is
    created."""
    response = _upload(submitter, fields)
    assert response.status_code == 400
    assert [line for line in response.json()["errors"] if line.startswith(error)], response.json()
    assert not LanguageModel.objects.filter(key="mine").exists()
    assert _upload(submitter, {}).status_code == 201  # the same upload without the refused value


@pytest.mark.parametrize(
    "path", ["leaderboard/", "leaderboard/papers/", "leaderboard/errors/", "papers/old/"]
)
def test_a_window_ending_before_it_starts_is_a_400_naming_paper_to(client, board, path):
    response = client.get(f"/api/v1/{path}", {"paper_from": "2025-01-01", "paper_to": "2024-01-01"})
    assert response.status_code == 400
    assert response.json() == {"paper_to": ["paper_to: 2024-01-01 is before paper_from (2025-01-01)."]}
    assert (
        client.get(f"/api/v1/{path}", {"paper_from": "2024-01-01", "paper_to": "2024-01-01"}).status_code
        == 200
    )
    operation = _schema(client)["paths"][f"/api/v1/{path.replace('old', '{key}')}"]["get"]
    paper_to = next(p for p in operation["parameters"] if p["name"] == "paper_to")
    assert "(`paper_to` before `paper_from`) is a 400 naming `paper_to`" in paper_to["description"]


def test_an_empty_set_of_names_accepts_nothing_in_the_schema(client):
    developer = _parameter(_schema(client)["paths"]["/api/v1/leaderboard/"]["get"], "developer")
    assert developer["not"] == {} and "enum" not in developer


@pytest.mark.parametrize(
    "path", ["/api/v1/models/", "/api/v1/leaderboard/", "/api/v1/runs/", "/api/v1/models/GPT/"]
)
def test_an_empty_format_is_a_404_like_any_format_not_answered(client, board, path):
    response = client.get(path, {"format": ""})
    assert response.status_code == 404 and "an empty format" in response.json()["detail"]
    assert client.get(path).status_code == 200


@pytest.mark.parametrize(
    ("url", "status", "body"),
    [
        ("/api/v1/leaderboard/?release=r%001", 400, ["release"]),
        ("/api/v1/leaderboard/papers/?developer=Open%00AI&sort=name", 400, ["developer"]),
        ("/api/v1/runs/?model=G%00PT", 400, ["model"]),
        ("/api/v1/snippets/?pa%00per=old", 400, ["pa\\u0000per"]),
        ("/api/v1/models/G%00PT/", 404, ["detail"]),
        ("/api/v1/papers/o%00ld/", 404, ["detail"]),
    ],
)
def test_a_nul_character_is_a_json_400_naming_the_parameter_or_a_404_in_a_path(
    client, board, url, status, body
):
    """PostgreSQL cannot hold U+0000: a lookup with it would be the database's 500."""
    response = client.get(url)
    assert response.status_code == status and list(response.json()) == body, response.content
