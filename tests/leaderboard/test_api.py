"""The read API under /api/v1/: fixed leaderboard shape, contamination rules on the published results,
filters, pagination, 404/400 with messages naming the parameter, and a complete OpenAPI schema."""

from __future__ import annotations

import datetime as dt

import pytest

from leaderboard.services import leaderboard_refresh_run
from tests.factories import (
    LanguageModelFactory,
    make_benchmark,
    make_run,
)

pytestmark = pytest.mark.django_db


def by_key(payload: dict) -> dict[str, dict]:
    return {r["model"]["key"]: r for r in payload["results"]}


# --- filters on a small board -------------------------------------------------------------------------


@pytest.fixture
def small_board(db):
    """Four runs on two papers: OpenAI closed (with and without paper), Meta open, a rerun verification."""
    _rel, snippets = make_benchmark(
        {"old": (dt.date(2024, 1, 1), [2, 4]), "new": (dt.date(2025, 6, 1), [3, 1])}, release="r1"
    )
    gpt = LanguageModelFactory(key="GPT", developer="OpenAI", knowledge_cutoff=dt.date(2024, 6, 1))
    llama = LanguageModelFactory(key="LLAMA", developer="Meta", open_weights=True)
    runs = {
        "gpt": make_run(snippets, {"old": "P P", "new": "F P"}, model=gpt, release=_rel),
        "gpt-nopaper": make_run(snippets, {"old": "F P", "new": "F F"}, model=gpt, release=_rel, with_paper=False),
        "llama": make_run(
            snippets, {"old": "P F", "new": "P F"}, model=llama, release=_rel, template="rcb-2025",
            verification="rerun",
        ),
    }  # fmt: skip
    for run in runs.values():
        leaderboard_refresh_run(run=run)
    return runs


def keys(client, query: str = "") -> list[str]:
    response = client.get(f"/api/v1/leaderboard/{query}")
    assert response.status_code == 200, response.content
    return [r["model"]["key"] for r in response.json()["results"]]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # GPT (rcb-v2) and LLAMA (rcb-2025) are of different templates: each template is ranked on its
        # own and listed group by group (rcb-2025 first), never sorted into one ranking.
        ("", ["LLAMA", "GPT"]),
        ("?developer=meta", ["LLAMA"]),
        ("?weights=open", ["LLAMA"]),
        ("?weights=closed", ["GPT"]),
        ("?verification=rerun", ["LLAMA"]),
        ("?template=rcb-2025", ["LLAMA"]),
        ("?release=r1", ["LLAMA", "GPT"]),
        ("?paper=without", ["GPT"]),
        ("?sort=name", ["LLAMA", "GPT"]),
        ("?sort=-name", ["LLAMA", "GPT"]),
    ],
)
def test_each_filter_changes_the_rows(client, small_board, query, expected):
    assert keys(client, query) == expected


def test_paper_any_shows_both_runs_of_a_model(client, small_board):
    rows = client.get("/api/v1/leaderboard/?paper=any").json()["results"]
    assert sorted((r["model"]["key"], r["with_paper"]) for r in rows) == [
        ("GPT", False),
        ("GPT", True),
        ("LLAMA", True),
    ]


def test_per_model_rule_drops_papers_before_the_models_cutoff(client, small_board):
    rows = by_key(client.get("/api/v1/leaderboard/?contamination=per-model").json())
    # GPT's cutoff 2024-06 keeps only "new" (F P: 1 of 4 lines); Llama's 2024-10 too (P F: 3 of 4).
    assert rows["GPT"]["selection"] == ["new"] and rows["GPT"]["scaled_pass_at_1"] == 25.0
    assert rows["LLAMA"]["scaled_pass_at_1"] == 75.0 and rows["LLAMA"]["rank"] == 1


def test_unknown_cutoff_gets_no_per_model_score_and_no_rank(client, small_board):
    model = small_board["llama"].model
    model.knowledge_cutoff, model.knowledge_cutoff_raw = None, ""
    model.save()
    leaderboard_refresh_run(run=small_board["llama"])
    rows = by_key(client.get("/api/v1/leaderboard/?contamination=per-model").json())
    assert rows["LLAMA"]["scaled_pass_at_1"] is None and rows["LLAMA"]["rank"] is None
    assert rows["GPT"]["rank"] == 1


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("?contamination=everything", "contamination"),
        ("?weights=maybe", "weights"),
        ("?verification=trusted", "verification"),
        ("?release=nope", "release"),
        ("?paper=sometimes", "paper"),
        ("?sort=height", "sort"),
        ("?include_unfinished=perhaps", "include_unfinished"),
    ],
)
def test_bad_filter_value_is_a_400_naming_the_parameter(client, small_board, query, parameter):
    response = client.get(f"/api/v1/leaderboard/{query}")
    assert response.status_code == 400
    body = response.json()
    assert list(body) == [parameter] and body[parameter][0]


