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
from collections.abc import Callable, Mapping, Sequence
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


def _close(parts: Sequence[str], *tail: str) -> str:
    """The chart's SVG text: ``parts``, then ``tail`` (legend, keys), one per line, and the closing tag;
    empty parts (no hatch patterns, no legend) are left out."""
    return "\n".join(p for p in (*parts, *tail, "</svg>") if p)


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
    return _close(parts)


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


# --- shared by the bar charts --------------------------------------------------------------------------

#: the height of one bar's row (bar and stacked charts) and of one bar of a grouped chart's group
ROW_H = 22
GROUPED_BAR_H = 12


@dataclass(frozen=True)
class _Frame:
    """Where a horizontal bar chart draws: row labels end left of ``left``; the plot is ``plot_w`` wide
    from ``top`` down ``plot_h``, its value axis running from ``lo`` to ``hi``."""

    left: float
    plot_w: float
    plot_h: float
    lo: float
    hi: float
    top: float = 34

    @property
    def bottom(self) -> float:
        return self.top + self.plot_h

    def x(self, value: float) -> float:
        """The x coordinate of ``value`` on the value axis."""
        return self.left + (value - self.lo) / (self.hi - self.lo) * self.plot_w


def _frame(
    labels: Sequence[str], *, width: float, right: float, plot_h: float, lo: float, hi: float
) -> _Frame:
    """The frame of a bar chart ``width`` wide whose rows are labelled ``labels``, keeping ``right`` free
    right of the plot for value labels."""
    left = _label_width(labels) + 8
    return _Frame(left=left, plot_w=width - left - right, plot_h=plot_h, lo=lo, hi=hi)


def _open_bars(
    chart_id: str,
    frame: _Frame,
    *,
    width: float,
    height: float,
    title: str,
    desc: str,
    swatches: Sequence[Swatch],
    x_label: str,
    unit: str,
) -> list[str]:
    """The start of a horizontal bar chart: the root, the hatch patterns of ``swatches``, the heading and
    the value axis."""
    parts = _open(chart_id, width, height, title, desc)
    parts.append(_hatch_defs(chart_id, swatches))
    parts.append(_heading(title))
    ticks = _ticks(frame.lo, frame.hi)
    parts.append(_x_axis(frame.x, ticks, top=frame.top - 4, bottom=frame.bottom, label=x_label, unit=unit))
    return parts


def _height(frame: _Frame, legend_h: float, extra: float = 0) -> float:
    """A bar chart's height: the plot, the x axis and its label, the legend, ``extra`` and a margin."""
    return frame.bottom + 44 + legend_h + extra + 8


def _row_label(x: float, y: float, label: str) -> str:
    """A row's label ending at ``x`` (shortened past ``MAX_LABEL``; the mark's title has it whole)."""
    return f'<text x="{_num(x)}" y="{_num(y)}" text-anchor="end">{_e(_short(label))}</text>'


def _group_entries(shown: set[str], swatches: Mapping[str, Swatch]) -> list[tuple[str, Swatch]]:
    """Legend entries of the groups shown, by name (the unnamed group has none)."""
    return [(g, swatches[g]) for g in sorted(shown, key=str.casefold) if g]


def _check_series(series: Sequence[Series], count: int, noun: str) -> None:
    """Raise ``ValueError`` unless every series has ``count`` values (one per ``noun``)."""
    for s in series:
        if len(s.values) != count:
            raise ValueError(f"series {s.name!r} has {len(s.values)} values for {count} {noun}")


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
    frame = _bar_frame(bars, max_value=max_value, digits=digits, unit=unit, width=width)
    shown = {b.group for b in bars}
    entries = _group_entries(shown, swatches) if legend else []
    legend_svg, legend_h = _legend_below(chart_id, entries, plot_bottom=frame.bottom, width=width)
    notes = _bar_notes(
        outlined=any(b.outlined for b in bars),
        error_label=error_label,
        outline_label=outline_label,
        y=frame.bottom + 44 + legend_h,
    )
    summary = _bar_summary(bars, unit, digits)
    parts = _open_bars(
        chart_id,
        frame,
        width=width,
        height=_height(frame, legend_h, 18 * len(notes)),
        title=title,
        desc=" ".join(p for p in (desc, summary) if p),
        swatches=[swatches[g] for g in shown],
        x_label=x_label,
        unit=unit,
    )
    for i, b in enumerate(bars):
        y = frame.top + i * ROW_H
        parts.append(
            _bar_row(chart_id, b, swatches, frame, y=y, unit=unit, digits=digits, error_label=error_label)
        )
    return _close(parts, *notes, legend_svg)


