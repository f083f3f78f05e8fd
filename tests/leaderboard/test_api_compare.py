"""The API's compare shape (issue 34 item 1): ``GET /api/v1/compare/`` answers the comparison page's numbers on
the same setting (each model's Scaled Pass@1, each pair's paired difference with its interval and whether it
is distinguishable from zero); models with no common setting are a 200 saying which settings each has and
the nearest common one; an unknown or ambiguous name is a 400 naming ``models``. On the world of
``test_compare_settings``."""

from __future__ import annotations

import re

import pytest

from tests.leaderboard.test_compare_settings import COMPARE, text, world  # noqa: F401 (a fixture)
from tests.leaderboard.test_pages import get

pytestmark = pytest.mark.django_db

API = "/api/v1/compare/"
R1_WITH = {
    "release": "r1",
    "template": "rcb-v2",
    "with_paper": True,
    "covers": "",
    "label": "release r1, template rcb-v2, with the paper",
}


def compare(client, status: int = 200, **params) -> dict:
    response = client.get(API, params)
    assert response.status_code == status, response.content[:500]
    assert response["Content-Type"] == "application/json"
    return response.json()


def test_models_on_one_setting_answer_their_scores_and_the_paired_difference_the_page_shows(client, world):  # noqa: F811
    body = compare(client, models=["DeepSeek V3", "deepseek_r1"])
    assert body["setting"] == R1_WITH and body["asked"] is None and body["note"] == ""
    assert [(m["key"], m["scaled_pass_at_1"]) for m in body["models"]] == [
        ("DEEPSEEK_V3", 100.0),
        ("DEEPSEEK_R1", 20.0),
    ]
    assert all(m["run_id"] for m in body["models"])
    assert [s["label"] for s in body["common"]] == [
        "release r1, template rcb-v2, with the paper",
        "release r1, template rcb-v2, without the paper",
    ]
    (pair,) = body["pairs"]
    d = pair["difference"]
    assert (pair["first"], pair["second"], d["difference"], d["snippets"]) == (
        "DEEPSEEK_V3",
        "DEEPSEEK_R1",
        80.0,
        10,
    )
    assert 0 < d["low"] <= 80.0 <= d["high"] and d["distinguishable"] is True and d["level"] == 0.95
    page = text(get(client, COMPARE, models=["DeepSeek V3", "DeepSeek R1"]))
    assert f"DeepSeek V3 − DeepSeek R1 {d['difference']:.2f}" in page

    # a part of a setting picks the first common setting it matches
    without = compare(client, models=["DEEPSEEK_V3", "DEEPSEEK_R1"], paper="without")
    assert without["setting"]["label"] == "release r1, template rcb-v2, without the paper"
    assert without["asked"] == {"release": None, "template": None, "with_paper": False}
    assert without["pairs"][0]["difference"]["difference"] == 80.0


def test_models_with_no_common_setting_are_a_200_with_each_ones_settings_and_the_nearest(client, world):  # noqa: F811
    body = compare(client, models=["GPT-4.1", "DeepSeek V3", "Claude 3.7 Sonnet"])
    assert body["setting"] is None and body["pairs"] == [] and body["common"] == []
    settings = {m["key"]: [s["label"] for s in m["settings"]] for m in body["models"]}
    assert settings == {
        "GPT_4_1": ["release r2, template rcb-v2, with the paper"],
        "DEEPSEEK_V3": [
            "release r1, template rcb-v2, with the paper",
            "release r1, template rcb-v2, without the paper",
        ],
        "CLAUDE_3_7": [
            "release r1, template rcb-v2, with the paper",
            "release r2, template rcb-v2, with the paper",
        ],
    }
    assert all(m["run_id"] is None and m["scaled_pass_at_1"] is None for m in body["models"])
    assert body["nearest"]["label"] == "release r2, template rcb-v2, with the paper"
    assert body["nearest_models"] == ["GPT_4_1", "CLAUDE_3_7"]
    assert body["note"] == (
        "These models have no setting in common. The setting most of them share is release r2, template "
        "rcb-v2, with the paper (GPT-4.1, Claude 3.7 Sonnet)."
    )
    # a setting asked for that not every model has: the settings they all have instead
    asked = compare(client, models=["GPT-4.1", "Claude 3.7 Sonnet"], release="r1")
    assert asked["setting"] is None and asked["nearest"] is None
    assert asked["note"] == (
        "Not every model has a scored run on release r1. They all have runs on: release r2, template rcb-v2, "
        "with the paper."
    )


@pytest.mark.parametrize(
    ("params", "errors"),
    [
        pytest.param(
            {"models": ["GPT-4.1", "nobody"]},
            {
                "models": [
                    "No model is called “nobody”: give a model's key or display name, or a part of one."
                ]
            },
            id="unknown",
        ),
        pytest.param(
            {"models": ["GPT-4.1", "deepseek"]},
            {
                "models": [
                    "“deepseek” matches several models: DeepSeek R1 (DEEPSEEK_R1), DeepSeek V3 (DEEPSEEK_V3). "
                    "Give the key of one of them."
                ]
            },
            id="ambiguous",
        ),
        pytest.param(
            {"models": ["GPT-4.1", "gpt_4_1"]},
            {"models": ["These names pick GPT-4.1 only: name at least two different models."]},
            id="one-model",
        ),
        pytest.param(
            {"models": ["GPT-4.1"]}, {"models": ["Ensure this field has at least 2 elements."]}, id="one"
        ),
        pytest.param(
            {"models": ["GPT-4.1", "x" * 101]},
            {"models": ["name 2: Ensure this field has no more than 100 characters."]},
            id="long-name",
        ),
        pytest.param(
            {"models": ["GPT-4.1", "Claude 3.7 Sonnet"], "release": "r9"},
            {"release": ["Unknown release 'r9'; choose one of 'r1', 'r2'."]},
            id="unknown-release",
        ),
    ],
)
def test_a_name_that_picks_no_model_or_several_is_a_400_naming_models(client, world, params, errors):  # noqa: F811
    assert compare(client, 400, **params) == errors


def test_the_schema_describes_the_compare_operation(client, world):  # noqa: F811
    schema = client.get("/api/v1/schema/", {"format": "json"}).json()
    operation = schema["paths"][API]["get"]
    parameters = {p["name"]: p for p in operation["parameters"]}
    models = parameters["models"]
    assert models["required"] is True and models["schema"]["type"] == "array"
    assert (models["schema"]["minItems"], models["schema"]["maxItems"]) == (2, 6)
    assert "a 400 naming `models`" in models["description"]
    assert parameters["release"]["schema"]["enum"] == ["r1", "r2"]
    assert parameters["paper"]["schema"]["enum"] == ["with", "without"]
    assert {"200", "400", "404"} <= set(operation["responses"])
    body = schema["components"]["schemas"]["Comparison"]["properties"]
    assert re.search("nullable", str(body["setting"])) and "pairs" in body and "nearest" in body
