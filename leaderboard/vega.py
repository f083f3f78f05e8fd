"""Vega-Lite specs for the interactive views: plain dicts built from the same selector outputs as the SVG
charts (``leaderboard.charts``), with the same colours and formats (``charts.encoding``).

The server-side SVG stays the accessible baseline of every page; these specs add what only interaction
gives (re-sorting, highlighting, a scatter to explore). A page embeds a spec as data
(``{{ spec|json_script:"id" }}``, never inline script) and ``static/js/charts.js`` draws it with the
vendored Vega-Lite (``static/vendor/vega/``), using Vega's expression interpreter so that no
``'unsafe-eval'`` is needed. Contracts shared by every spec:

- ``$schema`` names the vendored Vega-Lite version (``SCHEMA``); data are inline ``values`` (nothing is
  fetched), each record carrying the selector's numbers unchanged (percentages, ``None`` for "no data");
- controls are Vega parameters bound to HTML inputs (a ``<select>`` each), so they work from the keyboard;
  parameter names are fixed identifiers, and every value that comes from the database (model, paper and
  snippet names) is data or an option value, never part of an expression;
- colours and formats come from ``leaderboard.charts.encoding``: the viridis stops of ``rate_colours`` for pass rates, the
  swatch of each developer (``group_swatches`` of every developer) and the series colours of
  ``series_swatches``; hatches (beyond eight groups) are not drawn here, tooltips and legends name the
  group instead.
"""

from __future__ import annotations

import datetime as _dt
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from leaderboard.charts import encoding
from leaderboard.selectors.board import Row
from leaderboard.selectors.compare import ModelComparison
from leaderboard.selectors.papers import PaperDetail

#: the schema of the vendored Vega-Lite (static/vendor/vega/README.md); vega-embed checks it against the
#: library's version
SCHEMA = "https://vega.github.io/schema/vega-lite/v6.5.0.json"

Spec = dict[str, Any]

#: the SVG charts' type: system sans-serif, never smaller than their 12 px body text on axes and legends
CONFIG: Spec = {
    "font": "system-ui, sans-serif",
    "axis": {"labelFontSize": encoding.FONT, "titleFontSize": encoding.FONT, "labelColor": encoding.TEXT},
    "legend": {"labelFontSize": encoding.FONT, "titleFontSize": encoding.FONT},
    "title": {"fontSize": 15, "anchor": "start"},
}


def cell_pass_rate(verdicts: str) -> float | None:
    """The share (%) of a model's tested completions of a snippet that passed (``verdicts``: one letter
    per completion, P passed, F failed, anything else untested); None when none was tested. The SVG
    heatmap and the interactive one both colour a cell by this."""
    tested = [c for c in verdicts if c in "PF"]
    return 100 * tested.count("P") / len(tested) if tested else None


def paper_row_labels(detail: PaperDetail) -> list[str]:
    """One label per matrix row (run): the model name, with the paper setting and then the run id added
    only where names would repeat (a model's runs with and without the paper), so rows stay distinct."""
    names = Counter(m.model.name for m in detail.matrix)
    labels = [
        f"{m.model.name} ({'with' if m.with_paper else 'without'} paper)"
        if names[m.model.name] > 1
        else m.model.name
        for m in detail.matrix
    ]
    again = Counter(labels)
    return [
        f"{label} #{m.run_id}" if again[label] > 1 else label
        for label, m in zip(labels, detail.matrix, strict=True)
    ]


def paper_col_labels(detail: PaperDetail) -> list[str]:
    """One label per snippet column: its name, prefixed by its task when the paper has several tasks."""
    multi_task = len(detail.tasks) > 1
    return [f"{n.task_key}/{n.name}" if multi_task else n.name for n in detail.snippets]


def _select(name: str, label: str, options: Sequence[str], labels: Sequence[str]) -> Spec:
    return {
        "name": name,
        "value": options[0],
        "bind": {"input": "select", "name": label, "options": list(options), "labels": list(labels)},
    }


def _spec(*, title: str, interactive: str, params: list[Spec], values: list[dict[str, Any]]) -> Spec:
    """The keys every spec starts with: the schema, the charts' type, a description saying what the
    controls do (``interactive``), the title, the controls and the inline data."""
    return {
        "$schema": SCHEMA,
        "config": CONFIG,
        "description": f"{title}. Interactive: {interactive}",
        "title": title,
        "params": params,
        "data": {"values": values},
    }