def _bar_frame(
    bars: Sequence[Bar], *, max_value: float | None, digits: int, unit: str, width: float
) -> _Frame:
    """A bar chart's frame: one row per bar, the value axis from min(0, lowest value) to ``max_value`` (by
    default a round number above the highest value or error bar end), and room right of the plot for the
    longest value label and note."""
    values = [v for b in bars for v in ([b.value] if b.value is not None else []) + list(b.err or ())]
    hi = max_value if max_value is not None else _nice_max(max(values, default=0.0))
    # The axis starts below zero only for negative bar values (deltas); error bars are clipped to the axis.
    lo_raw = min((b.value for b in bars if b.value is not None), default=0.0)
    lo = -_nice_max(-lo_raw) if lo_raw < 0 else 0.0
    widest = max(
        len(f"{hi:.{digits}f}{unit}"), *(len(f"{b.value or 0:.{digits}f}{unit} {b.note}") for b in bars)
    )
    right = 8 + widest * CHAR_W + 8
    return _frame([b.label for b in bars], width=width, right=right, plot_h=ROW_H * len(bars), lo=lo, hi=hi)


def _bar_row(
    chart_id: str,
    b: Bar,
    swatches: Mapping[str, Swatch],
    frame: _Frame,
    *,
    y: float,
    unit: str,
    digits: int,
    error_label: str,
) -> str:
    """One bar's row from ``y`` down: its label and its bar (or "no data") under a ``<title>`` with the
    exact value, linked to ``b.href`` when there is one."""
    cy = y + ROW_H / 2
    label = _row_label(frame.left - 8, cy + 4, b.label)
    if b.value is None:
        mark = f'<text x="{_num(frame.x(0.0) + 4)}" y="{_num(cy + 4)}" fill="{MUTED}">– no data</text>'
        tip = f"{b.label}: no data"
    else:
        mark = _bar_mark(chart_id, b, swatches[b.group], frame, y=y, unit=unit, digits=digits)
        tip = _bar_tip(b, unit=unit, digits=digits, error_label=error_label)
    return _link(b.href, f'<g class="bar"><title>{_e(tip)}</title>{label}{mark}</g>')


def _bar_mark(chart_id: str, b: Bar, sw: Swatch, frame: _Frame, *, y: float, unit: str, digits: int) -> str:
    """A scored bar from zero to its value (dashed outline when ``outlined``), its error bar clipped to the
    axis, and its value and note past its end (left of it for a negative value)."""
    cy = y + ROW_H / 2
    x0, x1 = sorted((frame.x(0.0), frame.x(b.value)))
    outline = (
        f' stroke="{TEXT}" stroke-width="2" stroke-dasharray="5 3"'
        if b.outlined
        else f' stroke="{TEXT}" stroke-width="0.4"'
    )
    mark = (
        f'<rect x="{_num(x0)}" y="{_num(y + 3)}" width="{_num(max(x1 - x0, 0.5))}" '
        f'height="{_num(ROW_H - 6)}" fill="{_fill(chart_id, sw)}"{outline}/>'
    )
    end = frame.x(min(max(b.value, b.err[1] if b.err else b.value), frame.hi))
    if b.err:
        e0, e1 = frame.x(max(b.err[0], frame.lo)), frame.x(min(b.err[1], frame.hi))
        mark += (
            f'<path d="M{_num(e0)},{_num(cy)} H{_num(e1)} M{_num(e0)},{_num(cy - 4)} V{_num(cy + 4)} '
            f'M{_num(e1)},{_num(cy - 4)} V{_num(cy + 4)}" stroke="{TEXT}" stroke-width="1.2" fill="none"/>'
        )
    if b.value < 0:
        vx, anchor = frame.x(max(min(b.value, b.err[0] if b.err else b.value), frame.lo)) - 4, "end"
    else:
        vx, anchor = end + 4, "start"
    return mark + (
        f'<text x="{_num(vx)}" y="{_num(cy + 4)}" text-anchor="{anchor}">'
        f"{_e(f'{b.value:.{digits}f}{unit}')}{_e(b.note and ' ' + b.note)}</text>"
    )


def _bar_tip(b: Bar, *, unit: str, digits: int, error_label: str) -> str:
    """A scored bar's ``<title>``: its label and value, then its group, open weights, interval and note."""
    bits = [f"{b.label}: {b.value:.{digits}f}{unit}"]
    if b.group:
        bits.append(b.group)
    if b.outlined:
        bits.append("open weights")
    if b.err:
        bits.append(f"{error_label or 'interval'} {b.err[0]:.{digits}f}–{b.err[1]:.{digits}f}")
    if b.note:
        bits.append(b.note)
    return "; ".join(bits)


