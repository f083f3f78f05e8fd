"""Issue 37: a poll of a release under evaluation never waits for a rebuild (``leaderboard/caching.py``).

With ``RCB_BOARD_STALE_S`` on (the portal's default; the suite turns it off elsewhere), a plain visitor whose
request misses the store because a verdict moved the release's scope gets the slot's previous body at once,
with its own ETag and ``max-age=0``; the request builds the new body once its response is sent, one process
per body, and the next request gets it. Past the bound a request builds its own answer. Signed-in visitors
and token clients always get the current body, and the rebuilt body is the one a whole rebuild gives."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from evaluation.services.runs import run_rerun
from leaderboard import caching
from leaderboard.services import leaderboard_rebuild
from tests.factories import UserFactory, api_token_for
from tests.leaderboard.test_cache_scopes import World

pytestmark = pytest.mark.django_db

BOARD_API = "/api/v1/leaderboard/?release=rel-a"
BOARD_PAGE = "/?release=rel-a"
MODEL_PAGE = "/models/X/"
PAPER_API = "/api/v1/leaderboard/papers/?release=rel-a"


@pytest.fixture
def stale(settings):
    settings.RCB_BOARD_STALE_S = 1.0
    cache.clear()
    yield
    cache.clear()


def _digest(response) -> str:
    return response["ETag"].removeprefix("W/").strip('"')


@pytest.mark.parametrize("url", [BOARD_API, BOARD_PAGE, MODEL_PAGE, PAPER_API])
def test_after_a_verdict_a_plain_visitor_gets_the_previous_body_at_once_and_the_next_request_the_new_one(
    client, stale, url
):
    world = World()
    before = client.get(url)
    assert before.status_code == 200

    world.record_missing_verdict()
    caching_builds = []
    original = caching._rebuild

    def counted(*args, **kwargs):
        caching_builds.append(args[0])
        return original(*args, **kwargs)

    caching._rebuild = counted
    try:
        first = client.get(url)
    finally:
        caching._rebuild = original

    # The previous body, as it was, under its own ETag, for nobody to keep; the new one was built after it.
    assert first.status_code == 200 and first.content == before.content
    assert first["ETag"] == before["ETag"]
    assert "max-age=0" in first["Cache-Control"] and "must-revalidate" in first["Cache-Control"]
    assert len(caching_builds) == 1
    second = client.get(url)
    assert second["ETag"] != before["ETag"] and _digest(second) == caching_builds[0]
    assert second.content != before.content
    assert "s-maxage" in second["Cache-Control"]
    # Stored: the request after serves it from the store in one query (the versions).
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).content == second.content
    assert len(queries.captured_queries) == 1


def test_a_conditional_request_with_the_previous_etag_gets_304_instead_of_the_previous_body(client, stale):
    world = World()
    before = client.get(BOARD_API)
    world.record_missing_verdict()

    again = client.get(BOARD_API, HTTP_IF_NONE_MATCH=before["ETag"])

    assert again.status_code == 304 and again["ETag"] == before["ETag"]


def test_while_one_process_builds_others_get_the_previous_body_until_the_bound_then_build_their_own(
    client, stale, monkeypatch
):
    world = World()
    before = client.get(BOARD_API)
    world.record_missing_verdict()
    now = [1_000_000.0]
    monkeypatch.setattr(caching, "clock", lambda: now[0])
    # The process that takes the build is still at it (its work after the response never ends here).
    builds = []
    monkeypatch.setattr(caching, "after_response", builds.append)

    taking = client.get(BOARD_API)
    now[0] += 0.5
    waiting = client.get(BOARD_API)
    assert len(builds) == 1
    assert taking.content == waiting.content == before.content
    assert taking["ETag"] == waiting["ETag"] == before["ETag"]

    now[0] += 0.6  # 1.1 s after the build started: past the bound, the request builds its own answer
    late = client.get(BOARD_API)
    assert late["ETag"] != before["ETag"] and late.content != before.content
    assert len(builds) == 1


def test_signed_in_visitors_and_token_clients_always_get_the_current_body(client, stale):
    world = World()
    token = api_token_for(UserFactory())
    with_token = {"HTTP_AUTHORIZATION": f"Token {token}"}
    client.get(BOARD_API)  # a plain visitor's body: the previous one, for the slot
    before = client.get(BOARD_API, **with_token)
    world.record_missing_verdict()
    after = client.get(BOARD_API, **with_token)
    assert after["ETag"] != before["ETag"] and after.content != before.content

    client.force_login(UserFactory())
    page_before = client.get(BOARD_PAGE)
    run_rerun(run=world.runs["X"], outcomes=["failed"], by="test")
    page_after = client.get(BOARD_PAGE)
    assert page_after["ETag"] != page_before["ETag"] and "max-age=0" not in page_after["Cache-Control"]


def test_a_failed_rebuild_frees_its_lock_and_the_next_request_builds_and_shows_the_failure(
    client, stale, monkeypatch, caplog
):
    world = World()
    client.get(BOARD_API)
    world.record_missing_verdict()

    def broken(*args, **kwargs):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(caching, "_rendered", broken)
    client.get(BOARD_API)  # the previous body; the build after it fails
    assert "rebuilding the leaderboard body" in caplog.text
    with pytest.raises(RuntimeError):
        client.get(BOARD_API)  # no lock is left: this request builds, and fails as a build does


def test_once_rebuilt_the_board_shows_what_a_whole_rebuild_gives(client, stale, settings):
    world = World()
    client.get(BOARD_API)
    world.record_missing_verdict()
    client.get(BOARD_API)  # the previous body; the incremental rows' body is built after it
    served = client.get(BOARD_API).content

    leaderboard_rebuild(run_ids=[r.pk for r in world.runs.values()])
    settings.RCB_BOARD_STALE_S = 0
    cache.clear()
    assert client.get(BOARD_API).content == served
