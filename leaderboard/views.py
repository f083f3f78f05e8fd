"""Leaderboard pages: thin views that call one selector, draw its charts and render.

The URL holds the whole state of a page (filters, sort, chosen run), so every view can be shared and every
control works as a plain link or GET form; with htmx (``request.htmx``) the same view returns only the
``results`` partial of its template, and the client pushes the URL.

A filterable page is ``cached_page`` plus a function from the filter form to the template's context: the
helper parses the filters (``forms.BoardFilterForm``), serves the body from the one cache layer
(``caching.serve_page``: keyed by the board version, ETag, a shared body in a per-visitor shell) and picks
the htmx partial. Adding a page means a selector, a view of a few lines and a template. The largest parts
(a model's verdict grid, a paper's model x snippet heatmap) are loaded lazily by htmx
(``hx-trigger="revealed"``) once they pass ``LAZY_CELLS`` cells; their placeholder links to the full page.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import replace

from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_safe

from contributions import selectors as contribution_selectors
from contributions.models import Paper, Snippet
from evaluation.models import EvaluationRun, LanguageModel
from leaderboard import caching, charts, code_diff, page_selectors, selectors, vega
from leaderboard.forms import CONTAMINATION_LABELS, FILTER_PARAMS, BoardFilterForm
from researchcodebench import problems

#: a verdict grid or heatmap with more cells than this is loaded lazily (htmx, on scroll) instead of inline
LAZY_CELLS = 600


def cached_page(
    request: HttpRequest,
    *,
    page: str,
    template: str,
    title: str,
    build: Callable[[BoardFilterForm | None, QueryDict], dict],
    args: tuple = (),
    params: Iterable[str] = FILTER_PARAMS,
    filtered: bool = True,
    partial: str = "results",
    fragment: bool | None = None,
) -> HttpResponse:
    """A cached, htmx-aware page: ``build(form, query)`` returns the template's context (``form``: the
    filters parsed from the query when ``filtered``, else None; ``query``: the request's ``params`` only,
    sorted). ``page`` and ``args`` name the page in the cache; ``build`` may set ``page_title`` (else
    ``title``) and may raise ``Http404``. An htmx request (or ``fragment``, when given) gets ``partial`` of
    the template, anyone else the whole page."""
    fragment = caching.is_htmx(request) if fragment is None else fragment

    def body(query: QueryDict) -> caching.Body:
        form = BoardFilterForm(query) if filtered else None
        context = {"form": form, **build(form, query)}
        return caching.render_body(
            template, context, title=context.get("page_title", title), partial=partial if fragment else ""
        )

    return caching.serve_page(request, page=page, args=args, keys=params, fragment=fragment, build=body)


def _with(query: QueryDict, **extra: str) -> str:
    """``?query`` with ``extra`` set (a link to the same page with one more parameter)."""
    q = query.copy()
    for k, v in extra.items():
        q[k] = v
    return f"?{q.urlencode()}"


def _model_url(key: str) -> str:
    return reverse("leaderboard:model", args=[key])


def snippet_url(paper_key: str, name: str, snippet_id: int | None = None) -> str:
    """The snippet page URL; ``snippet_id`` pins the exact task version."""
    url = reverse("leaderboard:snippet", args=[paper_key, name])
    return f"{url}?{urlencode({'id': snippet_id})}" if snippet_id is not None else url


def completion_url(paper_key: str, name: str, snippet_id: int, run_id: int, idx: int) -> str:
    """The snippet page at one run's completion: ``run`` opens it, the fragment scrolls to it."""
    return (
        f"{snippet_url(paper_key, name, snippet_id)}&{urlencode({'run': run_id})}#completion-{run_id}-{idx}"
    )


#: the most rows one results export asks for (the API pages its results; a CSV link wants them all)
RESULTS_EXPORT_LIMIT = 100_000


def run_results_csv_url(run_id: int) -> str:
    """The run's completions and verdicts as CSV (every row: the link sets ``limit``)."""
    url = reverse("api-run-results", args=[run_id])
    return f"{url}?{urlencode({'format': 'csv', 'limit': RESULTS_EXPORT_LIMIT})}"


