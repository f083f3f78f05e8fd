"""Leaderboard pages: thin views that call one selector, draw its charts and render.

The URL holds the whole state of a page (filters, sort, chosen run), so every view can be shared and every
control works as a plain link or GET form; with htmx (``request.htmx``) the same view returns only the
``results`` partial of its template, and the client pushes the URL.

A filterable page is ``cached_page`` plus a function from the filter form to the template's context: the
helper parses the filters (``forms.BoardFilterForm``), serves the body from the one cache layer
(``caching.serve_page``: keyed by the versions of the scopes the page declares, ETag, a shared body in a
public frame or a signed-in visitor's shell) and picks the htmx partial. Each view names its scope
(``scopes.Scope``): a board-like page the release its filter shows, a model page its model, pages across
releases (a paper's, a snippet's, the ablation's snippet statistics) every release. Adding a page means a selector, a view of a few lines and a template. The largest parts
(a model's verdict grid, a paper's model x snippet heatmap) are loaded lazily by htmx
(``hx-trigger="revealed"``) once they pass ``LAZY_CELLS`` cells; their placeholder links to the full page.
"""

from __future__ import annotations

import functools
import math
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date
from urllib.parse import quote

from django.conf import settings
from django.contrib.auth.decorators import login_required, permission_required
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import NoReverseMatch, get_script_prefix, get_urlconf, reverse
from django.utils.http import RFC3986_SUBDELIMS, urlencode
from django.views.decorators.http import require_safe

from contributions.models import Paper, Release, Snippet
from contributions.params import optional_id
from contributions.roles import REVIEW_PERMISSION
from contributions.selectors import catalogue as contribution_selectors
from contributions.selectors import releases as contribution_releases
from evaluation.models import EvaluationRun, LanguageModel
from leaderboard import caching, charts, code_diff, freshness, vega
from leaderboard.forms import CONTAMINATION_LABELS, FILTER_PARAMS, BoardFilterForm
from leaderboard.forms import DEFAULTS as FILTER_DEFAULTS
from leaderboard.scopes import Scope
from leaderboard.selectors.analyses import (
    AblationPair,
    ErrorBreakdown,
    SnippetAblation,
    ablation_pairs,
    contamination_overview,
    error_breakdown,
    release_with_test_output,
)
from leaderboard.selectors.board import PaperWindow, Row, developer_names, leaderboard_rows, paper_window
from leaderboard.selectors.compare import COMPARE_LIMIT, ModelComparison, Setting, model_compare
from leaderboard.selectors.curation import snippet_curation
from leaderboard.selectors.models import (
    SEARCH_LIMIT,
    ModelDetail,
    VerbatimShare,
    failed_snippets,
    model_detail,
    run_verbatim_shares,
    verdict_state,
)
from leaderboard.selectors.models import model_search as find_models
from leaderboard.selectors.papers import PaperDetail, SnippetNode, paper_detail
from leaderboard.selectors.picking import MATCHES_SHOWN, Picked, model_choices, models_pick
from leaderboard.selectors.snippets import (
    Attempt,
    SnippetDetail,
    snippet_detail,
    snippet_lookup,
    snippet_problem,
)
from leaderboard.snippet_statistics import (
    MIN_MODELS,
    STATUS_LABELS,
    SnippetStatistics,
    parse_sort,
    sort_rows,
)
from researchcodebench import memorisation, problems

#: a verdict grid or heatmap with more cells than this is loaded lazily (htmx, on scroll) instead of inline
LAZY_CELLS = 600


def cached_page(
    request: HttpRequest,
    *,
    page: str,
    template: str,
    title: str,
    build: Callable[[BoardFilterForm | None, QueryDict], dict],
    scope: Scope | None = None,
    args: tuple = (),
    params: Iterable[str] = FILTER_PARAMS,
    filtered: bool = True,
    partial: str = "results",
    fragment: bool | None = None,
) -> HttpResponse:
    """A cached, htmx-aware page: ``build(form, query)`` returns the template's context (``form``: the
    filters parsed from the query when ``filtered``, else None; ``query``: the request's ``params`` only,
    sorted). ``page`` and ``args`` name the page in the cache; ``scope`` is what it shows (default: the
    release its ``release`` filter names, as the board); ``build`` may set ``page_title`` (else ``title``)
    and may raise ``Http404``. An htmx request (or ``fragment``, when given) gets ``partial`` of the
    template, anyone else the whole page."""
    fragment = caching.is_htmx(request) if fragment is None else fragment
    scope = scope or Scope.board(request.GET.get("release"))

    def body(query: QueryDict) -> caching.Body:
        form = BoardFilterForm(query) if filtered else None
        context = {"form": form, **build(form, query)}
        return caching.render_body(
            template, context, title=context.get("page_title", title), partial=partial if fragment else ""
        )

    return caching.serve_page(
        request, page=page, args=args, keys=params, fragment=fragment, scope=scope, build=body
    )


