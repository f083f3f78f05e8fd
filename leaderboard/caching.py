"""The leaderboard's one cache layer: the HTML pages and the read API's board tables.

A response body is a pure function of the versions of the scopes its endpoint declares
(``scopes.Scope``: the catalogue, and the releases or models it shows), the endpoint (a page or API
table name) and its arguments, the request's known query parameters (``normalised_query``: those only,
sorted) and the variant (htmx fragment or whole page; json or csv). ``entry_digest`` digests exactly that;
it is both the cache key of the stored ``Body`` and the ETag, so:

- a repeat request costs one query (the versions) and no rendering;
- a conditional GET whose ETag matches gets a 304 before anything is read;
- a write moves the versions of the scopes it changes (``scopes.scopes_bump``, in its transaction), hence
  the keys of the pages that show it, and only those: nothing needs invalidating, and a run of one
  release leaves every other release's and model's pages stored;
- a bad query fails while the body is built (400, or a page that says why), and a failure is never stored.

The store is Django's default cache: per process in the embedded default, shared by every web process
in production (``RCB_CACHE_URL``, Redis); keys and ETags are stable digests, so processes share entries.
With a shared store, each process also keeps the bodies it served last in its own memory
(``settings.RCB_PAGE_MEMORY_MB``, least recently used first out): a body never changes under its digest,
so the copy needs no invalidation, and a hit reads neither Redis nor unpickles (a 2.8 MB API table took a
round trip and a copy per request).

While a release is under evaluation its scopes move with every verdict, so each poll of its board would
miss and wait for a rebuild. A plain visitor (pages: no session or messages cookie; API tables: neither
an ``Authorization`` header) is never made to wait for one: on a miss, when the store holds an earlier body
of the same slot (the same endpoint, arguments, query and variant under older versions: ``slot_key``), the
request is answered with that body (its own ETag, ``max-age=0, must-revalidate``) and builds the new one
once its response is sent (``evaluation.live_cache.after_response``, the shared copies' mechanism), at most
one process per body (``building_key``, taken with ``cache.add``). Every other request is served the
previous body meanwhile, for at most ``settings.RCB_BOARD_STALE_S`` seconds after the build started; a
request past that bound (a build that is slow, or whose process died) builds its own answer. The rebuild
reads the stored read-model rows as any build does, so once it is stored every request shows what a whole
rebuild gives. Signed-in visitors and token clients always get the body of the current versions.
``RCB_BOARD_STALE_S=0`` turns the previous bodies off.

Pages (``serve_page``): a plain visitor (no session or messages cookie: anonymous, nothing to tell) gets
the body inside a stored frame of the shell that holds nothing of the visitor's, no CSRF token (these pages
have no POST form; the page a form is on renders its own token) and no cookie is set, so the response is
public (``Cache-Control: public`` with ``s-maxage``: a CDN or the reverse proxy may serve it to anyone).
Anyone else gets the shell rendered for them (``leaderboard/_shell.html``: CSRF token, messages, nav),
privately. API tables (``serve_api``) are public; the browsable API is a page with the visitor's token and
is not stored. A 304 carries the same caching headers as the 200 it stands for.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from cachetools import LRUCache
from django.conf import settings
from django.core.cache import cache
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.template import RequestContext, engines
from django.template.loader import render_to_string
from django.utils.cache import get_conditional_response, patch_cache_control, patch_vary_headers
from django.utils.safestring import mark_safe
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from contributions.http import normalised_query, plain_request, plain_visitor
from evaluation.live_cache import after_response
from leaderboard.scopes import Scope

logger = logging.getLogger(__name__)

#: seconds a body stays stored; keys carry the scopes' versions, so this only bounds memory
TTL_S = 600
#: browsers and clients may reuse a response this long without asking (then they revalidate: ETag, 304);
#: with ``SHARED_MAX_AGE_S``, how long a new result can take to show (issue 21: within 10 s)
BROWSER_MAX_AGE_S = 5
#: a shared cache (CDN, reverse proxy) may serve a public response this long without asking
SHARED_MAX_AGE_S = 5
#: the API formats that are stored; any other (the browsable API) is rendered per visitor
STORED_FORMATS = ("json", "csv")
#: at most this long one process holds a body's build after a response (one that died frees it then)
BUILD_LOCK_S = 30
#: the clock of the staleness bound (the tests move it)
clock: Callable[[], float] = time.time
_BODY_MARK = "\x00page-body\x00"
_SHELL = "leaderboard/_shell.html"


@dataclass(frozen=True)
class Body:
    """A stored response body, as bytes so that a hit neither decodes nor encodes it.

    Pages: ``title`` for the shell, ``fragment`` (an htmx partial, sent as is) and ``frame``, the shell for
    a plain visitor split where the body goes (added on the first plain visit). API tables: ``content_type`` and the ``headers`` the renderer set (the CSV's
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


def entry_digest(*, scope: Scope, endpoint: str, args: tuple, query: QueryDict, variant: str) -> str:
    """The cache key and ETag of one body: a stable digest (not ``hash()``, which differs between
    processes, so a shared cache shares entries) of everything the body depends on. One query."""
    raw = repr((scope.version(), endpoint, args, query.urlencode(), variant))
    return hashlib.sha256(raw.encode()).hexdigest()[:40]


class _Memory:
    """This process's copies of stored bodies by digest, at most ``max_bytes`` of content, the least
    recently used dropped first; thread-safe (``runserver`` serves requests on threads)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._bodies: LRUCache[str, Body] = LRUCache(maxsize=max(max_bytes, 1), getsizeof=_size)
        self._lock = threading.Lock()

    def get(self, digest: str) -> Body | None:
        if not self.max_bytes:
            return None
        with self._lock:
            return self._bodies.get(digest)

    def put(self, digest: str, body: Body) -> None:
        if _size(body) > self.max_bytes:  # also: kept off (0)
            return
        with self._lock:
            self._bodies[digest] = body


def _size(body: Body) -> int:
    return len(body.content) + sum(map(len, body.frame or ()))


_memory: _Memory | None = None


def memory() -> _Memory:
    """This process's copies (see the module docstring), sized by ``settings.RCB_PAGE_MEMORY_MB``."""
    global _memory
    if _memory is None:
        _memory = _Memory(int(settings.RCB_PAGE_MEMORY_MB * 1024 * 1024))
    return _memory


@receiver(setting_changed)
def _resize_memory(setting: str, **kwargs: Any) -> None:
    global _memory
    if setting in ("RCB_PAGE_MEMORY_MB", "CACHES"):
        _memory = None


def _kept(digest: str) -> Body | None:
    """The body stored under ``digest`` (this process's copy first), or None."""
    body = memory().get(digest)
    if body is None:
        body = cache.get(_key(digest))
        if body is not None:
            memory().put(digest, body)
    return body


@dataclass(frozen=True)
class Latest:
    """The newest body stored for one slot (an endpoint, its arguments, query and variant, whatever the
    versions): its digest and when it was built."""

    digest: str
    built_at: float


def slot_key(*, endpoint: str, args: tuple, query: QueryDict, variant: str) -> str:
    """The store's key of the newest body of a slot: the digest's inputs without the scopes' versions."""
    raw = repr((endpoint, args, query.urlencode(), variant))
    return f"leaderboard:latest:{hashlib.sha256(raw.encode()).hexdigest()[:40]}"


def building_key(digest: str) -> str:
    """The store's key of the lock on building the body ``digest`` after a response (its value: when the
    build started)."""
    return f"leaderboard:building:{digest}"


def _served(*, digest: str, slot: str, plain: bool, build: Callable[[], Body]) -> tuple[str, Body]:
    """The body to answer with and its digest: the one under ``digest``, built on a miss; or, for a plain
    visitor while the scopes move (``settings.RCB_BOARD_STALE_S`` > 0; the module docstring), the slot's
    previous body while one process builds the new one after its response."""
    body = _kept(digest)
    if body is not None:
        return digest, body
    stale_s = float(settings.RCB_BOARD_STALE_S)
    latest = cache.get(slot) if plain and stale_s > 0 else None
    previous = _kept(latest.digest) if latest is not None and latest.digest != digest else None
    if previous is not None:
        lock, now = building_key(digest), clock()
        if cache.add(lock, now, BUILD_LOCK_S):
            after_response(lambda: _rebuild(digest, slot, build, lock))
            return latest.digest, previous
        started = cache.get(lock)
        if started is not None and now - started < stale_s:
            return latest.digest, previous
    body = build()
    _store(digest, body, slot=slot)
    return digest, body


def _rebuild(digest: str, slot: str, build: Callable[[], Body], lock: str) -> None:
    """Build and store the body ``digest`` once a response is sent. A failure is logged and keeps the lock,
    marked as started long ago, for as long as a build may take: until then every request builds its own
    answer and shows the failure, none is served the previous body."""
    try:
        _store(digest, build(), slot=slot)
    except Exception:
        logger.exception("rebuilding the leaderboard body %s failed", digest)
        cache.set(lock, 0.0, BUILD_LOCK_S)
    else:
        cache.delete(lock)


def _store(digest: str, body: Body, *, slot: str = "") -> None:
    cache.set(_key(digest), body, TTL_S)
    memory().put(digest, body)
    if slot:
        cache.set(slot, Latest(digest, clock()), TTL_S)


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
    scope: Scope,
    build: Callable[[QueryDict], Body],
) -> HttpResponse:
    """Answer a page GET: 304 when the client's ETag matches, else the stored body (built by ``build``
    from the normalised query on a miss) in the shell or, for a fragment, alone; public for a plain
    visitor, private otherwise. ``scope``: what the body shows. ``build`` may raise ``Http404`` (nothing
    is stored then)."""
    query = normalised_query(request.GET, keys)
    variant = "fragment" if fragment else "page"
    digest = entry_digest(scope=scope, endpoint=page, args=args, query=query, variant=variant)
    etag = f'W/"{digest}"'
    plain = plain_visitor(request)
    not_modified = get_conditional_response(request, etag=etag)
    if not_modified is not None:
        return _page_headers(not_modified, etag, public=plain)
    slot = slot_key(endpoint=page, args=args, query=query, variant=variant)
    served, body = _served(digest=digest, slot=slot, plain=plain, build=lambda: build(query))
    if served != digest:
        etag = f'W/"{served}"'
        not_modified = get_conditional_response(request, etag=etag)
        if not_modified is not None:
            return _page_headers(not_modified, etag, public=plain, stale=True)
    if body.fragment:
        response = HttpResponse(body.content)
    elif plain:
        if body.frame is None:
            body = replace(body, frame=_frame(request, body.title))
            _store(served, body)
        head, tail = body.frame
        response = HttpResponse(b"".join((head, body.content, tail)))
    else:
        context = {"body": mark_safe(body.content.decode()), "page_title": body.title}
        response = render(request, _SHELL, context)
    return _page_headers(response, etag, public=plain, stale=served != digest)


