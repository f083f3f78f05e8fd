"""Accessibility checks in Chromium (issue 14 item 2, issue 34 item 5): axe-core (vendored in tests/vendor/axe)
finds no violation of any impact; the keyboard alone reaches a page's main controls starting with the skip
link, with a focus ring 3:1 against what is behind it; no page scrolls on past its footer, nor sideways at a
phone's width (``PHONE``); and the board stays readable there. The browser journeys (tests/test_journeys.py)
run ``audit`` on every page they visit at their own width and ``axe_passes`` at the other one of ``DESKTOP``
and ``PHONE``, with ``ends_at_the_footer`` at both and ``fits_the_width`` at ``PHONE``; the tests here cover
the pages a visitor meets before any data exists, so an accessibility regression in the shell shows up on its
own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

AXE = Path(__file__).resolve().parent / "vendor" / "axe" / "axe.min.js"
#: the impacts that fail a page: all of axe's, "minor" included (issue 34)
BLOCKING = ("minor", "moderate", "serious", "critical")
#: the two widths every page is checked at: a desktop and a phone (an iPhone 12-15's CSS width)
DESKTOP, PHONE = 1280, 390
#: the tab stops walked per page (a proposal's code has a link per line; its main controls come before)
MAX_TABS = 150

#: axe's options: text of any length has its contrast judged (by default axe leaves text under a few characters
#: undecided, "too short to determine if it is actual text", and so passed the header's unread count at 1.36:1)
_RUN_AXE = """async () => {
  const result = await axe.run(document, {
    resultTypes: ['violations'], checks: {'color-contrast': {options: {ignoreLength: true}}},
  });
  return result.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ') + ': ' + n.failureSummary.replace(/\\s+/g, ' ')),
  }));
}"""


def axe_violations(page: Any) -> list[dict]:
    """axe-core's violations (of any impact in ``BLOCKING``) on the page as it is now.

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
  const outlined = s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0;
  const visible = outlined || (s.boxShadow && s.boxShadow !== 'none') || s.textDecorationLine.includes('underline');
  // The outline's contrast with the first opaque background behind it (the element's own when the outline is
  // drawn inside it, else its ancestors'; the page's white past the root).
  const rgb = c => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = c => c.slice(0, 3).map(v => (v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4)
    .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
  let back = [255, 255, 255];
  for (let n = parseFloat(s.outlineOffset) < 0 ? e : e.parentElement; n; n = n.parentElement) {
    const c = rgb(getComputedStyle(n).backgroundColor);
    if (c.length === 3 || c[3] > 0) { back = c; break; }
  }
  const [hi, lo] = [lum(rgb(s.outlineColor)), lum(back)].sort((a, b) => b - a);
  return {
    ring: outlined ? Math.round((hi + 0.05) / (lo + 0.05) * 100) / 100 : null,
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
    first, every focused element shows a focus indicator (an outline 3:1 at least against the background
    behind it), and each of ``targets`` (CSS selectors of the
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
        assert focused["ring"] is None or focused["ring"] >= 3, (
            f"the focus ring of {_describe(focused)} at {page.url} is {focused['ring']}:1 against what is "
            f"behind it, under 3:1 ({focused['style']})"
        )
        reached.update(focused["matches"])
        page.keyboard.press("Tab")
        focused = page.evaluate(_FOCUSED, list(targets))
        if focused is None or focused["selector"] == "#main":  # past the last stop, or wrapped round
            break
    missing = [t for t in targets if t not in reached]
    assert not missing, f"the keyboard never reaches {missing} on {page.url}"


def axe_passes(page: Any) -> None:
    """Fails listing axe's violations on the page as it is now, with the viewport's width."""
    found = axe_violations(page)
    assert not found, f"axe on {page.url} at {page.viewport_size['width']} px:\n" + "\n".join(
        f"  {v['impact']} {v['id']}: {v['help']}\n    " + "\n    ".join(v["nodes"]) for v in found
    )


def audit(page: Any, *, targets: list[str] = ()) -> None:
    """axe and the keyboard on the page as it is now (see ``axe_violations`` and ``keyboard_reaches``)."""
    axe_passes(page)
    keyboard_reaches(page, list(targets))


_REACH = """(axis) => {
  const across = axis === 'x', root = document.documentElement, footer = document.querySelector('body > footer');
  // Across: the viewport's width. Down: the footer's bottom (or the viewport's height, on a short page).
  const limit = across ? window.innerWidth
    : Math.max(window.innerHeight, footer ? footer.getBoundingClientRect().bottom + window.scrollY : 0);
  const size = across ? root.scrollWidth : root.scrollHeight;
  if (size <= Math.ceil(limit)) return null;
  const top = e => e === document.body || e === root;
  const positioned = e => { const s = getComputedStyle(e); return s.position !== 'static' || s.transform !== 'none'; };
  const clips = e => { const s = getComputedStyle(e); return (across ? s.overflowX : s.overflowY) !== 'visible'; };
  // Inside a box that clips or scrolls: that box, not the element, is what could stretch the page. An absolutely
  // positioned element escapes the boxes between it and its containing block (the nearest positioned one).
  const clipped = e => {
    for (let node = e; node && !top(node);) {
      const position = getComputedStyle(node).position;
      if (position === 'fixed') return true;
      let parent = node.parentElement;
      if (position === 'absolute') while (parent && !top(parent) && !positioned(parent)) parent = parent.parentElement;
      if (parent && !top(parent) && clips(parent)) return true;
      node = parent;
    }
    return false;
  };
  let furthest = null, reach = limit;
  for (const e of document.body.querySelectorAll('*')) {
    const r = e.getBoundingClientRect();
    const edge = across ? r.right + window.scrollX : r.bottom + window.scrollY;
    if (edge > reach && !clipped(e)) { furthest = e; reach = edge; }
  }
  const name = furthest === null ? 'no element (a margin or a pseudo-element)' : '<' + furthest.tagName.toLowerCase()
    + (furthest.id ? ' id=' + furthest.id : '') + (furthest.className && furthest.className.baseVal === undefined
       ? ' class="' + furthest.className + '"' : '') + '> '
    + JSON.stringify((furthest.innerText || furthest.textContent || '').trim().replace(/\\s+/g, ' ').slice(0, 60));
  return {size, limit: Math.round(limit), name, reach: Math.round(reach)};
}"""


def fits_the_width(page: Any) -> None:
    """Nothing on the page reaches past the viewport's right edge (no sideways scrolling); fails naming the
    element that reaches furthest (outside any box that scrolls or clips it) and where it ends."""
    wide = page.evaluate(_REACH, "x")
    assert wide is None, (
        f"{page.url} scrolls sideways at {wide['limit']} px: it is {wide['size']} px wide, and "
        f"{wide['name']} ends at {wide['reach']} px"
    )


def ends_at_the_footer(page: Any) -> None:
    """The page does not scroll on past its footer (into blank space); fails naming the element that reaches
    furthest down (a visually hidden label inside a box that scrolls without being positioned, say)."""
    long = page.evaluate(_REACH, "y")
    assert long is None, (
        f"{page.url} scrolls {long['size'] - long['limit']} px past its footer at {page.viewport_size['width']} "
        f"px: {long['name']} ends at {long['reach']} px"
    )


def board_readable_at_phone_width(page: Any, base_url: str) -> None:
    """At ``PHONE`` px the board's score column is on screen and nothing scrolls sideways."""
    before = page.viewport_size
    page.set_viewport_size({"width": PHONE, "height": 844})
    page.goto(f"{base_url}/")
    score = page.locator("#board-table thead th", has_text="Scaled Pass@1").bounding_box()
    # A pixel of slack: layout widths are fractional, and a column ending 0.3 px past the edge is readable.
    assert score and score["x"] >= 0 and score["x"] + score["width"] <= PHONE + 1, score
    fits_the_width(page)
    page.set_viewport_size(before)


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
def test_an_empty_portal_page_has_no_axe_violation_fits_a_phone_and_works_by_keyboard(
    live_server, browser, url, targets
):
    page = browser.new_page(viewport={"width": DESKTOP, "height": 900})
    page.goto(f"{live_server.url}{url}")
    audit(page, targets=targets)
    ends_at_the_footer(page)
    page.set_viewport_size({"width": PHONE, "height": 844})
    axe_passes(page)
    fits_the_width(page)
    ends_at_the_footer(page)


def test_axe_is_the_vendored_build_the_readme_names():
    import hashlib

    readme = (AXE.parent / "README.md").read_text()
    assert hashlib.sha256(AXE.read_bytes()).hexdigest() in readme
    assert "4.14.1" in readme and (AXE.parent / "LICENSE").is_file()


# --- the checks can fail --------------------------------------------------------------------------------


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_audit_fails_on_a_violation_of_any_impact_a_missing_skip_link_a_missing_or_pale_focus_ring_and_a_page_too_wide_or_too_long(
    live_server, browser
):
    page = browser.new_page(viewport={"width": DESKTOP, "height": 900})
    page.goto(f"{live_server.url}/accounts/login/")
    page.evaluate(
        "() => document.querySelector('main').insertAdjacentHTML('beforeend', '<img src=\"/x.png\">')"
    )
    with pytest.raises(AssertionError, match="critical image-alt"):
        audit(page)

    # A pale single character (a count, like the header's unread notifications) has its contrast judged.
    page.goto(f"{live_server.url}/accounts/login/")
    page.evaluate(
        """() => { document.querySelector('main').insertAdjacentHTML('beforeend', '<p id="count">2</p>');
                   document.getElementById('count').style.setProperty('color', '#d0d7de'); }"""
    )
    with pytest.raises(AssertionError, match=r"serious color-contrast(.|\n)*#count"):
        axe_passes(page)

    # A finding of the lowest impact fails as well: an empty heading is "minor" to axe.
    page.goto(f"{live_server.url}/accounts/login/")
    page.evaluate("() => document.querySelector('main').insertAdjacentHTML('beforeend', '<h2></h2>')")
    with pytest.raises(AssertionError, match=rf"at {DESKTOP} px:\s+minor empty-heading"):
        audit(page)

    # At a phone's width: a paragraph wider than the screen fails, named; as wide a table in a box that
    # scrolls does not, and neither does a hidden label in it that the box, being positioned, contains.
    page.set_viewport_size({"width": PHONE, "height": 844})
    page.goto(f"{live_server.url}/accounts/login/")
    fits_the_width(page)
    page.evaluate(
        """() => {
          document.querySelector('main').insertAdjacentHTML('beforeend',
            '<div class="table-wrap"><p id="boxed">boxed <span class="visually-hidden">hidden</span></p></div>');
          document.getElementById('boxed').style.setProperty('margin-left', '600px');
        }"""
    )
    fits_the_width(page)
    page.evaluate(
        """() => { document.querySelector('main').insertAdjacentHTML('beforeend', '<p id="wide">Too wide</p>');
                   document.getElementById('wide').style.setProperty('width', '500px'); }"""
    )
    with pytest.raises(
        AssertionError, match=r'scrolls sideways at 390 px: .*<p id=wide> "Too wide" ends at 516 px'
    ):
        fits_the_width(page)

    # A box that scrolls without being positioned lets the hidden text inside it stretch the page downwards.
    page.goto(f"{live_server.url}/accounts/login/")
    ends_at_the_footer(page)
    page.evaluate(
        """() => {
          document.querySelector('main').insertAdjacentHTML('beforeend',
            '<div id="box"><p id="tall">tall</p><span class="visually-hidden">hidden</span></div>');
          document.getElementById('box').style.setProperty('overflow', 'auto');
          document.getElementById('box').style.setProperty('max-height', '50px');
          document.getElementById('tall').style.setProperty('height', '3000px');
        }"""
    )
    with pytest.raises(
        AssertionError,
        match=r'scrolls \d+ px past its footer at 390 px: <span class="visually-hidden"> "hidden"',
    ):
        ends_at_the_footer(page)
    page.set_viewport_size({"width": DESKTOP, "height": 900})

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
    page.evaluate(
        "() => document.querySelector('#id_password').style.setProperty('outline-color', '#ffbf47')"
    )
    with pytest.raises(AssertionError, match=r"focus ring of <input> '' #id_password .* is 1\.64:1"):
        keyboard_reaches(page, ["#id_password"])

    page.goto(f"{live_server.url}/accounts/login/")
    page.evaluate("() => document.querySelector('#id_login').setAttribute('disabled', '')")
    with pytest.raises(AssertionError, match=r"never reaches \['#id_login\[disabled\]'\]"):
        keyboard_reaches(page, ["#id_login[disabled]"])