def _bar_notes(*, outlined: bool, error_label: str, outline_label: str, y: float) -> list[str]:
    """The keys drawn from ``y`` down, one per 18 px: the dashed outline (when a bar has one) and the
    error bars (when ``error_label`` names them)."""
    notes = []
    if outlined:
        notes.append(
            f'<rect x="8" y="{_num(y)}" width="22" height="11" fill="none" stroke="{TEXT}" '
            f'stroke-width="2" stroke-dasharray="5 3"/><text x="36" y="{_num(y + 10)}">'
            f"{_e(outline_label)}</text>"
        )
        y += 18
    if error_label:
        notes.append(
            f'<path d="M8,{_num(y + 5)} H30 M8,{_num(y)} V{_num(y + 10)} M30,{_num(y)} '
            f'V{_num(y + 10)}" stroke="{TEXT}" stroke-width="1.2"/>'
            f'<text x="36" y="{_num(y + 10)}">Error bars: {_e(error_label)}</text>'
        )
    return notes


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
    _check_series(series, len(categories), "categories")
    colours = series_swatches(len(series))
    values = [v for s in series for v in s.values if v is not None]
    hi = max_value if max_value is not None else _nice_max(max(values, default=0.0))
    lo = -_nice_max(-min(values)) if values and min(values) < 0 else 0.0
    group_h = GROUPED_BAR_H * len(series) + 10
    right = 8 + len(f"{hi:.{digits}f}{unit}") * CHAR_W + 8
    frame = _frame(categories, width=width, right=right, plot_h=group_h * len(categories), lo=lo, hi=hi)
    entries = [(s.name, c) for s, c in zip(series, colours, strict=True)]
    legend_svg, legend_h = _legend_below(chart_id, entries, plot_bottom=frame.bottom, width=width)
    parts = _open_bars(
        chart_id,
        frame,
        width=width,
        height=_height(frame, legend_h),
        title=title,
        desc=desc or f"{len(categories)} groups of {len(series)} bars.",
        swatches=colours,
        x_label=x_label,
        unit=unit,
    )
    for i, category in enumerate(categories):
        y = frame.top + i * group_h + 5
        body = _bar_group(
            chart_id, category, i, series, colours, frame, y=y, group_h=group_h, unit=unit, digits=digits
        )
        parts.append(_link(hrefs[i] if hrefs else None, body))
    return _close(parts, legend_svg)


def _bar_group(
    chart_id: str,
    category: str,
    index: int,
    series: Sequence[Series],
    colours: Sequence[Swatch],
    frame: _Frame,
    *,
    y: float,
    group_h: float,
    unit: str,
    digits: int,
) -> str:
    """Category ``index``'s group from ``y`` down: its label and one labelled bar per series (or "no
    data"), under a ``<title>`` that lists every series' value."""
    zero = frame.x(0.0)
    inner = [_row_label(frame.left - 8, y + group_h / 2, category)]
    tips = []
    for j, (s, c) in enumerate(zip(series, colours, strict=True)):
        v = s.values[index]
        by = y + j * GROUPED_BAR_H
        if v is None:
            inner.append(
                f'<text x="{_num(zero + 4)}" y="{_num(by + 10)}" font-size="10" fill="{MUTED}">'
                f"{_e(s.name)}: no data</text>"
            )
            tips.append(f"{s.name}: no data")
            continue
        x0, x1 = sorted((zero, frame.x(v)))
        inner.append(
            f'<rect x="{_num(x0)}" y="{_num(by)}" width="{_num(max(x1 - x0, 0.5))}" height="{GROUPED_BAR_H - 1}" '
            f'fill="{_fill(chart_id, c)}" stroke="{TEXT}" stroke-width="0.4"><title>'
            f"{_e(f'{category} – {s.name}: {v:.{digits}f}{unit}')}</title></rect>"
            f'<text x="{_num((x1 + 4) if v >= 0 else (x0 - 4))}" y="{_num(by + 10)}" font-size="10" '
            f'text-anchor="{"start" if v >= 0 else "end"}">{_e(f"{v:.{digits}f}{unit}")}</text>'
        )
        tips.append(f"{s.name}: {v:.{digits}f}{unit}")
    return f'<g class="group"><title>{_e(category + " – " + "; ".join(tips))}</title>{"".join(inner)}</g>'


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


