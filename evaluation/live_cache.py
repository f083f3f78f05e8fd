"""Shared copies of what changes by the second: a run's page and the runs API (issue 21).

A run's page and its API answers change with every lease, verdict, re-judge and event of the run, and
with time alone (its ETA and throughput, the queue ahead of it, which other runs move): no version can key
them, so they are not in the board's cache layer (``leaderboard.caching``), where a body lives as long as
what it shows. They are served instead at a stated, bounded age, as the board's ``s-maxage`` already lets
a CDN do:

- Only to a plain visitor: no session or messages cookie and no ``Authorization`` header, so anonymous,
  with nothing to tell and no token. Anyone else (the run's requester, maintainers, token clients) gets the
  answer built for them, as before.
- One copy per site, endpoint, arguments, the endpoint's own query parameters (``keys``, sorted; others
  neither multiply copies nor reach them) and variant (an htmx part, a format), in Django's default cache:
  per process in the embedded default, shared by every web process with ``RCB_CACHE_URL``.
- A copy younger than ``RCB_LIVE_FRESH_S`` is served as it is.
- An older one, younger than ``RCB_LIVE_FRESH_S + RCB_LIVE_STALE_S``, is served too, and the process that
  serves it builds the next copy once its response is sent (Django's ``request_finished``), at most one
  process per copy at a time (a lock taken with ``cache.add``): nobody waits for a build a copy can stand
  for, and a copy is rebuilt at most once per ``RCB_LIVE_FRESH_S`` however many read it.
- Older than that, or none: the request builds its answer, and a 200 is stored.
- A shared answer says its age (``Age``) and may be reused for ``max-age=RCB_LIVE_FRESH_S`` by anyone;
  a copy past its freshness goes out with ``Age`` over ``max-age``, so no downstream cache reuses it.

``RCB_LIVE_FRESH_S=0`` turns the copies off (every request builds its answer).
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.core.signals import request_finished
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_cache_control, patch_vary_headers

from contributions.http import normalised_query, plain_request

logger = logging.getLogger(__name__)

#: the headers a copy keeps besides its body
_KEPT_HEADERS = ("Content-Type", "Content-Disposition")
#: at most this long one process holds a copy's rebuild (a process that died while building frees it then)
_BUILD_LOCK_S = 30
#: a body larger than this is not stored (an export of a whole run is asked for once, not polled)
MAX_STORED_BYTES = 2 * 1024 * 1024
#: the clock of the copies' ages (the tests move it)
clock: Callable[[], float] = time.time


@dataclass(frozen=True)
class Copy:
    """A stored answer: its body, the headers that describe the body, and when it was built."""

    content: bytes
    headers: tuple[tuple[str, str], ...]
    built_at: float


def live_response(
    request: HttpRequest,
    *,
    endpoint: str,
    args: tuple = (),
    keys: Iterable[str] = (),
    variant: str = "",
    vary: Iterable[str] = (),
    build: Callable[[], HttpResponse],
) -> HttpResponse:
    """Answer a GET from the shared copy of ``endpoint`` for a plain visitor (see the module docstring), or
    with ``build()``: the response a visitor gets without copies, rendered. ``vary``: the request headers
    the answer depends on besides the cookies and credentials (``HX-Request``, ``Accept``)."""
    fresh_s = float(settings.RCB_LIVE_FRESH_S)
    if not fresh_s or not plain_request(request):
        return build()
    key = copy_key(
        request,
        endpoint=endpoint,
        args=args,
        query=normalised_query(request.GET, keys).urlencode(),
        variant=variant,
    )
    now = clock()
    copy = cache.get(key)
    if copy is not None and now - copy.built_at >= fresh_s + float(settings.RCB_LIVE_STALE_S):
        copy = None  # past the bound, whatever the store's own expiry (whole seconds, its own clock)
    if copy is not None and now - copy.built_at >= fresh_s and cache.add(lock_key(key), 1, _BUILD_LOCK_S):
        after_response(lambda: _rebuild(key, build))
    if copy is None:
        response = build()
        copy = _store(key, response) if response.status_code == 200 else None
        if copy is None:
            return response
    return _served(copy, now=now, fresh_s=fresh_s, vary=vary)


def copy_key(request: HttpRequest, *, endpoint: str, args: tuple, query: str, variant: str) -> str:
    """The store's key of one copy. The site is part of it: the API's answers hold absolute URLs built from
    the request's host."""
    raw = repr((request.scheme, request.get_host(), endpoint, args, query, variant))
    return f"live:{hashlib.sha256(raw.encode()).hexdigest()[:40]}"


def lock_key(key: str) -> str:
    """The store's key of the lock on rebuilding the copy under ``key``."""
    return f"{key}:building"


def _store(key: str, response: HttpResponse) -> Copy | None:
    """``response`` stored as the copy under ``key`` (None when it is too large to keep)."""
    content = response.content
    if len(content) > MAX_STORED_BYTES:
        return None
    headers = tuple((name, response[name]) for name in _KEPT_HEADERS if name in response)
    copy = Copy(content=content, headers=headers, built_at=clock())
    cache.set(key, copy, timeout=math.ceil(settings.RCB_LIVE_FRESH_S + settings.RCB_LIVE_STALE_S))
    return copy


def _served(copy: Copy, *, now: float, fresh_s: float, vary: Iterable[str]) -> HttpResponse:
    response = HttpResponse(copy.content)
    for name, value in copy.headers:
        response[name] = value
    response["Age"] = str(max(0, int(now - copy.built_at)))
    patch_cache_control(response, public=True, max_age=int(fresh_s))
    patch_vary_headers(response, ("Cookie", "Authorization", *vary))
    return response


def _rebuild(key: str, build: Callable[[], HttpResponse]) -> None:
    """Build the next copy of ``key`` (after a response was sent); a failure is logged and drops the copy,
    so the next request builds its own answer and shows the failure."""
    try:
        response = build()
        if response.status_code == 200:
            _store(key, response)
        else:
            cache.delete(key)
    except Exception:
        logger.exception("rebuilding the shared copy %s failed", key)
        cache.delete(key)
    finally:
        cache.delete(lock_key(key))


# --- work after the response --------------------------------------------------------------------------

_pending = threading.local()


def after_response(work: Callable[[], None]) -> None:
    """Run ``work`` on this thread once the current response is sent (``request_finished``): the
    leaderboard's cache layer rebuilds a body of a release under evaluation this way too."""
    if not hasattr(_pending, "work"):
        _pending.work = []
    _pending.work.append(work)


@receiver(request_finished)
def _run_after_response(**kwargs: Any) -> None:
    work, _pending.work = getattr(_pending, "work", []), []
    for item in work:
        item()
