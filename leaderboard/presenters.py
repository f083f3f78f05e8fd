"""Chart assembly of the leaderboard's pages: the rows a selector returns, turned into the server-drawn
charts (``leaderboard.charts``) and interactive specs (``leaderboard.vega``) a page shows, and the
headers of its tables of snippet statistics."""

from __future__ import annotations

from collections.abc import Sequence

from django.http import QueryDict
from django.urls import reverse

from leaderboard import vega
from leaderboard.charts import bars, dates, encoding, heatmap, scatter, svg
from leaderboard.links import (
    model_url,
    snippet_url,
)
from leaderboard.selectors.analyses import (
    AblationPair,
    SnippetAblation,
)
from leaderboard.selectors.board import Row, developer_names
from leaderboard.selectors.models import (
    ModelDetail,
)
from leaderboard.selectors.papers import PaperDetail
from researchcodebench import memorisation


def developer_swatches() -> dict[str, encoding.Swatch]:
    """Each developer's colour, fixed over every developer that exists (not those a filter leaves)."""
    return encoding.group_swatches([*developer_names(), encoding.UNKNOWN_DEVELOPER])


def board_chart(rows: list[Row], *, title: str, chart_id: str = "board-chart") -> str:
    """The paper's main figure: Scaled Pass@1 per model, colour by developer, open weights outlined."""
    marks = [
        bars.Bar(
            label=r.model.name,
            value=r.scaled_pass_at_1,
            group=r.model.developer or encoding.UNKNOWN_DEVELOPER,
            outlined=bool(r.model.open_weights),
            err=r.score.ci95,
            href=model_url(r.model.key),
            note="" if r.coverage_complete else f"(coverage {r.score.coverage:.0%})",
        )
        for r in sorted(rows, key=lambda r: (r.scaled_pass_at_1 is None, -(r.scaled_pass_at_1 or 0)))
    ]
    return bars.bar_chart(
        marks,
        chart_id=chart_id,
        title=title,
        x_label=encoding.SCORE_TITLE,
        desc="Line-weighted pass rate per model; bars coloured by developer.",
        error_label="95% bootstrap interval" if any(b.err for b in marks) else "",
        swatches=developer_swatches(),
    )


def board_scatter_specs(rows: list[Row]) -> list[dict]:
    """The board's interactive views (Vega-Lite): score against the date of the result and, where runs
    have a cost, against the cost; each as ``{"id", "spec"}`` (the id names the spec's json_script)."""
    swatches = developer_swatches()
    hrefs = {r.model.key: model_url(r.model.key) for r in rows}
    out = []
    for x, title in (("date", "Scaled Pass@1 by date of the result"), ("cost", "Scaled Pass@1 by cost")):
        spec = vega.board_scatter_spec(rows, x=x, swatches=swatches, model_hrefs=hrefs, title=title)
        if spec is not None:
            out.append({"id": f"board-scatter-{x}-spec", "spec": spec})
    return out


def model_charts(detail: ModelDetail) -> tuple[str, str, str]:
    """The model page's per-paper heatmap, failures by category, and before/after-cutoff bars ("" without
    both sides)."""
    name = detail.model.name
    papers = [p.paper_key for p in detail.per_paper]
    heat = heatmap.heatmap(
        [name],
        papers,
        [[p.scaled_pass_at_1 for p in detail.per_paper]],
        chart_id="model-heatmap",
        title=f"{name}: Scaled Pass@1 per paper",
        value_label=encoding.SCORE_TITLE,
        col_hrefs=[reverse("leaderboard:paper", args=[k]) for k in papers],
    )
    error_chart = bars.bar_chart(
        [bars.Bar(e.label, float(e.count), e.label) for e in detail.errors],
        chart_id="model-errors",
        title=f"{name}: failures by category",
        x_label="Failed completions",
        legend=False,
        digits=0,
        swatches=encoding.category_swatches(),
    )
    cutoff_chart = ""
    if detail.before_cutoff is not None and detail.after_cutoff is not None:
        cutoff_chart = bars.grouped_bar_chart(
            [name],
            [
                bars.Series("On or before its cutoff", [detail.before_cutoff.scaled_pass_at_1]),
                bars.Series("After its cutoff", [detail.after_cutoff.scaled_pass_at_1]),
            ],
            chart_id="model-cutoff",
            title="Scaled Pass@1 on papers before vs after the knowledge cutoff",
            x_label=encoding.SCORE_TITLE,
        )
    return heat, error_chart, cutoff_chart


def model_dated_chart(detail: ModelDetail) -> str:
    """The model's score on each paper at the paper's first-commit date, either side of its cutoff, with
    the score over each side; "" when the cutoff is unknown."""
    cutoff = detail.model.knowledge_cutoff
    if cutoff is None or detail.before_cutoff is None or detail.after_cutoff is None:
        return ""
    chart = dates.dated_scores(
        [
            dates.DatedScore(
                p.paper_key,
                p.first_commit_date,
                p.scaled_pass_at_1,
                reverse("leaderboard:paper", args=[p.paper_key]),
            )
            for p in detail.per_paper
        ],
        chart_id="model-cutoff-dates",
        title=f"{detail.model.name}: Scaled Pass@1 per paper by first-commit date",
        cutoff=cutoff,
        before=detail.before_cutoff.scaled_pass_at_1,
        after=detail.after_cutoff.scaled_pass_at_1,
    )
    return svg.skippable(chart)


