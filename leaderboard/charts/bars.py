"""Bar charts: (a) horizontal bars, (b) grouped bars, (f) stacked bars, and the frame they share."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from leaderboard.charts.encoding import (
    CELL_STROKE,
    MUTED,
    TEXT,
    Swatch,
    palette_swatches,
    series_swatches,
)
from leaderboard.charts.svg import (
    CHAR_W,
    axis_ticks,
    group_entries,
    nice_max,
    no_data_svg,
    svg_close,
    svg_escape,
    svg_fill,
    svg_hatch_defs,
    svg_heading,
    svg_label_width,
    svg_legend_below,
    svg_link,
    svg_num,
    svg_open,
    svg_row_label,
    svg_swatches,
    svg_x_axis,
    tick_text,
)

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
    left = svg_label_width(labels) + 8
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
    parts = svg_open(chart_id, width, height, title, desc)
    parts.append(svg_hatch_defs(chart_id, swatches))
    parts.append(svg_heading(title))
    ticks = axis_ticks(frame.lo, frame.hi)
    parts.append(svg_x_axis(frame.x, ticks, top=frame.top - 4, bottom=frame.bottom, label=x_label, unit=unit))
    return parts


def _height(frame: _Frame, legend_h: float, extra: float = 0) -> float:
    """A bar chart's height: the plot, the x axis and its label, the legend, ``extra`` and a margin."""
    return frame.bottom + 44 + legend_h + extra + 8


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
    swatches = svg_swatches([b.group for b in bars], swatches)
    frame = _bar_frame(bars, max_value=max_value, digits=digits, unit=unit, width=width)
    shown = {b.group for b in bars}
    entries = group_entries(shown, swatches) if legend else []
    legend_svg, legend_h = svg_legend_below(chart_id, entries, plot_bottom=frame.bottom, width=width)
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
    return svg_close(parts, *notes, legend_svg)