def _page_headers(response: HttpResponse, etag: str, *, public: bool, stale: bool = False) -> HttpResponse:
    # Weak: a signed-in visitor's shell around the stored body is rendered for them. Vary: the cookies
    # decide between the public frame and a private shell, HX-Request between a fragment and a page.
    response["ETag"] = etag
    if stale:
        # The previous body while the new one is built: nobody may reuse it without asking again.
        patch_cache_control(response, public=True, max_age=0, must_revalidate=True)
    elif public:
        patch_cache_control(response, public=True, max_age=BROWSER_MAX_AGE_S, s_maxage=SHARED_MAX_AGE_S)
    else:
        patch_cache_control(response, private=True, max_age=BROWSER_MAX_AGE_S)
    patch_vary_headers(response, ("Cookie", "HX-Request"))
    return response


def _frame(request: HttpRequest, title: str) -> tuple[bytes, bytes]:
    """The shell for a plain visitor, split around its body: no CSRF token (the pages served here have
    no POST form), so nothing of the visitor's and no cookie."""
    template = engines["django"].get_template(_SHELL).template
    context = RequestContext(request, {"body": _BODY_MARK, "page_title": title})
    # The top layer of a RequestContext overrides the context processors' (the csrf one included): an
    # empty token leaves the token out of the shell and never creates one (no Set-Cookie).
    context["csrf_token"] = ""
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
    scope: Scope,
    build: Callable[[], Any],
) -> HttpResponse:
    """Answer an API GET whose data ``build()`` returns (parsing the query there, so a bad one raises
    DRF's ``ValidationError`` -> 400, never stored). ``scope``: what the data shows. JSON and CSV are
    stored as rendered, with a strong ETag (the bytes are the same for every client) and public caching,
    a shared cache included; the browsable API is rendered per visitor and private."""
    fmt = request.accepted_renderer.format
    if fmt not in STORED_FORMATS:
        response = Response(build())
        patch_cache_control(response, private=True, max_age=BROWSER_MAX_AGE_S)
        return response
    query = normalised_query(request.query_params, keys)
    digest = entry_digest(scope=scope, endpoint=endpoint, args=args, query=query, variant=fmt)
    etag = f'"{digest}"'
    served = digest
    response = get_conditional_response(request._request, etag=etag)
    if response is None:
        slot = slot_key(endpoint=endpoint, args=args, query=query, variant=fmt)
        served, body = _served(
            digest=digest,
            slot=slot,
            plain=plain_request(request._request),
            build=lambda: _rendered(view, request, build()),
        )
        etag = f'"{served}"'
        if served != digest:
            response = get_conditional_response(request._request, etag=etag)
        if response is None:
            response = HttpResponse(body.content, content_type=body.content_type)
            for name, value in body.headers:
                response[name] = value
    response["ETag"] = etag
    if served != digest:
        patch_cache_control(response, public=True, max_age=0, must_revalidate=True)
    else:
        patch_cache_control(response, public=True, max_age=BROWSER_MAX_AGE_S, s_maxage=SHARED_MAX_AGE_S)
    patch_vary_headers(response, ("Accept",))
    return response


def _rendered(view: APIView, request: Request, data: Any) -> Body:
    """``data`` rendered by the negotiated renderer, as DRF would answer it."""
    response = view.finalize_response(request, Response(data))
    response.render()
    headers = tuple((h, response[h]) for h in ("Content-Disposition",) if h in response)
    return Body(content=response.content, content_type=response["Content-Type"], headers=headers)