#: the height of a heatmap's cell
CELL_H = 20.0


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
    grid = _grid(rows, cols, show)
    bottom = grid.y(len(rows))
    desc = desc or f"{len(rows)} rows by {len(cols)} columns of {value_label}; light grey cells have no data."
    width = max(grid.x(len(cols)) + 60, 420)
    parts = _open(chart_id, width, bottom + 70, title, desc)
    gid = f"{chart_id}-scale"
    parts.append(_scale_gradient(gid))
    parts.append(_heading(title))
    for j, col in enumerate(cols):
        label = _column_label(col, grid.x(j) + grid.cell_w / 2, grid.top)
        parts.append(_link(col_hrefs[j] if col_hrefs else None, label))
    for i, row in enumerate(rows):
        label = _row_label(grid.left - 8, grid.y(i) + CELL_H / 2 + 4, row)
        parts.append(_link(row_hrefs[i] if row_hrefs else None, label))
        parts.append(
            _heat_row(
                grid,
                i,
                row,
                cols,
                values[i],
                vmin=vmin,
                vmax=vmax,
                digits=digits,
                value_label=value_label,
                show=show,
            )
        )
    parts.append(_scale_legend(gid, value_label, vmin, vmax, y=bottom + 18, width=width))
    return _close(parts)


@dataclass(frozen=True)
class _Grid:
    """A heatmap's layout: row labels end left of ``left``, column labels stand above ``top``; a cell is
    ``cell_w`` wide and ``CELL_H`` high."""

    left: float
    top: float
    cell_w: float

    def x(self, j: int) -> float:
        """The left edge of column ``j`` (of the plot's right edge for ``j`` = the number of columns)."""
        return self.left + j * self.cell_w

    def y(self, i: int) -> float:
        """The top edge of row ``i`` (of the plot's bottom edge for ``i`` = the number of rows)."""
        return self.top + i * CELL_H


def _grid(rows: Sequence[str], cols: Sequence[str], show: bool) -> _Grid:
    """Room left for the row labels and above for the slanted column labels; wide cells when they print
    their values."""
    cell_w = 34.0 if show else max(10.0, min(22.0, 900 / len(cols)))
    return _Grid(left=_label_width(rows) + 8, top=30 + min(_label_width(cols) * 0.72 + 8, 220), cell_w=cell_w)


def _heat_row(
    grid: _Grid,
    i: int,
    row: str,
    cols: Sequence[str],
    values: Sequence[float | None],
    *,
    vmin: float,
    vmax: float,
    digits: int,
    value_label: str,
    show: bool,
) -> str:
    """Row ``i``'s cells, one per column."""
    cells = [
        _heat_cell(
            f"{row} – {col}",
            values[j],
            x=grid.x(j),
            y=grid.y(i),
            cell_w=grid.cell_w,
            vmin=vmin,
            vmax=vmax,
            digits=digits,
            value_label=value_label,
            show=show,
        )
        for j, col in enumerate(cols)
    ]
    return f'<g class="row">{"".join(cells)}</g>'


def _scale_gradient(gid: str) -> str:
    """The colour scale as a horizontal gradient ``gid`` (the scale legend's fill)."""
    stops = "".join(
        f'<stop offset="{_num(k / (len(_VIRIDIS) - 1))}" stop-color="{scale_colour(k / (len(_VIRIDIS) - 1))}"/>'
        for k in range(len(_VIRIDIS))
    )
    return f'<defs><linearGradient id="{gid}" x1="0" x2="1" y1="0" y2="0">{stops}</linearGradient></defs>'


def _column_label(col: str, cx: float, top: float) -> str:
    """A column's label, slanted up from above the middle ``cx`` of its column, its full text as title."""
    return (
        f"<g><title>{_e(col)}</title>"
        f'<text transform="translate({_num(cx + 3)},{_num(top - 6)}) rotate(-45)" font-size="11">'
        f"{_e(_short(col))}</text></g>"
    )


def _heat_cell(
    name: str,
    v: float | None,
    *,
    x: float,
    y: float,
    cell_w: float,
    vmin: float,
    vmax: float,
    digits: int,
    value_label: str,
    show: bool,
) -> str:
    """One cell at (``x``, ``y``) titled "``name``: value": coloured by ``v`` on the scale from ``vmin`` to
    ``vmax`` with the value printed when ``show``, or grey with a dot when ``v`` is None."""
    box = f'x="{_num(x)}" y="{_num(y)}" width="{_num(cell_w)}" height="{_num(CELL_H)}"'
    if v is None:
        return (
            f"<g><title>{_e(f'{name}: no data')}</title>"
            f'<rect {box} fill="{MISSING}" stroke="#ffffff"/><circle cx="{_num(x + cell_w / 2)}" '
            f'cy="{_num(y + CELL_H / 2)}" r="1.5" fill="{MUTED}"/></g>'
        )
    t = (v - vmin) / (vmax - vmin)
    txt = (
        f'<text x="{_num(x + cell_w / 2)}" y="{_num(y + CELL_H / 2 + 4)}" text-anchor="middle" '
        f'font-size="10" fill="{_ink_on(t)}">{_e(f"{v:.{digits}f}")}</text>'
        if show
        else ""
    )
    return (
        f"<g><title>{_e(f'{name}: {v:.{max(digits, 1)}f} {value_label}')}</title>"
        f'<rect {box} fill="{scale_colour(t)}" stroke="#ffffff"/>{txt}</g>'
    )


