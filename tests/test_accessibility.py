"""Accessibility checks in Chromium (issue 14 item 2): axe-core (vendored in tests/vendor/axe) finds no
serious or critical violation, the keyboard alone reaches a page's main controls starting with the skip link,
with a visible focus indicator, and the board stays readable at 390 px. The browser journeys
(tests/test_journeys.py) run ``audit`` on every page they visit; the tests here cover the pages a visitor
meets before any data exists, so an accessibility regression in the shell shows up on its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

AXE = Path(__file__).resolve().parent / "vendor" / "axe" / "axe.min.js"
#: the impacts that fail a page; "minor" and "moderate" findings are reported by axe but tolerated
BLOCKING = ("serious", "critical")
#: the tab stops walked per page (a proposal's code has a link per line; its main controls come before)
MAX_TABS = 150

_RUN_AXE = """async () => {
  const result = await axe.run(document, {resultTypes: ['violations']});
  return result.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ') + ': ' + n.failureSummary.replace(/\\s+/g, ' ')),
  }));
}"""


def axe_violations(page: Any) -> list[dict]:
    """axe-core's serious and critical violations on the page as it is now.

    axe is evaluated through the DevTools protocol rather than added as a ``<script>``: the portal's
    Content-Security-Policy refuses inline scripts, and the check must not weaken what it runs under.
    """
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(AXE.read_text(encoding="utf-8") + "\n;undefined")
    return [v for v in page.evaluate(_RUN_AXE) if v["impact"] in BLOCKING]


def _describe(element: dict | None) -> str:
    if element is None:
        return "nothing"
    return f"<{element['tag']}> {element['text']!r} {element['selector']}"


_FOCUSED = """(targets) => {
  const e = document.activeElement;
  if (!e || e === document.body) return null;
  const s = getComputedStyle(e);
  const r = e.getBoundingClientRect();
  const visible = (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0)
    || (s.boxShadow && s.boxShadow !== 'none') || s.textDecorationLine.includes('underline');
  return {
    tag: e.tagName.toLowerCase(),
    text: (e.innerText || e.value || e.getAttribute('aria-label') || '').trim().slice(0, 60),
    selector: e.id ? '#' + e.id : (e.getAttribute('href') || e.getAttribute('name') || ''),
    indicated: visible, onscreen: r.width > 0 && r.height > 0,
    style: `outline ${s.outlineStyle} ${s.outlineWidth}, box-shadow ${s.boxShadow}`,
    matches: targets.filter(t => e.matches(t)),
  };
}"""


def keyboard_reaches(page: Any, targets: list[str]) -> None:
    """Tab from the top of the page through its tab order (up to ``MAX_TABS`` stops): the skip link comes
    first, every focused element shows a focus indicator, and each of ``targets`` (CSS selectors of the
    page's main controls; any element matching one counts) receives focus.

    Fails naming the targets never reached, or the element whose focus is invisible.
    """
    for target in targets:
        assert page.locator(target).count(), f"{target} is not on {page.url}"
    # Tab starts from the top whatever was focused before (an htmx swap keeps the last control focused).
    page.evaluate(
        """() => { const start = document.createElement('span'); start.id = 'rcb-tab-start';
                   start.tabIndex = -1; document.body.prepend(start); start.focus(); }"""
    )
    page.keyboard.press("Tab")
    page.evaluate("() => document.getElementById('rcb-tab-start').remove()")
    first = page.evaluate(_FOCUSED, list(targets))
    assert first and first["selector"] == "#main" and first["onscreen"], (
        f"the first Tab on {page.url} reaches {_describe(first)}, not the skip link"
    )
    reached: set[str] = set()
    focused = first
    for _ in range(MAX_TABS):
        assert focused["indicated"], (
            f"no visible focus indicator on {_describe(focused)} at {page.url} ({focused['style']})"
        )
        reached.update(focused["matches"])
        page.keyboard.press("Tab")
        focused = page.evaluate(_FOCUSED, list(targets))
        if focused is None or focused["selector"] == "#main":  # past the last stop, or wrapped round
            break
    missing = [t for t in targets if t not in reached]
    assert not missing, f"the keyboard never reaches {missing} on {page.url}"


def audit(page: Any, *, targets: list[str] = ()) -> None:
    """axe and the keyboard on the page as it is now (see ``axe_violations`` and ``keyboard_reaches``)."""
    found = axe_violations(page)
    assert not found, f"axe on {page.url}:\n" + "\n".join(
        f"  {v['impact']} {v['id']}: {v['help']}\n    " + "\n    ".join(v["nodes"]) for v in found
    )
    keyboard_reaches(page, list(targets))


def board_readable_at_phone_width(page: Any, base_url: str) -> None:
    """At 390 px the board's score column is on screen and nothing scrolls sideways."""
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{base_url}/")
    score = page.locator("#board-table thead th", has_text="Scaled Pass@1").bounding_box()
    # A pixel of slack: layout widths are fractional, and a column ending 0.3 px past the edge is readable.
    assert score and score["x"] >= 0 and score["x"] + score["width"] <= 391, score
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.set_viewport_size({"width": 1200, "height": 900})


# --- the shell, with no data -------------------------------------------------------------------------------


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("url", "targets"),
    [
        ("/", ["nav a[href='/papers/']"]),
        ("/accounts/login/", ["#id_login", "#id_password", "form.account-form button[type=submit]"]),
        ("/accounts/signup/", ["#id_email", "#id_password1", "form.account-form button[type=submit]"]),
        ("/papers/", ["nav a[href='/papers/']"]),
    ],
)
def test_an_empty_portal_page_has_no_serious_axe_violation_and_works_by_keyboard(
    live_server, browser, url, targets
):
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.goto(f"{live_server.url}{url}")
    audit(page, targets=targets)
    page.set_viewport_size({"width": 390, "height": 844})
    assert axe_violations(page) == []
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


def test_axe_is_the_vendored_build_the_readme_names():
    import hashlib

    readme = (AXE.parent / "README.md").read_text()
    assert hashlib.sha256(AXE.read_bytes()).hexdigest() in readme
    assert "4.14.1" in readme and (AXE.parent / "LICENSE").is_file()


# --- the checks can fail --------------------------------------------------------------------------------


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_audit_fails_on_an_unlabelled_image_a_missing_skip_link_and_an_invisible_focus(
    live_server, browser
):
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.goto(f"{live_server.url}/accounts/login/")
    page.evaluate(
        "() => document.querySelector('main').insertAdjacentHTML('beforeend', '<img src=\"/x.png\">')"
    )
    with pytest.raises(AssertionError, match="critical image-alt"):
        audit(page)

    page.goto(f"{live_server.url}/accounts/login/")
    page.evaluate("() => document.querySelector('.skip-link').remove()")
    with pytest.raises(AssertionError, match="not the skip link"):
        keyboard_reaches(page, [])

    page.goto(f"{live_server.url}/accounts/login/")
    # Through the CSSOM: the portal's Content-Security-Policy refuses an added <style>.
    page.evaluate(
        "() => document.querySelector('#id_password').style.setProperty('outline', 'none', 'important')"
    )
    with pytest.raises(AssertionError, match="no visible focus indicator on <input> '' #id_password"):
        keyboard_reaches(page, ["#id_password"])

    page.goto(f"{live_server.url}/accounts/login/")
    page.evaluate("() => document.querySelector('#id_login').setAttribute('disabled', '')")
    with pytest.raises(AssertionError, match=r"never reaches \['#id_login\[disabled\]'\]"):
        keyboard_reaches(page, ["#id_login[disabled]"])
