"""Stable presentation (issue 12, item 5): one colour per developer and per error category whatever the
filters, captions that say only what the chart draws, a skip link past every chart, chart text legible on
a phone, and a filter form that the history (Back) restores with the table. The last two are also checked
in Chromium at 390 px."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.urls import reverse

from leaderboard.models import RunScore
from leaderboard.services import leaderboard_refresh_run
from tests.factories import StaffUserFactory, make_benchmark, make_run
from tests.leaderboard.test_pages import get

pytestmark = pytest.mark.django_db


@pytest.fixture
def board():
    """Three developers (Acme, Bolt, Core) on one release; failures: syntax errors outnumber logic errors
    (so by count syntax comes first, by name logic does)."""
    rel, snippets = make_benchmark({"p1": (dt.date(2024, 1, 1), [2, 3, 4]), "p2": (dt.date(2025, 5, 1), [4])})
    runs = [
        ("Acme", "Model Acme", {"p1": "P F F", "p2": "F"}, {"p1": "syntax", "p2": "logic"}),
        ("Bolt", "Model Bolt", {"p1": "F F P", "p2": "P"}, {"p1": "syntax"}),
        ("Core", "Model Core", {"p1": "P P F", "p2": "F"}, {"p1": "syntax", "p2": "logic"}),
    ]
    for developer, name, verdicts, categories in runs:
        leaderboard_refresh_run(
            run=make_run(
                snippets, verdicts, categories=categories, release=rel, model__developer=developer,
                model__name=name, model__key=name.replace(" ", "-").lower(),
            )
        )  # fmt: skip
    return rel


def swatch(fill: str) -> str:
    """A fill as its colour and hatch: a hatch pattern's id is prefixed by its chart's id."""
    hatched = re.fullmatch(r"url\(#.*-(h\d+-[0-9A-Fa-f]{6})\)", fill)
    return hatched.group(1) if hatched else fill


def bar_fill(html: str, name: str) -> str:
    """The swatch of the bar whose tooltip starts with ``name``."""
    match = re.search(rf'<g class="bar"><title>{re.escape(name)}:.*?<rect [^>]*fill="([^"]+)"', html, re.S)
    assert match, f"no bar for {name}"
    return swatch(match.group(1))


def segment_fill(html: str, category: str) -> set[str]:
    """The swatches of every stacked segment of ``category`` (one per model that has it)."""
    found = re.findall(rf'<rect [^>]*fill="([^"]+)"[^>]*><title>[^<]* – {re.escape(category)}: ', html)
    return {swatch(f) for f in found}


def svgs(html: str) -> list[str]:
    return re.findall(r"<svg\b.*?</svg>", html, flags=re.S)


# --- colours --------------------------------------------------------------------------------------------


def test_a_developer_keeps_its_colour_whatever_the_filters(client, board):
    everyone = get(client, "/")
    only_core = get(client, "/", developer="Core")
    closed = get(client, "/", developer="Bolt")
    assert bar_fill(only_core, "Model Core") == bar_fill(everyone, "Model Core")
    assert bar_fill(closed, "Model Bolt") == bar_fill(everyone, "Model Bolt")
    assert len({bar_fill(everyone, f"Model {d}") for d in ("Acme", "Bolt", "Core")}) == 3


def test_an_error_category_has_one_colour_in_every_error_chart(client, board):
    errors = get(client, reverse("leaderboard:errors"))
    model = get(client, reverse("leaderboard:model", args=["model-acme"]))
    for category in ("Syntax Errors", "Logic Errors"):
        share = bar_fill(errors, category)
        assert segment_fill(errors, category) == {share}
        assert bar_fill(model, category) == share
    assert bar_fill(errors, "Syntax Errors") != bar_fill(errors, "Logic Errors")


def test_board_caption_names_error_bars_only_when_the_chart_draws_them(client, board):
    drawn = get(client, "/")
    chart = svgs(drawn)[0]
    assert "Error bars: 95% bootstrap interval" in chart
    assert "Error bars: 95% bootstrap interval over snippets" in drawn

    # A stored score without its interval (as a recombined selection has): no bars, and no promise.
    RunScore.objects.update(ci_low=None, ci_high=None)
    client.get("/")  # cached bodies are keyed by scope versions, which a raw update does not move
    html = get(client, "/", paper="with", weights="")
    assert "Error bars" not in svgs(html)[0]
    assert "Error bars" not in html


# --- skip links and legible text ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    ["/", "/errors/", "/contamination/", "/models/model-acme/", "/papers/p1/"],
)
def test_every_chart_has_a_skip_link_to_just_after_it(client, board, url):
    html = get(client, url)
    ids = re.findall(r'<svg [^>]*class="chart" id="([^"]+)"', html)
    assert ids
    for chart_id in ids:
        link = html.find(f'<a href="#after-{chart_id}" class="skip">')
        chart = html.find(f'id="{chart_id}"')
        target = html.find(f'id="after-{chart_id}"')
        assert -1 < link < chart < target, chart_id
        # Nothing focusable sits between the skip link and the chart.
        assert "<a " not in html[link + 1 : html.rfind("<svg", 0, chart)]


@pytest.mark.parametrize("url", ["/", "/errors/", "/contamination/", "/models/model-acme/", "/papers/p1/"])
def test_chart_text_is_never_below_ten_px_and_charts_carry_their_natural_width(client, board, url):
    for svg in svgs(get(client, url)):
        sizes = [float(s) for s in re.findall(r'font-size="([0-9.]+)"', svg)]
        assert min(sizes) >= 10, sizes
        assert re.search(r'style="[^"]*--chart-w: [0-9.]+px', svg)


# --- history: the form comes back with the table --------------------------------------------------------


@pytest.mark.parametrize("url", ["/", "/papers/p1/"])
def test_the_results_fragment_carries_the_filter_form_in_the_state_it_shows(client, board, url):
    response = client.get(url, {"developer": "Bolt"}, headers={"HX-Request": "true"})
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="results"')
    form = re.search(r'<form class="filters" id="lb-filters".*?</form>', html, re.S).group(0)
    assert re.search(r'<option value="Bolt" selected>', form)
    assert f'action="{url}"' in form
    page = get(client, url)
    assert page.count('id="lb-filters"') == 1
    assert page.index('<div id="results"') < page.index('id="lb-filters"')


# --- in Chromium --------------------------------------------------------------------------------------------


def chart_min_font_px(page, selector: str) -> float:
    """The smallest rendered font size of the chart's text: its font-size times the chart's scale."""
    return page.evaluate(
        """(sel) => {
          const svg = document.querySelector(sel);
          const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
          let least = Infinity;
          for (const t of svg.querySelectorAll('text')) {
            least = Math.min(least, parseFloat(getComputedStyle(t).fontSize) * scale);
          }
          return least;
        }""",
        selector,
    )


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_at_390px_chart_text_is_legible_the_score_is_on_screen_and_forms_fit(live_server, board, browser):
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.goto(f"{live_server.url}/")
    assert chart_min_font_px(page, "#board-chart") >= 10
    score = page.locator("#board-table thead th", has_text="Scaled Pass@1").bounding_box()
    assert score and score["x"] >= 0 and score["x"] + score["width"] <= 390
    assert page.evaluate("document.documentElement.scrollWidth") <= 390

    page.goto(f"{live_server.url}/errors/")
    assert chart_min_font_px(page, "#error-per-model") >= 10

    StaffUserFactory(username="maintainer", password="a-long-test-password")
    page.goto(f"{live_server.url}/accounts/login/?next=/runs/upload/")
    page.fill("#id_login", "maintainer@example.org")
    page.fill("#id_password", "a-long-test-password")
    page.click("form.account-form button[type=submit]")
    page.wait_for_url("**/runs/upload/")
    form = page.locator("main form").first.bounding_box()
    assert form and form["x"] + form["width"] <= 390
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("path", "rows"), [("/", "#board-table tbody tr"), ("/papers/p1/", "#paper-models tbody tr")]
)
def test_back_after_an_htmx_filter_change_restores_the_form_with_the_table(
    live_server, board, browser, path, rows
):
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.goto(f"{live_server.url}{path}")
    assert page.locator(rows).count() == 3
    page.select_option("#f-developer", "Bolt")
    page.wait_for_url("**developer=Bolt*")
    page.wait_for_function(f"document.querySelectorAll('{rows}').length === 1")
    page.select_option("#f-weights", "closed")
    page.wait_for_url("**weights=closed*")

    page.go_back()
    page.wait_for_function("!location.search.includes('weights=closed')")
    page.wait_for_function("document.querySelector('#f-weights').value === ''")
    assert page.locator("#f-developer").input_value() == "Bolt"
    assert "developer=Bolt" in page.url
    assert page.locator(rows).count() == 1

    page.go_back()
    page.wait_for_function("!location.search.includes('developer=Bolt')")
    page.wait_for_function("document.querySelector('#f-developer').value === ''")
    assert page.locator(rows).count() == 3

    # The next change starts from the restored state: no filter silently dropped or kept.
    page.select_option("#f-developer", "Acme")
    page.wait_for_url("**developer=Acme*")
    assert "weights=closed" not in page.url
    page.wait_for_function(f"document.querySelectorAll('{rows}').length === 1")