def _scale_legend(gid: str, value_label: str, vmin: float, vmax: float, *, y: float, width: float) -> str:
    """The colour-scale legend from ``y`` down: its label, the gradient ``gid`` with its ends and middle,
    and the "no data" swatch."""
    lw = min(240.0, width - 120)
    return (
        f'<g class="scale-legend"><text x="8" y="{_num(y + 10)}">{_e(value_label)}</text>'
        f'<rect x="8" y="{_num(y + 16)}" width="{_num(lw)}" height="10" fill="url(#{gid})" stroke="{GRID}"/>'
        f'<text x="8" y="{_num(y + 40)}" fill="{MUTED}">{_e(_tick_text(vmin))}</text>'
        f'<text x="{_num(8 + lw / 2)}" y="{_num(y + 40)}" text-anchor="middle" fill="{MUTED}">'
        f"{_e(_tick_text(vmin + (vmax - vmin) / 2))}</text>"
        f'<text x="{_num(8 + lw)}" y="{_num(y + 40)}" text-anchor="end" fill="{MUTED}">{_e(_tick_text(vmax))}</text>'
        f'<rect x="{_num(lw + 24)}" y="{_num(y + 16)}" width="10" height="10" fill="{MISSING}" stroke="{GRID}"/>'
        f'<text x="{_num(lw + 40)}" y="{_num(y + 25)}">no data</text></g>'
    )


# --- (d) timeline ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TimelineItem:
    """A dated row: ``kind`` "model" (knowledge cutoff) or "paper" (first commit of the official code)."""

    label: str
    date: _dt.date | None
    kind: str
    href: str | None = None


#: the height of one item's row of a timeline
TIMELINE_ROW_H = 18


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
    lo, hi = _whole_years([it.date for it in items if it.date] + [d for _, d in markers])
    left = _label_width([it.label for it in items]) + 8
    plot_w = width - left - 24
    span_days = (hi - lo).days

    def xof(d: _dt.date) -> float:
        return left + (d - lo).days / span_days * plot_w

    sections = [(kind, label, [it for it in items if it.kind == kind]) for kind, label in kinds]
    sections = [s for s in sections if s[2]]
    top = 34 + 16 * len(markers)
    height = top + sum(22 + TIMELINE_ROW_H * len(its) for _, _, its in sections) + 40
    parts = _open(chart_id, width, height, title, desc or _timeline_summary(sections))
    parts.append(_heading(title))
    bottom = height - 36
    parts.extend(_date_grid(xof, lo, hi, top=top, bottom=bottom))
    parts.extend(_date_markers(xof, markers, bottom=bottom))
    y = top
    for i, (kind, section_label, its) in enumerate(sections):
        colour = OKABE_ITO[4] if i == 0 else OKABE_ITO[0]
        parts.append(f'<text x="8" y="{_num(y + 14)}" font-weight="600">{_e(section_label)}</text>')
        y += 22
        for it in its:
            parts.append(_timeline_item(it, kind, colour, xof, left=left, cy=y + TIMELINE_ROW_H / 2))
            y += TIMELINE_ROW_H
    return _close(parts)


def _whole_years(known: Sequence[_dt.date]) -> tuple[_dt.date, _dt.date]:
    """The time axis: from the first of January of the earliest date to the first of January after the
    latest (this year when no date is known)."""
    if not known:
        lo = hi = _dt.date.today()
    else:
        lo, hi = min(known), max(known)
    return _dt.date(lo.year, 1, 1), _dt.date(hi.year + 1, 1, 1)


def _date_grid(
    xof: Callable[[_dt.date], float], lo: _dt.date, hi: _dt.date, *, top: float, bottom: float
) -> list[str]:
    """A vertical line and a label at every January (the year) and July (the month) from ``lo`` to ``hi``."""
    parts = []
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
    return parts