def _with(query: QueryDict, **extra: str) -> str:
    """``?query`` with ``extra`` set (a link to the same page with one more parameter)."""
    q = query.copy()
    for k, v in extra.items():
        q[k] = v
    return f"?{q.urlencode()}"


def _model_url(key: str) -> str:
    return reverse("leaderboard:model", args=[key])


#: stand-ins for a snippet route's arguments (``_snippet_route``): characters ``quote`` leaves alone
_KEY, _NAME = "__rcb_paper_key__", "__rcb_snippet_name__"
#: what ``reverse`` leaves unquoted in a path (RFC 3986 ``pchar``)
_PCHAR_SAFE = RFC3986_SUBDELIMS + "/~:@"
#: a path segment made only of what ``quote`` leaves unquoted with ``_PCHAR_SAFE`` (ASCII letters and
#: digits, ``_.-~`` and those): quoting it would give it back unchanged
_UNQUOTED = re.compile(r"[A-Za-z0-9_.~/:@!$&'()*+,;=-]*")


@functools.cache
def _snippet_route(prefix: str, urlconf: str) -> tuple[str, str, str]:
    """The snippet page's path around its two arguments, reversed once per script prefix and URLconf."""
    head, rest = reverse("leaderboard:snippet", args=[_KEY, _NAME], urlconf=urlconf).split(_KEY)
    mid, tail = rest.split(_NAME)
    return head, mid, tail


def _segment(text: str) -> str:
    return text if _UNQUOTED.fullmatch(text) else quote(text, safe=_PCHAR_SAFE)


class SnippetLinks:
    """Links to snippet pages for one page: the route resolved once (this request's script prefix and
    URLconf) and each paper key quoted once. ``path`` is the same string as ``reverse`` (which quotes each
    argument as a path segment), without resolving the route for every snippet: a verdict grid or a
    comparison links thousands. Arguments the route does not take (a key with a slash, a name with a line
    break, an empty one) go through ``reverse``, which refuses them."""

    def __init__(self) -> None:
        self._head, self._mid, self._tail = _snippet_route(
            get_script_prefix(), get_urlconf() or settings.ROOT_URLCONF
        )
        self._keys: dict[str, str] = {}

    def path(self, paper_key: str, name: str) -> str:
        """The snippet page of ``name`` in paper ``paper_key`` (no version pinned)."""
        if not paper_key or not name or "/" in paper_key or "\n" in name:
            return reverse("leaderboard:snippet", args=[paper_key, name])
        key = self._keys.get(paper_key)
        if key is None:
            key = self._keys[paper_key] = _segment(paper_key)
        return f"{self._head}{key}{self._mid}{_segment(name)}{self._tail}"

    @staticmethod
    def pinned(path: str, snippet_id: int | None) -> str:
        """``path`` pinned to the exact task version ``snippet_id`` (as is for None)."""
        return path if snippet_id is None else f"{path}?id={int(snippet_id)}"

    @staticmethod
    def at_completion(path: str, snippet_id: int, run_id: int, idx: int) -> str:
        """``path`` at one run's completion: ``run`` opens it, the fragment scrolls to it."""
        return f"{path}?id={int(snippet_id)}&run={int(run_id)}#completion-{run_id}-{idx}"


def snippet_url(paper_key: str, name: str, snippet_id: int | None = None) -> str:
    """The snippet page URL (``SnippetLinks.path``); ``snippet_id`` pins the exact task version."""
    return SnippetLinks.pinned(SnippetLinks().path(paper_key, name), snippet_id)


def completion_url(paper_key: str, name: str, snippet_id: int, run_id: int, idx: int) -> str:
    """The snippet page at one run's completion: ``run`` opens it, the fragment scrolls to it."""
    return SnippetLinks.at_completion(SnippetLinks().path(paper_key, name), snippet_id, run_id, idx)


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
        if value and key not in ("sort", "cols"):
            query[key] = value
    query["format"] = fmt
    for k, v in extra.items():
        query[k] = v
    return f"{url}?{query.urlencode()}"


# --- the board ---------------------------------------------------------------------------------------


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


def developer_swatches() -> dict[str, charts.Swatch]:
    """Each developer's colour, fixed over every developer that exists (not those a filter leaves)."""
    return charts.group_swatches([*developer_names(), "Unknown"])