def test_unknown_objects_are_404_with_a_message(client, small_board):
    for url in (
        "/api/v1/models/NOPE/",
        "/api/v1/papers/nope/",
        "/api/v1/snippets/999999/",
        "/api/v1/runs/999999/",
    ):
        response = client.get(url)
        assert response.status_code == 404 and response.json()["detail"], url
    assert client.get("/api/v1/runs/999999/results/").status_code == 404
    run = small_board["gpt"]
    other = small_board["llama"]
    assert client.get(f"/api/v1/models/{run.model.key}/?run={other.pk}").status_code == 404
    assert client.get(f"/api/v1/models/{run.model.key}/?run=x").json() == {"run": ['"x" is not a run id.']}


def test_lists_are_paginated_and_filtered(client, small_board):
    runs = client.get("/api/v1/runs/?limit=2").json()
    assert runs["count"] == 3 and len(runs["results"]) == 2 and runs["next"]
    assert client.get("/api/v1/runs/?model=LLAMA").json()["count"] == 1
    assert client.get("/api/v1/runs/?status=bogus").status_code == 400
    assert client.get("/api/v1/models/").json()["count"] == 2
    assert client.get("/api/v1/papers/").json()["count"] == 2
    assert client.get("/api/v1/snippets/?paper=new").json()["count"] == 2
    assert list(client.get("/api/v1/snippets/?paper=zzz").json()) == ["paper"]
    results = client.get(f"/api/v1/runs/{small_board['gpt'].pk}/results/?paper=old").json()
    assert results["count"] == 2 and {r["paper_key"] for r in results["results"]} == {"old"}


def test_model_detail_splits_scores_before_and_after_the_cutoff(client, small_board):
    data = client.get("/api/v1/models/GPT/").json()
    assert data["run"]["run_id"] == small_board["gpt"].pk  # the with-paper run by default
    assert data["before_cutoff"]["scaled_pass_at_1"] == 100.0  # "old": P P
    assert data["after_cutoff"]["scaled_pass_at_1"] == 25.0  # "new": F P with N 3, 1
    assert [p["after_cutoff"] for p in data["per_paper"]] == [True, False]  # new, old
    assert data["errors"][0]["category"] == "logic" and data["errors"][0]["count"] == 1


def test_schema_documents_every_read_endpoint_and_its_parameters(client):
    response = client.get("/api/v1/schema/?format=json")
    assert response.status_code == 200
    schema = response.json()
    paths = schema["paths"]
    for path in (
        "/api/v1/leaderboard/",
        "/api/v1/leaderboard/papers/",
        "/api/v1/leaderboard/errors/",
        "/api/v1/leaderboard/snippets/",
        "/api/v1/models/",
        "/api/v1/models/{key}/",
        "/api/v1/papers/",
        "/api/v1/papers/{key}/",
        "/api/v1/snippets/",
        "/api/v1/snippets/{snippet_id}/",
        "/api/v1/runs/",
        "/api/v1/runs/{run_id}/",
        "/api/v1/runs/{run_id}/results/",
    ):
        assert "get" in paths[path], path
    params = {p["name"] for p in paths["/api/v1/leaderboard/"]["get"]["parameters"]}
    assert {
        "contamination",
        "developer",
        "weights",
        "verification",
        "release",
        "template",
        "paper",
        "sort",
    } <= params
    row = schema["components"]["schemas"]["LeaderboardRow"]["properties"]
    assert {"rank", "model", "scaled_pass_at_1", "pass_at_1", "ci95", "coverage", "cost_usd"} <= set(row)


def test_api_views_read_through_selectors_and_runs_belong_to_the_evaluation_api():
    from pathlib import Path

    from django.urls import resolve

    import leaderboard.api
    import leaderboard.links
    import leaderboard.presenters
    import leaderboard.views

    pages = sorted(Path(leaderboard.views.__file__).parent.glob("*.py"))
    modules = [Path(m.__file__) for m in (leaderboard.api, leaderboard.links, leaderboard.presenters)]
    for path in [*modules, *pages]:
        assert ".objects" not in path.read_text(), path.name
    for url in ("/api/v1/runs/", "/api/v1/runs/1/", "/api/v1/runs/1/results/"):
        assert resolve(url).func.view_class.__module__ == "evaluation.api", url