def _date_markers(
    xof: Callable[[_dt.date], float], markers: Sequence[tuple[str, _dt.date]], *, bottom: float
) -> list[str]:
    """A dashed vertical line per marker, each labelled with its name and date one line below the last."""
    return [
        f'<g class="marker"><title>{_e(f"{label}: {d.isoformat()}")}</title>'
        f'<line x1="{_num(xof(d))}" y1="{_num(30 + 16 * k)}" x2="{_num(xof(d))}" y2="{_num(bottom)}" '
        f'stroke="#D55E00" stroke-width="1.5" stroke-dasharray="6 3"/><text x="{_num(xof(d) + 4)}" '
        f'y="{_num(40 + 16 * k)}" fill="#A33F00">{_e(f"{label} ({d.isoformat()})")}</text></g>'
        for k, (label, d) in enumerate(markers)
    ]


def _timeline_item(
    it: TimelineItem, kind: str, colour: str, xof: Callable[[_dt.date], float], *, left: float, cy: float
) -> str:
    """An item's row centred on ``cy``: its label and its point (a diamond for a paper, a circle for
    anything else) with its date, or "date unknown"; linked to ``it.href`` when there is one."""
    label = _row_label(left - 8, cy + 4, it.label)
    if it.date is None:
        mark = f'<text x="{_num(left + 4)}" y="{_num(cy + 4)}" fill="{MUTED}">date unknown</text>'
        tip = f"{it.label}: date unknown"
    else:
        x = xof(it.date)
        if kind == "paper":
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
    return _link(it.href, f'<g class="item"><title>{_e(tip)}</title>{label}{mark}</g>')


def _timeline_summary(sections: Sequence[tuple[str, str, Sequence[TimelineItem]]]) -> str:
    bits = []
    for _kind, label, its in sections:
        dated = sorted(it.date for it in its if it.date)
        if dated:
            bits.append(f"{label}: {len(its)} items from {dated[0].isoformat()} to {dated[-1].isoformat()}.")
        else:
            bits.append(f"{label}: {len(its)} items, no dates.")
    return " ".join(bits)


@dataclass(frozen=True)
class DatedScore:
    """One paper on a dated-score chart: its first-commit ``date`` (None: unknown) and a score (percent)."""

    label: str
    date: _dt.date | None
    value: float | None
    href: str | None = None


#: the two sides of a cutoff on a dated-score chart, in legend order
CUTOFF_SIDES = ("On or before the cutoff", "After the cutoff")


def _percent_axis(
    yof: Callable[[float], float], *, left: float, plot_w: float, mid_y: float, label: str
) -> list[str]:
    """Horizontal grid lines at the 0-100 ticks with their labels, and the rotated axis label."""
    parts = [
        f'<line x1="{_num(left)}" y1="{_num(yof(t))}" x2="{_num(left + plot_w)}" y2="{_num(yof(t))}" '
        f'stroke="{GRID}" stroke-width="0.5"/><text x="{_num(left - 6)}" y="{_num(yof(t) + 4)}" '
        f'text-anchor="end" fill="{MUTED}">{_e(_tick_text(t))}</text>'
        for t in _ticks(0, 100)
    ]
    parts.append(
        f'<text transform="translate(14,{_num(mid_y)}) rotate(-90)" text-anchor="middle">{_e(label)}</text>'
    )
    return parts


def _side_score(name: str, value: float, colour: str, x1: float, x2: float, y: float) -> str:
    """The score over one side of the cutoff: a thick horizontal line across that side."""
    return (
        f'<g class="side-score"><title>{_e(f"Score {name} the cutoff: {fmt(value)}")}</title>'
        f'<line x1="{_num(x1)}" y1="{_num(y)}" x2="{_num(x2)}" y2="{_num(y)}" '
        f'stroke="{colour}" stroke-width="3"/></g>'
    )