STAT_COLUMNS = (
    ("name", "Snippet", False, False),
    ("lines", "Lines (weight)", True, True),
    ("models", "Models tested", True, True),
    ("solve_rate", "Solve rate", True, False),
    ("discrimination", "Discrimination", True, True),
    ("status", "Status", False, False),
)


def stat_headers(params: QueryDict, param: str, sort: str) -> list[dict]:
    """The headers of a table of snippet statistics: each with the URL that sorts by it (toggling the
    direction when it is the current sort; the other parameters kept) and its ``aria-sort``."""
    out = []
    for key, label, numeric, descending_first in STAT_COLUMNS:
        if sort.lstrip("-") == key:
            target = key if sort.startswith("-") else f"-{key}"
            aria = "descending" if sort.startswith("-") else "ascending"
        else:
            target, aria = (f"-{key}" if descending_first else key), ""
        query = params.copy()
        query[param] = target
        out.append({"label": label, "num": numeric, "aria": aria, "url": f"?{query.urlencode()}"})
    return out


def sort_label(sort: str) -> str:
    """How a table of snippet statistics is sorted, in words (its caption)."""
    if sort.lstrip("-") == "order":
        return "in document order" + (" (reversed)" if sort.startswith("-") else "")
    label = next(label for key, label, *_rest in STAT_COLUMNS if key == sort.lstrip("-"))
    return f"sorted by {label.lower()} ({'descending' if sort.startswith('-') else 'ascending'})"


def paper_heatmap(detail: PaperDetail) -> str:
    """The paper's model x snippet heatmap: per cell the share of the model's completions that passed."""
    values = [[vega.cell_pass_rate(m.verdicts.get(n.id, "")) for n in detail.snippets] for m in detail.matrix]
    return heatmap.heatmap(
        vega.paper_row_labels(detail),
        vega.paper_col_labels(detail),
        values,
        chart_id="paper-heatmap",
        title=f"{detail.key}: pass rate per model and snippet",
        value_label="Pass rate (%)",
        row_hrefs=[model_url(m.model.key) for m in detail.matrix],
        col_hrefs=[snippet_url(detail.key, n.name, n.id) for n in detail.snippets],
    )


def paper_heatmap_spec(detail: PaperDetail) -> dict:
    """The heatmap's interactive view (Vega-Lite): the same cells, re-sortable and highlightable."""
    return vega.paper_heatmap_spec(
        detail,
        snippet_hrefs=[snippet_url(detail.key, n.name, n.id) for n in detail.snippets],
        title=f"{detail.key}: pass rate per model and snippet",
    )


def verbatim_rule() -> dict[str, int]:
    """The near-verbatim thresholds as the pages word them (whole percentages)."""
    return {
        "run": round(100 * memorisation.NEAR_VERBATIM_RUN),
        "ngram": round(100 * memorisation.NEAR_VERBATIM_NGRAM),
        "min_tokens": memorisation.MIN_REFERENCE_TOKENS,
    }


def ablation_scatter(pairs: list[AblationPair]) -> str:
    """Each model's score with the paper against its score without, coloured by developer."""
    return scatter.scatter(
        [
            scatter.Point(
                p.model.name,
                p.without_paper.scaled_pass_at_1,
                p.with_paper.scaled_pass_at_1,
                p.model.developer or encoding.UNKNOWN_DEVELOPER,
                model_url(p.model.key),
            )
            for p in pairs
        ],
        chart_id="ablation-scatter",
        title="Scaled Pass@1 with vs without the paper",
        x_label="Without paper (%)",
        y_label="With paper (%)",
        swatches=developer_swatches(),
    )


def ablation_deltas(pairs: list[AblationPair]) -> str:
    """What the paper adds to each model's score (with minus without), open weights outlined."""
    return bars.bar_chart(
        [
            bars.Bar(
                p.model.name,
                p.delta,
                p.model.developer or encoding.UNKNOWN_DEVELOPER,
                bool(p.model.open_weights),
                href=model_url(p.model.key),
            )
            for p in pairs
        ],
        chart_id="ablation-delta",
        title="Gain from the paper (with minus without, points)",
        x_label="Scaled Pass@1 difference (points)",
        swatches=developer_swatches(),
    )


def ablation_snippet_chart(snippets: Sequence[SnippetAblation]) -> str:
    """The solve rate of each of ``snippets`` with and without the paper, side by side."""
    return bars.grouped_bar_chart(
        [f"{s.paper_key}: {s.name}" for s in snippets],
        [
            bars.Series("With paper", [s.with_paper_solve_rate for s in snippets]),
            bars.Series("Without paper", [s.without_paper_solve_rate for s in snippets]),
        ],
        chart_id="ablation-snippets",
        title="Solve rate per snippet with vs without the paper (largest gain first)",
        x_label="Solve rate (%)",
        max_value=100,
        hrefs=[snippet_url(s.paper_key, s.name, s.snippet_id) for s in snippets],
    )
