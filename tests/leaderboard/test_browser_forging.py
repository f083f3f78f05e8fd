"""The forging rate in Chromium (issue 32, item 5): the board's column, the model page's section and the run
page's confirmations, for a visitor and for a maintainer (who also sees the forged verdicts), pass the
accessibility audit (axe-core: no violation of any impact; keyboard) and fit a 390 px screen without
sideways scrolling."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import Client

from tests.factories import MaintainerFactory
from tests.leaderboard.test_forging_rate import Board
from tests.test_accessibility import audit

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def session_cookie(base_url: str, user) -> dict:
    client = Client()
    client.force_login(user, backend="django.contrib.auth.backends.ModelBackend")
    return {
        "name": settings.SESSION_COOKIE_NAME,
        "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
        "url": base_url,
    }


@pytest.mark.parametrize("width", [1200, 390])
def test_the_forging_rate_on_the_board_model_and_run_pages_is_accessible_and_fits_a_phone(
    live_server, browser, width
):
    board = Board()
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    pages = [
        ("/", ".c-forging a"),
        ("/models/FORGER/", "#forging-table"),
        ("/models/PAPER/", "#forging-table"),
        (f"/runs/{board.forger.pk}/", "#confirmation-counts"),
        (f"/runs/{board.paper.pk}/", "#confirmation-summary"),
    ]
    for path, shown in pages:
        page.goto(f"{live_server.url}{path}")
        assert page.locator(shown).first.is_visible(), path
        audit(page)
        assert page.evaluate("document.documentElement.scrollWidth") <= width, path
    context.add_cookies([session_cookie(live_server.url, MaintainerFactory())])
    page.goto(f"{live_server.url}/runs/{board.forger.pk}/")
    assert page.locator("#forged-verdicts").is_visible()
    audit(page)
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    context.close()