def board_chart(rows: list[Row], *, title: str, chart_id: str = "board-chart") -> str:
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
        request, page="board", template="leaderboard/board.html", title="Leaderboard", build=_board_context,
        params=BOARD_PARAMS,
    )  # fmt: skip


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
        "csv_url": _csv_url("leaderboard", params),
        "json_url": _csv_url("leaderboard", params, fmt="json"),
        "selection": rows[0].selection if rows and rows[0].selection is not None else None,
        "scatter_specs": _board_scatter_specs(rows),
        "freshness": freshness.freshness_get(releases={r.release for r in rows}) if rows else None,
        "window": window,
        "slider": _window_slider(form, window),
    }


def _board_scatter_specs(rows: list[Row]) -> list[dict]:
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
                "chart": charts.skippable(chart) if ranked else "",
            }
        )
    return out


# --- model page --------------------------------------------------------------------------------------


@require_safe
def model_page(request: HttpRequest, key: str) -> HttpResponse:
    """The model page; its verdict grid past ``LAZY_CELLS`` cells comes from ``?grid=all`` (the grid
    alone for htmx, the whole page with the grid inline otherwise)."""
    grid_only = caching.is_htmx(request) and request.GET.get("grid") == "all"
    return cached_page(
        request, page="model", args=(key,), template="leaderboard/model_detail.html", title=key,
        build=lambda _form, query: _model_context(key, query, grid_only=grid_only), scope=Scope(models=(key,)),
        params=("run", "grid"), filtered=False, partial="grid", fragment=grid_only,
    )  # fmt: skip


def _model_charts(detail: ModelDetail) -> tuple[str, str, str]:
    """The model page's per-paper heatmap, failures by category, and before/after-cutoff bars ("" without
    both sides)."""
    name = detail.model.name
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
    return heat, error_chart, cutoff_chart


def _model_context(key: str, params: QueryDict, *, grid_only: bool = False) -> dict:
    """The model page's context; ``grid_only``: just what its ``grid`` partial reads."""
    run_id = params.get("run")
    try:
        detail = model_detail(key=key, run_id=optional_id(run_id))
    except (LanguageModel.DoesNotExist, EvaluationRun.DoesNotExist) as exc:
        raise Http404(str(exc)) from None
    name = detail.model.name
    if grid_only:
        return {"page_title": name, "grid": _grid(detail)}
    grid_inline = params.get("grid") == "all" or len(detail.verdict_grid) <= LAZY_CELLS
    heat, error_chart, cutoff_chart = _model_charts(detail)
    run_id = detail.run.run_id if detail.run else None
    return {
        "dated_chart": _model_dated_chart(detail),
        "page_title": name,
        "d": detail,
        "run_groups": _run_groups(detail),
        "heatmap": charts.skippable(heat),
        "error_chart": charts.skippable(error_chart),
        "cutoff_chart": charts.skippable(cutoff_chart) if cutoff_chart else "",
        "grid": _grid(detail) if grid_inline else {},
        "grid_url": "" if grid_inline else _with(params, grid="all"),
        "failed": _failed_rows(run_id, detail) if run_id else [],
        "runs_csv_url": f"{reverse('api-runs')}?{urlencode({'model': detail.model.key, 'format': 'csv'})}",
        "results_csv_url": run_results_csv_url(run_id) if run_id else "",
        "compare_url": f"{reverse('leaderboard:compare')}?{urlencode({'models': detail.model.key})}",
        "csv_url": _csv_url("papers", QueryDict()),
        "modes": [(m, CONTAMINATION_LABELS[m], detail.scores.get(m)) for m in CONTAMINATION_LABELS],
        "verbatim_rule": _verbatim_rule(),
        # Why the model's forging rate may not be measured: every run of it holds imported results.
        "forging_source": "imported"
        if detail.runs and all(r.source == EvaluationRun.Source.IMPORTED for r in detail.runs)
        else "",
        "memorisation_rows": [
            ("On or before the cutoff", detail.memorisation.before_cutoff),
            ("After the cutoff", detail.memorisation.after_cutoff),
        ]
        if detail.memorisation and detail.memorisation.before_cutoff
        else [],
    }


def _run_groups(detail: ModelDetail) -> list[dict]:
    """The model's runs by setting (release, template, paper setting), newest setting first: only runs of
    one setting are comparable, so the table lines up each setting's runs under its own heading."""
    groups: dict[Setting, list] = {}
    for r in detail.runs:
        groups.setdefault(Setting.of(r), []).append(r)
    return [{"setting": setting, "runs": runs} for setting, runs in groups.items()]


