"""What every leaderboard page shares: the cached, htmx-aware page.

The URL holds the whole state of a page (filters, sort, chosen run), so every view can be shared and every
control works as a plain link or GET form; with htmx (``request.htmx``) the same view returns only the
``results`` partial of its template, and the client pushes the URL.

A filterable page is ``cached_page`` plus a function from the filter form to the template's context: the
helper parses the filters (``forms.BoardFilterForm``), serves the body from the one cache layer
(``caching.serve_page``: keyed by the versions of the scopes the page declares, ETag, a shared body in a
public frame or a signed-in visitor's shell) and picks the htmx partial. Each view names its scope
(``scopes.Scope``): a board-like page the release its filter shows, a model page its model, pages across
releases (a paper's, a snippet's, the ablation's snippet statistics) every release. A page that shows the
runs its filters keep is one line of a table (``FilteredPage``, ``filtered_view``). Adding a page means a
selector, a view of a few lines and a template. The largest parts (a model's verdict grid, a paper's
model x snippet heatmap) are loaded lazily by htmx (``hx-trigger="revealed"``) once they pass
``LAZY_CELLS`` cells; their placeholder links to the full page.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.http import HttpRequest, HttpResponse, QueryDict
from django.views.decorators.http import require_safe

from leaderboard import caching
from leaderboard.forms import FILTER_PARAMS, BoardFilterForm
from leaderboard.scopes import Scope

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


def _board_scope(_request: HttpRequest) -> Scope | None:
    return None


@dataclass(frozen=True)
class FilteredPage:
    """One page over the runs the filters keep, as ``cached_page`` serves it: its name in the cache, its
    template and title, ``build`` (the filter form and query -> the template's context), the query
    parameters it reads, and ``scope`` (the request -> what the page shows; None: the release its
    ``release`` filter names, as the board)."""

    page: str
    template: str
    title: str
    build: Callable[[BoardFilterForm, QueryDict], dict]
    params: tuple[str, ...] = FILTER_PARAMS
    scope: Callable[[HttpRequest], Scope | None] = _board_scope


def filtered_view(spec: FilteredPage) -> Callable[[HttpRequest], HttpResponse]:
    """The view of ``spec``: ``cached_page`` with the page's table entry (GET and HEAD only)."""

    @require_safe
    def view(request: HttpRequest) -> HttpResponse:
        return cached_page(
            request, page=spec.page, template=spec.template, title=spec.title, build=spec.build,
            scope=spec.scope(request), params=spec.params,
        )  # fmt: skip

    view.__name__ = view.__qualname__ = f"{spec.page}_page"
    view.__doc__ = f"The {spec.title.lower()} page (``{spec.template}``)."
    return view
