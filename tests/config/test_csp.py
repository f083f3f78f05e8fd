"""The Content-Security-Policy (django-csp, config/settings.py): every page sends it, scripts come only from the
site's own files (no inline script, no eval), and the pages that run JavaScript (htmx, the Vega charts, Swagger
UI) work under it in Chromium without a single violation."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from django.core.cache import cache
from django.urls import reverse

from leaderboard.services import leaderboard_refresh_run
from tests.factories import LanguageModelFactory, MaintainerFactory, make_benchmark, make_run
from tests.test_authz_matrix import MATRIX, ROLES, client_for, world  # noqa: F401 (a fixture)


def directives(header: str) -> dict[str, list[str]]:
    out = {}
    for part in header.split(";"):
        words = part.split()
        if words:
            out[words[0]] = words[1:]
    return out


def test_the_policy_allows_scripts_only_from_the_site_itself(client, db):
    policy = directives(client.get(reverse("leaderboard:board"))["Content-Security-Policy"])
    assert policy["script-src"] == ["'self'"]
    assert policy["default-src"] == ["'self'"]
    assert policy["object-src"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"]
    assert policy["form-action"] == ["'self'"]
    assert policy["connect-src"] == ["'self'"]
    assert policy["img-src"] == ["'self'", "data:"]
    assert policy["style-src"] == ["'self'"]
    # <style> elements need the request's nonce; only style attributes (bar widths) are inline.
    assert all(source in ("'self'",) or source.startswith("'nonce-") for source in policy["style-src-elem"])
    assert policy["style-src-attr"] == ["'unsafe-inline'"]
    assert not any("unsafe-eval" in s or "*" == s for sources in policy.values() for s in sources)


def test_every_page_of_the_matrix_sends_the_policy(world):  # noqa: F811
    """Every GET the authorisation matrix answers with 200, for every role, carries the header."""
    missing = []
    pages = 0
    for name, reqs in MATRIX.items():
        for req in reqs:
            if req.method != "GET":
                continue
            url = req.url(name, world)
            for role, expected in zip(ROLES, req.expect, strict=True):
                if expected != 200:
                    continue
                cache.clear()
                response = client_for(world, role, api=req.api).get(url)
                pages += 1
                if "script-src 'self'" not in response.get("Content-Security-Policy", ""):
                    missing.append(f"{url} as {role}")
    assert pages > 150
    assert not missing, missing


def test_the_snippet_pages_highlighting_is_a_stylesheet_not_an_inline_style(world, client):  # noqa: F811
    # A snippet page is a stored body shared by visitors (leaderboard/caching.py), so it cannot carry a
    # per-request nonce: its highlighting comes from a static stylesheet the policy allows as 'self'.
    response = client.get(reverse("leaderboard:snippet", args=[world.paper_key, world.snippet_name]))
    html = response.content.decode()
    assert "<style" not in html
    assert '<link rel="stylesheet" href="/static/css/code.css">' in html
    assert "'self'" in directives(response["Content-Security-Policy"])["style-src-elem"]


# --- in Chromium ---------------------------------------------------------------------------------------


def build_board() -> None:
    rel, snippets = make_benchmark({"csp-paper": (None, [3, 1]), "other": (None, [2])})
    for key, verdicts in (
        ("csp-one", {"csp-paper": "P F", "other": "P"}),
        ("csp-two", {"csp-paper": "F F", "other": "F"}),
    ):
        model = LanguageModelFactory(key=key, name=key.title())
        leaderboard_refresh_run(run=make_run(snippets, verdicts, release=rel, model=model))


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_pages_with_javascript_report_no_csp_violation_in_chromium(live_server, browser):
    build_board()
    maintainer = MaintainerFactory()
    problems: list[str] = []
    hosts: set[str] = set()
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    tab = context.new_page()
    tab.on("console", lambda m: problems.append(f"{tab.url}: {m.text}") if m.type == "error" else None)
    tab.on("pageerror", lambda e: problems.append(f"{tab.url}: {e}"))
    # A request cut short by the next navigation (net::ERR_ABORTED) is not a failure.
    tab.on(
        "requestfailed",
        lambda r: (
            None if "ERR_ABORTED" in (r.failure or "") else problems.append(f"failed: {r.url} {r.failure}")
        ),
    )
    tab.on("request", lambda r: hosts.add(urlsplit(r.url).hostname or r.url))
    # Violations are also events in the page: collect them where the console might not say.
    context.add_init_script(
        "document.addEventListener('securitypolicyviolation', e => "
        "console.error('CSP violation: ' + e.violatedDirective + ' ' + e.blockedURI));"
    )

    def visit(path: str) -> None:
        response = tab.goto(f"{live_server.url}{path}")
        assert response is not None and response.status < 400, path
        assert "script-src 'self'" in (response.headers.get("content-security-policy") or ""), path

    def open_charts() -> None:
        for summary in tab.locator("details[data-vega-details] > summary").all():
            summary.click()
        tab.wait_for_selector("[data-vega-spec] svg.marks", timeout=20_000)

    visit("/")
    open_charts()
    tab.locator("#results a.sort").first.click()  # an htmx swap of the table
    tab.wait_for_load_state("networkidle")
    visit(reverse("leaderboard:model", args=["csp-one"]))
    visit(reverse("leaderboard:paper", args=["csp-paper"]))
    open_charts()
    visit(reverse("leaderboard:snippet", args=["csp-paper", "s0"]))
    visit(reverse("api-docs"))
    tab.wait_for_selector(".swagger-ui .info", timeout=20_000)

    # The contribute form, signed in (its htmx upload step included).
    context.add_cookies([_session_cookie(live_server.url, maintainer)])
    visit(reverse("contributions:contribute_new"))
    visit(reverse("evaluation:model_list"))

    assert problems == [], "\n".join(problems)
    assert hosts <= {"localhost", "127.0.0.1"}, hosts
    context.close()


def _session_cookie(base_url: str, user) -> dict:
    from django.test import Client

    client = Client()
    client.force_login(user, backend="django.contrib.auth.backends.ModelBackend")
    from django.conf import settings

    return {
        "name": settings.SESSION_COOKIE_NAME,
        "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
        "url": base_url,
    }
