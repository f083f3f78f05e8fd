"""Browser journey (system Chromium via Playwright): filter the board through htmx, see the URL and the rows
change, sort, and open a model page. Screenshots go to /tmp for a visual check of the layout."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.factories import LanguageModelFactory, make_benchmark, make_run

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SHOTS = Path(os.environ.get("RCB_SCREENSHOTS", "/tmp"))


@pytest.fixture
def browser_page(browser):
    return browser.new_page(viewport={"width": 1200, "height": 900})


@pytest.fixture
def board_data():
    from leaderboard.services import leaderboard_refresh_run

    rel, snippets = make_benchmark({"alpha": (None, [3, 2, 5]), "beta": (None, [4, 1])})
    runs = [
        ("Model Open One", "Meta", True, {"alpha": "P P P", "beta": "P F"}),
        ("Model Closed Two", "OpenAI", False, {"alpha": "P F P", "beta": "F F"}),
        ("Model Closed Three", "Google", False, {"alpha": "F F P", "beta": "P P"}),
    ]
    for name, developer, open_weights, verdicts in runs:
        model = LanguageModelFactory(name=name, developer=developer, open_weights=open_weights)
        leaderboard_refresh_run(run=make_run(snippets, verdicts, release=rel, model=model))


def row_names(page) -> list[str]:
    return page.locator("#board-table tbody tr td.model-cell a").all_inner_texts()


def test_filter_board_with_htmx_then_open_a_model(live_server, board_data, browser_page):
    page = browser_page
    page.goto(f"{live_server.url}/")
    assert page.locator("h1").inner_text() == "Leaderboard"
    assert row_names(page) == ["Model Open One", "Model Closed Three", "Model Closed Two"]
    page.screenshot(path=str(SHOTS / "rcb-board.png"), full_page=True)

    # A filter change is sent by htmx: rows update in place and the URL records the filter.
    page.select_option("#f-weights", "closed")
    page.wait_for_url("**/?*weights=closed*")
    page.wait_for_function("document.querySelectorAll('#board-table tbody tr').length === 2")
    assert row_names(page) == ["Model Closed Three", "Model Closed Two"]
    assert page.evaluate("performance.getEntriesByType('navigation').length") == 1  # no full reload
    assert "Model Open One" not in page.locator("#board-chart").inner_html()

    # Sorting keeps the filter and also updates the URL.
    page.get_by_role("link", name="Model", exact=True).click()
    page.wait_for_url("**sort=name*")
    assert "weights=closed" in page.url
    assert row_names(page) == ["Model Closed Three", "Model Closed Two"]
    page.screenshot(path=str(SHOTS / "rcb-board-filtered.png"), full_page=True)

    # Back in history restores the earlier view; the URL alone reproduces a view.
    page.goto(f"{live_server.url}/?developer=OpenAI")
    assert row_names(page) == ["Model Closed Two"]

    page.get_by_role("link", name="Model Closed Two").first.click()
    page.wait_for_url("**/models/**")
    assert page.locator("h1").inner_text() == "Model Closed Two"
    assert page.locator("#per-paper tbody tr").count() == 2
    page.screenshot(path=str(SHOTS / "rcb-model.png"), full_page=True)
