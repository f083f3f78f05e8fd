"""Fixtures of the evaluation tests: the fake OpenAI-compatible server (tests/evaluation/fake_llm.py), the
upload tests' release and an emptied throttle cache."""

import pytest
from django.core.cache import cache

from tests.evaluation.fake_llm import fake_llm
from tests.factories import make_release

__all__ = ["fake_llm", "fresh_throttle_cache", "release"]


@pytest.fixture
def release():
    """The upload tests' release ``r1`` (``make_release``)."""
    return make_release()


@pytest.fixture
def fresh_throttle_cache():
    """The upload throttle counts in the cache: the test starts and ends with an empty one."""
    cache.clear()
    yield
    cache.clear()
