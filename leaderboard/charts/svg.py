"""The SVG primitives every chart uses: escaping, the root element and its title, scales and axes, hatches,
legends and links (the contracts are in the package's docstring)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from html import escape

from leaderboard.charts.encoding import FONT, GRID, MUTED, TEXT, Swatch, group_swatches, palette_swatches

MIN_FONT = 10
CHAR_W = 6.6  # average advance of a 12px sans-serif glyph, used to size margins for labels
MAX_LABEL = 42  # longer labels are shortened on the axis (the full text stays in the mark's <title>)
CHART_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


def svg_escape(text: object) -> str:
    """Escape any value for use as SVG text or as an attribute value (quotes included)."""
    return escape(str(text), quote=True)


def svg_num(value: float) -> str:
    """Coordinates with at most two decimals and no trailing zeros (compact, deterministic output)."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def fmt(value: float | None, digits: int = 2) -> str:
    """A value as shown in labels; ``None`` (no data) is shown as an en dash."""
    return "–" if value is None else f"{value:.{digits}f}"


def svg_short(label: str) -> str:
    return label if len(label) <= MAX_LABEL else label[: MAX_LABEL - 1] + "…"


def svg_label_width(labels: Sequence[str], font: float = FONT) -> float:
    longest = max((len(svg_short(label)) for label in labels), default=0)
    return longest * CHAR_W * font / FONT + 12


def svg_check_id(chart_id: str) -> str:
    if not CHART_ID.match(chart_id):
        raise ValueError(f"chart_id must match {CHART_ID.pattern!r}, got {chart_id!r}")
    return chart_id


def svg_open(chart_id: str, width: float, height: float, title: str, desc: str) -> list[str]:
    cid = svg_check_id(chart_id)
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="{cid}" '
        f'viewBox="0 0 {svg_num(width)} {svg_num(height)}" style="max-width: {svg_num(width)}px; '
        f'--chart-w: {svg_num(width)}px" role="graphics-document" '
        f'aria-labelledby="{cid}-title {cid}-desc" font-family="system-ui, sans-serif" '
        f'font-size="{FONT}" fill="{TEXT}">',
        f'<title id="{cid}-title">{svg_escape(title)}</title>',
        f'<desc id="{cid}-desc">{svg_escape(desc)}</desc>',
    ]


def svg_close(parts: Sequence[str], *tail: str) -> str:
    """The chart's SVG text: ``parts``, then ``tail`` (legend, keys), one per line, and the closing tag;
    empty parts (no hatch patterns, no legend) are left out."""
    return "\n".join(p for p in (*parts, *tail, "</svg>") if p)


def svg_heading(title: str, x: float = 8, y: float = 20) -> str:
    return (
        f'<text x="{svg_num(x)}" y="{svg_num(y)}" font-size="15" font-weight="600">{svg_escape(title)}</text>'
    )


def no_data_svg(*, chart_id: str, title: str, message: str = "No data to chart yet.") -> str:
    """A small chart that says there is nothing to show (used by every chart on empty input)."""
    parts = svg_open(chart_id, 640, 90, title, f"{title}: {message}")
    parts.append(svg_heading(title))
    parts.append(
        f'<rect x="8" y="32" width="624" height="48" rx="6" fill="#f6f8fa" stroke="{GRID}" '
        f'stroke-dasharray="4 3"/>'
    )
    parts.append(f'<text x="320" y="61" text-anchor="middle" fill="{MUTED}">{svg_escape(message)}</text>')
    return svg_close(parts)


def svg_swatches(groups: Sequence[str], fixed: Mapping[str, Swatch] | None) -> dict[str, Swatch]:
    """``fixed`` for the groups it knows, groups it lacks appended after them (still distinct)."""
    if fixed is None:
        return group_swatches(groups)
    missing = sorted({g for g in groups if g not in fixed}, key=str.casefold)
    return palette_swatches([*fixed, *missing]) if missing else dict(fixed)


def skippable(svg: str, *, label: str = "Skip the chart") -> str:
    """``svg`` preceded by a link past it and followed by its target, so keyboard users need not tab
    through every linked mark to reach what follows (the chart's id names the target)."""
    match = re.search(r'<svg [^>]*\bid="([^"]+)"', svg)
    if not match:
        return svg
    target = f"after-{match.group(1)}"
    return (
        f'<a href="#{target}" class="skip">{svg_escape(label)}</a>{svg}'
        f'<span id="{target}" class="skip-target" tabindex="-1"></span>'
    )


