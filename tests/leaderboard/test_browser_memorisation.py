"""The memorisation figures in Chromium (issue 22, item 8): the model page's section and the snippet page's
near-verbatim badge pass the accessibility audit (axe-core: no violation of any impact; keyboard) and
fit a 390 px screen without sideways scrolling."""

from __future__ import annotations

import pytest

from leaderboard.links import snippet_url
from tests.leaderboard.test_memorisation_pages import Board
from tests.test_accessibility import audit

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("width", [1200, 390])
def test_memorisation_on_the_model_and_snippet_pages_is_accessible_and_fits_a_phone(
    live_server, browser, width
):
    board = Board()
    page = browser.new_page(viewport={"width": width, "height": 900})
    pages = [
        ("/models/MEMO/", "#memorisation-table"),
        (snippet_url("NEW", "s1", board.snippets["NEW"][1].pk), ".completion .badge.info"),
    ]
    for path, shown in pages:
        page.goto(f"{live_server.url}{path}")
        assert page.locator(shown).first.is_visible(), path
        audit(page)
        assert page.evaluate("document.documentElement.scrollWidth") <= width, path
    page.close()
