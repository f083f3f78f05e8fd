"""(e) The scatter: points in a square, coloured by group, each linking to its page."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from leaderboard.charts.encoding import FONT, GRID, MUTED, TEXT, Swatch
from leaderboard.charts.svg import (
    CHAR_W,
    MIN_FONT,
    axis_ticks,
    group_entries,
    nice_max,
    no_data_svg,
    svg_close,
    svg_escape,
    svg_fill,
    svg_hatch_defs,
    svg_heading,
    svg_legend_below,
    svg_link,
    svg_num,
    svg_open,
    svg_short,
    svg_swatches,
    tick_text,
)


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
    swatches = svg_swatches(list(shown), swatches)
    hi = max_value if max_value is not None else nice_max(max(max(p.x, p.y) for p in points))
    square = _Square(left=56.0, top=34.0, plot=size, hi=hi)
    right_pad = max(len(svg_short(p.label)) for p in points) * CHAR_W * 10 / FONT + 16
    width = square.left + square.plot + right_pad
    bottom = square.top + square.plot
    legend_svg, legend_h = svg_legend_below(
        chart_id, group_entries(shown, swatches), plot_bottom=bottom, width=width
    )
    above = sum(1 for p in points if p.y > p.x)
    summary = f"{len(points)} points; {above} above the diagonal (y greater than x)."
    parts = svg_open(
        chart_id, width, bottom + 44 + legend_h + 8, title, " ".join(b for b in (desc, summary) if b)
    )
    parts.append(svg_hatch_defs(chart_id, [swatches[g] for g in shown]))
    parts.append(svg_heading(title))
    parts.extend(_square_grid(square, unit))
    parts.append(
        f'<text x="{svg_num(square.left + square.plot / 2)}" y="{svg_num(bottom + 32)}" text-anchor="middle">{svg_escape(x_label)}</text>'
        f'<text transform="translate(14,{svg_num(square.top + square.plot / 2)}) rotate(-90)" text-anchor="middle">'
        f"{svg_escape(y_label)}</text>"
    )
    if diagonal:
        parts.append(
            f'<line x1="{svg_num(square.x(0))}" y1="{svg_num(square.y(0))}" x2="{svg_num(square.x(hi))}" y2="{svg_num(square.y(hi))}" stroke="{MUTED}" '
            f'stroke-dasharray="5 4"><title>y = x</title></line>'
            f'<text x="{svg_num(square.x(hi) - 4)}" y="{svg_num(square.y(hi) + 14)}" text-anchor="end" fill="{MUTED}">y = x</text>'
        )
    for p in points:
        tip = f"{p.label}: {x_label} {p.x:.{digits}f}{unit}, {y_label} {p.y:.{digits}f}{unit}"
        parts.append(svg_link(p.href, _point(chart_id, p, swatches[p.group], square, tip)))
    return svg_close(parts, legend_svg)


def _square_grid(square: _Square, unit: str) -> list[str]:
    """A vertical and a horizontal grid line per tick of the scatter's axes, each labelled on its axis."""
    return [
        f'<line x1="{svg_num(square.x(t))}" y1="{svg_num(square.top)}" x2="{svg_num(square.x(t))}" '
        f'y2="{svg_num(square.top + square.plot)}" stroke="{GRID}" stroke-width="0.75"/><line '
        f'x1="{svg_num(square.left)}" y1="{svg_num(square.y(t))}" x2="{svg_num(square.left + square.plot)}" '
        f'y2="{svg_num(square.y(t))}" stroke="{GRID}" stroke-width="0.75"/>'
        f'<text x="{svg_num(square.x(t))}" y="{svg_num(square.top + square.plot + 14)}" text-anchor="middle" '
        f'fill="{MUTED}">{svg_escape(tick_text(t))}{svg_escape(unit)}</text>'
        f'<text x="{svg_num(square.left - 6)}" y="{svg_num(square.y(t) + 4)}" text-anchor="end" fill="{MUTED}">'
        f"{svg_escape(tick_text(t))}{svg_escape(unit)}</text>"
        for t in axis_ticks(0, square.hi)
    ]


def _point(chart_id: str, p: Point, sw: Swatch, square: _Square, tip: str) -> str:
    """A point: its circle in its group's swatch and its label right of it, under the ``<title>`` ``tip``."""
    cx, cy = square.x(p.x), square.y(p.y)
    return (
        f'<g class="point"><title>{svg_escape(tip)}</title><circle cx="{svg_num(cx)}" cy="{svg_num(cy)}" r="5" '
        f'fill="{svg_fill(chart_id, sw)}" stroke="{TEXT}" stroke-width="0.8"/>'
        f'<text x="{svg_num(cx + 7)}" y="{svg_num(cy + 4)}" font-size="{MIN_FONT}">{svg_escape(svg_short(p.label))}</text></g>'
    )
