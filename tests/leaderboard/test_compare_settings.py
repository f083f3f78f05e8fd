"""Compare lines up only runs of one setting (release, template, paper in the prompt) and says whether each
difference is real: models with no setting in common get the settings each has and the nearest common one;
an asked setting picks each model's run on it; the paired difference's interval is shown with a plain
verdict; the picker keeps display names, takes a part of one name and offers the matches of an ambiguous one."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.urls import reverse

from leaderboard.services import leaderboard_refresh_run
from tests.factories import LanguageModelFactory, make_benchmark, make_run
from tests.leaderboard.test_pages import get

pytestmark = pytest.mark.django_db

COMPARE = reverse("leaderboard:compare")


def scored(run):
    leaderboard_refresh_run(run=run)
    return run


def text(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html))).replace(" :", ":")


@pytest.fixture
def world():
    """Release r1 (ten one-line snippets of p1) and r2 (p2). DeepSeek V3 passes all of r1 with the paper,
    DeepSeek R1 the first two; both also have r1 without the paper (DeepSeek V3 better there too). GPT-4.1
    has only r2; Claude has r2 and r1 with the paper."""
    r1, s1 = make_benchmark({"p1": (None, [1] * 10)}, release="r1")
    r2, s2 = make_benchmark({"p2": (None, [2, 2])}, release="r2")
    v3 = LanguageModelFactory(key="DEEPSEEK_V3", name="DeepSeek V3", developer="DeepSeek")
    r1m = LanguageModelFactory(key="DEEPSEEK_R1", name="DeepSeek R1", developer="DeepSeek")
    gpt = LanguageModelFactory(key="GPT_4_1", name="GPT-4.1", developer="OpenAI")
    claude = LanguageModelFactory(key="CLAUDE_3_7", name="Claude 3.7 Sonnet", developer="Anthropic")
    all_pass, two_pass = " ".join("P" * 10), "P P" + " F" * 8
    for model, verdicts in ((v3, all_pass), (r1m, two_pass)):
        scored(make_run(s1, {"p1": verdicts}, model=model, release=r1))
        scored(make_run(s1, {"p1": verdicts}, model=model, release=r1, with_paper=False))
    scored(make_run(s2, {"p2": "P F"}, model=gpt, release=r2))
    scored(make_run(s2, {"p2": "P P"}, model=claude, release=r2))
    scored(make_run(s1, {"p1": two_pass}, model=claude, release=r1))
    return r1, r2


def test_models_on_one_setting_are_compared_with_a_paired_difference(client, world):
    html = get(client, COMPARE, models=["DeepSeek V3", "DeepSeek R1"])
    words = text(html)
    assert "Compared on release r1, template rcb-v2, with the paper" in words
    pairs = text(re.search(r'<table class="table" id="compare-pairs">.*?</table>', html, re.S).group(0))
    assert "DeepSeek V3 − DeepSeek R1 80.00" in pairs and "DeepSeek V3 is better" in pairs
    assert "the interval excludes zero" in pairs
    # the other setting both have is offered, and asking for it compares the runs without the paper
    assert "They also all have runs on release r1, template rcb-v2, without the paper" in words
    without = text(get(client, COMPARE, models=["DeepSeek V3", "DeepSeek R1"], release="r1", template="rcb-v2",
                       paper="without"))  # fmt: skip
    assert "Compared on release r1, template rcb-v2, without the paper" in without


def test_models_with_no_common_setting_are_not_lined_up_and_the_nearest_is_offered(client, world):
    html = get(client, COMPARE, models=["GPT-4.1", "DeepSeek V3", "Claude 3.7 Sonnet"])
    words = text(html)
    assert 'id="compare-runs"' not in html and 'id="compare-pairs"' not in html
    assert "These models have no setting in common" in words
    settings = text(re.search(r'<ul id="compare-settings">.*?</ul>', html, re.S).group(0))
    assert "GPT-4.1: release r2, template rcb-v2, with the paper" in settings
    assert (
        "DeepSeek V3: release r1, template rcb-v2, with the paper; release r1, template rcb-v2, without"
        in settings
    )
    assert "Compare GPT-4.1, Claude 3.7 Sonnet on release r2, template rcb-v2, with the paper" in words
    nearest = unescape(re.search(r'<a class="button" href="([^"]+)"', html).group(1))
    followed = text(get(client, nearest))
    assert "Compared on release r2" in followed and "Claude 3.7 Sonnet is better" not in followed


def test_an_asked_setting_a_model_lacks_says_so(client, world):
    words = text(get(client, COMPARE, models=["GPT-4.1", "Claude 3.7 Sonnet"], release="r1", template="rcb-v2",
                     paper="with"))  # fmt: skip
    assert "Not every model has a run on release r1, template rcb-v2, with the paper" in words
    assert "They all have runs on: release r2" in words


def test_the_picker_keeps_display_names_takes_a_unique_part_and_offers_the_matches(client, world):
    html = get(client, COMPARE, models=["gpt_4_1", "claude"])
    fields = re.findall(r'<input id="compare-\d" name="models" value="([^"]*)"', html)
    assert fields == ["GPT-4.1", "Claude 3.7 Sonnet"]
    assert "Compared on release r2" in text(html)
    options = re.findall(r'<option value="([^"]*)">([^<]*)</option>', html)
    assert ("DeepSeek V3", "DeepSeek") in options and not any("_" in label for _, label in options)
    ambiguous = get(client, COMPARE, models=["GPT-4.1", "deepseek"])
    words = text(ambiguous)
    assert "“deepseek” matches 2 models: pick one below." in words and "no model" not in words.lower()
    links = [
        unescape(h)
        for h in re.findall(r'<ul class="match-list">.*?</ul>', ambiguous, re.S)[0].split('href="')[1:]
    ]
    assert [h.split('"')[0] for h in links] == [
        f"{COMPARE}?models=GPT-4.1&models=DeepSeek+R1",
        f"{COMPARE}?models=GPT-4.1&models=DeepSeek+V3",
    ]


def test_the_model_page_lines_up_its_runs_by_setting(client, world):
    html = get(client, reverse("leaderboard:model", args=["DEEPSEEK_V3"]))
    groups = re.findall(r'<tbody class="run-group">(.*?)</tbody>', html, re.S)
    heads = [text(re.search(r'<tr class="group-head">(.*?)</tr>', g, re.S).group(1)).strip() for g in groups]
    assert heads == [
        "Release r1, template rcb-v2, without the paper · 1 run",
        "Release r1, template rcb-v2, with the paper · 1 run",
    ]
    assert all(len(re.findall(r"#\d+", g)) == 1 for g in groups)
