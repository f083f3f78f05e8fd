"""(c) The heatmap: rows x columns of values on the viridis scale, with its legend."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from leaderboard.charts.encoding import CELL_STROKE, GRID, MISSING, MUTED, VIRIDIS, ink_on, scale_colour
from leaderboard.charts.svg import (
    no_data_svg,
    svg_close,
    svg_escape,
    svg_heading,
    svg_label_width,
    svg_link,
    svg_num,
    svg_open,
    svg_row_label,
    svg_short,
    tick_text,
)

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
    parts = svg_open(chart_id, width, bottom + 70, title, desc)
    gid = f"{chart_id}-scale"
    parts.append(_scale_gradient(gid))
    parts.append(svg_heading(title))
    for j, col in enumerate(cols):
        label = _column_label(col, grid.x(j) + grid.cell_w / 2, grid.top)
        parts.append(svg_link(col_hrefs[j] if col_hrefs else None, label))
    for i, row in enumerate(rows):
        label = svg_row_label(grid.left - 8, grid.y(i) + CELL_H / 2 + 4, row)
        parts.append(svg_link(row_hrefs[i] if row_hrefs else None, label))
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
    return svg_close(parts)


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
    return _Grid(
        left=svg_label_width(rows) + 8, top=30 + min(svg_label_width(cols) * 0.72 + 8, 220), cell_w=cell_w
    )


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
        f'<stop offset="{svg_num(k / (len(VIRIDIS) - 1))}" stop-color="{scale_colour(k / (len(VIRIDIS) - 1))}"/>'
        for k in range(len(VIRIDIS))
    )
    return f'<defs><linearGradient id="{gid}" x1="0" x2="1" y1="0" y2="0">{stops}</linearGradient></defs>'


def _column_label(col: str, cx: float, top: float) -> str:
    """A column's label, slanted up from above the middle ``cx`` of its column, its full text as title."""
    return (
        f"<g><title>{svg_escape(col)}</title>"
        f'<text transform="translate({svg_num(cx + 3)},{svg_num(top - 6)}) rotate(-45)" font-size="11">'
        f"{svg_escape(svg_short(col))}</text></g>"
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
    box = f'x="{svg_num(x)}" y="{svg_num(y)}" width="{svg_num(cell_w)}" height="{svg_num(CELL_H)}"'
    if v is None:
        return (
            f"<g><title>{svg_escape(f'{name}: no data')}</title>"
            f'<rect {box} fill="{MISSING}" stroke="{CELL_STROKE}"/><circle cx="{svg_num(x + cell_w / 2)}" '
            f'cy="{svg_num(y + CELL_H / 2)}" r="1.5" fill="{MUTED}"/></g>'
        )
    t = (v - vmin) / (vmax - vmin)
    txt = (
        f'<text x="{svg_num(x + cell_w / 2)}" y="{svg_num(y + CELL_H / 2 + 4)}" text-anchor="middle" '
        f'font-size="10" fill="{ink_on(t)}">{svg_escape(f"{v:.{digits}f}")}</text>'
        if show
        else ""
    )
    return (
        f"<g><title>{svg_escape(f'{name}: {v:.{max(digits, 1)}f} {value_label}')}</title>"
        f'<rect {box} fill="{scale_colour(t)}" stroke="{CELL_STROKE}"/>{txt}</g>'
    )


def _scale_legend(gid: str, value_label: str, vmin: float, vmax: float, *, y: float, width: float) -> str:
    """The colour-scale legend from ``y`` down: its label, the gradient ``gid`` with its ends and middle,
    and the "no data" swatch."""
    lw = min(240.0, width - 120)
    return (
        f'<g class="scale-legend"><text x="8" y="{svg_num(y + 10)}">{svg_escape(value_label)}</text>'
        f'<rect x="8" y="{svg_num(y + 16)}" width="{svg_num(lw)}" height="10" fill="url(#{gid})" stroke="{GRID}"/>'
        f'<text x="8" y="{svg_num(y + 40)}" fill="{MUTED}">{svg_escape(tick_text(vmin))}</text>'
        f'<text x="{svg_num(8 + lw / 2)}" y="{svg_num(y + 40)}" text-anchor="middle" fill="{MUTED}">'
        f"{svg_escape(tick_text(vmin + (vmax - vmin) / 2))}</text>"
        f'<text x="{svg_num(8 + lw)}" y="{svg_num(y + 40)}" text-anchor="end" fill="{MUTED}">{svg_escape(tick_text(vmax))}</text>'
        f'<rect x="{svg_num(lw + 24)}" y="{svg_num(y + 16)}" width="10" height="10" fill="{MISSING}" stroke="{GRID}"/>'
        f'<text x="{svg_num(lw + 40)}" y="{svg_num(y + 25)}">no data</text></g>'
    )
