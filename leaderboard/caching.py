"""The leaderboard's one cache layer: the HTML pages and the read API's board tables.

A response body is a pure function of the board version (``selectors.board_version``), the endpoint (a
page or API table name) and its arguments, the request's known query parameters (``normalised_query``:
those only, sorted) and the variant (htmx fragment or whole page; json or csv). ``entry_digest`` digests
exactly that; it is both the cache key of the stored ``Body`` and the ETag, so:

- a repeat request costs one query (the version) and no rendering;
- a conditional GET whose ETag matches gets a 304 before anything is read;
- a new result changes the version, hence every key: nothing needs invalidating;
- a bad query fails while the body is built (400, or a page that says why), and a failure is never stored.

Pages (``serve_page``) are private to a visitor: a plain visitor (no session or messages cookie) gets the
body inside a cached frame of the shell with its own CSRF token filled in, anyone else gets the shell
rendered for them (``leaderboard/_shell.html``: CSRF token, messages, nav). API tables (``serve_api``) are
public (no per-visitor part); the browsable API is a page with the visitor's token and is not stored.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from django.conf import settings
from django.contrib.messages.storage.cookie import CookieStorage
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, QueryDict
from django.middleware.csrf import get_token
from django.shortcuts import render
from django.template import RequestContext, engines
from django.template.loader import render_to_string
from django.utils.cache import get_conditional_response, patch_cache_control, patch_vary_headers
from django.utils.safestring import mark_safe
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard import selectors

#: seconds a body stays stored; keys carry the board version, so this bounds memory and how long a change
#: the version does not see (a run cancelled without re-aggregation) can lag
TTL_S = 600
#: browsers and clients may reuse a response this long without asking (then they revalidate: ETag, 304)
BROWSER_MAX_AGE_S = 10
#: the API formats that are stored; any other (the browsable API) is rendered per visitor
STORED_FORMATS = ("json", "csv")
#: stands for the visitor's CSRF token in a cached frame (NUL: never part of rendered template text)
TOKEN_MARK = "\x00csrf-token\x00"
_BODY_MARK = "\x00page-body\x00"
_SHELL = "leaderboard/_shell.html"


@dataclass(frozen=True)
class Body:
    """A stored response body, as bytes so that a hit neither decodes nor encodes it.

    Pages: ``title`` for the shell, ``fragment`` (an htmx partial, sent as is) and ``frame``, the shell for
    a plain visitor split where the body goes, with ``TOKEN_MARK`` where the CSRF token goes (added on the
    first plain visit). API tables: ``content_type`` and the ``headers`` the renderer set (the CSV's
    Content-Disposition)."""

    content: bytes
    title: str = ""
    fragment: bool = False
    frame: tuple[bytes, bytes] | None = None
    content_type: str = "text/html; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = ()


def is_htmx(request: HttpRequest) -> bool:
    """True for an htmx request that wants a fragment (a history restore wants the whole page)."""
    return bool(getattr(request, "htmx", False)) and not request.htmx.history_restore_request


def normalised_query(params: QueryDict, keys: Iterable[str]) -> QueryDict:
    """``params`` restricted to ``keys`` (every value kept), in sorted key order: equivalent URLs share one
    entry and unknown parameters (tracking tags and the like) can neither multiply entries nor leak into
    a page's links."""
    query = QueryDict(mutable=True)
    for key in sorted(set(keys) & set(params)):
        query.setlist(key, params.getlist(key))
    return query


def entry_digest(*, endpoint: str, args: tuple, query: QueryDict, variant: str) -> str:
    """The cache key and ETag of one body: a stable digest (not ``hash()``, which differs between
    processes, so a shared cache shares entries) of everything the body depends on. One query."""
    raw = repr((selectors.board_version(), endpoint, args, query.urlencode(), variant))
    return hashlib.sha256(raw.encode()).hexdigest()[:40]


def _stored(digest: str, build: Callable[[], Body]) -> Body:
    body = cache.get(_key(digest))
    if body is None:
        body = build()
        cache.set(_key(digest), body, TTL_S)
    return body


def _key(digest: str) -> str:
    return f"leaderboard:body:{digest}"


# --- pages ---------------------------------------------------------------------------------------------


def render_body(template: str, context: dict, *, title: str, partial: str = "") -> Body:
    """``template`` (or its ``partial``) rendered to a storable body. Body templates read only their
    context, never the request, which is what makes them shareable between visitors."""
    name = f"{template}#{partial}" if partial else template
    return Body(content=render_to_string(name, context).encode(), title=title, fragment=bool(partial))