def _model_dated_chart(detail: ModelDetail) -> str:
    """The model's score on each paper at the paper's first-commit date, either side of its cutoff, with
    the score over each side; "" when the cutoff is unknown."""
    cutoff = detail.model.knowledge_cutoff
    if cutoff is None or detail.before_cutoff is None or detail.after_cutoff is None:
        return ""
    chart = charts.dated_scores(
        [
            charts.DatedScore(
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
    return charts.skippable(chart)


def _failed_rows(run_id: int, detail: ModelDetail) -> list[dict]:
    """The failed snippets of the run with the links of each row: its failed completion and its paper
    (reversed once per paper: a run can fail thousands of snippets)."""
    papers = {p.paper_key: reverse("leaderboard:paper", args=[p.paper_key]) for p in detail.per_paper}
    links = SnippetLinks()
    return [
        {
            "f": f,
            "url": links.at_completion(
                links.path(f.paper_key, f.name), f.snippet_id, f.run_id, f.completion_idx
            ),
            "paper_url": papers.get(f.paper_key) or reverse("leaderboard:paper", args=[f.paper_key]),
        }
        for f in failed_snippets(run_id=run_id, grid=detail.verdict_grid)
    ]


def _grid(detail: ModelDetail) -> dict[str, list[dict]]:
    """The verdict grid's cells by paper (document order): verdict, snippet page URL and state."""
    grid: dict[str, list[dict]] = defaultdict(list)
    links = SnippetLinks()
    for v in detail.verdict_grid:
        grid[v.paper_key].append(
            {
                "v": v,
                "url": links.pinned(links.path(v.paper_key, v.name), v.snippet_id),
                "state": verdict_state(v.verdicts),
            }
        )
    return dict(grid)


# --- papers ------------------------------------------------------------------------------------------


@require_safe
def papers_page(request: HttpRequest) -> HttpResponse:
    """The papers of one release (``?release=``, default: the board's) with their tasks' sizes counted as
    the board counts them, then the other papers; an empty state before the first import. Catalogue only:
    cached by the catalogue's version."""
    return cached_page(
        request, page="papers", template="leaderboard/papers.html", title="Papers",
        build=lambda _form, query: _papers_context(query), scope=Scope(), params=("release",),
        filtered=False, fragment=False,
    )  # fmt: skip


def _papers_context(params: QueryDict) -> dict:
    try:
        catalogue = contribution_selectors.paper_catalogue(
            release_name=params.get("release", "").strip()[:100]
        )
    except Release.DoesNotExist as exc:
        raise Http404(f"release: {exc.args[0]}") from None
    return {
        "catalogue": catalogue,
        "rows": catalogue.rows,
        "totals": {"snippets": catalogue.snippets, "lines": catalogue.lines},
        "releases": list(contribution_releases.release_list()),
        "all_versions": contribution_selectors.ALL_VERSIONS,
    }


# --- paper page --------------------------------------------------------------------------------------


def _tree(paper_key: str, nodes: tuple[SnippetNode, ...]) -> list[dict]:
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
        build=lambda form, query: _paper_context(key, form, query),
        params=(*FILTER_PARAMS, "heatmap", SNIPPET_SORT),
        # The releases holding the paper, whatever the filters: only their runs reach its scores and its
        # snippets' difficulty.
        scope=Scope(paper=key),
        partial="heatmap" if request.GET.get("heatmap") == "all" else "results",
    )  # fmt: skip


def _paper_context(key: str, form: BoardFilterForm, params: QueryDict) -> dict:
    try:
        detail = paper_detail(key=key, filters=replace(form.filters, contamination="none"))
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
        **_paper_stats_context(detail, params),
    }


#: the paper page's parameter that sorts its table of snippet statistics (the board's ``sort`` is the
#: filters' and would change the runs' order, not the snippets')
SNIPPET_SORT = "snippet_sort"


@dataclass(frozen=True)
class StatRow:
    """One line of a table of snippet statistics: what ``snippet_statistics.sort_rows`` sorts."""

    order: int
    name: str
    url: str
    stats: SnippetStatistics
    paper_key: str = ""
    task: str = ""
    depth: int | None = None


#: the columns of a table of snippet statistics: (sort key, header, numeric, descending first)
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


def _paper_stats_context(detail: PaperDetail, params: QueryDict) -> dict:
    sort = parse_sort(params.get(SNIPPET_SORT, ""))
    rows = [
        StatRow(i, n.name, snippet_url(detail.key, n.name, n.id), detail.statistics[n.id], depth=n.depth)
        for i, n in enumerate(detail.snippets)
        if n.id in detail.statistics
    ]
    return {
        "stat_rows": sort_rows(rows, sort),
        "stat_headers": stat_headers(params, SNIPPET_SORT, sort),
        "stat_sort": sort,
        "stat_caption": f"Statistics of the {len(rows)} snippets of {detail.key}, {sort_label(sort)}.",
        "min_models": MIN_MODELS,
    }


def _paper_tree_context(detail: PaperDetail) -> dict:
    return {
        "tree": _tree(detail.key, detail.snippets),
        "csv_url": _csv_url("snippets", QueryDict(), paper=detail.key),
        # Every snippet's lines, as the scores weigh them and /papers/ counts them (one source of counts).
        "total_lines": sum(n.lines for n in detail.snippets),
    }


def _paper_heatmap(detail: PaperDetail) -> str:
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


def _paper_heatmap_spec(detail: PaperDetail) -> dict:
    """The heatmap's interactive view (Vega-Lite): the same cells, re-sortable and highlightable."""
    return vega.paper_heatmap_spec(
        detail,
        snippet_hrefs=[snippet_url(detail.key, n.name, n.id) for n in detail.snippets],
        title=f"{detail.key}: pass rate per model and snippet",
    )


# --- the maintainers' curation view -------------------------------------------------------------------

#: the curation view's query parameters
CURATION_PARAMS = ("release", "status", "paper", "sort")


@login_required
@permission_required(REVIEW_PERMISSION, raise_exception=True)
@require_safe
def snippet_curation_page(request: HttpRequest) -> HttpResponse:
    """Maintainers only (as the review queue): every snippet of a release (``?release=``, default: the
    board's) with its statistics over that release's board, filtered by ``?status=`` and ``?paper=``,
    sorted by ``?sort=``. Cached by the release's scope, as a board page; the body holds nothing of the
    visitor's and is only ever served after the permission check."""
    return cached_page(
        request, page="snippet_curation", template="leaderboard/snippet_curation.html",
        title="Snippet curation", build=lambda _form, query: _curation_context(query),
        params=CURATION_PARAMS, filtered=False,
    )  # fmt: skip


def _curation_context(params: QueryDict) -> dict:
    sort = parse_sort(params.get("sort", ""))
    status = params.get("status", "")
    status = status if status in STATUS_LABELS else ""
    try:
        curation = snippet_curation(
            release=params.get("release", "").strip()[:100],
            status=status,
            paper=params.get("paper", "").strip()[:100],
            sort=sort,
        )
    except Release.DoesNotExist as exc:
        raise Http404(f"release: {exc.args[0]}") from None
    rows = [
        StatRow(
            r.order, r.name, snippet_url(r.paper_key, r.name, r.id), r.stats, paper_key=r.paper_key,
            task=r.task, depth=r.depth,
        )
        for r in curation.rows
    ]  # fmt: skip
    filters = params.copy()
    filters.pop("sort", None)
    return {
        "c": curation,
        "stat_rows": rows,
        "stat_headers": stat_headers(params, "sort", sort),
        "stat_sort": sort,
        "stat_caption": f"{len(rows)} of {curation.total} snippets, {sort_label(sort)}.",
        "status": status,
        "statuses": [(key, label, curation.counts[key]) for key, label in STATUS_LABELS.items()],
        "paper": params.get("paper", ""),
        "min_models": MIN_MODELS,
    }


# --- snippet page ------------------------------------------------------------------------------------


#: the query parameters of a snippet page (and of its prompt)
SNIPPET_PARAMS = ("id", "template", "paper", "run")


def _problem_params(params: QueryDict, attempts: tuple[Attempt, ...]) -> tuple[str, bool]:
    template = params.get("template", "")
    paper = params.get("paper", "")
    if template not in problems.TEMPLATES:
        template = attempts[0].template if attempts and attempts[0].template in problems.TEMPLATES else ""
        template = template or problems.DEFAULT_TEMPLATE
    with_paper = (
        paper != "without" if paper in ("with", "without") else (attempts[0].with_paper if attempts else True)
    )
    return template, with_paper


def _snippet_detail(key: str, name: str, params: QueryDict) -> SnippetDetail:
    raw_id = params.get("id", "")
    try:
        snippet_id = snippet_lookup(paper_key=key, name=name, snippet_id=optional_id(raw_id))
        return snippet_detail(snippet_id=snippet_id)
    except Snippet.DoesNotExist as exc:
        raise Http404(str(exc)) from None


@require_safe
def snippet_page(request: HttpRequest, key: str, name: str) -> HttpResponse:
    """A snippet: its problem, reference code and every completion. Cached across releases: its
    completions come from runs of the releases that hold its paper's tasks (``Scope.paper``)."""
    return cached_page(
        request, page="snippet", args=(key, name), template="leaderboard/snippet_detail.html", title=name,
        build=lambda _form, query: _snippet_context(key, name, query), scope=Scope(paper=key),
        params=SNIPPET_PARAMS, filtered=False, fragment=False,
    )  # fmt: skip


def _snippet_context(key: str, name: str, params: QueryDict) -> dict:
    detail = _snippet_detail(key, name, params)
    template, with_paper = _problem_params(params, detail.attempts)
    problem = snippet_problem(
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
            "target": params.get("run") == str(a.run_id),
            "raw_url": f"{snippet_url(detail.paper_key, detail.name, detail.id)}&{urlencode({'run': a.run_id})}"
            f"#raw-{a.run_id}-{a.completion_idx}",
            "overlap": _overlap_figures(a),
        }
        for a in sorted(
            detail.attempts, key=lambda a: (a.passed is not True, a.model.name.lower(), a.completion_idx)
        )
    ]
    base = snippet_url(detail.paper_key, detail.name, detail.id)
    return {
        **_raw_answer_context(detail, params, base),
        "page_title": f"{detail.name} · {detail.paper_key}",
        "d": detail,
        "problem": problem,
        "attempts": attempts,
        "reference_lines": code_diff.highlight_lines(detail.reference_code) if detail.reference_code else [],
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


#: why a completion has no raw response, by the run's source (``EvaluationRun.Source``)
NO_RAW_RESPONSE = {
    EvaluationRun.Source.UPLOADED: (
        "No raw response: this completion was uploaded as predictions without the model's answer text "
        "(the submitter sent the code only), so only the code that was tested can be shown."
    ),
    EvaluationRun.Source.IMPORTED: (
        "No raw response: results imported from the paper's published data hold verdicts only."
    ),
}
NO_RAW_RESPONSE_OTHER = "No raw response is stored for this completion."


def _raw_answer_context(detail: SnippetDetail, params: QueryDict, base: str) -> dict:
    """The snippet page's raw answers: a link per run to show its completions' raw responses next to the
    code extracted from them (``?run=``), and the chosen run's completions with the words for a missing
    response."""
    runs: dict[int, dict] = {}
    for a in detail.attempts:
        choice = runs.setdefault(
            a.run_id,
            {"run_id": a.run_id, "model": a.model, "with_paper": a.with_paper, "passed": 0, "results": 0},
        )
        choice["passed"] += a.passed is True
        choice["results"] += a.passed is not None
    chosen = params.get("run", "")
    for choice in runs.values():
        choice["url"] = f"{base}&{urlencode({'run': choice['run_id']})}#raw-answer"
        choice["current"] = str(choice["run_id"]) == chosen
    shown = [
        {"a": a, "no_raw": NO_RAW_RESPONSE.get(a.run_source, NO_RAW_RESPONSE_OTHER)}
        for a in detail.attempts
        if str(a.run_id) == chosen
    ]
    return {
        "raw_choices": sorted(runs.values(), key=lambda c: (c["model"].name.lower(), c["run_id"])),
        "raw_shown": shown,
        "raw_unknown": bool(chosen) and not shown,
    }


def _verbatim_rule() -> dict[str, int]:
    """The near-verbatim thresholds as the pages word them (whole percentages)."""
    return {
        "run": round(100 * memorisation.NEAR_VERBATIM_RUN),
        "ngram": round(100 * memorisation.NEAR_VERBATIM_NGRAM),
        "min_tokens": memorisation.MIN_REFERENCE_TOKENS,
    }


def _whole_percent(share: float) -> int:
    """``share`` (0-1) in whole percent, rounded down: a share just under a threshold never reads as it."""
    return math.floor(round(100 * share, 6))


def _overlap_figures(a: Attempt) -> dict | None:
    """A completion's memorisation figures as the snippet page words them (whole percentages, and the
    thresholds they are judged by); None when it was not measured."""
    if a.overlap_run_share is None:
        return None
    rule = _verbatim_rule()
    return {
        "run": _whole_percent(a.overlap_run_share),
        "ngram": None if a.overlap_ngram_share is None else _whole_percent(a.overlap_ngram_share),
        "run_threshold": rule["run"],
        "ngram_threshold": rule["ngram"],
        "min_tokens": rule["min_tokens"],
    }


@require_safe
def snippet_prompt(request: HttpRequest, key: str, name: str) -> HttpResponse:
    """The full prompt of a snippet as plain text (the page shows the code; the paper text is long)."""
    detail = _snippet_detail(key, name, request.GET)
    template, with_paper = _problem_params(request.GET, detail.attempts)
    problem = snippet_problem(
        task_version_id=detail.task_version_id, name=detail.name, template=template, with_paper=with_paper
    )
    if not problem.available:
        return HttpResponse(problem.reason, content_type="text/plain; charset=utf-8", status=404)
    return HttpResponse(problem.prompt, content_type="text/plain; charset=utf-8")


# --- errors, contamination, ablation -----------------------------------------------------------------


@require_safe
def errors_page(request: HttpRequest) -> HttpResponse:
    """Error categories of the runs the filters keep. Without a ``release`` it starts on the release with
    test output (``_errors_context``), which any run may change: the page is then stored under every
    release's scope."""
    started = Scope(all_releases=True) if not request.GET.get("release") else None
    return cached_page(
        request,
        page="errors",
        template="leaderboard/errors.html",
        title="Error categories",
        build=_errors_context,
        scope=started,
    )


def _errors_context(form: BoardFilterForm, params: QueryDict) -> dict:
    """Without a ``release`` the page starts on the release with test output (``release_with_test_output``)
    rather than the default one: the published results of a paper hold verdicts only, whose failures would
    all be unclassified."""
    if not params.get("release"):
        started = release_with_test_output()
        if started is not None:
            params = params.copy()
            params["release"] = started
            form = BoardFilterForm(params)
    data = error_breakdown(filters=form.filters)
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
        "without_output": _without_output(data, form),
        "form": form,
    }


