"""The published results (32 models, 20 papers, 212 snippets) through the read models, the selectors and
the API: the paper's numbers, both contamination rules, and equality with the core library's scoring.

The data is imported once per module (``published_board``); tests skip when ../shared/data is absent."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def by_key(payload: dict) -> dict[str, dict]:
    return {r["model"]["key"]: r for r in payload["results"]}


# --- the published results ----------------------------------------------------------------------------


def test_published_leaderboard_puts_gemini_first_with_the_papers_numbers(client, published_board):
    response = client.get("/api/v1/leaderboard/")
    assert response.status_code == 200
    data = response.json()
    assert len(data["results"]) == 32 and data["count"] == 32
    top = data["results"][0]
    assert top["rank"] == 1 and top["model"]["key"] == "GEMINI_2_5_PRO_PREVIEW_05_06"
    assert set(top["model"]) >= {"key", "name", "developer", "open_weights", "knowledge_cutoff"}
    assert (round(top["scaled_pass_at_1"], 2), round(top["pass_at_1"], 2)) == (37.34, 64.15)
    assert top["coverage"] == 1.0 and top["snippets"] == 212 and top["lines"] == 1449
    assert top["verification"] == "published" and len(top["ci95"]) == 2
    rows = by_key(data)
    assert round(rows["O3_HIGH"]["scaled_pass_at_1"], 2) == 32.16
    assert round(rows["OPENROUTER_O4_MINI_HIGH"]["scaled_pass_at_1"], 2) == 30.78
    assert round(rows["OPENROUTER_MISTRAL_CODESTRAL_MAMBA"]["scaled_pass_at_1"], 2) == 0.76
    scores = [r["scaled_pass_at_1"] for r in data["results"]]
    assert scores == sorted(scores, reverse=True)


def test_global_contamination_keeps_13_papers_and_gemini_scores_33_30(client, published_board):
    data = client.get("/api/v1/leaderboard/?contamination=global").json()
    assert data["contamination"] == "global" and len(data["results"]) == 32
    gemini = by_key(data)["GEMINI_2_5_PRO_PREVIEW_05_06"]
    assert len(gemini["selection"]) == 13 and gemini["snippets"] == 143
    assert (round(gemini["scaled_pass_at_1"], 2), round(gemini["pass_at_1"], 2)) == (33.30, 58.74)
    assert all(len(r["selection"]) == 13 for r in data["results"])
    assert gemini["ci95"] is not None  # the unfiltered global selection is stored with its interval


def test_per_model_contamination_scores_each_model_after_its_own_cutoff(client, published_board):
    rows = by_key(client.get("/api/v1/leaderboard/?contamination=per-model").json())
    assert len(rows["GEMINI_2_5_PRO_PREVIEW_05_06"]["selection"]) == 13  # cutoff 2025-01
    assert len(rows["O3_HIGH"]["selection"]) == 20  # cutoff 2023-10: every paper is later
    assert round(rows["O3_HIGH"]["scaled_pass_at_1"], 2) == 32.16
    assert rows["CLAUDE_3_7_SONNET_2025_02_19"]["snippets"] < 212


def test_global_rule_is_the_releases_whatever_the_models_shown_by_the_filters(client, published_board):
    everyone = by_key(client.get("/api/v1/leaderboard/?contamination=global").json())
    openai = client.get("/api/v1/leaderboard/?contamination=global&developer=OpenAI").json()
    assert openai["results"] and all(r["model"]["developer"] == "OpenAI" for r in openai["results"])
    # The rule is computed over every model of the release: filtering to OpenAI keeps the same 13 papers,
    # so the rows (stored interval included) are those of the full board.
    o3 = by_key(openai)["O3_HIGH"]
    assert o3["selection"] == everyone["O3_HIGH"]["selection"] and len(o3["selection"]) == 13
    assert o3["scaled_pass_at_1"] == everyone["O3_HIGH"]["scaled_pass_at_1"]
    assert o3["ci95"] == everyone["O3_HIGH"]["ci95"] is not None


def test_model_paper_snippet_and_run_endpoints_answer_for_published_rows(client, published_board):
    model = client.get("/api/v1/models/GEMINI_2_5_PRO_PREVIEW_05_06/").json()
    assert round(model["scores"]["none"]["scaled_pass_at_1"], 2) == 37.34
    assert len(model["per_paper"]) == 20 and len(model["verdict_grid"]) == 212
    paper_key = model["per_paper"][0]["paper_key"]
    paper = client.get(f"/api/v1/papers/{paper_key}/").json()
    assert paper["key"] == paper_key and len(paper["matrix"]) == 32
    snippet = client.get(f"/api/v1/snippets/{paper['snippets'][0]['id']}/").json()
    assert len(snippet["attempts"]) == 32
    run_id = model["run"]["run_id"]
    page = client.get(f"/api/v1/runs/{run_id}/results/?limit=50").json()
    assert page["count"] == 212 and len(page["results"]) == 50 and page["next"]
    assert client.get(f"/api/v1/runs/{run_id}/results/?outcome=passed").json()["count"] == 136


@pytest.mark.parametrize("mode", ["none", "global", "per-model"])
def test_every_published_row_equals_core_scoring_exactly(published_board, mode):
    import yaml

    from leaderboard.selectors.board import LeaderboardFilters, leaderboard_rows
    from researchcodebench.pset import normalise_date
    from researchcodebench.scoring import load_published, score_published
    from tests.leaderboard.conftest import ORIGINAL, REGISTRY

    dates = {
        str(e["id"]): normalise_date(e["first_commit_date"]) for e in yaml.safe_load(REGISTRY.read_text())
    }
    core = {
        s.key: s for s in score_published(load_published(ORIGINAL), contamination=mode, registry_dates=dates)
    }
    rows = leaderboard_rows(filters=LeaderboardFilters(contamination=mode))
    assert [r.model.key for r in rows if r.scaled_pass_at_1 is not None] == [
        k for k, s in core.items() if s.snippets
    ]
    for row in rows:
        expected = core[row.model.key].to_dict()
        assert row.scaled_pass_at_1 == expected["scaled_pass_at_1"]
        assert row.pass_at_1 == expected["pass_at_1"]
        assert row.score.scaled_pass_at_1_std == expected["scaled_pass_at_1_std"]
        assert list(row.score.ci95 or [None, None]) == expected["ci95"]
        assert (row.score.snippets, row.score.lines, row.score.coverage) == (
            expected["snippets"],
            expected["lines"],
            expected["coverage"],
        )