#: chart/table data exports of the read API (leaderboard/api_urls.py); they take the page's filter parameters
EXPORTS = {
    "leaderboard": "api-leaderboard",
    "errors": "api-leaderboard-errors",
    "papers": "api-leaderboard-papers",
    "snippets": "api-leaderboard-snippets",
}


def _csv_url(name: str, params: QueryDict | None = None, fmt: str = "csv", **extra: str) -> str | None:
    """URL of the data export behind a chart, with the page's filters; None when the API lacks it."""
    try:
        url = reverse(EXPORTS[name])
    except NoReverseMatch:
        return None
    query = QueryDict(mutable=True)
    for key, value in (params or QueryDict()).items():
        # Empty form fields ("Any") mean no restriction; the API rejects empty values.
        if value and key != "sort":
            query[key] = value
    query["format"] = fmt
    for k, v in extra.items():
        query[k] = v
    return f"{url}?{query.urlencode()}"


# --- the board ---------------------------------------------------------------------------------------


BOARD_COLUMNS = (
    ("name", "Model", False),
    ("developer", "Developer", False),
    ("", "Weights", False),
    ("cutoff", "Cutoff", False),
    ("scaled_pass_at_1", "Scaled Pass@1", True),
    ("pass_at_1", "Pass@1", True),
    ("coverage", "Coverage", True),
    ("cost", "Cost", True),
    ("", "Verification", False),
    ("date", "Date", False),
)
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
}


def _columns(form: BoardFilterForm, params: QueryDict) -> list[dict]:
    """The board's sortable headers: label, the URL that sorts by the column (toggling direction when it
    is the current sort) and its ``aria-sort`` state."""
    current = form.filters.sort
    out = []
    for key, label, numeric in BOARD_COLUMNS:
        if not key:
            out.append({"label": label, "num": numeric, "url": "", "aria": ""})
            continue
        descending_first = key in ("scaled_pass_at_1", "pass_at_1", "coverage", "date", "cutoff")
        if current.lstrip("-") == key:
            target = key if current.startswith("-") else f"-{key}"
            state = "descending" if current.startswith("-") else "ascending"
        else:
            target = f"-{key}" if descending_first else key
            state = ""
        query = params.copy()
        query["sort"] = target
        out.append({"label": label, "num": numeric, "url": f"?{query.urlencode()}", "aria": state})
    return out


def developer_swatches() -> dict[str, charts.Swatch]:
    """Each developer's colour, fixed over every developer that exists (not those a filter leaves)."""
    return charts.group_swatches([*selectors.developer_names(), "Unknown"])


def board_chart(rows: list[selectors.Row], *, title: str, chart_id: str = "board-chart") -> str:
    """The paper's main figure: Scaled Pass@1 per model, colour by developer, open weights outlined."""
    bars = [
        charts.Bar(
            label=r.model.name,
            value=r.scaled_pass_at_1,
            group=r.model.developer or "Unknown",
            outlined=bool(r.model.open_weights),
            err=r.score.ci95,
            href=_model_url(r.model.key),
            note="" if r.coverage_complete else f"(coverage {r.score.coverage:.0%})",
        )
        for r in sorted(rows, key=lambda r: (r.scaled_pass_at_1 is None, -(r.scaled_pass_at_1 or 0)))
    ]
    return charts.bar_chart(
        bars,
        chart_id=chart_id,
        title=title,
        x_label="Scaled Pass@1 (%)",
        desc="Line-weighted pass rate per model; bars coloured by developer.",
        error_label="95% bootstrap interval" if any(b.err for b in bars) else "",
        swatches=developer_swatches(),
    )


@require_safe
def board(request: HttpRequest) -> HttpResponse:
    return cached_page(
        request, page="board", template="leaderboard/board.html", title="Leaderboard", build=_board_context
    )


