"""Fixtures of the leaderboard tests: the paper's published results imported and aggregated once per module.

The rows of smaller boards come from the builders in ``tests.factories``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.cache import cache
from django.db import transaction

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data"
ORIGINAL = SHARED / "overall_stats.json"
REGISTRY = SHARED / "papers.yaml"


def published_available() -> bool:
    try:
        import evaluation.services.published  # noqa: F401
    except ImportError:
        return False
    return ORIGINAL.is_file() and REGISTRY.is_file()


@pytest.fixture(scope="module")
def published_board(django_db_setup, django_db_blocker) -> Iterator[None]:
    """The 32 published models imported (with the registry's dates) and aggregated, once per module;
    rolled back afterwards. Skips when the data or the importer is absent."""
    if not published_available():
        pytest.skip(f"needs {ORIGINAL}, {REGISTRY} and evaluation.services.published")
    from evaluation.services.published import published_import
    from leaderboard.services import leaderboard_refresh_stale

    with django_db_blocker.unblock():
        with transaction.atomic():
            published_import(source=ORIGINAL, papers=REGISTRY)
            leaderboard_refresh_stale()
            yield
            transaction.set_rollback(True)


@pytest.fixture
def empty_cache() -> Iterator[None]:
    """Each test starts cold: the local-memory cache outlives a test's rolled-back database (a module that
    needs it lists it in ``pytestmark`` with ``pytest.mark.usefixtures``)."""
    cache.clear()
    yield
    cache.clear()
