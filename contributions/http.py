"""Generic HTTP helpers every app's views and caches use: who is a plain visitor, and a query reduced to the
parameters an endpoint knows. The lowest Django app holds them, so that evaluation and the leaderboard
import them downwards."""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.contrib.messages.storage.cookie import CookieStorage
from django.http import HttpRequest, QueryDict


def plain_visitor(request: HttpRequest) -> bool:
    """True when nothing in the request's cookies is the visitor's: no session cookie (so anonymous, no
    messages stored in the session) and no messages cookie."""
    return (
        settings.SESSION_COOKIE_NAME not in request.COOKIES
        and CookieStorage.cookie_name not in request.COOKIES
    )


def plain_request(request: HttpRequest) -> bool:
    """True for a visitor who is nobody in particular: a plain visitor without credentials either."""
    return plain_visitor(request) and "HTTP_AUTHORIZATION" not in request.META


def normalised_query(params: QueryDict, keys: Iterable[str]) -> QueryDict:
    """``params`` restricted to ``keys`` (every value kept), in sorted key order: equivalent URLs share one
    entry and unknown parameters (tracking tags and the like) can neither multiply entries nor leak into
    a page's links."""
    query = QueryDict(mutable=True)
    for name in sorted(set(keys) & set(params)):
        query.setlist(name, params.getlist(name))
    return query