def _board_context(form: BoardFilterForm, params: QueryDict) -> dict:
    rows = selectors.leaderboard_rows(filters=form.filters)
    mode = form.filters.contamination
    title = "Scaled Pass@1 per model" + ("" if mode == "none" else f" ({CONTAMINATION_LABELS[mode].lower()})")
    groups = _board_groups(rows, title=title)
    return {
        "rows": rows,
        "groups": groups,
        "incomplete": [r for r in rows if r.incomplete],
        "chart": groups[0]["chart"] if groups else "",
        # The caption names error bars only when the chart draws them (filtered selections have none).
        "error_bars": any(r.score.ci95 for r in rows if r.scaled_pass_at_1 is not None),
        "columns": _columns(form, params),
        "sort_label": SORT_LABELS.get(form.filters.sort.lstrip("-"), form.filters.sort.lstrip("-"))
        + (" (descending)" if form.filters.sort.startswith("-") else " (ascending)"),
        "csv_url": _csv_url("leaderboard", params),
        "json_url": _csv_url("leaderboard", params, fmt="json"),
        "selection": rows[0].selection if rows and rows[0].selection is not None else None,
        "scatter_specs": _board_scatter_specs(rows),
    }


def _board_scatter_specs(rows: list[selectors.Row]) -> list[dict]:
    """The board's interactive views (Vega-Lite): score against the date of the result and, where runs
    have a cost, against the cost; each as ``{"id", "spec"}`` (the id names the spec's json_script)."""
    swatches = developer_swatches()
    hrefs = {r.model.key: _model_url(r.model.key) for r in rows}
    out = []
    for x, title in (("date", "Scaled Pass@1 by date of the result"), ("cost", "Scaled Pass@1 by cost")):
        spec = vega.board_scatter_spec(rows, x=x, swatches=swatches, model_hrefs=hrefs, title=title)
        if spec is not None:
            out.append({"id": f"board-scatter-{x}-spec", "spec": spec})
    return out


def _board_groups(rows: list[selectors.Row], *, title: str) -> list[dict]:
    """The board's rows group by group (release, template, paper setting; the selector's order): each
    group's label, its ranked rows (``ranked``, with a chart) and its incomplete rows (``apart``), and per
    row the neighbours in rank order it is statistically tied with (``ties``: run id -> names)."""
    by_group: dict[tuple, list[selectors.Row]] = {}
    for r in rows:
        by_group.setdefault(r.group, []).append(r)
    out = []
    for i, ((release, template, with_paper), members) in enumerate(by_group.items()):
        ranked = [r for r in members if not r.incomplete]
        setting = "with paper" if with_paper else "without paper"
        label = f"Release {release or '(none)'}, template {template}, {setting}"
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
                "ranked": [{"r": r, "ties": ties.get(r.run_id, [])} for r in ranked],
                "apart": [r for r in members if r.incomplete],
                "chart": charts.skippable(chart) if ranked else "",
            }
        )
    return out


# --- model page --------------------------------------------------------------------------------------


@require_safe
def model_page(request: HttpRequest, key: str) -> HttpResponse:
    """The model page; its verdict grid past ``LAZY_CELLS`` cells comes from ``?grid=all`` (the grid
    alone for htmx, the whole page with the grid inline otherwise)."""
    return cached_page(
        request, page="model", args=(key,), template="leaderboard/model_detail.html", title=key,
        build=lambda _form, query: _model_context(key, query), params=("run", "grid"), filtered=False,
        partial="grid", fragment=caching.is_htmx(request) and request.GET.get("grid") == "all",
    )  # fmt: skip


