"""Colour contrast read from the stylesheets (issue 34 item 5), for what axe cannot see on the pages the
browser tests visit: every Pygments token colour on a diff's changed rows (a test page holds a few tokens,
real code all of them), the focus ring (axe does not judge outlines) and the header's unread count."""

from __future__ import annotations

import re

from tests.conftest import REPO

CSS = REPO / "static" / "css"


def luminance(colour: str) -> float:
    digits = colour.lstrip("#")
    if len(digits) == 3:
        digits = "".join(d * 2 for d in digits)
    channels = [int(digits[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    """WCAG 2's contrast ratio of two ``#rrggbb`` (or ``#rgb``) colours."""
    light, dark = sorted((luminance(a), luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def test_the_contrast_ratio_matches_wcags_examples():
    assert round(contrast("#000", "#fff"), 1) == 21.0
    assert round(contrast("#777777", "#ffffff"), 2) == 4.48
    assert contrast("#fff", "#fff") == 1.0


def css_colour(text: str, selector: str, prop: str = "color") -> str:
    """The colour ``prop`` takes in the first rule of ``text`` whose selector (at a line's start) is exactly
    ``selector``; a ``var(--name)`` is read from the ``:root`` rule."""
    match = re.search(
        r"^"
        + re.escape(selector)
        + r" \{[^}]*?(?<![-\w])"
        + prop
        + r":\s*(#[0-9A-Fa-f]{3,6}|var\(--[\w-]+\))",
        text,
        re.M,
    )
    assert match, f"no {prop} for {selector}"
    value = match.group(1)
    return css_colour(text, ":root", value[4:-1]) if value.startswith("var(") else value


def test_every_pygments_token_keeps_4_5_to_1_on_a_diffs_changed_rows():
    code = (CSS / "code.css").read_text()
    board = (CSS / "leaderboard.css").read_text()
    tokens = dict(re.findall(r"^\.hl \.(\w+) \{ color: (#[0-9A-Fa-f]{3,6})", code, re.M))
    assert len(tokens) > 40, "code.css lost its Pygments rules"
    darker: dict[str, str] = {}
    for selector, colour in re.findall(
        r"^table\.diff tr:is\(\.removed, \.added\) (:is\([^)]*\)|\.\w+) \{ color: (#[0-9A-Fa-f]{6}); \}",
        board,
        re.M,
    ):
        darker.update(dict.fromkeys(re.findall(r"\.(\w+)", selector), colour))
    rows = {kind: css_colour(board, f"table.diff tr.{kind}", "background") for kind in ("removed", "added")}
    # Whitespace tokens (.w) hold no visible text.
    low = {
        (token, kind): round(contrast(darker.get(token, colour), background), 2)
        for token, colour in tokens.items()
        if token != "w"
        for kind, background in rows.items()
        if contrast(darker.get(token, colour), background) < 4.5
    }
    assert not low, f"token colours under 4.5:1 on a diff's changed rows: {low}"


def test_the_focus_ring_keeps_3_to_1_on_the_page_and_on_the_header():
    site = (CSS / "site.css").read_text()
    ring = css_colour(site, ":root", "--focus")
    header = css_colour(site, ".site-header", "background")
    header_ring = css_colour(site, ".site-header", "--focus")
    for background in ("#ffffff", css_colour(site, ":root", "--panel")):
        assert contrast(ring, background) >= 3, (ring, background)
    assert contrast(header_ring, header) >= 3, (header_ring, header)
    assert re.search(r"^:focus-visible \{ outline: 3px solid var\(--focus\);", site, re.M)


def test_the_unread_count_in_the_header_is_readable_on_every_page():
    site = (CSS / "site.css").read_text()
    red = css_colour(site, ".badge.count", "background")
    assert contrast(css_colour(site, ".badge.count"), red) >= 4.5
    assert contrast(red, css_colour(site, ".site-header", "background")) >= 3
