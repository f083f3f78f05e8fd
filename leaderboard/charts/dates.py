"""(d) Charts over dates: the timeline of models and papers, and scores on either side of a cutoff."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from leaderboard.charts.encoding import GRID, MUTED, OKABE_ITO, SCORE_TITLE, TEXT, series_swatches
from leaderboard.charts.svg import (
    MIN_FONT,
    axis_ticks,
    fmt,
    no_data_svg,
    svg_close,
    svg_escape,
    svg_fill,
    svg_heading,
    svg_label_width,
    svg_legend,
    svg_link,
    svg_num,
    svg_open,
    svg_row_label,
    tick_text,
)


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
    left = svg_label_width([it.label for it in items]) + 8
    plot_w = width - left - 24
    span_days = (hi - lo).days

    def xof(d: _dt.date) -> float:
        return left + (d - lo).days / span_days * plot_w

    sections = [(kind, label, [it for it in items if it.kind == kind]) for kind, label in kinds]
    sections = [s for s in sections if s[2]]
    top = 34 + 16 * len(markers)
    height = top + sum(22 + TIMELINE_ROW_H * len(its) for _, _, its in sections) + 40
    parts = svg_open(chart_id, width, height, title, desc or _timeline_summary(sections))
    parts.append(svg_heading(title))
    bottom = height - 36
    parts.extend(_date_grid(xof, lo, hi, top=top, bottom=bottom))
    parts.extend(_date_markers(xof, markers, bottom=bottom))
    y = top
    for i, (kind, section_label, its) in enumerate(sections):
        colour = OKABE_ITO[4] if i == 0 else OKABE_ITO[0]
        parts.append(
            f'<text x="8" y="{svg_num(y + 14)}" font-weight="600">{svg_escape(section_label)}</text>'
        )
        y += 22
        for it in its:
            parts.append(_timeline_item(it, kind, colour, xof, left=left, cy=y + TIMELINE_ROW_H / 2))
            y += TIMELINE_ROW_H
    return svg_close(parts)


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
                f'<line x1="{svg_num(x)}" y1="{svg_num(top - 4)}" x2="{svg_num(x)}" y2="{svg_num(bottom)}" stroke="{GRID}" '
                f'stroke-width="{1 if month == 1 else 0.5}"/>'
                f'<text x="{svg_num(x)}" y="{svg_num(bottom + 14)}" text-anchor="middle" fill="{MUTED}" '
                f'font-size="{11 if month == 1 else MIN_FONT}">{svg_escape(d.strftime("%Y" if month == 1 else "%b"))}</text>'
            )
        tick_year += 1
    return parts


def _date_markers(
    xof: Callable[[_dt.date], float], markers: Sequence[tuple[str, _dt.date]], *, bottom: float
) -> list[str]:
    """A dashed vertical line per marker, each labelled with its name and date one line below the last."""
    return [
        f'<g class="marker"><title>{svg_escape(f"{label}: {d.isoformat()}")}</title>'
        f'<line x1="{svg_num(xof(d))}" y1="{svg_num(30 + 16 * k)}" x2="{svg_num(xof(d))}" y2="{svg_num(bottom)}" '
        f'stroke="#D55E00" stroke-width="1.5" stroke-dasharray="6 3"/><text x="{svg_num(xof(d) + 4)}" '
        f'y="{svg_num(40 + 16 * k)}" fill="#A33F00">{svg_escape(f"{label} ({d.isoformat()})")}</text></g>'
        for k, (label, d) in enumerate(markers)
    ]


def _timeline_item(
    it: TimelineItem, kind: str, colour: str, xof: Callable[[_dt.date], float], *, left: float, cy: float
) -> str:
    """An item's row centred on ``cy``: its label and its point (a diamond for a paper, a circle for
    anything else) with its date, or "date unknown"; linked to ``it.href`` when there is one."""
    label = svg_row_label(left - 8, cy + 4, it.label)
    if it.date is None:
        mark = f'<text x="{svg_num(left + 4)}" y="{svg_num(cy + 4)}" fill="{MUTED}">date unknown</text>'
        tip = f"{it.label}: date unknown"
    else:
        x = xof(it.date)
        if kind == "paper":
            shape = (
                f'<path d="M{svg_num(x)},{svg_num(cy - 6)} L{svg_num(x + 6)},{svg_num(cy)} L{svg_num(x)},{svg_num(cy + 6)} '
                f'L{svg_num(x - 6)},{svg_num(cy)} Z" fill="{colour}" stroke="{TEXT}" stroke-width="0.6"/>'
            )
        else:
            shape = (
                f'<circle cx="{svg_num(x)}" cy="{svg_num(cy)}" r="5" fill="{colour}" stroke="{TEXT}" '
                f'stroke-width="0.6"/>'
            )
        mark = (
            f'<line x1="{svg_num(left)}" y1="{svg_num(cy)}" x2="{svg_num(x)}" y2="{svg_num(cy)}" stroke="{GRID}" '
            f'stroke-dasharray="2 2"/>{shape}'
            f'<text x="{svg_num(x + 9)}" y="{svg_num(cy + 4)}" font-size="10" fill="{MUTED}">'
            f"{svg_escape(it.date.isoformat())}</text>"
        )
        tip = f"{it.label}: {it.date.isoformat()}"
    return svg_link(it.href, f'<g class="item"><title>{svg_escape(tip)}</title>{label}{mark}</g>')


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
        f'<line x1="{svg_num(left)}" y1="{svg_num(yof(t))}" x2="{svg_num(left + plot_w)}" y2="{svg_num(yof(t))}" '
        f'stroke="{GRID}" stroke-width="0.5"/><text x="{svg_num(left - 6)}" y="{svg_num(yof(t) + 4)}" '
        f'text-anchor="end" fill="{MUTED}">{svg_escape(tick_text(t))}</text>'
        for t in axis_ticks(0, 100)
    ]
    parts.append(
        f'<text transform="translate(14,{svg_num(mid_y)}) rotate(-90)" text-anchor="middle">{svg_escape(label)}</text>'
    )
    return parts


def _side_score(name: str, value: float, colour: str, x1: float, x2: float, y: float) -> str:
    """The score over one side of the cutoff: a thick horizontal line across that side."""
    return (
        f'<g class="side-score"><title>{svg_escape(f"Score {name} the cutoff: {fmt(value)}")}</title>'
        f'<line x1="{svg_num(x1)}" y1="{svg_num(y)}" x2="{svg_num(x2)}" y2="{svg_num(y)}" '
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
    y_label: str = SCORE_TITLE,
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
    legend_svg, legend_h = svg_legend(chart_id, list(swatches.items()), x=8, y=bottom + 30, width=width - 16)
    unplaced = [p.label for p in points if p.date is None or p.value is None]
    sides = (("before", before), ("after", after))
    summary = (
        f"{len(placed)} papers by first-commit date; cutoff {cutoff.isoformat()}; "
        + "; ".join(f"score {name} it {fmt(v)}" for name, v in sides)
        + (f"; not placed (no date or no score): {', '.join(unplaced)}." if unplaced else ".")
    )
    parts = svg_open(chart_id, width, bottom + 30 + legend_h + 8, title, summary)
    parts.append(svg_heading(title))
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
            svg_link(
                p.href,
                f'<g class="point"><title>{svg_escape(tip)}</title><circle cx="{svg_num(xof(p.date))}" '
                f'cy="{svg_num(yof(p.value))}" r="5" fill="{svg_fill(chart_id, sw)}" stroke="{TEXT}" '
                f'stroke-width="0.8"/></g>',
            )
        )
    return svg_close(parts, legend_svg)