def _without_output(data: ErrorBreakdown, form: BoardFilterForm) -> dict | None:
    """Why the runs shown that were imported from the paper's published results have no test output, and
    where there are runs with test output (``tested``: a link to that release's errors; None when it is the
    one shown or none has); None when every run shown has test output."""
    if not data.without_output:
        return None
    tested = release_with_test_output()
    shown = form.filters.release
    return {
        "names": data.without_output,
        "every": len(data.without_output) == len(data.per_model),
        "tested": tested if tested is not None and tested != shown else None,
        "tested_url": f"{reverse('leaderboard:errors')}?{urlencode({'release': tested})}" if tested else "",
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
    data = contamination_overview(filters=form.filters)
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
        scope=Scope(all_releases=True),  # the snippets' solve rates count every run
    )


def _ablation_context(form: BoardFilterForm, params: QueryDict) -> dict:
    data = ablation_pairs(filters=form.filters)
    pairs = [
        p
        for p in data.pairs
        if p.with_paper.scaled_pass_at_1 is not None and p.without_paper.scaled_pass_at_1 is not None
    ]
    return {
        "data": data,
        "scatter": charts.skippable(_ablation_scatter(pairs)),
        "deltas": charts.skippable(_ablation_deltas(pairs)),
        "snippet_chart": charts.skippable(_ablation_snippet_chart(data.snippets[:40])),
        "snippet_rows": [
            {"s": s, "url": snippet_url(s.paper_key, s.name, s.snippet_id)} for s in data.snippets
        ],
        "csv_url": _csv_url("snippets", QueryDict()),
    }