def _model_context(key: str, params: QueryDict) -> dict:
    run_id = params.get("run")
    try:
        detail = selectors.model_detail(key=key, run_id=int(run_id) if run_id and run_id.isdigit() else None)
    except (LanguageModel.DoesNotExist, EvaluationRun.DoesNotExist) as exc:
        raise Http404(str(exc)) from None
    name = detail.model.name
    grid_inline = params.get("grid") == "all" or len(detail.verdict_grid) <= LAZY_CELLS
    papers = [p.paper_key for p in detail.per_paper]
    heat = charts.heatmap(
        [name],
        papers,
        [[p.scaled_pass_at_1 for p in detail.per_paper]],
        chart_id="model-heatmap",
        title=f"{name}: Scaled Pass@1 per paper",
        value_label="Scaled Pass@1 (%)",
        col_hrefs=[reverse("leaderboard:paper", args=[k]) for k in papers],
    )
    error_chart = charts.bar_chart(
        [charts.Bar(e.label, float(e.count), e.label) for e in detail.errors],
        chart_id="model-errors",
        title=f"{name}: failures by category",
        x_label="Failed completions",
        legend=False,
        digits=0,
        swatches=charts.category_swatches(),
    )
    cutoff_chart = ""
    if detail.before_cutoff is not None and detail.after_cutoff is not None:
        cutoff_chart = charts.grouped_bar_chart(
            [name],
            [
                charts.Series("On or before its cutoff", [detail.before_cutoff.scaled_pass_at_1]),
                charts.Series("After its cutoff", [detail.after_cutoff.scaled_pass_at_1]),
            ],
            chart_id="model-cutoff",
            title="Scaled Pass@1 on papers before vs after the knowledge cutoff",
            x_label="Scaled Pass@1 (%)",
        )
    run_id = detail.run.run_id if detail.run else None
    return {
        "page_title": name,
        "d": detail,
        "heatmap": charts.skippable(heat),
        "error_chart": charts.skippable(error_chart),
        "cutoff_chart": charts.skippable(cutoff_chart) if cutoff_chart else "",
        "grid": _grid(detail) if grid_inline else {},
        "grid_url": "" if grid_inline else _with(params, grid="all"),
        "failed": [
            {"f": f, "url": completion_url(f.paper_key, f.name, f.snippet_id, f.run_id, f.completion_idx)}
            for f in selectors.failed_snippets(run_id=run_id, grid=detail.verdict_grid)
        ]
        if run_id
        else [],
        "runs_csv_url": f"{reverse('api-runs')}?{urlencode({'model': detail.model.key, 'format': 'csv'})}",
        "results_csv_url": run_results_csv_url(run_id) if run_id else "",
        "compare_url": f"{reverse('leaderboard:compare')}?{urlencode({'models': detail.model.key})}",
        "csv_url": _csv_url("papers", QueryDict()),
        "modes": [(m, CONTAMINATION_LABELS[m], detail.scores.get(m)) for m in CONTAMINATION_LABELS],
    }


def _grid(detail: selectors.ModelDetail) -> dict[str, list[dict]]:
    """The verdict grid's cells by paper (document order): verdict, snippet page URL and state."""
    grid: dict[str, list[dict]] = defaultdict(list)
    for v in detail.verdict_grid:
        grid[v.paper_key].append(
            {
                "v": v,
                "url": snippet_url(v.paper_key, v.name, v.snippet_id),
                "state": selectors.verdict_state(v.verdicts),
            }
        )
    return dict(grid)


# --- paper page --------------------------------------------------------------------------------------


def _tree(paper_key: str, nodes: tuple[selectors.SnippetNode, ...]) -> list[dict]:
    """Snippet nodes -> nested dicts (node, page URL, children under their parent), document order kept."""
    items = {n.id: {"n": n, "url": snippet_url(paper_key, n.name, n.id), "children": []} for n in nodes}
    roots = []
    for n in nodes:
        parent = items.get(n.parent_id) if n.parent_id else None
        (parent["children"] if parent else roots).append(items[n.id])
    return roots


@require_safe
def paper_page(request: HttpRequest, key: str) -> HttpResponse:
    """The paper page; its heatmap past ``LAZY_CELLS`` cells comes from ``?heatmap=all`` (the heatmap
    alone for htmx, the whole page with it inline otherwise)."""
    return cached_page(
        request, page="paper", args=(key,), template="leaderboard/paper_detail.html", title=key,
        build=lambda form, query: _paper_context(key, form, query), params=(*FILTER_PARAMS, "heatmap"),
        partial="heatmap" if request.GET.get("heatmap") == "all" else "results",
    )  # fmt: skip


