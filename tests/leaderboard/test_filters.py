"""The board filters (leaderboard/forms.py): one definition of the parameters for the pages and the API.
A bad value is a field error on a page (shown, that filter falls back to its default, the rest apply) and
a 400 naming the parameter in the API; neither crashes nor silently drops it."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from leaderboard import api, forms
from leaderboard.services import leaderboard_refresh_run
from tests.factories import LanguageModelFactory, make_benchmark, make_run

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_cache")]
ROW = re.compile(r'<tr[^>]* data-model="([^"]+)"')
ERROR = re.compile(r'<p class="field-error" role="alert" id="f-(\w+)_error">([^<]*)</p>')


@pytest.fixture
def board(db):
    """Two models of two developers on one release named with a per cent sign."""
    release, snippets = make_benchmark({"a": (dt.date(2024, 1, 1), [2, 3])}, release="r%1")
    for key, developer, verdicts in (("GPT", "OpenAI", "P F"), ("LLAMA", "Meta", "P P")):
        model = LanguageModelFactory(key=key, developer=developer)
        leaderboard_refresh_run(run=make_run(snippets, {"a": verdicts}, model=model, release=release))


def page(client, url: str) -> tuple[list[str], dict[str, str], str]:
    """(model keys on the board, {parameter: message}, html) of a page that must answer 200."""
    response = client.get(url)
    assert response.status_code == 200, response.content[:300]
    html = response.content.decode()
    return ROW.findall(html), dict(ERROR.findall(html)), html


def selected(html: str, name: str) -> str:
    select = re.search(rf'<select name="{name}"[^>]*>(.*?)</select>', html, flags=re.S).group(1)
    return re.search(r'<option value="([^"]*)" selected>', select).group(1)


def test_a_bad_value_is_reported_on_the_page_and_only_that_filter_falls_back(client, board):
    rows, errors, html = page(client, "/?weights=maybe&developer=Meta&sort=--name&contamination=sometimes")
    assert rows == ["LLAMA"]  # the valid developer filter still applies
    assert set(errors) == {"weights", "sort", "contamination"}
    assert errors["weights"].startswith("Unknown weights &#x27;maybe&#x27;; choose one of &#x27;open&#x27;")
    assert errors["weights"].endswith("Showing all instead.")
    assert errors["contamination"].endswith("Using the default (None (every paper)) instead.")
    # The controls show what applies, and point at their message.
    assert selected(html, "weights") == "" and selected(html, "contamination") == "none"
    assert 'aria-invalid="true" aria-describedby="f-weights_error"' in html
    assert 'name="sort" value="-scaled_pass_at_1"' in html


def test_an_empty_parameter_means_its_default(client, board):
    plain, _errors, _html = page(client, "/")
    rows, errors, _html = page(client, "/?paper=&contamination=&sort=&weights=&developer=")
    assert rows == plain == ["LLAMA", "GPT"] and errors == {}


def test_developer_matches_in_any_case_and_the_select_shows_the_boards_spelling(client, board):
    rows, errors, html = page(client, "/?developer=oPENai")
    assert rows == ["GPT"] and errors == {}
    assert selected(html, "developer") == "OpenAI"
    assert [
        r["model"]["key"] for r in client.get("/api/v1/leaderboard/?developer=META").json()["results"]
    ] == ["LLAMA"]


def test_values_with_per_cent_signs_and_control_characters_are_reported_not_crashed_on(client, board):
    rows, errors, html = page(client, "/?release=%25s%25(x)s&template=%00%01")
    assert len(rows) == 2 and set(errors) == {"release", "template"}
    assert "&#x27;%s%(x)s&#x27;" in errors["release"] and "\x00" not in html
    rows, errors, _html = page(client, "/?release=r%251")  # a real release whose name has a per cent sign
    assert len(rows) == 2 and errors == {}


def test_the_paper_page_reports_bad_filters_too(client, board):
    _rows, errors, _html = page(client, "/papers/a/?paper=sometimes")
    assert set(errors) == {"paper"}


@pytest.mark.parametrize(
    ("parameter", "value"),
    [
        ("developer", "Nobody"),
        ("weights", "maybe"),
        ("verification", "trusted"),
        ("release", "nope"),
        ("template", "rcb-1999"),
        ("paper", "sometimes"),
        ("contamination", "everything"),
        ("sort", "height"),
    ],
)
def test_pages_and_api_reject_the_same_values_naming_the_parameter(client, board, parameter, value):
    response = client.get("/api/v1/leaderboard/", {parameter: value})
    assert response.status_code == 400 and list(response.json()) == [parameter]
    _rows, errors, _html = page(client, f"/?{parameter}={value}")
    assert list(errors) == [parameter] and value in errors[parameter]


def test_pages_and_api_share_one_definition_of_the_parameters():
    assert set(api.BOARD_KEYS) == {*forms.FILTER_PARAMS, "include_unfinished"}
    form_fields = forms.BoardFilterForm(
        {}, choices={name: [] for name in forms.FILTER_PARAMS}
    ).fields  # no database needed with the choices given
    assert tuple(form_fields) == forms.FILTER_PARAMS