def serve_page(
    request: HttpRequest,
    *,
    page: str,
    args: tuple,
    keys: Iterable[str],
    fragment: bool,
    build: Callable[[QueryDict], Body],
) -> HttpResponse:
    """Answer a page GET: 304 when the client's ETag matches, else the stored body (built by ``build``
    from the normalised query on a miss) in the shell or, for a fragment, alone. ``build`` may raise
    ``Http404`` (nothing is stored then)."""
    query = normalised_query(request.GET, keys)
    digest = entry_digest(endpoint=page, args=args, query=query, variant="fragment" if fragment else "page")
    etag = f'W/"{digest}"'
    not_modified = get_conditional_response(request, etag=etag)
    if not_modified is not None:
        return _page_headers(not_modified, etag)
    body = _stored(digest, lambda: build(query))
    if body.fragment:
        response = HttpResponse(body.content)
    elif _plain_visitor(request):
        if body.frame is None:
            body = replace(body, frame=_frame(request, body.title))
            cache.set(_key(digest), body, TTL_S)
        token = get_token(request).encode()
        head, tail = (part.replace(TOKEN_MARK.encode(), token) for part in body.frame)
        response = HttpResponse(b"".join((head, body.content, tail)))
    else:
        context = {"body": mark_safe(body.content.decode()), "page_title": body.title}
        response = render(request, _SHELL, context)
    patch_vary_headers(response, ("Cookie",))
    return _page_headers(response, etag)


def _page_headers(response: HttpResponse, etag: str) -> HttpResponse:
    # Weak: the shell around a stored body carries a per-visitor CSRF token. Private: for the same reason a
    # shared cache must not store the page (another visitor would get this one's token).
    response["ETag"] = etag
    patch_cache_control(response, private=True, max_age=BROWSER_MAX_AGE_S)
    patch_vary_headers(response, ("HX-Request",))
    return response


def _plain_visitor(request: HttpRequest) -> bool:
    """True when the shell can only differ from another plain visit's by the CSRF token: no session
    cookie (so an anonymous user and no messages stored in the session) and no messages cookie."""
    return (
        settings.SESSION_COOKIE_NAME not in request.COOKIES
        and CookieStorage.cookie_name not in request.COOKIES
    )


def _frame(request: HttpRequest, title: str) -> tuple[bytes, bytes]:
    """The shell for a plain visitor, split around its body, with ``TOKEN_MARK`` for the CSRF token."""
    template = engines["django"].get_template(_SHELL).template
    context = RequestContext(request, {"body": _BODY_MARK, "page_title": title})
    # The top layer of a RequestContext overrides the context processors' (the csrf one included).
    context["csrf_token"] = TOKEN_MARK
    head, tail = template.render(context).split(_BODY_MARK)
    return head.encode(), tail.encode()


# --- API tables ----------------------------------------------------------------------------------------


def serve_api(
    view: APIView,
    request: Request,
    *,
    endpoint: str,
    args: tuple = (),
    keys: Iterable[str],
    build: Callable[[], Any],
) -> HttpResponse:
    """Answer an API GET whose data ``build()`` returns (parsing the query there, so a bad one raises
    DRF's ``ValidationError`` -> 400, never stored). JSON and CSV are stored as rendered, with a strong
    ETag (the bytes are the same for every client) and public caching; the browsable API is rendered
    per visitor and private."""
    fmt = request.accepted_renderer.format
    if fmt not in STORED_FORMATS:
        response = Response(build())
        patch_cache_control(response, private=True, max_age=BROWSER_MAX_AGE_S)
        return response
    query = normalised_query(request.query_params, keys)
    digest = entry_digest(endpoint=endpoint, args=args, query=query, variant=fmt)
    etag = f'"{digest}"'
    response = get_conditional_response(request._request, etag=etag)
    if response is None:
        body = _stored(digest, lambda: _rendered(view, request, build()))
        response = HttpResponse(body.content, content_type=body.content_type)
        for name, value in body.headers:
            response[name] = value
    response["ETag"] = etag
    patch_cache_control(response, public=True, max_age=BROWSER_MAX_AGE_S)
    patch_vary_headers(response, ("Accept",))
    return response


def _rendered(view: APIView, request: Request, data: Any) -> Body:
    """``data`` rendered by the negotiated renderer, as DRF would answer it."""
    response = view.finalize_response(request, Response(data))
    response.render()
    headers = tuple((h, response[h]) for h in ("Content-Disposition",) if h in response)
    return Body(content=response.content, content_type=response["Content-Type"], headers=headers)