def _highlight_opacity(field: str, dimmed: float) -> Spec:
    """Full opacity for the marks whose ``field`` equals the ``highlight`` parameter (every mark while it
    is empty), ``dimmed`` for the others. ``field`` is a fixed identifier, never database text."""
    return {
        "condition": {"test": f"highlight === '' || datum.{field} === highlight", "value": 1},
        "value": dimmed,
    }


# --- the paper's heatmap -------------------------------------------------------------------------------

# One number per snippet for the chosen order, the document order breaking ties; an unknown solve rate
# sorts after every known one. ``sort_by`` is a bound parameter, so the expression is fixed text.
_SNIPPET_RANK = (
    "sort_by === 'lines' ? -datum.lines * 100000 + datum.col"
    " : sort_by === 'difficulty' ? (datum.solve_rate === null ? 101 : datum.solve_rate) * 100000 + datum.col"
    " : datum.col"
)
_HIGHLIGHTED_CELL = (
    "(highlight_model === '' || datum.model === highlight_model)"
    " && (highlight_snippet === '' || datum.snippet === highlight_snippet)"
)


def paper_heatmap_spec(
    detail: PaperDetail,
    *,
    snippet_hrefs: Sequence[str],
    title: str,
) -> Spec:
    """The paper's model x snippet heatmap (cell: ``cell_pass_rate`` of the run's verdicts), with its
    snippets re-sortable by document order, difficulty (the snippet's solve rate over every scored run,
    lowest first) or line count (longest first), and one model or snippet highlighted. Rows keep the
    selector's order (best paper score first). ``snippet_hrefs``: each column's link, in column order."""
    rows, cols = paper_row_labels(detail), paper_col_labels(detail)
    cells, models, snippets = _heatmap_data(detail, rows, cols, snippet_hrefs)
    params = [
        _select(
            "sort_by",
            "Sort snippets by ",
            ["document", "difficulty", "lines"],
            ["document order", "difficulty (hardest first)", "line count (longest first)"],
        ),
        _select("highlight_model", "Highlight model ", ["", *rows], ["(none)", *rows]),
        _select("highlight_snippet", "Highlight snippet ", ["", *cols], ["(none)", *cols]),
    ]
    return {
        **_spec(
            title=title,
            interactive="sort the snippets, highlight a model or a snippet.",
            params=params,
            values=cells,
        ),
        "transform": [
            {"lookup": "row", "from": {"data": {"values": models}, "key": "row", "fields": ["model"]}},
            {
                "lookup": "col",
                "from": {
                    "data": {"values": snippets},
                    "key": "col",
                    "fields": ["snippet", "lines", "solve_rate", "href"],
                },
            },
            {"calculate": _SNIPPET_RANK, "as": "snippet_rank"},
        ],
        "width": {"step": 24},
        "height": {"step": 20},
        "encoding": _heatmap_encoding(),
        "layer": _heatmap_layers(),
    }