def _paper_context(key: str, form: BoardFilterForm, params: QueryDict) -> dict:
    try:
        detail = selectors.paper_detail(key=key, filters=replace(form.filters, contamination="none"))
    except Paper.DoesNotExist:
        raise Http404(f"no paper {key!r}") from None
    lazy = len(detail.matrix) * len(detail.snippets) > LAZY_CELLS and params.get("heatmap") != "all"
    return {
        "page_title": f"{detail.key}: {detail.title}",
        "d": detail,
        "heatmap": "" if lazy else charts.skippable(_paper_heatmap(detail)),
        "heatmap_spec": None if lazy or not detail.matrix else _paper_heatmap_spec(detail),
        "heatmap_url": _with(params, heatmap="all") if lazy else "",
        "contributors": contribution_selectors.paper_contributors(paper_key=detail.key),
        **_paper_tree_context(detail),
    }


def _paper_tree_context(detail: selectors.PaperDetail) -> dict:
    return {
        "tree": _tree(detail.key, detail.snippets),
        "csv_url": _csv_url("snippets", QueryDict(), paper=detail.key),
        # Every snippet's lines, as the scores weigh them and /papers/ counts them (one source of counts).
        "total_lines": sum(n.lines for n in detail.snippets),
    }


def _paper_heatmap(detail: selectors.PaperDetail) -> str:
    """The paper's model x snippet heatmap: per cell the share of the model's completions that passed."""
    values = [[vega.cell_pass_rate(m.verdicts.get(n.id, "")) for n in detail.snippets] for m in detail.matrix]
    return charts.heatmap(
        vega.paper_row_labels(detail),
        vega.paper_col_labels(detail),
        values,
        chart_id="paper-heatmap",
        title=f"{detail.key}: pass rate per model and snippet",
        value_label="Pass rate (%)",
        row_hrefs=[_model_url(m.model.key) for m in detail.matrix],
        col_hrefs=[snippet_url(detail.key, n.name, n.id) for n in detail.snippets],
    )


def _paper_heatmap_spec(detail: selectors.PaperDetail) -> dict:
    """The heatmap's interactive view (Vega-Lite): the same cells, re-sortable and highlightable."""
    return vega.paper_heatmap_spec(
        detail,
        snippet_hrefs=[snippet_url(detail.key, n.name, n.id) for n in detail.snippets],
        title=f"{detail.key}: pass rate per model and snippet",
    )


# --- snippet page ------------------------------------------------------------------------------------


def _problem_params(request: HttpRequest, attempts: tuple[selectors.Attempt, ...]) -> tuple[str, bool]:
    template = request.GET.get("template", "")
    paper = request.GET.get("paper", "")
    if template not in problems.TEMPLATES:
        template = attempts[0].template if attempts and attempts[0].template in problems.TEMPLATES else ""
        template = template or problems.DEFAULT_TEMPLATE
    with_paper = (
        paper != "without" if paper in ("with", "without") else (attempts[0].with_paper if attempts else True)
    )
    return template, with_paper


def _snippet_detail(key: str, name: str, request: HttpRequest) -> selectors.SnippetDetail:
    raw_id = request.GET.get("id", "")
    try:
        snippet_id = page_selectors.snippet_lookup(
            paper_key=key, name=name, snippet_id=int(raw_id) if raw_id.isdigit() else None
        )
        return selectors.snippet_detail(snippet_id=snippet_id)
    except Snippet.DoesNotExist as exc:
        raise Http404(str(exc)) from None