def _bar_frame(
    bars: Sequence[Bar], *, max_value: float | None, digits: int, unit: str, width: float
) -> _Frame:
    """A bar chart's frame: one row per bar, the value axis from min(0, lowest value) to ``max_value`` (by
    default a round number above the highest value or error bar end), and room right of the plot for the
    longest value label and note."""
    values = [v for b in bars for v in ([b.value] if b.value is not None else []) + list(b.err or ())]
    hi = max_value if max_value is not None else nice_max(max(values, default=0.0))
    # The axis starts below zero only for negative bar values (deltas); error bars are clipped to the axis.
    lo_raw = min((b.value for b in bars if b.value is not None), default=0.0)
    lo = -nice_max(-lo_raw) if lo_raw < 0 else 0.0
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
    label = svg_row_label(frame.left - 8, cy + 4, b.label)
    if b.value is None:
        mark = f'<text x="{svg_num(frame.x(0.0) + 4)}" y="{svg_num(cy + 4)}" fill="{MUTED}">– no data</text>'
        tip = f"{b.label}: no data"
    else:
        mark = _bar_mark(chart_id, b, swatches[b.group], frame, y=y, unit=unit, digits=digits)
        tip = _bar_tip(b, unit=unit, digits=digits, error_label=error_label)
    return svg_link(b.href, f'<g class="bar"><title>{svg_escape(tip)}</title>{label}{mark}</g>')


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
        f'<rect x="{svg_num(x0)}" y="{svg_num(y + 3)}" width="{svg_num(max(x1 - x0, 0.5))}" '
        f'height="{svg_num(ROW_H - 6)}" fill="{svg_fill(chart_id, sw)}"{outline}/>'
    )
    end = frame.x(min(max(b.value, b.err[1] if b.err else b.value), frame.hi))
    if b.err:
        e0, e1 = frame.x(max(b.err[0], frame.lo)), frame.x(min(b.err[1], frame.hi))
        mark += (
            f'<path d="M{svg_num(e0)},{svg_num(cy)} H{svg_num(e1)} M{svg_num(e0)},{svg_num(cy - 4)} V{svg_num(cy + 4)} '
            f'M{svg_num(e1)},{svg_num(cy - 4)} V{svg_num(cy + 4)}" stroke="{TEXT}" stroke-width="1.2" fill="none"/>'
        )
    if b.value < 0:
        vx, anchor = frame.x(max(min(b.value, b.err[0] if b.err else b.value), frame.lo)) - 4, "end"
    else:
        vx, anchor = end + 4, "start"
    return mark + (
        f'<text x="{svg_num(vx)}" y="{svg_num(cy + 4)}" text-anchor="{anchor}">'
        f"{svg_escape(f'{b.value:.{digits}f}{unit}')}{svg_escape(b.note and ' ' + b.note)}</text>"
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
            f'<rect x="8" y="{svg_num(y)}" width="22" height="11" fill="none" stroke="{TEXT}" '
            f'stroke-width="2" stroke-dasharray="5 3"/><text x="36" y="{svg_num(y + 10)}">'
            f"{svg_escape(outline_label)}</text>"
        )
        y += 18
    if error_label:
        notes.append(
            f'<path d="M8,{svg_num(y + 5)} H30 M8,{svg_num(y)} V{svg_num(y + 10)} M30,{svg_num(y)} '
            f'V{svg_num(y + 10)}" stroke="{TEXT}" stroke-width="1.2"/>'
            f'<text x="36" y="{svg_num(y + 10)}">Error bars: {svg_escape(error_label)}</text>'
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
    hi = max_value if max_value is not None else nice_max(max(values, default=0.0))
    lo = -nice_max(-min(values)) if values and min(values) < 0 else 0.0
    group_h = GROUPED_BAR_H * len(series) + 10
    right = 8 + len(f"{hi:.{digits}f}{unit}") * CHAR_W + 8
    frame = _frame(categories, width=width, right=right, plot_h=group_h * len(categories), lo=lo, hi=hi)
    entries = [(s.name, c) for s, c in zip(series, colours, strict=True)]
    legend_svg, legend_h = svg_legend_below(chart_id, entries, plot_bottom=frame.bottom, width=width)
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
        parts.append(svg_link(hrefs[i] if hrefs else None, body))
    return svg_close(parts, legend_svg)


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
    inner = [svg_row_label(frame.left - 8, y + group_h / 2, category)]
    tips = []
    for j, (s, c) in enumerate(zip(series, colours, strict=True)):
        v = s.values[index]
        by = y + j * GROUPED_BAR_H
        if v is None:
            inner.append(
                f'<text x="{svg_num(zero + 4)}" y="{svg_num(by + 10)}" font-size="10" fill="{MUTED}">'
                f"{svg_escape(s.name)}: no data</text>"
            )
            tips.append(f"{s.name}: no data")
            continue
        x0, x1 = sorted((zero, frame.x(v)))
        inner.append(
            f'<rect x="{svg_num(x0)}" y="{svg_num(by)}" width="{svg_num(max(x1 - x0, 0.5))}" height="{GROUPED_BAR_H - 1}" '
            f'fill="{svg_fill(chart_id, c)}" stroke="{TEXT}" stroke-width="0.4"><title>'
            f"{svg_escape(f'{category} – {s.name}: {v:.{digits}f}{unit}')}</title></rect>"
            f'<text x="{svg_num((x1 + 4) if v >= 0 else (x0 - 4))}" y="{svg_num(by + 10)}" font-size="10" '
            f'text-anchor="{"start" if v >= 0 else "end"}">{svg_escape(f"{v:.{digits}f}{unit}")}</text>'
        )
        tips.append(f"{s.name}: {v:.{digits}f}{unit}")
    return f'<g class="group"><title>{svg_escape(category + " – " + "; ".join(tips))}</title>{"".join(inner)}</g>'


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
    by_name = svg_swatches([s.name for s in series], swatches or palette_swatches([s.name for s in series]))
    colours = [by_name[s.name] for s in series]
    hi = 100.0 if normalise else nice_max(max(totals))
    right = 8 + len(tick_text(hi)) * CHAR_W + 30
    frame = _frame(rows, width=width, right=right, plot_h=ROW_H * len(rows), lo=0.0, hi=hi)
    entries = [(s.name, sw) for s, sw in zip(series, colours, strict=True)]
    legend_svg, legend_h = svg_legend_below(chart_id, entries, plot_bottom=frame.bottom, width=width)
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
        parts.append(svg_link(row_hrefs[i] if row_hrefs else None, stack))
    return svg_close(parts, legend_svg)


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
    segs = [svg_row_label(frame.left - 8, y + ROW_H / 2 + 4, name)]
    acc = 0.0
    for s, sw in zip(series, colours, strict=True):
        v = s.values[index] or 0.0
        if v <= 0:
            continue
        shown = v / total * 100 if normalise and total else v
        x0, x1 = frame.x(acc), frame.x(acc + shown)
        share = f" ({v / total * 100:.1f}%)" if total else ""
        segs.append(
            f'<rect x="{svg_num(x0)}" y="{svg_num(y + 3)}" width="{svg_num(max(x1 - x0, 0.5))}" height="{ROW_H - 6}" '
            f'fill="{svg_fill(chart_id, sw)}" stroke="{CELL_STROKE}" stroke-width="0.6"><title>'
            f"{svg_escape(f'{name} – {s.name}: {tick_text(v)}{share}')}</title></rect>"
        )
        acc += shown
    segs.append(
        f'<text x="{svg_num(frame.x(acc) + 4)}" y="{svg_num(y + ROW_H / 2 + 4)}">{svg_escape(tick_text(total))}</text>'
    )
    return f'<g class="stack">{"".join(segs)}</g>'
