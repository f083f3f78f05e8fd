"""A model's page (its runs, scores by paper, verdict grid) and the model search."""

from __future__ import annotations

from collections import defaultdict

from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_safe

from contributions.params import optional_id
from evaluation.models import EvaluationRun, LanguageModel
from leaderboard import caching
from leaderboard.charts import svg
from leaderboard.forms import CONTAMINATION_LABELS
from leaderboard.links import (
    SnippetLinks,
    csv_url,
    model_url,
    query_with,
    run_results_csv_url,
)
from leaderboard.presenters import (
    model_charts,
    model_dated_chart,
    verbatim_rule,
)
from leaderboard.scopes import Scope
from leaderboard.selectors.compare import Setting
from leaderboard.selectors.models import (
    SEARCH_LIMIT,
    ModelDetail,
    failed_snippets,
    model_detail,
    verdict_state,
)
from leaderboard.selectors.models import model_search as find_models
from leaderboard.views import pages
from leaderboard.views.pages import cached_page


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
    grid_inline = params.get("grid") == "all" or len(detail.verdict_grid) <= pages.LAZY_CELLS
    heat, error_chart, cutoff_chart = model_charts(detail)
    run_id = detail.run.run_id if detail.run else None
    return {
        "dated_chart": model_dated_chart(detail),
        "page_title": name,
        "d": detail,
        "run_groups": _run_groups(detail),
        "heatmap": svg.skippable(heat),
        "error_chart": svg.skippable(error_chart),
        "cutoff_chart": svg.skippable(cutoff_chart) if cutoff_chart else "",
        "grid": _grid(detail) if grid_inline else {},
        "grid_url": "" if grid_inline else query_with(params, grid="all"),
        "failed": _failed_rows(run_id, detail) if run_id else [],
        "runs_csv_url": f"{reverse('api-runs')}?{urlencode({'model': detail.model.key, 'format': 'csv'})}",
        "results_csv_url": run_results_csv_url(run_id) if run_id else "",
        "compare_url": f"{reverse('leaderboard:compare')}?{urlencode({'models': detail.model.key})}",
        "csv_url": csv_url("papers", QueryDict()),
        "modes": [(m, CONTAMINATION_LABELS[m], detail.scores.get(m)) for m in CONTAMINATION_LABELS],
        "verbatim_rule": verbatim_rule(),
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


@require_safe
def model_search(request: HttpRequest) -> HttpResponse:
    """Models by key, name or developer: the board's search box asks for the ``matches`` partial with
    htmx; without JavaScript the same GET form lands on this page."""
    query = request.GET.get("q", "")[:100]
    found = find_models(query=query)
    context = {
        "q": query.strip(),
        "found": [{"m": m, "url": model_url(m.key)} for m in found],
        "limit": SEARCH_LIMIT,
    }
    template = "leaderboard/model_search.html" + ("#matches" if caching.is_htmx(request) else "")
    return render(request, template, context)