@require_safe
def snippet_page(request: HttpRequest, key: str, name: str) -> HttpResponse:
    detail = _snippet_detail(key, name, request)
    template, with_paper = _problem_params(request, detail.attempts)
    problem = page_selectors.snippet_problem(
        task_version_id=detail.task_version_id, name=detail.name, template=template, with_paper=with_paper
    )
    attempts = [
        {
            "a": a,
            "diff": code_diff.code_diff(detail.reference_code, a.code)
            if detail.reference_code and a.code
            else None,
            "code_lines": code_diff.highlight_lines(a.code) if a.code and not detail.reference_code else None,
            # ``?run=`` (a link to one model's completion) opens that run's completions
            "target": request.GET.get("run") == str(a.run_id),
        }
        for a in sorted(
            detail.attempts, key=lambda a: (a.passed is not True, a.model.name.lower(), a.completion_idx)
        )
    ]
    base = snippet_url(detail.paper_key, detail.name, detail.id)
    context = {
        "d": detail,
        "problem": problem,
        "attempts": attempts,
        "reference_lines": code_diff.highlight_lines(detail.reference_code) if detail.reference_code else [],
        "pygments_css": code_diff.stylesheet(),
        "prompt_url": reverse("leaderboard:snippet_prompt", args=[detail.paper_key, detail.name])
        + "?"
        + urlencode({"id": detail.id, "template": template, "paper": "with" if with_paper else "without"}),
        "problem_links": [
            (
                t,
                p,
                f"{base}&{urlencode({'template': t, 'paper': p})}",
                t == template and (p == "with") == with_paper,
            )
            for t in problems.TEMPLATES
            for p in ("with", "without")
        ],
        "paper_url": reverse("leaderboard:paper", args=[detail.paper_key]),
    }
    return render(request, "leaderboard/snippet_detail.html", context)


@require_safe
def snippet_prompt(request: HttpRequest, key: str, name: str) -> HttpResponse:
    """The full prompt of a snippet as plain text (the page shows the code; the paper text is long)."""
    detail = _snippet_detail(key, name, request)
    template, with_paper = _problem_params(request, detail.attempts)
    problem = page_selectors.snippet_problem(
        task_version_id=detail.task_version_id, name=detail.name, template=template, with_paper=with_paper
    )
    if not problem.available:
        return HttpResponse(problem.reason, content_type="text/plain; charset=utf-8", status=404)
    return HttpResponse(problem.prompt, content_type="text/plain; charset=utf-8")


# --- errors, contamination, ablation -----------------------------------------------------------------


@require_safe
def errors_page(request: HttpRequest) -> HttpResponse:
    return cached_page(
        request,
        page="errors",
        template="leaderboard/errors.html",
        title="Error categories",
        build=_errors_context,
    )


def _errors_context(form: BoardFilterForm, params: QueryDict) -> dict:
    data = selectors.error_breakdown(filters=form.filters)
    share_chart = charts.bar_chart(
        [charts.Bar(c.label, c.share, c.label, note=f"({c.count})") for c in data.categories],
        chart_id="error-shares",
        title="Share of each category across all model failures",
        x_label="Share of failed completions (%)",
        unit="%",
        max_value=100,
        legend=False,
        digits=1,
        swatches=charts.category_swatches(),
    )
    categories = [c.category for c in data.categories]
    with_failures = [m for m in data.per_model if m.total]
    per_model_chart = charts.stacked_bar_chart(
        [m.model.name for m in with_failures],
        [
            charts.Series(data.labels.get(c, c), [m.counts.get(c, 0) for m in with_failures])
            for c in categories
        ],
        chart_id="error-per-model",
        title="Failures per model by category",
        x_label="Failed completions",
        row_hrefs=[_model_url(m.model.key) for m in with_failures],
        swatches=charts.category_swatches(),
    )
    infra_total = sum(c.count for c in data.infrastructure)
    model_rows = [
        {
            "model": m.model,
            "cells": [m.counts.get(c, 0) for c in categories],
            "total": m.total,
            "infra": sum(m.infrastructure.values()),
        }
        for m in data.per_model
    ]
    return {
        "model_rows": model_rows,
        "data": data,
        "categories": categories,
        "share_chart": charts.skippable(share_chart),
        "per_model_chart": charts.skippable(per_model_chart),
        "infra_total": infra_total,
        "model_total": sum(c.count for c in data.categories),
        "csv_url": _csv_url("errors", params),
    }


@require_safe
def contamination_page(request: HttpRequest) -> HttpResponse:
    return cached_page(
        request,
        page="contamination",
        template="leaderboard/contamination.html",
        title="Contamination",
        build=_contamination_context,
    )


