"""The board: the ranked models of the runs the filters keep, its columns, groups and charts."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date

from django.http import QueryDict

from leaderboard import freshness
from leaderboard.charts import svg
from leaderboard.forms import CONTAMINATION_LABELS, FILTER_PARAMS, BoardFilterForm
from leaderboard.forms import DEFAULTS as FILTER_DEFAULTS
from leaderboard.links import (
    csv_url,
)
from leaderboard.presenters import (
    board_chart,
    board_scatter_specs,
)
from leaderboard.selectors.board import PaperWindow, Row, leaderboard_rows, paper_window
from leaderboard.selectors.models import (
    VerbatimShare,
    run_verbatim_shares,
)
from leaderboard.views.pages import FilteredPage, filtered_view

#: the board's columns after the rank: (column id, sort key or "", header, numeric)
BOARD_COLUMNS = (
    ("model", "name", "Model", False),
    ("developer", "developer", "Developer", False),
    ("weights", "", "Weights", False),
    ("cutoff", "cutoff", "Cutoff", False),
    ("scaled", "scaled_pass_at_1", "Scaled Pass@1", True),
    ("pass1", "pass_at_1", "Pass@1", True),
    ("coverage", "coverage", "Coverage", True),
    ("cost", "cost", "Cost", True),
    ("forging", "forging_rate", "Forging rate", True),
    ("verification", "", "Verification", False),
    ("date", "date", "Date", False),
)
#: the columns the chooser cannot hide: the model and its score are always on the board
FIXED_COLUMNS = frozenset({"model", "scaled"})
#: the board's parameters: the filters and the chosen columns (``cols``)
BOARD_PARAMS = (*FILTER_PARAMS, "cols")
SORT_LABELS = {
    "scaled_pass_at_1": "Scaled Pass@1",
    "pass_at_1": "Pass@1",
    "std": "standard deviation",
    "coverage": "coverage",
    "snippets": "snippets tested",
    "cost": "cost",
    "name": "model name",
    "developer": "developer",
    "cutoff": "knowledge cutoff",
    "date": "date",
    "forging_rate": "forging rate",
}


def shown_columns(params: QueryDict) -> frozenset[str]:
    """The column ids the board shows: those ``cols`` names (unknown ids ignored) and the fixed ones;
    every column when ``cols`` is absent (the chooser always sends ``cols=model``, so unticking every
    optional column still hides them)."""
    chosen = params.getlist("cols")
    if not chosen:
        return frozenset(c[0] for c in BOARD_COLUMNS)
    return FIXED_COLUMNS | (frozenset(chosen) & {c[0] for c in BOARD_COLUMNS})


def _columns(form: BoardFilterForm, params: QueryDict) -> list[dict]:
    """The board's headers, each with its column ``id``, ``label``, whether it is ``shown`` and ``fixed``,
    the URL that sorts by the column (toggling direction when it is the current sort) and its
    ``aria-sort`` state."""
    current = form.filters.sort
    shown = shown_columns(params)
    out = []
    for col, key, label, numeric in BOARD_COLUMNS:
        column = {"id": col, "label": label, "num": numeric, "url": "", "aria": "", "shown": col in shown}
        column["fixed"] = col in FIXED_COLUMNS
        out.append(column)
        if not key:
            continue
        descending_first = key in ("scaled_pass_at_1", "pass_at_1", "coverage", "date", "cutoff")
        if current.lstrip("-") == key:
            target = key if current.startswith("-") else f"-{key}"
            column["aria"] = "descending" if current.startswith("-") else "ascending"
        else:
            target = f"-{key}" if descending_first else key
        query = params.copy()
        query["sort"] = target
        column["url"] = f"?{query.urlencode()}"
    return out


def _window_slider(form: BoardFilterForm, window: PaperWindow) -> dict | None:
    """The paper-date slider's state: months from the release's first paper month (``start``, YYYY-MM) to
    its last (``months`` steps), each thumb at its bound's month (the ends without one); None without a
    dated paper. The date inputs stay the form's fields: the slider only sets them (static/js)."""
    if window.first is None or window.last is None:
        return None
    first, last = window.first, window.last
    months = (last.year - first.year) * 12 + last.month - first.month

    def step(bound: date | None, default: int) -> int:
        if bound is None:
            return default
        return min(max((bound.year - first.year) * 12 + bound.month - first.month, 0), months)

    filters = form.filters
    return {
        "start": first.strftime("%Y-%m"),
        "months": months,
        "from": step(filters.paper_from, 0),
        "to": step(filters.paper_to, months),
    }