def dated_scores(
    points: Sequence[DatedScore],
    *,
    chart_id: str,
    title: str,
    cutoff: _dt.date,
    before: float | None,
    after: float | None,
    y_label: str = "Scaled Pass@1 (%)",
    width: float = 820,
    height: float = 300,
) -> str:
    """Each paper's score at its first-commit date, coloured by its side of ``cutoff`` (a dashed vertical
    marker), with the score over each side (``before``, ``after``: horizontal lines across that side).
    Papers without a date or a score cannot be placed: the description names them."""
    placed = [p for p in points if p.date is not None and p.value is not None]
    if not placed:
        return no_data_svg(chart_id=chart_id, title=title, message="No dated paper with a score to chart.")
    lo, hi = _whole_years([p.date for p in placed] + [cutoff])
    left, top, plot_h = 56.0, 50.0, height - 50.0
    plot_w = width - left - 24
    bottom = top + plot_h

    def xof(d: _dt.date) -> float:
        return left + (d - lo).days / (hi - lo).days * plot_w

    def yof(v: float) -> float:
        return bottom - v / 100 * plot_h

    swatches = dict(zip(CUTOFF_SIDES, series_swatches(2), strict=True))
    legend_svg, legend_h = _legend(chart_id, list(swatches.items()), x=8, y=bottom + 30, width=width - 16)
    unplaced = [p.label for p in points if p.date is None or p.value is None]
    sides = (("before", before), ("after", after))
    summary = (
        f"{len(placed)} papers by first-commit date; cutoff {cutoff.isoformat()}; "
        + "; ".join(f"score {name} it {fmt(v)}" for name, v in sides)
        + (f"; not placed (no date or no score): {', '.join(unplaced)}." if unplaced else ".")
    )
    parts = _open(chart_id, width, bottom + 30 + legend_h + 8, title, summary)
    parts.append(_heading(title))
    parts.extend(_date_grid(xof, lo, hi, top=top, bottom=bottom))
    parts.extend(_percent_axis(yof, left=left, plot_w=plot_w, mid_y=top + plot_h / 2, label=y_label))
    parts.extend(_date_markers(xof, [("Knowledge cutoff", cutoff)], bottom=bottom))
    spans = ((left, xof(cutoff)), (xof(cutoff), left + plot_w))
    for (name, value), sw, (x1, x2) in zip(sides, swatches.values(), spans, strict=True):
        if value is not None:
            parts.append(_side_score(name, value, sw.colour, x1, x2, yof(value)))
    for p in placed:
        sw = swatches[CUTOFF_SIDES[p.date > cutoff]]
        tip = f"{p.label}: {p.date.isoformat()}, {fmt(p.value)}"
        parts.append(
            _link(
                p.href,
                f'<g class="point"><title>{_e(tip)}</title><circle cx="{_num(xof(p.date))}" '
                f'cy="{_num(yof(p.value))}" r="5" fill="{_fill(chart_id, sw)}" stroke="{TEXT}" '
                f'stroke-width="0.8"/></g>',
            )
        )
    return _close(parts, legend_svg)


# --- (e) scatter -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Point:
    label: str
    x: float
    y: float
    group: str = ""
    href: str | None = None


@dataclass(frozen=True)
class _Square:
    """A scatter's plot: ``plot`` wide and high from (``left``, ``top``), both axes from 0 to ``hi``."""

    left: float
    top: float
    plot: float
    hi: float

    def x(self, v: float) -> float:
        return self.left + v / self.hi * self.plot

    def y(self, v: float) -> float:
        return self.top + self.plot - v / self.hi * self.plot


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
    square = _Square(left=56.0, top=34.0, plot=size, hi=hi)
    right_pad = max(len(_short(p.label)) for p in points) * CHAR_W * 10 / FONT + 16
    width = square.left + square.plot + right_pad
    bottom = square.top + square.plot
    legend_svg, legend_h = _legend_below(
        chart_id, _group_entries(shown, swatches), plot_bottom=bottom, width=width
    )
    above = sum(1 for p in points if p.y > p.x)
    summary = f"{len(points)} points; {above} above the diagonal (y greater than x)."
    parts = _open(
        chart_id, width, bottom + 44 + legend_h + 8, title, " ".join(b for b in (desc, summary) if b)
    )
    parts.append(_hatch_defs(chart_id, [swatches[g] for g in shown]))
    parts.append(_heading(title))
    parts.extend(_square_grid(square, unit))
    parts.append(
        f'<text x="{_num(square.left + square.plot / 2)}" y="{_num(bottom + 32)}" text-anchor="middle">{_e(x_label)}</text>'
        f'<text transform="translate(14,{_num(square.top + square.plot / 2)}) rotate(-90)" text-anchor="middle">'
        f"{_e(y_label)}</text>"
    )
    if diagonal:
        parts.append(
            f'<line x1="{_num(square.x(0))}" y1="{_num(square.y(0))}" x2="{_num(square.x(hi))}" y2="{_num(square.y(hi))}" stroke="{MUTED}" '
            f'stroke-dasharray="5 4"><title>y = x</title></line>'
            f'<text x="{_num(square.x(hi) - 4)}" y="{_num(square.y(hi) + 14)}" text-anchor="end" fill="{MUTED}">y = x</text>'
        )
    for p in points:
        tip = f"{p.label}: {x_label} {p.x:.{digits}f}{unit}, {y_label} {p.y:.{digits}f}{unit}"
        parts.append(_link(p.href, _point(chart_id, p, swatches[p.group], square, tip)))
    return _close(parts, legend_svg)


