"""Server-side SVG charts for the leaderboard pages: pure functions from plain data to an SVG string.

No JavaScript library and no network: every chart is a self-contained ``<svg>`` element that the templates
inline (``{{ svg|safe }}``; every piece of text inside is escaped here). Contracts shared by all charts:

- the root carries ``role="graphics-document"`` (not ``img``, whose children are presentational: bars and
  labels link to model and paper pages), a ``<title>`` and a ``<desc>`` referenced by ``aria-labelledby``,
  and a ``viewBox`` (no fixed pixel size), so it scales with its container;
- every label, name and URL given by the caller is XML-escaped, so a model called ``<script>`` is text;
- colours come from the Okabe-Ito palette (distinguishable with the common colour-vision deficiencies);
  when there are more groups than colours, the extra groups also get a hatch pattern; every coloured mark
  has a legend entry and a ``<title>`` with its exact value, so colour is never the only channel;
- a group keeps its colour across pages and filters when the caller passes ``swatches`` built from every
  group that exists (``group_swatches`` of all developers, ``category_swatches``), not only those shown;
- text is never smaller than ``MIN_FONT`` user units and the root carries its natural width
  (``--chart-w``), so a narrow screen scrolls the chart at full size instead of shrinking its text;
- empty input gives a "no data" chart (same accessibility contract) instead of an empty or broken SVG;
- ``chart_id`` (letters, digits, ``-``, ``_``) prefixes every id inside the chart, so several charts can be
  inlined in one page without id clashes.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

from researchcodebench import errors as error_catalogue

#: Okabe & Ito (2008) colour-blind-safe palette, black last (it is used for outlines and text).
OKABE_ITO: tuple[str, ...] = (
    "#E69F00",  # orange
    "#56B4E9",  # sky blue
    "#009E73",  # bluish green
    "#F0E442",  # yellow
    "#0072B2",  # blue
    "#D55E00",  # vermillion
    "#CC79A7",  # reddish purple
    "#999999",  # grey
)
TEXT = "#1b1f24"
MUTED = "#57606a"
GRID = "#d0d7de"
MISSING = "#eeeeee"

# Sequential colour scale for heatmaps: stops sampled from viridis (perceptually uniform and readable in
# greyscale and with colour-vision deficiencies). 0 -> dark purple, 1 -> yellow.
_VIRIDIS: tuple[tuple[int, int, int], ...] = (
    (68, 1, 84),
    (59, 82, 139),
    (33, 145, 140),
    (94, 201, 98),
    (253, 231, 37),
)

FONT = 12
#: the smallest font size any chart text uses (user units = CSS px at natural size)
MIN_FONT = 10
CHAR_W = 6.6  # average advance of a 12px sans-serif glyph, used to size margins for labels
MAX_LABEL = 42  # longer labels are shortened on the axis (the full text stays in the mark's <title>)
_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


def _e(text: object) -> str:
    """Escape any value for use as SVG text or as an attribute value (quotes included)."""
    return escape(str(text), quote=True)


def _num(value: float) -> str:
    """Coordinates with at most two decimals and no trailing zeros (compact, deterministic output)."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def fmt(value: float | None, digits: int = 2) -> str:
    """A value as shown in labels; ``None`` (no data) is shown as an en dash."""
    return "–" if value is None else f"{value:.{digits}f}"


def _short(label: str) -> str:
    return label if len(label) <= MAX_LABEL else label[: MAX_LABEL - 1] + "…"


def _label_width(labels: Sequence[str], font: float = FONT) -> float:
    longest = max((len(_short(label)) for label in labels), default=0)
    return longest * CHAR_W * font / FONT + 12


def _check_id(chart_id: str) -> str:
    if not _ID.match(chart_id):
        raise ValueError(f"chart_id must match {_ID.pattern!r}, got {chart_id!r}")
    return chart_id


def _open(chart_id: str, width: float, height: float, title: str, desc: str) -> list[str]:
    cid = _check_id(chart_id)
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="{cid}" '
        f'viewBox="0 0 {_num(width)} {_num(height)}" style="max-width: {_num(width)}px; '
        f'--chart-w: {_num(width)}px" role="graphics-document" '
        f'aria-labelledby="{cid}-title {cid}-desc" font-family="system-ui, sans-serif" '
        f'font-size="{FONT}" fill="{TEXT}">',
        f'<title id="{cid}-title">{_e(title)}</title>',
        f'<desc id="{cid}-desc">{_e(desc)}</desc>',
    ]


def _heading(title: str, x: float = 8, y: float = 20) -> str:
    return f'<text x="{_num(x)}" y="{_num(y)}" font-size="15" font-weight="600">{_e(title)}</text>'


