"""The page cache's misses (issue 21, with tests/leaderboard/test_page_cache.py): the queries of a page served
cold do not grow with the number of models.

Its own module because it shares one board across its cases (a module-scoped board would collide with the
boards of test_page_cache.py's other tests): the board of 5 models is built once, every page is requested
cold on it (each with a client of its own), then the board grows to 40 models and each test requests its
page cold again with the same client. Pages only read, so each case sees what it saw on a board of its own
(building one cost about 3 s a case).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.core.cache import cache
from django.db import transaction
from django.test import Client

from tests.leaderboard.test_page_cache import Board, queries

pytestmark = pytest.mark.django_db

URLS = [
    "/",
    "/?contamination=global&weights=closed",
    "/?contamination=per-model",
    "/models/M001/",
    "/papers/b/",
    "/errors/",
    "/contamination/",
    "/ablation/",
    "/api/v1/leaderboard/?contamination=global",
]


@pytest.fixture(scope="module")
def small_board_counts(django_db_setup, django_db_blocker) -> Iterator[dict[str, tuple[Client, int, int]]]:
    """Per page: its client, and the status and number of queries of its cold request on 5 models; the board
    has grown to 40 models when the tests run. Rolled back afterwards."""
    with django_db_blocker.unblock(), transaction.atomic():
        board = Board()
        board.grow(5)
        counts = {}
        for url in URLS:
            cache.clear()
            client = Client()
            counts[url] = (client, *queries(client, url))
        board.grow(40)
        yield counts
        transaction.set_rollback(True)
    cache.clear()


@pytest.fixture(autouse=True)
def empty_cache_after() -> Iterator[None]:
    """The local-memory cache outlives a test's rolled-back database."""
    yield
    cache.clear()


@pytest.mark.parametrize("url", URLS)
def test_queries_of_a_cold_page_do_not_grow_with_the_number_of_models(url, small_board_counts):
    client, status, small = small_board_counts[url]
    assert status == 200
    cache.clear()
    status, large = queries(client, url)
    assert status == 200 and large <= small <= 12
