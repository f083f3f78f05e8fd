"""The papers of a release and a paper's page (its snippet tree, statistics and model x snippet heatmap)."""

from __future__ import annotations

from dataclasses import replace

from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.views.decorators.http import require_safe

from contributions.models import Paper, Release
from contributions.selectors import catalogue as contribution_selectors
from contributions.selectors import releases as contribution_releases
from leaderboard.charts import svg
from leaderboard.forms import FILTER_PARAMS, BoardFilterForm
from leaderboard.links import (
    csv_url,
    query_with,
    snippet_url,
)
from leaderboard.presenters import (
    paper_heatmap,
    paper_heatmap_spec,
    sort_label,
    stat_headers,
)
from leaderboard.scopes import Scope
from leaderboard.selectors.papers import PaperDetail, SnippetNode, paper_detail
from leaderboard.snippet_statistics import (
    MIN_MODELS,
    StatRow,
    parse_sort,
    sort_rows,
)
from leaderboard.views import pages
from leaderboard.views.pages import cached_page

SNIPPET_SORT = "snippet_sort"


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
    lazy = len(detail.matrix) * len(detail.snippets) > pages.LAZY_CELLS and params.get("heatmap") != "all"
    return {
        "page_title": f"{detail.key}: {detail.title}",
        "d": detail,
        "heatmap": "" if lazy else svg.skippable(paper_heatmap(detail)),
        "heatmap_spec": None if lazy or not detail.matrix else paper_heatmap_spec(detail),
        "heatmap_url": query_with(params, heatmap="all") if lazy else "",
        "contributors": contribution_selectors.paper_contributors(paper_key=detail.key),
        **_paper_tree_context(detail),
        **_paper_stats_context(detail, params),
    }


#: the paper page's parameter that sorts its table of snippet statistics (the board's ``sort`` is the
#: filters' and would change the runs' order, not the snippets')


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
        "csv_url": csv_url("snippets", QueryDict(), paper=detail.key),
        # Every snippet's lines, as the scores weigh them and /papers/ counts them (one source of counts).
        "total_lines": sum(n.lines for n in detail.snippets),
    }