def _square_grid(square: _Square, unit: str) -> list[str]:
    """A vertical and a horizontal grid line per tick of the scatter's axes, each labelled on its axis."""
    return [
        f'<line x1="{_num(square.x(t))}" y1="{_num(square.top)}" x2="{_num(square.x(t))}" '
        f'y2="{_num(square.top + square.plot)}" stroke="{GRID}" stroke-width="0.75"/><line '
        f'x1="{_num(square.left)}" y1="{_num(square.y(t))}" x2="{_num(square.left + square.plot)}" '
        f'y2="{_num(square.y(t))}" stroke="{GRID}" stroke-width="0.75"/>'
        f'<text x="{_num(square.x(t))}" y="{_num(square.top + square.plot + 14)}" text-anchor="middle" '
        f'fill="{MUTED}">{_e(_tick_text(t))}{_e(unit)}</text>'
        f'<text x="{_num(square.left - 6)}" y="{_num(square.y(t) + 4)}" text-anchor="end" fill="{MUTED}">'
        f"{_e(_tick_text(t))}{_e(unit)}</text>"
        for t in _ticks(0, square.hi)
    ]


def _point(chart_id: str, p: Point, sw: Swatch, square: _Square, tip: str) -> str:
    """A point: its circle in its group's swatch and its label right of it, under the ``<title>`` ``tip``."""
    cx, cy = square.x(p.x), square.y(p.y)
    return (
        f'<g class="point"><title>{_e(tip)}</title><circle cx="{_num(cx)}" cy="{_num(cy)}" r="5" '
        f'fill="{_fill(chart_id, sw)}" stroke="{TEXT}" stroke-width="0.8"/>'
        f'<text x="{_num(cx + 7)}" y="{_num(cy + 4)}" font-size="{MIN_FONT}">{_e(_short(p.label))}</text></g>'
    )


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
    _check_series(series, len(rows), "rows")
    totals = [sum((s.values[i] or 0.0) for s in series) for i in range(len(rows))]
    if not any(totals):
        return no_data_svg(chart_id=chart_id, title=title)
    by_name = _swatches([s.name for s in series], swatches or palette_swatches([s.name for s in series]))
    colours = [by_name[s.name] for s in series]
    hi = 100.0 if normalise else _nice_max(max(totals))
    right = 8 + len(_tick_text(hi)) * CHAR_W + 30
    frame = _frame(rows, width=width, right=right, plot_h=ROW_H * len(rows), lo=0.0, hi=hi)
    entries = [(s.name, sw) for s, sw in zip(series, colours, strict=True)]
    legend_svg, legend_h = _legend_below(chart_id, entries, plot_bottom=frame.bottom, width=width)
    desc = (
        desc
        or f"{len(rows)} bars, each split into {len(series)} segments ({', '.join(s.name for s in series)})."
    )
    parts = _open_bars(
        chart_id,
        frame,
        width=width,
        height=_height(frame, legend_h),
        title=title,
        desc=desc,
        swatches=colours,
        x_label=x_label,
        unit="%" if normalise else "",
    )
    for i, name in enumerate(rows):
        stack = _stack(
            chart_id,
            name,
            i,
            series,
            colours,
            frame,
            y=frame.top + i * ROW_H,
            total=totals[i],
            normalise=normalise,
        )
        parts.append(_link(row_hrefs[i] if row_hrefs else None, stack))
    return _close(parts, legend_svg)


def _stack(
    chart_id: str,
    name: str,
    index: int,
    series: Sequence[Series],
    colours: Sequence[Swatch],
    frame: _Frame,
    *,
    y: float,
    total: float,
    normalise: bool,
) -> str:
    """Row ``index``'s bar from ``y`` down: its label, a segment per series with a positive value (titled
    with its count and share), and its total past its end."""
    segs = [_row_label(frame.left - 8, y + ROW_H / 2 + 4, name)]
    acc = 0.0
    for s, sw in zip(series, colours, strict=True):
        v = s.values[index] or 0.0
        if v <= 0:
            continue
        shown = v / total * 100 if normalise and total else v
        x0, x1 = frame.x(acc), frame.x(acc + shown)
        share = f" ({v / total * 100:.1f}%)" if total else ""
        segs.append(
            f'<rect x="{_num(x0)}" y="{_num(y + 3)}" width="{_num(max(x1 - x0, 0.5))}" height="{ROW_H - 6}" '
            f'fill="{_fill(chart_id, sw)}" stroke="#ffffff" stroke-width="0.6"><title>'
            f"{_e(f'{name} – {s.name}: {_tick_text(v)}{share}')}</title></rect>"
        )
        acc += shown
    segs.append(
        f'<text x="{_num(frame.x(acc) + 4)}" y="{_num(y + ROW_H / 2 + 4)}">{_e(_tick_text(total))}</text>'
    )
    return f'<g class="stack">{"".join(segs)}</g>'