def _heatmap_data(
    detail: PaperDetail, rows: Sequence[str], cols: Sequence[str], snippet_hrefs: Sequence[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The heatmap's cells (row and column indexes, pass rate) and the tables its lookups join in: each
    row's model label and each column's snippet label, lines, solve rate and link."""
    # The cells carry indexes and rates only; model and snippet fields join in by lookup, so the page
    # carries each URL and name once rather than once per cell (a paper has up to thousands of cells).
    cells = [
        {"row": i, "col": j, "rate": cell_pass_rate(m.verdicts.get(n.id, ""))}
        for i, m in enumerate(detail.matrix)
        for j, n in enumerate(detail.snippets)
    ]
    models = [{"row": i, "model": row} for i, row in enumerate(rows)]
    snippets = [
        {"col": j, "snippet": col, "lines": n.lines, "solve_rate": n.solve_rate, "href": snippet_hrefs[j]}
        for j, (n, col) in enumerate(zip(detail.snippets, cols, strict=True))
    ]
    return cells, models, snippets


def _heatmap_encoding() -> Spec:
    """Snippets across in the chosen order, models down in the selector's, the highlight as opacity, a
    tooltip with the cell's numbers and each cell linking to its snippet."""
    return {
        "x": {
            "field": "snippet",
            "type": "nominal",
            "sort": {"field": "snippet_rank", "op": "min"},
            "axis": {"title": None, "labelAngle": -45, "labelLimit": 220},
        },
        "y": {
            "field": "model",
            "type": "nominal",
            "sort": {"field": "row", "op": "min"},
            "axis": {"title": None, "labelLimit": 260},
        },
        "opacity": {"condition": {"test": _HIGHLIGHTED_CELL, "value": 1}, "value": 0.2},
        "tooltip": [
            {"field": "model", "title": "Model"},
            {"field": "snippet", "title": "Snippet"},
            {"field": "rate", "title": "Pass rate (%)", "format": ".0f"},
            {"field": "lines", "title": "Lines"},
            {"field": "solve_rate", "title": "Solve rate, every run (%)", "format": ".1f"},
        ],
        "href": {"field": "href"},
    }


def _heatmap_layers() -> list[Spec]:
    """Every cell first in the "no data" grey, then the tested ones in colour over it: a null rate would
    otherwise be dropped from the colour scale and leave a hole."""
    return [
        {"mark": {"type": "rect", "stroke": encoding.CELL_STROKE, "fill": encoding.MISSING}},
        {
            "transform": [{"filter": "datum.rate !== null"}],
            "mark": {"type": "rect", "stroke": encoding.CELL_STROKE},
            "encoding": {
                "color": {
                    "field": "rate",
                    "type": "quantitative",
                    "title": "Pass rate (%)",
                    "scale": {
                        "domain": list(encoding.RATE_STOPS),
                        "range": encoding.rate_colours(),
                        "interpolate": "rgb",
                    },
                }
            },
        },
    ]


# --- the comparison's papers ---------------------------------------------------------------------------

# The papers' order: by spread (largest first), by key, or by the chosen model's score (highest first);
# a paper without the number sorts last.
_PAPER_RANK = (
    "sort_papers === 'spread' ? (datum.spread === null ? 1 : -datum.spread)"
    " : sort_papers === 'paper' ? 0"
    " : (datum.paper_sort_score === null ? 1 : -datum.paper_sort_score)"
)


def compare_papers_spec(data: ModelComparison, *, title: str) -> Spec:
    """Per-paper Scaled Pass@1 of the compared models as grouped bars (one colour per model, in the
    comparison's order, as the SVG draws them), papers re-sortable by key, by spread (largest first) or by
    one model's score (highest first), and one model highlighted."""
    names = [d.model.name for d in data.models]
    colours = [sw.colour for sw in encoding.series_swatches(len(names))]
    values = [
        {
            "paper": p.paper_key,
            "paper_title": p.paper_title,
            "model": names[i],
            "model_index": i,
            "score": score,
            "spread": p.spread,
        }
        for p in data.papers
        for i, score in enumerate(p.scores)
    ]
    params = [
        _select(
            "sort_papers",
            "Sort papers by ",
            ["paper", "spread", *(f"model-{i}" for i in range(len(names)))],
            ["paper key", "spread (largest first)", *(f"score of {n}" for n in names)],
        ),
        _select("highlight", "Highlight model ", ["", *names], ["(none)", *names]),
    ]
    return {
        **_spec(title=title, interactive="sort the papers, highlight a model.", params=params, values=values),
        "transform": [
            # The chosen model's score on each paper, copied to every bar of the paper, orders the papers.
            {
                "calculate": "'model-' + datum.model_index === sort_papers ? datum.score : null",
                "as": "sort_score",
            },
            {
                "joinaggregate": [{"op": "max", "field": "sort_score", "as": "paper_sort_score"}],
                "groupby": ["paper"],
            },
            {"calculate": _PAPER_RANK, "as": "paper_rank"},
        ],
        "mark": {"type": "bar"},
        "width": 560,
        "height": {"step": 14},
        "encoding": _compare_encoding(names, colours),
    }


def _compare_encoding(names: list[str], colours: list[str]) -> Spec:
    """Papers down in the chosen order, one bar per model in the comparison's order and colours, scores
    across from 0 to 100, the highlighted model at full opacity and a tooltip with the spread."""
    return {
        "y": {
            "field": "paper",
            "type": "nominal",
            "sort": {"field": "paper_rank", "op": "min"},
            "axis": {"title": None, "labelLimit": 260},
        },
        "yOffset": {"field": "model", "type": "nominal", "sort": names},
        "x": {
            "field": "score",
            "type": "quantitative",
            "title": encoding.SCORE_TITLE,
            "scale": {"domain": [0, 100]},
        },
        "color": {
            "field": "model",
            "type": "nominal",
            "title": "Model",
            "scale": {"domain": names, "range": colours},
        },
        "opacity": _highlight_opacity("model", 0.25),
        "tooltip": [
            {"field": "paper", "title": "Paper"},
            {"field": "model", "title": "Model"},
            {"field": "score", "title": encoding.SCORE_TITLE, "format": encoding.SCORE_FORMAT},
            {"field": "spread", "title": "Spread (points)", "format": encoding.SCORE_FORMAT},
        ],
    }


# --- the board's scatters ------------------------------------------------------------------------------


def board_scatter_spec(
    rows: Sequence[Row],
    *,
    x: str,
    swatches: Mapping[str, encoding.Swatch],
    model_hrefs: Mapping[str, str],
    title: str,
) -> Spec | None:
    """Scaled Pass@1 of the board's ranked runs against the date the result was produced (``x="date"``,
    ``Row.finished_at``) or their cost (``x="cost"``, ``Row.cost_usd``), coloured by developer with the
    board chart's fixed ``swatches``, one shape per group (release, template, paper setting) when there
    are several, with a developer highlighted. Runs without a score or without the x value are left out;
    None when none is left. ``model_hrefs``: model key -> its page."""
    if x not in ("date", "cost"):
        raise ValueError(f"x must be 'date' or 'cost', got {x!r}")
    values = _scatter_values(rows, x=x, model_hrefs=model_hrefs)
    if not values:
        return None
    developers = sorted({v["developer"] for v in values}, key=str.casefold)
    colours = [
        (swatches[d] if d in swatches else encoding.group_swatches(developers)[d]).colour for d in developers
    ]
    params = [_select("highlight", "Highlight developer ", ["", *developers], ["(none)", *developers])]
    return {
        **_spec(
            title=title,
            interactive="highlight a developer; points link to model pages.",
            params=params,
            values=values,
        ),
        "mark": {"type": "point", "filled": True, "size": 80, "stroke": encoding.TEXT, "strokeWidth": 0.6},
        "width": 560,
        "height": 360,
        "encoding": _scatter_encoding(
            x, developers, colours, several_groups=len({v["group"] for v in values}) > 1
        ),
    }


def _scatter_values(rows: Sequence[Row], *, x: str, model_hrefs: Mapping[str, str]) -> list[dict[str, Any]]:
    """One point per ranked, scored row with a value for ``x``: its model, developer, group, score, date,
    cost and model page."""
    values = []
    for r in rows:
        if r.incomplete or r.scaled_pass_at_1 is None:
            continue
        if (x == "date" and r.finished_at is None) or (x == "cost" and r.cost_usd is None):
            continue
        values.append(
            {
                "model": r.model.name,
                "developer": r.model.developer or encoding.UNKNOWN_DEVELOPER,
                "group": f"{r.release_words}, {r.template}, {'with' if r.with_paper else 'without'} paper",
                "score": r.scaled_pass_at_1,
                "date": _iso(r.finished_at) if r.finished_at else None,
                "cost": r.cost_usd,
                "href": model_hrefs.get(r.model.key, ""),
            }
        )
    return values


def _scatter_encoding(x: str, developers: list[str], colours: list[str], *, several_groups: bool) -> Spec:
    """The date or the cost across, the score up, a colour per developer (the highlighted one at full
    opacity), a tooltip, each point linking to its model and, for ``several_groups``, a shape per group."""
    date = x == "date"
    channels: Spec = {
        "x": {
            "field": "date",
            "type": "temporal",
            "title": "Date of the result",
            "scale": {"nice": "day"},
            "axis": {"format": encoding.DATE_FORMAT, "labelOverlap": True},
        }
        if date
        else {"field": "cost", "type": "quantitative", "title": "Cost (USD)"},
        "y": {"field": "score", "type": "quantitative", "title": encoding.SCORE_TITLE},
        "color": {
            "field": "developer",
            "type": "nominal",
            "title": "Developer",
            "scale": {"domain": developers, "range": colours},
        },
        "opacity": _highlight_opacity("developer", 0.2),
        "tooltip": [
            {"field": "model", "title": "Model"},
            {"field": "developer", "title": "Developer"},
            {"field": "score", "title": encoding.SCORE_TITLE, "format": encoding.SCORE_FORMAT},
            {"field": "date", "type": "temporal", "title": "Date", "format": encoding.DATE_FORMAT}
            if date
            else {"field": "cost", "title": "Cost (USD)", "format": ".4f"},
            {"field": "group", "title": "Release, template, paper"},
        ],
        "href": {"field": "href"},
    }
    if several_groups:
        channels["shape"] = {"field": "group", "type": "nominal", "title": "Release, template, paper"}
    return channels


def _iso(value: _dt.datetime | _dt.date) -> str:
    """A date as Vega parses it unambiguously (ISO 8601; a datetime keeps its offset)."""
    return value.isoformat()