def _contamination_context(form: BoardFilterForm, params: QueryDict) -> dict:
    data = selectors.contamination_overview(filters=form.filters)
    items = [
        charts.TimelineItem(m.model.name, m.model.knowledge_cutoff, "model", _model_url(m.model.key))
        for m in sorted(
            data.models,
            key=lambda m: (m.model.knowledge_cutoff is None, m.model.knowledge_cutoff or 0, m.model.name),
        )
    ]
    items += [
        charts.TimelineItem(p.key, p.first_commit_date, "paper", reverse("leaderboard:paper", args=[p.key]))
        for p in data.papers
    ]
    markers = []
    if data.global_cutoff:
        markers.append(("Original global cutoff", data.global_cutoff))
    if data.global_cutoff_fixed and data.global_cutoff_fixed != data.global_cutoff:
        markers.append(("Latest cutoff as a date", data.global_cutoff_fixed))
    timeline = charts.timeline(
        items,
        chart_id="contamination-timeline",
        title="Model knowledge cutoffs vs paper first-commit dates",
        markers=markers,
    )
    dated = [m for m in data.models if m.before is not None]
    before_after = charts.grouped_bar_chart(
        [m.model.name for m in dated],
        [
            charts.Series("Papers on or before its cutoff", [m.before.scaled_pass_at_1 for m in dated]),
            charts.Series("Papers after its cutoff", [m.after.scaled_pass_at_1 for m in dated]),
        ],
        chart_id="contamination-before-after",
        title="Scaled Pass@1 before vs after each model's cutoff",
        x_label="Scaled Pass@1 (%)",
        hrefs=[_model_url(m.model.key) for m in dated],
    )
    return {
        "data": data,
        "timeline": charts.skippable(timeline),
        "before_after": charts.skippable(before_after),
        "kept": sum(1 for p in data.papers if p.kept_by_global_rule),
        "csv_url": _csv_url("papers", params),
    }


@require_safe
def ablation_page(request: HttpRequest) -> HttpResponse:
    return cached_page(
        request,
        page="ablation",
        template="leaderboard/ablation.html",
        title="With vs without the paper",
        build=_ablation_context,
    )


def _ablation_context(form: BoardFilterForm, params: QueryDict) -> dict:
    data = selectors.ablation_pairs(filters=form.filters)
    pairs = [
        p
        for p in data.pairs
        if p.with_paper.scaled_pass_at_1 is not None and p.without_paper.scaled_pass_at_1 is not None
    ]
    scatter = charts.scatter(
        [
            charts.Point(
                p.model.name,
                p.without_paper.scaled_pass_at_1,
                p.with_paper.scaled_pass_at_1,
                p.model.developer or "Unknown",
                _model_url(p.model.key),
            )
            for p in pairs
        ],
        chart_id="ablation-scatter",
        title="Scaled Pass@1 with vs without the paper",
        x_label="Without paper (%)",
        y_label="With paper (%)",
        swatches=developer_swatches(),
    )
    deltas = charts.bar_chart(
        [
            charts.Bar(
                p.model.name,
                p.delta,
                p.model.developer or "Unknown",
                bool(p.model.open_weights),
                href=_model_url(p.model.key),
            )
            for p in pairs
        ],
        chart_id="ablation-delta",
        title="Gain from the paper (with minus without, points)",
        x_label="Scaled Pass@1 difference (points)",
        swatches=developer_swatches(),
    )
    snippet_chart = charts.grouped_bar_chart(
        [f"{s.paper_key}: {s.name}" for s in data.snippets[:40]],
        [
            charts.Series("With paper", [s.with_paper_solve_rate for s in data.snippets[:40]]),
            charts.Series("Without paper", [s.without_paper_solve_rate for s in data.snippets[:40]]),
        ],
        chart_id="ablation-snippets",
        title="Solve rate per snippet with vs without the paper (largest gain first)",
        x_label="Solve rate (%)",
        max_value=100,
        hrefs=[snippet_url(s.paper_key, s.name, s.snippet_id) for s in data.snippets[:40]],
    )
    return {
        "data": data,
        "scatter": charts.skippable(scatter),
        "deltas": charts.skippable(deltas),
        "snippet_chart": charts.skippable(snippet_chart),
        "snippet_rows": [
            {"s": s, "url": snippet_url(s.paper_key, s.name, s.snippet_id)} for s in data.snippets
        ],
        "csv_url": _csv_url("snippets", QueryDict()),
    }