def _ablation_scatter(pairs: list[AblationPair]) -> str:
    """Each model's score with the paper against its score without, coloured by developer."""
    return charts.scatter(
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


def _ablation_deltas(pairs: list[AblationPair]) -> str:
    """What the paper adds to each model's score (with minus without), open weights outlined."""
    return charts.bar_chart(
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


def _ablation_snippet_chart(snippets: Sequence[SnippetAblation]) -> str:
    """The solve rate of each of ``snippets`` with and without the paper, side by side."""
    return charts.grouped_bar_chart(
        [f"{s.paper_key}: {s.name}" for s in snippets],
        [
            charts.Series("With paper", [s.with_paper_solve_rate for s in snippets]),
            charts.Series("Without paper", [s.without_paper_solve_rate for s in snippets]),
        ],
        chart_id="ablation-snippets",
        title="Solve rate per snippet with vs without the paper (largest gain first)",
        x_label="Solve rate (%)",
        max_value=100,
        hrefs=[snippet_url(s.paper_key, s.name, s.snippet_id) for s in snippets],
    )


# --- finding out why: model search and comparison ----------------------------------------------------


@require_safe
def model_search(request: HttpRequest) -> HttpResponse:
    """Models by key, name or developer: the board's search box asks for the ``matches`` partial with
    htmx; without JavaScript the same GET form lands on this page."""
    query = request.GET.get("q", "")[:100]
    found = find_models(query=query)
    context = {
        "q": query.strip(),
        "found": [{"m": m, "url": _model_url(m.key)} for m in found],
        "limit": SEARCH_LIMIT,
    }
    template = "leaderboard/model_search.html" + ("#matches" if caching.is_htmx(request) else "")
    return render(request, template, context)


#: the most names of a comparison's query that are read (the rest are ignored)
COMPARE_NAMES_READ = 2 * COMPARE_LIMIT


@require_safe
def compare_page(request: HttpRequest) -> HttpResponse:
    """``/compare/?models=A&models=B``: per-paper and per-snippet differences of two or more models, each
    named by display name or key (any case) or a part of one that picks one model; the board's checkboxes
    send the same query."""
    return cached_page(
        request, page="compare", template="leaderboard/compare.html", title="Compare models",
        build=lambda _form, query: _compare_context(query),
        params=("models", "release", "template", "paper", "covers"), filtered=False,
        scope=Scope(models=tuple(n.strip() for n in request.GET.getlist("models")[:COMPARE_NAMES_READ])),
    )  # fmt: skip


def _compared_rows(data: ModelComparison) -> list[dict]:
    """The comparison's snippets with their links: the snippet page and each model's completion."""
    links = SnippetLinks()
    rows = []
    for sn in data.snippets:
        path = links.path(sn.paper_key, sn.name)
        cells = [
            {
                "c": c,
                "url": links.at_completion(path, sid, c.run_id, c.completion_idx)
                if sid is not None and c.run_id is not None and c.completion_idx is not None
                else "",
            }
            for c, sid in zip(sn.cells, sn.snippet_ids, strict=True)
        ]
        rows.append(
            {
                "s": sn,
                "cells": cells,
                "url": links.pinned(path, next(i for i in sn.snippet_ids if i is not None)),
            }
        )
    return rows


def _compare_picked(names: list[str]) -> tuple[Picked, list[str]]:
    """The models ``names`` picks (at most ``COMPARE_LIMIT``) and the problems to show: each unknown or
    ambiguous name, too many models."""
    picked = models_pick(names=names)
    problems_found = [
        f"No model is called “{name}”: type a model's name, key or developer." for name in picked.unknown
    ]
    problems_found += [
        f"“{name}” matches {len(matches) if len(matches) <= MATCHES_SHOWN else f'more than {MATCHES_SHOWN}'} "
        "models: pick one below."
        for name, matches in picked.ambiguous
    ]
    if len(picked.keys) > COMPARE_LIMIT:
        problems_found.append(
            f"At most {COMPARE_LIMIT} models compare at once: the first {COMPARE_LIMIT} are shown."
        )
        picked = replace(picked, keys=picked.keys[:COMPARE_LIMIT], names=picked.names[:COMPARE_LIMIT])
    return picked, problems_found


def _asked_setting(params: QueryDict) -> Setting | None:
    """The setting the query asks for (``release``, ``template``, ``paper``: with or without; without a
    release, ``covers``: what the runs cover), None unless it names a template and a paper setting."""
    template, paper = params.get("template", "").strip(), params.get("paper", "")
    if not template or paper not in ("with", "without"):
        return None
    release = params.get("release", "").strip()[:100] or None
    covers = "" if release else params.get("covers", "").strip()[:200]
    return Setting(release, template[:100], paper == "with", covers)


def _compare_url(names: Sequence[str], setting: Setting | None = None) -> str:
    query = [("models", n) for n in names] + (list(setting.query.items()) if setting else [])
    return f"{reverse('leaderboard:compare')}?{urlencode(query)}"


def _ambiguous_choices(picked: Picked) -> list[dict]:
    """Each ambiguous name with a link per match: the comparison with that model in its place."""
    out = []
    for name, matches in picked.ambiguous:
        others = [*picked.names, *(n for n, _ in picked.ambiguous if n != name)]
        out.append(
            {
                "name": name,
                "matches": [
                    {"m": m, "url": _compare_url([*others, m.name])} for m in matches[:MATCHES_SHOWN]
                ],
            }
        )
    return out


def _compare_context(params: QueryDict) -> dict:
    """The comparison of the models ``params`` names (display names or keys, as ticked on the board or
    typed with the autocomplete) on one setting (``_asked_setting``, else the one ``setting_choice``
    picks): no model yet is a hint to pick some, an unknown or ambiguous name a problem naming it, models
    with no common setting the settings each has and the nearest common one."""
    picked, problems_found = _compare_picked(params.getlist("models")[:COMPARE_NAMES_READ])
    asked = _asked_setting(params)
    choice, data = model_compare(keys=picked.keys, setting=asked) if len(picked.keys) >= 2 else (None, None)
    context: dict = {
        "picked": list(zip(picked.keys, picked.names, strict=True)),
        "unknown": picked.unknown,
        "ambiguous": _ambiguous_choices(picked),
        "choices": model_choices(),
        "problems": problems_found,
        "choice": choice,
        "data": data,
        "page_title": "Compare models",
    }
    if choice is not None:
        names = dict(zip(picked.keys, picked.names, strict=True))
        context["other_settings"] = [
            {"s": s, "url": _compare_url(picked.names, s)} for s in choice.common if s != choice.chosen
        ]
        if choice.nearest is not None:
            context["nearest_url"] = _compare_url([names[k] for k in choice.nearest_keys], choice.nearest)
            context["nearest_names"] = [names[k] for k in choice.nearest_keys]
    if data is None:
        return context
    names = [d.model.name for d in data.models]
    context["page_title"] = "Compare " + " vs ".join(names)
    context["pairs"] = [{"a": names[p.first], "b": names[p.second], "d": p.difference} for p in data.pairs]
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
    context["snippets"] = _compared_rows(data)
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
    "papers_page",
    "snippet_page",
    "snippet_prompt",
]