def no_data_svg(*, chart_id: str, title: str, message: str = "No data to chart yet.") -> str:
    """A small chart that says there is nothing to show (used by every chart on empty input)."""
    parts = _open(chart_id, 640, 90, title, f"{title}: {message}")
    parts.append(_heading(title))
    parts.append(
        f'<rect x="8" y="32" width="624" height="48" rx="6" fill="#f6f8fa" stroke="{GRID}" '
        f'stroke-dasharray="4 3"/>'
    )
    parts.append(f'<text x="320" y="61" text-anchor="middle" fill="{MUTED}">{_e(message)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


# --- colours ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Swatch:
    """How one group is drawn: a fill colour and, past the palette's length, a hatch pattern."""

    colour: str
    hatch: int  # 0: none; 1, 2, ...: which hatch pattern


def palette_swatches(ordered: Sequence[str]) -> dict[str, Swatch]:
    """Group -> swatch by position in ``ordered`` (duplicates keep their first position)."""
    out: dict[str, Swatch] = {}
    for group in ordered:
        if group not in out:
            i = len(out)
            out[group] = Swatch(OKABE_ITO[i % len(OKABE_ITO)], i // len(OKABE_ITO))
    return out


def group_swatches(groups: Sequence[str]) -> dict[str, Swatch]:
    """Stable group -> swatch: groups sorted by name get palette colours in order (same set, same colours).
    Pass every group that exists (all developers), not the ones a filter left, to keep colours fixed."""
    return palette_swatches(sorted(set(groups), key=str.casefold))


def category_swatches() -> dict[str, Swatch]:
    """Error category label -> swatch in the catalogue's order (``researchcodebench.errors``), so a
    category has the same colour in every error chart whatever else is shown."""
    # Model-tier categories first, in the catalogue's order: the eight commonest (syntax ... logic) get
    # plain colours, the rarer ones hatches; the infrastructure tier (charted apart) comes last.
    ordered = sorted(
        (slug for slug, (_label, tier) in error_catalogue.CATEGORIES.items() if slug != "passed"),
        key=lambda slug: error_catalogue.tier_of(slug) != error_catalogue.MODEL,
    )
    return palette_swatches([error_catalogue.LABELS[slug] for slug in ordered])


def series_swatches(count: int) -> list[Swatch]:
    """The swatches of ``count`` series in order (grouped bars, the interactive views): two series get
    orange and blue, the most distinct pair; more take the palette in order, hatched past its length."""
    return [
        Swatch(OKABE_ITO[(i * 4) % len(OKABE_ITO)] if count == 2 else OKABE_ITO[i % 8], i // 8)
        for i in range(count)
    ]


def _swatches(groups: Sequence[str], fixed: Mapping[str, Swatch] | None) -> dict[str, Swatch]:
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
        f'<a href="#{target}" class="skip">{_e(label)}</a>{svg}'
        f'<span id="{target}" class="skip-target" tabindex="-1"></span>'
    )


def _hatch_defs(chart_id: str, swatches: Sequence[Swatch]) -> str:
    """Pattern definitions for hatched swatches (diagonal lines for round 1, crosses for round 2+)."""
    defs = []
    for sw in sorted({s for s in swatches if s.hatch}, key=lambda s: (s.hatch, s.colour)):
        pid = _pattern_id(chart_id, sw)
        lines = '<path d="M0,6 L6,0" stroke="#000" stroke-width="1.2"/>'
        if sw.hatch > 1:
            lines += '<path d="M0,0 L6,6" stroke="#000" stroke-width="1.2"/>'
        defs.append(
            f'<pattern id="{pid}" width="6" height="6" patternUnits="userSpaceOnUse">'
            f'<rect width="6" height="6" fill="{sw.colour}"/>{lines}</pattern>'
        )
    return f"<defs>{''.join(defs)}</defs>" if defs else ""


def _pattern_id(chart_id: str, sw: Swatch) -> str:
    return f"{chart_id}-h{sw.hatch}-{sw.colour.lstrip('#')}"


def _fill(chart_id: str, sw: Swatch) -> str:
    return f"url(#{_pattern_id(chart_id, sw)})" if sw.hatch else sw.colour


def _legend(
    chart_id: str, entries: Sequence[tuple[str, Swatch]], *, x: float, y: float, width: float
) -> tuple[str, float]:
    """A wrapping legend row; returns (svg, height used)."""
    parts = [f'<g class="legend" transform="translate({_num(x)},{_num(y)})">']
    cx, cy = 0.0, 0.0
    for label, sw in entries:
        w = 18 + len(label) * CHAR_W + 16
        if cx and cx + w > width:
            cx, cy = 0.0, cy + 18
        parts.append(
            f'<rect x="{_num(cx)}" y="{_num(cy)}" width="12" height="12" fill="{_fill(chart_id, sw)}" '
            f'stroke="{TEXT}" stroke-width="0.5"/>'
            f'<text x="{_num(cx + 17)}" y="{_num(cy + 10.5)}">{_e(label)}</text>'
        )
        cx += w
    parts.append("</g>")
    return "".join(parts), cy + 18


def _legend_below(
    chart_id: str, entries: Sequence[tuple[str, Swatch]], *, plot_bottom: float, width: float
) -> tuple[str, float]:
    """The legend under a plot whose bottom edge is at ``plot_bottom`` (44 px below it, leaving room for the
    x axis and its label; 8 px side margins); returns (svg, height used), ("", 0.0) without entries."""
    if not entries:
        return "", 0.0
    return _legend(chart_id, entries, x=8, y=plot_bottom + 44, width=width - 16)


def _link(href: str | None, inner: str) -> str:
    return f'<a href="{_e(href)}">{inner}</a>' if href else inner


def _nice_max(value: float) -> float:
    """A round axis maximum at or above ``value`` (1, 2, 2.5, 5 times a power of ten)."""
    if value <= 0:
        return 1.0
    exp = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * exp >= value:
            return step * exp
    return 10 * exp


def _ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    span = hi - lo
    step = _nice_max(span / count) if span > 0 else 1.0
    first = math.ceil(lo / step) * step
    ticks = []
    value = first
    while value <= hi + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    return ticks


def _x_axis(scale, ticks: Sequence[float], *, top: float, bottom: float, label: str, unit: str) -> str:
    parts = []
    for t in ticks:
        x = scale(t)
        parts.append(
            f'<line x1="{_num(x)}" y1="{_num(top)}" x2="{_num(x)}" y2="{_num(bottom)}" stroke="{GRID}" '
            f'stroke-width="{1.5 if t == 0 else 0.75}"/>'
            f'<text x="{_num(x)}" y="{_num(bottom + 14)}" text-anchor="middle" fill="{MUTED}">'
            f"{_e(_tick_text(t))}{_e(unit)}</text>"
        )
    if label:
        mid = (scale(ticks[0]) + scale(ticks[-1])) / 2 if ticks else 0
        parts.append(f'<text x="{_num(mid)}" y="{_num(bottom + 32)}" text-anchor="middle">{_e(label)}</text>')
    return "".join(parts)


def _tick_text(t: float) -> str:
    return str(int(t)) if float(t).is_integer() else f"{t:g}"


# --- (a) horizontal bars ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bar:
    """One bar: ``value`` None means "no data" (drawn as an empty row with a dash).

    ``err`` is an absolute (low, high) interval drawn as an error bar (e.g. mean ± std, or a 95% interval).
    ``outlined`` draws a heavy dashed outline (the paper's marker for open-weights models).
    """

    label: str
    value: float | None
    group: str = ""
    outlined: bool = False
    err: tuple[float, float] | None = None
    href: str | None = None
    note: str = ""


def bar_chart(
    bars: Sequence[Bar],
    *,
    chart_id: str,
    title: str,
    x_label: str,
    desc: str = "",
    max_value: float | None = None,
    unit: str = "",
    error_label: str = "",
    outline_label: str = "Open weights (dashed outline)",
    legend: bool = True,
    digits: int = 2,
    width: float = 820,
    swatches: Mapping[str, Swatch] | None = None,
) -> str:
    """Horizontal bars, one row per ``Bar`` in the given order, coloured by ``group`` (``swatches``: the
    fixed colours of every group that exists, so a filter cannot recolour a group).

    The axis runs from min(0, lowest value) to ``max_value`` (default: a round number above the highest
    value or error bar end), so negative values (deltas) extend left of a zero line.
    """
    if not bars:
        return no_data_svg(chart_id=chart_id, title=title)
    swatches = _swatches([b.group for b in bars], swatches)
    values = [v for b in bars for v in ([b.value] if b.value is not None else []) + list(b.err or ())]
    hi = max_value if max_value is not None else _nice_max(max(values, default=0.0))
    # The axis starts below zero only for negative bar values (deltas); error bars are clipped to the axis.
    lo_raw = min((b.value for b in bars if b.value is not None), default=0.0)
    lo = -_nice_max(-lo_raw) if lo_raw < 0 else 0.0
    row, left = 22, _label_width([b.label for b in bars]) + 8
    # Room right of the longest bar for its value label and note.
    widest = max(
        len(f"{hi:.{digits}f}{unit}"), *(len(f"{b.value or 0:.{digits}f}{unit} {b.note}") for b in bars)
    )
    right = 8 + widest * CHAR_W + 8
    plot_w = width - left - right
    top = 34

    def scale(v: float) -> float:
        return left + (v - lo) / (hi - lo) * plot_w

    shown = {b.group for b in bars}
    legend_entries = [(g, swatches[g]) for g in sorted(shown, key=str.casefold) if g] if legend else []
    plot_h = row * len(bars)
    legend_svg, legend_h = _legend_below(chart_id, legend_entries, plot_bottom=top + plot_h, width=width)
    has_outline = any(b.outlined for b in bars)
    extra = (18 if has_outline else 0) + (18 if error_label else 0)
    height = top + plot_h + 44 + legend_h + extra + 8
    summary = _bar_summary(bars, unit, digits)
    parts = _open(chart_id, width, height, title, " ".join(p for p in (desc, summary) if p))
    parts.append(_hatch_defs(chart_id, [swatches[g] for g in shown]))
    parts.append(_heading(title))
    parts.append(_x_axis(scale, _ticks(lo, hi), top=top - 4, bottom=top + plot_h, label=x_label, unit=unit))
    zero = scale(0.0)
    for i, b in enumerate(bars):
        y = top + i * row
        cy = y + row / 2
        label = (
            f'<text x="{_num(left - 8)}" y="{_num(cy + 4)}" text-anchor="end">{_e(_short(b.label))}</text>'
        )
        if b.value is None:
            mark = f'<text x="{_num(zero + 4)}" y="{_num(cy + 4)}" fill="{MUTED}">– no data</text>'
            tip = f"{b.label}: no data"
        else:
            x0, x1 = sorted((zero, scale(b.value)))
            sw = swatches[b.group]
            outline = (
                f' stroke="{TEXT}" stroke-width="2" stroke-dasharray="5 3"'
                if b.outlined
                else f' stroke="{TEXT}" stroke-width="0.4"'
            )
            tip_bits = [f"{b.label}: {b.value:.{digits}f}{unit}"]
            if b.group:
                tip_bits.append(b.group)
            if b.outlined:
                tip_bits.append("open weights")
            if b.err:
                tip_bits.append(f"{error_label or 'interval'} {b.err[0]:.{digits}f}–{b.err[1]:.{digits}f}")
            if b.note:
                tip_bits.append(b.note)
            tip = "; ".join(tip_bits)
            mark = (
                f'<rect x="{_num(x0)}" y="{_num(y + 3)}" width="{_num(max(x1 - x0, 0.5))}" '
                f'height="{_num(row - 6)}" fill="{_fill(chart_id, sw)}"{outline}/>'
            )
            end = scale(min(max(b.value, b.err[1] if b.err else b.value), hi))
            if b.err:
                e0, e1 = scale(max(b.err[0], lo)), scale(min(b.err[1], hi))
                mark += (
                    f'<path d="M{_num(e0)},{_num(cy)} H{_num(e1)} M{_num(e0)},{_num(cy - 4)} V{_num(cy + 4)} '
                    f'M{_num(e1)},{_num(cy - 4)} V{_num(cy + 4)}" stroke="{TEXT}" stroke-width="1.2" fill="none"/>'
                )
            if b.value < 0:
                vx, anchor = scale(max(min(b.value, b.err[0] if b.err else b.value), lo)) - 4, "end"
            else:
                vx, anchor = end + 4, "start"
            mark += (
                f'<text x="{_num(vx)}" y="{_num(cy + 4)}" text-anchor="{anchor}">'
                f"{_e(f'{b.value:.{digits}f}{unit}')}{_e(b.note and ' ' + b.note)}</text>"
            )
        parts.append(_link(b.href, f'<g class="bar"><title>{_e(tip)}</title>{label}{mark}</g>'))
    note_y = top + plot_h + 44 + legend_h
    if has_outline:
        parts.append(
            f'<rect x="8" y="{_num(note_y)}" width="22" height="11" fill="none" stroke="{TEXT}" '
            f'stroke-width="2" stroke-dasharray="5 3"/><text x="36" y="{_num(note_y + 10)}">'
            f"{_e(outline_label)}</text>"
        )
        note_y += 18
    if error_label:
        parts.append(
            f'<path d="M8,{_num(note_y + 5)} H30 M8,{_num(note_y)} V{_num(note_y + 10)} M30,{_num(note_y)} '
            f'V{_num(note_y + 10)}" stroke="{TEXT}" stroke-width="1.2"/>'
            f'<text x="36" y="{_num(note_y + 10)}">Error bars: {_e(error_label)}</text>'
        )
    parts.append(legend_svg)
    parts.append("</svg>")
    return "\n".join(p for p in parts if p)


def _bar_summary(bars: Sequence[Bar], unit: str, digits: int) -> str:
    scored = [b for b in bars if b.value is not None]
    if not scored:
        return f"{len(bars)} rows, none with data."
    best = max(scored, key=lambda b: b.value)  # type: ignore[arg-type,return-value]
    worst = min(scored, key=lambda b: b.value)  # type: ignore[arg-type,return-value]
    return (
        f"{len(bars)} rows; highest {best.label} ({best.value:.{digits}f}{unit}), "
        f"lowest {worst.label} ({worst.value:.{digits}f}{unit})."
    )


# --- (b) grouped bars ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Series:
    """One series of a grouped bar chart or a stacked chart: a name and one value per category."""

    name: str
    values: Sequence[float | None]


def grouped_bar_chart(
    categories: Sequence[str],
    series: Sequence[Series],
    *,
    chart_id: str,
    title: str,
    x_label: str,
    desc: str = "",
    max_value: float | None = None,
    unit: str = "",
    hrefs: Sequence[str | None] | None = None,
    digits: int = 2,
    width: float = 820,
) -> str:
    """Horizontal grouped bars: per category (e.g. a model) one bar per series (e.g. full vs contamination-free)."""
    if not categories or not series:
        return no_data_svg(chart_id=chart_id, title=title)
    for s in series:
        if len(s.values) != len(categories):
            raise ValueError(f"series {s.name!r} has {len(s.values)} values for {len(categories)} categories")
    colours = series_swatches(len(series))
    values = [v for s in series for v in s.values if v is not None]
    hi = max_value if max_value is not None else _nice_max(max(values, default=0.0))
    lo = -_nice_max(-min(values)) if values and min(values) < 0 else 0.0
    bar_h = 12
    group_h = bar_h * len(series) + 10
    left = _label_width(categories) + 8
    right = 8 + len(f"{hi:.{digits}f}{unit}") * CHAR_W + 8
    plot_w = width - left - right
    top = 34

    def scale(v: float) -> float:
        return left + (v - lo) / (hi - lo) * plot_w

    plot_h = group_h * len(categories)
    legend_svg, legend_h = _legend_below(
        chart_id,
        [(s.name, c) for s, c in zip(series, colours, strict=True)],
        plot_bottom=top + plot_h,
        width=width,
    )
    height = top + plot_h + 44 + legend_h + 8
    parts = _open(chart_id, width, height, title, desc or f"{len(categories)} groups of {len(series)} bars.")
    parts.append(_hatch_defs(chart_id, colours))
    parts.append(_heading(title))
    parts.append(_x_axis(scale, _ticks(lo, hi), top=top - 4, bottom=top + plot_h, label=x_label, unit=unit))
    zero = scale(0.0)
    for i, cat in enumerate(categories):
        y = top + i * group_h + 5
        inner = [
            f'<text x="{_num(left - 8)}" y="{_num(y + group_h / 2)}" text-anchor="end">{_e(_short(cat))}</text>'
        ]
        tips = []
        for j, (s, c) in enumerate(zip(series, colours, strict=True)):
            v = s.values[i]
            by = y + j * bar_h
            if v is None:
                inner.append(
                    f'<text x="{_num(zero + 4)}" y="{_num(by + 10)}" font-size="10" fill="{MUTED}">'
                    f"{_e(s.name)}: no data</text>"
                )
                tips.append(f"{s.name}: no data")
                continue
            x0, x1 = sorted((zero, scale(v)))
            inner.append(
                f'<rect x="{_num(x0)}" y="{_num(by)}" width="{_num(max(x1 - x0, 0.5))}" height="{bar_h - 1}" '
                f'fill="{_fill(chart_id, c)}" stroke="{TEXT}" stroke-width="0.4"><title>'
                f"{_e(f'{cat} – {s.name}: {v:.{digits}f}{unit}')}</title></rect>"
                f'<text x="{_num((x1 + 4) if v >= 0 else (x0 - 4))}" y="{_num(by + 10)}" font-size="10" '
                f'text-anchor="{"start" if v >= 0 else "end"}">{_e(f"{v:.{digits}f}{unit}")}</text>'
            )
            tips.append(f"{s.name}: {v:.{digits}f}{unit}")
        body = f'<g class="group"><title>{_e(cat + " – " + "; ".join(tips))}</title>{"".join(inner)}</g>'
        parts.append(_link(hrefs[i] if hrefs else None, body))
    parts.append(legend_svg)
    parts.append("</svg>")
    return "\n".join(p for p in parts if p)


# --- (c) heatmap -------------------------------------------------------------------------------------


def scale_colour(t: float) -> str:
    """Viridis-like colour for ``t`` in [0, 1] (clamped)."""
    t = min(max(t, 0.0), 1.0) * (len(_VIRIDIS) - 1)
    i = min(int(t), len(_VIRIDIS) - 2)
    f = t - i
    a, b = _VIRIDIS[i], _VIRIDIS[i + 1]
    return "#" + "".join(f"{round(a[k] + (b[k] - a[k]) * f):02x}" for k in range(3))


def _ink_on(t: float) -> str:
    """Black text on the light (high) end of the scale, white on the dark end."""
    return "#000000" if t >= 0.55 else "#ffffff"


def heatmap(
    rows: Sequence[str],
    cols: Sequence[str],
    values: Sequence[Sequence[float | None]],
    *,
    chart_id: str,
    title: str,
    value_label: str,
    desc: str = "",
    vmin: float = 0.0,
    vmax: float = 100.0,
    row_hrefs: Sequence[str | None] | None = None,
    col_hrefs: Sequence[str | None] | None = None,
    digits: int = 0,
    show_values: bool | None = None,
) -> str:
    """A rows x cols grid of cells coloured by value on a sequential scale, with a colour-scale legend.

    ``values[i][j]`` is the value of row i, column j, or None for "no data" (a light grey cell marked with a
    dot). Every cell has a ``<title>`` "row – col: value". Values are printed in the cells when there is room
    (``show_values`` None: when there are at most 30 columns).
    """
    if not rows or not cols:
        return no_data_svg(chart_id=chart_id, title=title)
    if len(values) != len(rows) or any(len(r) != len(cols) for r in values):
        raise ValueError(f"heatmap values must be {len(rows)} rows of {len(cols)} columns")
    if vmax <= vmin:
        raise ValueError("vmax must be greater than vmin")
    show = len(cols) <= 30 if show_values is None else show_values
    cell_w = 34.0 if show else max(10.0, min(22.0, 900 / len(cols)))
    cell_h = 20.0
    left = _label_width(rows) + 8
    col_label_h = min(_label_width(cols) * 0.72 + 8, 220)
    top = 30 + col_label_h
    plot_w, plot_h = cell_w * len(cols), cell_h * len(rows)
    width = max(left + plot_w + 60, 420)
    height = top + plot_h + 70
    span = vmax - vmin
    parts = _open(
        chart_id,
        width,
        height,
        title,
        desc or f"{len(rows)} rows by {len(cols)} columns of {value_label}; light grey cells have no data.",
    )
    gid = f"{chart_id}-scale"
    stops = "".join(
        f'<stop offset="{_num(k / (len(_VIRIDIS) - 1))}" stop-color="{scale_colour(k / (len(_VIRIDIS) - 1))}"/>'
        for k in range(len(_VIRIDIS))
    )
    parts.append(
        f'<defs><linearGradient id="{gid}" x1="0" x2="1" y1="0" y2="0">{stops}</linearGradient></defs>'
    )
    parts.append(_heading(title))
    for j, col in enumerate(cols):
        cx = left + j * cell_w + cell_w / 2
        text = (
            f"<g><title>{_e(col)}</title>"
            f'<text transform="translate({_num(cx + 3)},{_num(top - 6)}) rotate(-45)" font-size="11">'
            f"{_e(_short(col))}</text></g>"
        )
        parts.append(_link(col_hrefs[j] if col_hrefs else None, text))
    for i, row in enumerate(rows):
        y = top + i * cell_h
        parts.append(
            _link(
                row_hrefs[i] if row_hrefs else None,
                f'<text x="{_num(left - 8)}" y="{_num(y + cell_h / 2 + 4)}" text-anchor="end">'
                f"{_e(_short(row))}</text>",
            )
        )
        cells = []
        for j, col in enumerate(cols):
            v = values[i][j]
            x = left + j * cell_w
            if v is None:
                cells.append(
                    f"<g><title>{_e(f'{row} – {col}: no data')}</title>"
                    f'<rect x="{_num(x)}" y="{_num(y)}" width="{_num(cell_w)}" height="{_num(cell_h)}" '
                    f'fill="{MISSING}" stroke="#ffffff"/><circle cx="{_num(x + cell_w / 2)}" '
                    f'cy="{_num(y + cell_h / 2)}" r="1.5" fill="{MUTED}"/></g>'
                )
                continue
            t = (v - vmin) / span
            txt = (
                f'<text x="{_num(x + cell_w / 2)}" y="{_num(y + cell_h / 2 + 4)}" text-anchor="middle" '
                f'font-size="10" fill="{_ink_on(t)}">{_e(f"{v:.{digits}f}")}</text>'
                if show
                else ""
            )
            cells.append(
                f"<g><title>{_e(f'{row} – {col}: {v:.{max(digits, 1)}f} {value_label}')}</title>"
                f'<rect x="{_num(x)}" y="{_num(y)}" width="{_num(cell_w)}" height="{_num(cell_h)}" '
                f'fill="{scale_colour(t)}" stroke="#ffffff"/>{txt}</g>'
            )
        parts.append(f'<g class="row">{"".join(cells)}</g>')
    ly = top + plot_h + 18
    lw = min(240.0, width - 120)
    parts.append(
        f'<g class="scale-legend"><text x="8" y="{_num(ly + 10)}">{_e(value_label)}</text>'
        f'<rect x="8" y="{_num(ly + 16)}" width="{_num(lw)}" height="10" fill="url(#{gid})" stroke="{GRID}"/>'
        f'<text x="8" y="{_num(ly + 40)}" fill="{MUTED}">{_e(_tick_text(vmin))}</text>'
        f'<text x="{_num(8 + lw / 2)}" y="{_num(ly + 40)}" text-anchor="middle" fill="{MUTED}">'
        f"{_e(_tick_text(vmin + span / 2))}</text>"
        f'<text x="{_num(8 + lw)}" y="{_num(ly + 40)}" text-anchor="end" fill="{MUTED}">{_e(_tick_text(vmax))}</text>'
        f'<rect x="{_num(lw + 24)}" y="{_num(ly + 16)}" width="10" height="10" fill="{MISSING}" stroke="{GRID}"/>'
        f'<text x="{_num(lw + 40)}" y="{_num(ly + 25)}">no data</text></g>'
    )
    parts.append("</svg>")
    return "\n".join(parts)


# --- (d) timeline ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TimelineItem:
    """A dated row: ``kind`` "model" (knowledge cutoff) or "paper" (first commit of the official code)."""

    label: str
    date: _dt.date | None
    kind: str
    href: str | None = None


def timeline(
    items: Sequence[TimelineItem],
    *,
    chart_id: str,
    title: str,
    desc: str = "",
    markers: Sequence[tuple[str, _dt.date]] = (),
    kinds: Sequence[tuple[str, str]] = (("model", "Model knowledge cutoff"), ("paper", "Paper first commit")),
    width: float = 820,
) -> str:
    """Rows of dated points on a shared time axis, one section per kind (models first, then papers).

    ``markers`` draw labelled vertical lines (e.g. the original global contamination cutoff). Items without
    a date are listed in their section with "date unknown" instead of a point.
    """
    if not items:
        return no_data_svg(chart_id=chart_id, title=title)
    known = [it.date for it in items if it.date] + [d for _, d in markers]
    if not known:
        lo = hi = _dt.date.today()
    else:
        lo, hi = min(known), max(known)
    lo = _dt.date(lo.year, 1, 1)
    hi = _dt.date(hi.year + 1, 1, 1)
    row = 18
    left = _label_width([it.label for it in items]) + 8
    plot_w = width - left - 24
    span_days = (hi - lo).days

    def xof(d: _dt.date) -> float:
        return left + (d - lo).days / span_days * plot_w

    sections = [(kind, label, [it for it in items if it.kind == kind]) for kind, label in kinds]
    sections = [s for s in sections if s[2]]
    top = 34 + 16 * len(markers)
    height = top + sum(22 + row * len(its) for _, _, its in sections) + 40
    parts = _open(chart_id, width, height, title, desc or _timeline_summary(sections))
    parts.append(_heading(title))
    bottom = height - 36
    tick_year = lo.year
    while _dt.date(tick_year, 1, 1) <= hi:
        for month in (1, 7):
            d = _dt.date(tick_year, month, 1)
            if d > hi:
                break
            x = xof(d)
            parts.append(
                f'<line x1="{_num(x)}" y1="{_num(top - 4)}" x2="{_num(x)}" y2="{_num(bottom)}" stroke="{GRID}" '
                f'stroke-width="{1 if month == 1 else 0.5}"/>'
                f'<text x="{_num(x)}" y="{_num(bottom + 14)}" text-anchor="middle" fill="{MUTED}" '
                f'font-size="{11 if month == 1 else MIN_FONT}">{_e(d.strftime("%Y" if month == 1 else "%b"))}</text>'
            )
        tick_year += 1
    for k, (label, d) in enumerate(markers):
        x = xof(d)
        parts.append(
            f'<g class="marker"><title>{_e(f"{label}: {d.isoformat()}")}</title>'
            f'<line x1="{_num(x)}" y1="{_num(30 + 16 * k)}" x2="{_num(x)}" y2="{_num(bottom)}" stroke="#D55E00" '
            f'stroke-width="1.5" stroke-dasharray="6 3"/><text x="{_num(x + 4)}" y="{_num(40 + 16 * k)}" '
            f'fill="#A33F00">{_e(f"{label} ({d.isoformat()})")}</text></g>'
        )
    y = top
    shapes = {"model": "circle", "paper": "diamond"}
    for i, (kind, section_label, its) in enumerate(sections):
        colour = OKABE_ITO[4] if i == 0 else OKABE_ITO[0]
        parts.append(f'<text x="8" y="{_num(y + 14)}" font-weight="600">{_e(section_label)}</text>')
        y += 22
        for it in its:
            cy = y + row / 2
            label = f'<text x="{_num(left - 8)}" y="{_num(cy + 4)}" text-anchor="end">{_e(_short(it.label))}</text>'
            if it.date is None:
                mark = f'<text x="{_num(left + 4)}" y="{_num(cy + 4)}" fill="{MUTED}">date unknown</text>'
                tip = f"{it.label}: date unknown"
            else:
                x = xof(it.date)
                if shapes.get(kind) == "diamond":
                    shape = (
                        f'<path d="M{_num(x)},{_num(cy - 6)} L{_num(x + 6)},{_num(cy)} L{_num(x)},{_num(cy + 6)} '
                        f'L{_num(x - 6)},{_num(cy)} Z" fill="{colour}" stroke="{TEXT}" stroke-width="0.6"/>'
                    )
                else:
                    shape = (
                        f'<circle cx="{_num(x)}" cy="{_num(cy)}" r="5" fill="{colour}" stroke="{TEXT}" '
                        f'stroke-width="0.6"/>'
                    )
                mark = (
                    f'<line x1="{_num(left)}" y1="{_num(cy)}" x2="{_num(x)}" y2="{_num(cy)}" stroke="{GRID}" '
                    f'stroke-dasharray="2 2"/>{shape}'
                    f'<text x="{_num(x + 9)}" y="{_num(cy + 4)}" font-size="10" fill="{MUTED}">'
                    f"{_e(it.date.isoformat())}</text>"
                )
                tip = f"{it.label}: {it.date.isoformat()}"
            parts.append(_link(it.href, f'<g class="item"><title>{_e(tip)}</title>{label}{mark}</g>'))
            y += row
    parts.append("</svg>")
    return "\n".join(parts)


def _timeline_summary(sections: Sequence[tuple[str, str, Sequence[TimelineItem]]]) -> str:
    bits = []
    for _kind, label, its in sections:
        dated = sorted(it.date for it in its if it.date)
        if dated:
            bits.append(f"{label}: {len(its)} items from {dated[0].isoformat()} to {dated[-1].isoformat()}.")
        else:
            bits.append(f"{label}: {len(its)} items, no dates.")
    return " ".join(bits)


# --- (e) scatter -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Point:
    label: str
    x: float
    y: float
    group: str = ""
    href: str | None = None


def scatter(
    points: Sequence[Point],
    *,
    chart_id: str,
    title: str,
    x_label: str,
    y_label: str,
    desc: str = "",
    max_value: float | None = None,
    diagonal: bool = True,
    unit: str = "",
    digits: int = 2,
    size: float = 520,
    swatches: Mapping[str, Swatch] | None = None,
) -> str:
    """Labelled points on square axes from 0 to ``max_value`` with an optional y = x diagonal.

    Points above the diagonal have y > x (e.g. a model scores higher with the paper than without it).
    """
    if not points:
        return no_data_svg(chart_id=chart_id, title=title)
    shown = {p.group for p in points}
    swatches = _swatches(list(shown), swatches)
    hi = max_value if max_value is not None else _nice_max(max(max(p.x, p.y) for p in points))
    left, top, plot = 56.0, 34.0, size
    right_pad = max(len(_short(p.label)) for p in points) * CHAR_W * 10 / FONT + 16
    width = left + plot + right_pad
    legend_entries = [(g, swatches[g]) for g in sorted(shown, key=str.casefold) if g]
    legend_svg, legend_h = _legend_below(chart_id, legend_entries, plot_bottom=top + plot, width=width)
    height = top + plot + 44 + legend_h + 8

    def sx(v: float) -> float:
        return left + v / hi * plot

    def sy(v: float) -> float:
        return top + plot - v / hi * plot

    above = sum(1 for p in points if p.y > p.x)
    summary = f"{len(points)} points; {above} above the diagonal (y greater than x)."
    parts = _open(chart_id, width, height, title, " ".join(b for b in (desc, summary) if b))
    parts.append(_hatch_defs(chart_id, [swatches[g] for g in shown]))
    parts.append(_heading(title))
    for t in _ticks(0, hi):
        parts.append(
            f'<line x1="{_num(sx(t))}" y1="{_num(top)}" x2="{_num(sx(t))}" y2="{_num(top + plot)}" stroke="{GRID}" '
            f'stroke-width="0.75"/><line x1="{_num(left)}" y1="{_num(sy(t))}" x2="{_num(left + plot)}" '
            f'y2="{_num(sy(t))}" stroke="{GRID}" stroke-width="0.75"/>'
            f'<text x="{_num(sx(t))}" y="{_num(top + plot + 14)}" text-anchor="middle" fill="{MUTED}">'
            f"{_e(_tick_text(t))}{_e(unit)}</text>"
            f'<text x="{_num(left - 6)}" y="{_num(sy(t) + 4)}" text-anchor="end" fill="{MUTED}">'
            f"{_e(_tick_text(t))}{_e(unit)}</text>"
        )
    parts.append(
        f'<text x="{_num(left + plot / 2)}" y="{_num(top + plot + 32)}" text-anchor="middle">{_e(x_label)}</text>'
        f'<text transform="translate(14,{_num(top + plot / 2)}) rotate(-90)" text-anchor="middle">'
        f"{_e(y_label)}</text>"
    )
    if diagonal:
        parts.append(
            f'<line x1="{_num(sx(0))}" y1="{_num(sy(0))}" x2="{_num(sx(hi))}" y2="{_num(sy(hi))}" stroke="{MUTED}" '
            f'stroke-dasharray="5 4"><title>y = x</title></line>'
            f'<text x="{_num(sx(hi) - 4)}" y="{_num(sy(hi) + 14)}" text-anchor="end" fill="{MUTED}">y = x</text>'
        )
    for p in points:
        sw = swatches[p.group]
        tip = f"{p.label}: {x_label} {p.x:.{digits}f}{unit}, {y_label} {p.y:.{digits}f}{unit}"
        body = (
            f'<g class="point"><title>{_e(tip)}</title><circle cx="{_num(sx(p.x))}" cy="{_num(sy(p.y))}" r="5" '
            f'fill="{_fill(chart_id, sw)}" stroke="{TEXT}" stroke-width="0.8"/>'
            f'<text x="{_num(sx(p.x) + 7)}" y="{_num(sy(p.y) + 4)}" font-size="{MIN_FONT}">{_e(_short(p.label))}</text></g>'
        )
        parts.append(_link(p.href, body))
    parts.append(legend_svg)
    parts.append("</svg>")
    return "\n".join(p for p in parts if p)


# --- (f) stacked bars --------------------------------------------------------------------------------


def stacked_bar_chart(
    rows: Sequence[str],
    series: Sequence[Series],
    *,
    chart_id: str,
    title: str,
    x_label: str,
    desc: str = "",
    normalise: bool = False,
    row_hrefs: Sequence[str | None] | None = None,
    width: float = 820,
    swatches: Mapping[str, Swatch] | None = None,
) -> str:
    """Horizontal stacked bars: one bar per row, one segment per series (e.g. error category counts);
    ``swatches`` fixes each series' colour by name (``category_swatches``), else series get them in order.

    With ``normalise`` every bar is scaled to 100% (shares); the segment titles still give the counts.
    """
    if not rows or not series:
        return no_data_svg(chart_id=chart_id, title=title)
    for s in series:
        if len(s.values) != len(rows):
            raise ValueError(f"series {s.name!r} has {len(s.values)} values for {len(rows)} rows")
    totals = [sum((s.values[i] or 0.0) for s in series) for i in range(len(rows))]
    if not any(totals):
        return no_data_svg(chart_id=chart_id, title=title)
    by_name = _swatches([s.name for s in series], swatches or palette_swatches([s.name for s in series]))
    colours = [by_name[s.name] for s in series]
    hi = 100.0 if normalise else _nice_max(max(totals))
    row = 22
    left = _label_width(rows) + 8
    right = 8 + len(_tick_text(hi)) * CHAR_W + 30
    plot_w = width - left - right
    top = 34

    def scale(v: float) -> float:
        return left + v / hi * plot_w

    plot_h = row * len(rows)
    legend_svg, legend_h = _legend_below(
        chart_id,
        [(s.name, sw) for s, sw in zip(series, colours, strict=True)],
        plot_bottom=top + plot_h,
        width=width,
    )
    height = top + plot_h + 44 + legend_h + 8
    parts = _open(
        chart_id,
        width,
        height,
        title,
        desc
        or f"{len(rows)} bars, each split into {len(series)} segments ({', '.join(s.name for s in series)}).",
    )
    parts.append(_hatch_defs(chart_id, colours))
    parts.append(_heading(title))
    unit = "%" if normalise else ""
    parts.append(_x_axis(scale, _ticks(0, hi), top=top - 4, bottom=top + plot_h, label=x_label, unit=unit))
    for i, name in enumerate(rows):
        y = top + i * row
        total = totals[i]
        segs = [
            f'<text x="{_num(left - 8)}" y="{_num(y + row / 2 + 4)}" text-anchor="end">{_e(_short(name))}</text>'
        ]
        acc = 0.0
        for s, sw in zip(series, colours, strict=True):
            v = s.values[i] or 0.0
            if v <= 0:
                continue
            shown = v / total * 100 if normalise and total else v
            x0, x1 = scale(acc), scale(acc + shown)
            share = f" ({v / total * 100:.1f}%)" if total else ""
            segs.append(
                f'<rect x="{_num(x0)}" y="{_num(y + 3)}" width="{_num(max(x1 - x0, 0.5))}" height="{row - 6}" '
                f'fill="{_fill(chart_id, sw)}" stroke="#ffffff" stroke-width="0.6"><title>'
                f"{_e(f'{name} – {s.name}: {_tick_text(v)}{share}')}</title></rect>"
            )
            acc += shown
        segs.append(
            f'<text x="{_num(scale(acc) + 4)}" y="{_num(y + row / 2 + 4)}">{_e(_tick_text(total))}</text>'
        )
        parts.append(_link(row_hrefs[i] if row_hrefs else None, f'<g class="stack">{"".join(segs)}</g>'))
    parts.append(legend_svg)
    parts.append("</svg>")
    return "\n".join(p for p in parts if p)