# --- finding out why: model search and comparison ----------------------------------------------------


@require_safe
def model_search(request: HttpRequest) -> HttpResponse:
    """Models by key, name or developer: the board's search box asks for the ``matches`` partial with
    htmx; without JavaScript the same GET form lands on this page."""
    query = request.GET.get("q", "")[:100]
    found = selectors.model_search(query=query)
    context = {
        "q": query.strip(),
        "found": [{"m": m, "url": _model_url(m.key)} for m in found],
        "limit": selectors.SEARCH_LIMIT,
    }
    template = "leaderboard/model_search.html" + ("#matches" if caching.is_htmx(request) else "")
    return render(request, template, context)


#: the most models one comparison shows (each costs a model page's queries)
COMPARE_LIMIT = 6


@require_safe
def compare_page(request: HttpRequest) -> HttpResponse:
    """``/compare/?models=A&models=B``: per-paper and per-snippet differences of two or more models."""
    return cached_page(
        request, page="compare", template="leaderboard/compare.html", title="Compare models",
        build=lambda _form, query: _compare_context(query), params=("models",), filtered=False,
    )  # fmt: skip


def _compare_context(params: QueryDict) -> dict:
    keys = [k.strip() for k in params.getlist("models") if k.strip()]
    keys = list(dict.fromkeys(keys))
    problems_found = []
    if len(keys) > COMPARE_LIMIT:
        problems_found.append(
            f"models: at most {COMPARE_LIMIT} models at once; the first {COMPARE_LIMIT} are shown."
        )
        keys = keys[:COMPARE_LIMIT]
    try:
        data = selectors.model_compare(keys=keys) if len(keys) >= 2 else None
    except LanguageModel.DoesNotExist as exc:
        problems_found.append(f"models: {exc}.")
        data = None
    if len(keys) < 2:
        problems_found.append("models: choose at least two models to compare.")
    context: dict = {"keys": keys, "problems": problems_found, "data": data, "page_title": "Compare models"}
    if data is None:
        return context
    names = [d.model.name for d in data.models]
    context["page_title"] = "Compare " + " vs ".join(names)
    context["paper_chart"] = charts.skippable(
        charts.grouped_bar_chart(
            [p.paper_key for p in data.papers],
            [
                charts.Series(d.model.name, [p.scores[i] for p in data.papers])
                for i, d in enumerate(data.models)
            ],
            chart_id="compare-papers",
            title="Scaled Pass@1 per paper",
            x_label="Scaled Pass@1 (%)",
            max_value=100,
            hrefs=[reverse("leaderboard:paper", args=[p.paper_key]) for p in data.papers],
        )
    )
    context["paper_spec"] = vega.compare_papers_spec(data, title="Scaled Pass@1 per paper")
    context["snippets"] = [
        {
            "s": sn,
            "cells": [
                {
                    "c": c,
                    "url": completion_url(sn.paper_key, sn.name, sid, c.run_id, c.completion_idx)
                    if sid is not None and c.run_id is not None and c.completion_idx is not None
                    else "",
                }
                for c, sid in zip(sn.cells, sn.snippet_ids, strict=True)
            ],
            "url": snippet_url(sn.paper_key, sn.name, next(i for i in sn.snippet_ids if i is not None)),
        }
        for sn in data.snippets
    ]
    context["models"] = [
        {"d": d, "url": _model_url(d.model.key), "csv": run_results_csv_url(d.run.run_id) if d.run else ""}
        for d in data.models
    ]
    return context


__all__ = [
    "ablation_page",
    "board",
    "cached_page",
    "compare_page",
    "contamination_page",
    "errors_page",
    "model_page",
    "model_search",
    "paper_page",
    "snippet_page",
    "snippet_prompt",
]