def _board_context(form: BoardFilterForm, params: QueryDict) -> dict:
    rows = leaderboard_rows(filters=form.filters)
    window = paper_window(form.filters)
    mode = form.filters.contamination
    title = "Scaled Pass@1 per model" + ("" if mode == "none" else f" ({CONTAMINATION_LABELS[mode].lower()})")
    groups = _board_groups(rows, title=title, verbatim=run_verbatim_shares(run_ids=[r.run_id for r in rows]))
    return {
        "rows": rows,
        "groups": groups,
        "incomplete": [r for r in rows if r.incomplete],
        "chart": groups[0]["chart"] if groups else "",
        # The caption names error bars only when the chart draws them (filtered selections have none).
        "error_bars": any(r.score.ci95 for r in rows if r.scaled_pass_at_1 is not None),
        "columns": _columns(form, params),
        "shown": shown_columns(params),
        "cols_chosen": [c[0] for c in BOARD_COLUMNS if c[0] in params.getlist("cols")],
        # The column chooser resubmits the board's valid filters and sort (the defaults need no parameter).
        "kept_params": [(k, v) for k, v in form.values.items() if v and v != FILTER_DEFAULTS[k]],
        "sort_label": SORT_LABELS.get(form.filters.sort.lstrip("-"), form.filters.sort.lstrip("-"))
        + (" (descending)" if form.filters.sort.startswith("-") else " (ascending)"),
        "csv_url": csv_url("leaderboard", params),
        "json_url": csv_url("leaderboard", params, fmt="json"),
        "selection": rows[0].selection if rows and rows[0].selection is not None else None,
        "scatter_specs": board_scatter_specs(rows),
        "freshness": freshness.freshness_get(releases={r.release for r in rows}) if rows else None,
        "window": window,
        "slider": _window_slider(form, window),
    }


def _board_groups(
    rows: list[Row], *, title: str, verbatim: Mapping[int, VerbatimShare] | None = None
) -> list[dict]:
    """The board's rows group by group (release, template, paper setting; the selector's order): each
    group's label, its ranked rows (``ranked``, with a chart) and its incomplete rows (``apart``), each row
    as ``{"r": row, "ties": [...], "verbatim": VerbatimShare | None}``: the neighbours in rank order it is
    statistically tied with, and its near-verbatim share (``verbatim``: run id -> share)."""
    verbatim = verbatim or {}
    by_group: dict[tuple, list[Row]] = {}
    for r in rows:
        by_group.setdefault(r.group, []).append(r)
    out = []
    for i, members in enumerate(by_group.values()):
        ranked = [r for r in members if not r.incomplete]
        first = members[0]
        setting = "with paper" if first.with_paper else "without paper"
        where = f"Release {first.release_words}" if first.release or not first.covers else first.release_words
        label = f"{where[:1].upper()}{where[1:]}, template {first.template}, {setting}"
        by_rank = sorted((r for r in ranked if r.rank is not None), key=lambda r: (r.rank, r.model.key))
        ties: dict[int, list[str]] = {}
        for above, below in zip(by_rank, by_rank[1:], strict=False):
            if below.model.key in above.tied_with:
                ties.setdefault(above.run_id, []).append(below.model.name)
                ties.setdefault(below.run_id, []).append(above.model.name)
        chart = board_chart(
            ranked,
            title=title if len(by_group) == 1 else f"{title}: {label}",
            chart_id="board-chart" if i == 0 else f"board-chart-{i + 1}",
        )
        out.append(
            {
                "label": label,
                "ranked": [
                    {"r": r, "ties": ties.get(r.run_id, []), "verbatim": verbatim.get(r.run_id)}
                    for r in ranked
                ],
                "apart": [
                    {"r": r, "ties": [], "verbatim": verbatim.get(r.run_id)} for r in members if r.incomplete
                ],
                "chart": svg.skippable(chart) if ranked else "",
            }
        )
    return out


#: the board: one entry of ``filtered_view``'s table, reading the column choice too
PAGE = FilteredPage("board", "leaderboard/board.html", "Leaderboard", _board_context, params=BOARD_PARAMS)
board = filtered_view(PAGE)
