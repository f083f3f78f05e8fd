"""The generic HTTP helpers the evaluation and leaderboard caches share (``contributions.http``)."""

from __future__ import annotations

from django.conf import settings
from django.test import RequestFactory

from contributions.http import normalised_query, plain_request, plain_visitor


def test_a_visitor_with_a_session_or_credentials_is_not_plain():
    factory = RequestFactory()
    anonymous = factory.get("/")
    assert plain_visitor(anonymous) and plain_request(anonymous)
    signed_in = factory.get("/")
    signed_in.COOKIES[settings.SESSION_COOKIE_NAME] = "abc"
    assert not plain_visitor(signed_in) and not plain_request(signed_in)
    with_token = factory.get("/", HTTP_AUTHORIZATION="Token abc")
    assert plain_visitor(with_token) and not plain_request(with_token)


def test_a_query_keeps_only_the_known_keys_in_sorted_order_with_every_value():
    params = RequestFactory().get("/?utm_source=x&status=done&model=b&model=a").GET
    assert normalised_query(params, ["status", "model"]).urlencode() == "model=b&model=a&status=done"
