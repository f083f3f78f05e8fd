"""Issue 22, items 1 and 2: comparing models by picking them (ticked on the board, or typed by the name the
site shows with an autocomplete; a shareable URL; an empty comparison that explains what to do) and a
compact board (ties as a marker that opens, a column chooser, downloads by the table). Each test fails on
the behaviour the issue saw."""

from __future__ import annotations

import csv
import io
import re
from html import unescape

import pytest
from django.urls import reverse

from tests.leaderboard.test_find_out_why import hrefs, two_models
from tests.leaderboard.test_pages import Page, assert_accessible, get

__all__ = ["two_models"]  # the fixture, shared with the comparison's other tests

pytestmark = pytest.mark.django_db

COMPARE = reverse("leaderboard:compare")


# --- compare by picking ----------------------------------------------------------------------------------


def test_compare_takes_the_display_name_and_the_key_in_any_case(client, two_models):
    html = get(client, COMPARE, models=["Alpha One", "BETA-2"])
    assert_accessible(html)
    assert 'id="compare-errors"' not in html
    assert "2 of 3 snippets differ" in html
    assert "<title>Compare Alpha One vs Beta Two" in html
    same = get(client, COMPARE, models=["alpha one", "beta two"])
    assert "2 of 3 snippets differ" in same


def test_compare_names_the_name_that_matched_nothing_and_keeps_it_to_correct(client, two_models):
    html = get(client, COMPARE, models=["Alpha One", "GPT-4.1"])
    assert "No model is called “GPT-4.1”: type a model's name, key or developer." in unescape(html)
    errors = re.search(
        r'<ul class="field-error" id="compare-errors" role="alert">.*?</ul>', html, re.S
    ).group(0)
    assert "Alpha One" not in errors
    # The name that matched nothing stays in the form, marked invalid, next to the one that did.
    assert re.search(
        r'<input id="compare-unknown-1" name="models" value="GPT-4.1"[^>]*aria-invalid="true"', html
    )
    assert re.search(r'name="models" value="Alpha One"', html)  # the display name, as typed


def test_an_empty_comparison_explains_how_to_pick_models_instead_of_an_error(client, two_models):
    html = get(client, COMPARE)
    assert_accessible(html)
    assert 'id="compare-errors"' not in html and "field-error" not in html
    assert "Pick the models to compare" in html and "Compare selected" in html
    assert reverse("leaderboard:board") in hrefs(html)
    one = get(client, COMPARE, models=["Alpha One"])
    assert "field-error" not in one and "choose at least two models" in one


def test_the_compare_form_suggests_every_model_by_name_with_its_developer(client, two_models):
    html = get(client, COMPARE)
    datalist = re.search(r'<datalist id="model-choices">(.*?)</datalist>', html, re.S)
    assert datalist, "no autocomplete list"
    options = re.findall(r'<option value="([^"]*)">([^<]*)</option>', datalist.group(1))
    assert [(v, unescape(t)) for v, t in options] == [
        ("Alpha One", "Acme"),
        ("Beta Two", "Bolt"),
    ]
    fields = re.findall(r'<input id="compare-[^"]*" name="models"[^>]*>', html)
    assert fields and all('list="model-choices"' in f for f in fields)


def test_the_board_picks_models_to_compare_with_a_plain_get_form(client, two_models):
    board = get(client, "/")
    assert_accessible(board)
    form = re.search(r'<form id="board-compare" method="get" action="([^"]+)">', board)
    assert form and form.group(1) == COMPARE
    boxes = re.findall(
        r'<input type="checkbox" class="pick" name="models" value="([^"]+)" form="board-compare"', board
    )
    assert sorted(boxes) == ["alpha-1", "beta-2"]
    # What the form sends is the comparison's own, shareable URL.
    html = get(client, COMPARE, models=boxes)
    assert "2 of 3 snippets differ" in html


# --- the compact board -----------------------------------------------------------------------------------


def test_a_tie_is_a_compact_marker_that_opens_on_its_neighbours(client, published_board):
    page = Page(get(client, "/"))
    html = get(client, "/")
    rank_cells = re.findall(r'<td class="num c-rank">(.*?)</td>', html, re.S)
    tied = [c for c in rank_cells if "details" in c]
    assert tied, "no tied row on the published board"
    for cell in tied:
        marker = re.search(r"<summary[^>]*>(.*?)</summary>", cell, re.S).group(1)
        shown = re.sub(r'<span class="visually-hidden">.*?</span>|<[^>]+>', "", marker)
        names = re.search(r'<span class="tie-names">≈ (.*?)</span>', cell).group(1).split(", ")
        assert shown == f"≈{len(names)}"
    # The rank cell holds the rank and its range before the marker (the names sit in the closed details).
    assert page.rows[0]["cells"][0].startswith("11–")


def test_the_column_chooser_shows_the_columns_ticked_and_always_the_model_and_score(client, published_board):
    html = get(client, "/", cols=["model", "developer", "date"], sort="-date")
    page = assert_accessible(html)
    heads = re.findall(
        r'<th scope="col" class="(?:num )?c-([a-z0-9]+)',
        html.split('id="board-table"')[1].split("</thead>")[0],
    )
    assert heads == ["rank", "model", "developer", "scaled", "date"]
    assert all(len(r["cells"]) == 5 for r in page.rows)
    # The choice travels with sorting and filtering; every column is shown without one.
    assert all("cols=developer" in h for h in hrefs(html) if "sort=" in h and h.startswith("?"))
    assert re.search(r'<input type="hidden" name="cols" value="date" form="lb-filters">', html)
    assert 'id="col-date" name="cols" value="date" checked' in html
    assert 'id="col-cost" name="cols" value="cost">' in html
    full = Page(get(client, "/"))
    assert all(len(r["cells"]) == 12 for r in full.rows)


def test_download_links_by_the_table_carry_the_filters(client, published_board):
    html = get(client, "/", developer="OpenAI", cols=["model"])
    tools = re.search(r'<p class="downloads" id="board-downloads">(.*?)</p>', html, re.S).group(1)
    links = dict(
        (text, unescape(href)) for href, text in re.findall(r'<a href="([^"]+)"[^>]*>([^<]+)</a>', tools)
    )
    assert set(links) == {"Download CSV", "Download JSON"}
    assert "developer=OpenAI" in links["Download CSV"] and "cols" not in links["Download CSV"]
    rows = list(csv.DictReader(io.StringIO(client.get(links["Download CSV"]).content.decode())))
    assert rows and {r["model.developer"] for r in rows} == {"OpenAI"}
    data = client.get(links["Download JSON"]).json()
    assert len(data["results"]) == len(rows)