def svg_hatch_defs(chart_id: str, swatches: Sequence[Swatch]) -> str:
    """Pattern definitions for hatched swatches (diagonal lines for round 1, crosses for round 2+)."""
    defs = []
    for sw in sorted({s for s in swatches if s.hatch}, key=lambda s: (s.hatch, s.colour)):
        pid = svg_pattern_id(chart_id, sw)
        lines = '<path d="M0,6 L6,0" stroke="#000" stroke-width="1.2"/>'
        if sw.hatch > 1:
            lines += '<path d="M0,0 L6,6" stroke="#000" stroke-width="1.2"/>'
        defs.append(
            f'<pattern id="{pid}" width="6" height="6" patternUnits="userSpaceOnUse">'
            f'<rect width="6" height="6" fill="{sw.colour}"/>{lines}</pattern>'
        )
    return f"<defs>{''.join(defs)}</defs>" if defs else ""


def svg_pattern_id(chart_id: str, sw: Swatch) -> str:
    return f"{chart_id}-h{sw.hatch}-{sw.colour.lstrip('#')}"


def svg_fill(chart_id: str, sw: Swatch) -> str:
    return f"url(#{svg_pattern_id(chart_id, sw)})" if sw.hatch else sw.colour


def svg_legend(
    chart_id: str, entries: Sequence[tuple[str, Swatch]], *, x: float, y: float, width: float
) -> tuple[str, float]:
    """A wrapping legend row; returns (svg, height used)."""
    parts = [f'<g class="legend" transform="translate({svg_num(x)},{svg_num(y)})">']
    cx, cy = 0.0, 0.0
    for label, sw in entries:
        w = 18 + len(label) * CHAR_W + 16
        if cx and cx + w > width:
            cx, cy = 0.0, cy + 18
        parts.append(
            f'<rect x="{svg_num(cx)}" y="{svg_num(cy)}" width="12" height="12" fill="{svg_fill(chart_id, sw)}" '
            f'stroke="{TEXT}" stroke-width="0.5"/>'
            f'<text x="{svg_num(cx + 17)}" y="{svg_num(cy + 10.5)}">{svg_escape(label)}</text>'
        )
        cx += w
    parts.append("</g>")
    return "".join(parts), cy + 18


def svg_legend_below(
    chart_id: str, entries: Sequence[tuple[str, Swatch]], *, plot_bottom: float, width: float
) -> tuple[str, float]:
    """The legend under a plot whose bottom edge is at ``plot_bottom`` (44 px below it, leaving room for the
    x axis and its label; 8 px side margins); returns (svg, height used), ("", 0.0) without entries."""
    if not entries:
        return "", 0.0
    return svg_legend(chart_id, entries, x=8, y=plot_bottom + 44, width=width - 16)


def svg_link(href: str | None, inner: str) -> str:
    return f'<a href="{svg_escape(href)}">{inner}</a>' if href else inner


def nice_max(value: float) -> float:
    """A round axis maximum at or above ``value`` (1, 2, 2.5, 5 times a power of ten)."""
    if value <= 0:
        return 1.0
    exp = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * exp >= value:
            return step * exp
    return 10 * exp


def axis_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    span = hi - lo
    step = nice_max(span / count) if span > 0 else 1.0
    first = math.ceil(lo / step) * step
    ticks = []
    value = first
    while value <= hi + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    return ticks


def svg_x_axis(scale, ticks: Sequence[float], *, top: float, bottom: float, label: str, unit: str) -> str:
    parts = []
    for t in ticks:
        x = scale(t)
        parts.append(
            f'<line x1="{svg_num(x)}" y1="{svg_num(top)}" x2="{svg_num(x)}" y2="{svg_num(bottom)}" stroke="{GRID}" '
            f'stroke-width="{1.5 if t == 0 else 0.75}"/>'
            f'<text x="{svg_num(x)}" y="{svg_num(bottom + 14)}" text-anchor="middle" fill="{MUTED}">'
            f"{svg_escape(tick_text(t))}{svg_escape(unit)}</text>"
        )
    if label:
        mid = (scale(ticks[0]) + scale(ticks[-1])) / 2 if ticks else 0
        parts.append(
            f'<text x="{svg_num(mid)}" y="{svg_num(bottom + 32)}" text-anchor="middle">{svg_escape(label)}</text>'
        )
    return "".join(parts)


def tick_text(t: float) -> str:
    return str(int(t)) if float(t).is_integer() else f"{t:g}"


def svg_row_label(x: float, y: float, label: str) -> str:
    """A row's label ending at ``x`` (shortened past ``MAX_LABEL``; the mark's title has it whole)."""
    return f'<text x="{svg_num(x)}" y="{svg_num(y)}" text-anchor="end">{svg_escape(svg_short(label))}</text>'


def group_entries(shown: set[str], swatches: Mapping[str, Swatch]) -> list[tuple[str, Swatch]]:
    """Legend entries of the groups shown, by name (the unnamed group has none)."""
    return [(g, swatches[g]) for g in sorted(shown, key=str.casefold) if g]
