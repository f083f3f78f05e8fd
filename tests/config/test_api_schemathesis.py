"""The API keeps its OpenAPI contract: schemathesis, with every check, against the live app on a small board.

The schema is the one clients read (``/api/v1/schema/``), fetched through the WSGI app on the board below;
every operation is generated with valid and invalid data (schemathesis's examples, coverage and fuzzing
phases; a fixed seed, so a run is repeatable) and every answer goes through all of its checks: no 500s, only
documented statuses, content types, headers and bodies, invalid input refused, valid input accepted,
unsupported methods answered 405. The upload is sent with a submitter's token, so it is exercised past
authentication; what it writes is rolled back with the test's transaction.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest
import schemathesis
from django.core import signals
from django.core.cache import cache
from django.db import close_old_connections
from rest_framework.throttling import ScopedRateThrottle
from schemathesis.config import SchemathesisConfig
from schemathesis.core.errors import InvalidSchema
from schemathesis.core.failures import FailureGroup
from schemathesis.core.result import Ok

# The pinned version's pytest loader for a schema known only at run time (``from_fixture``) does not run
# under pytest 9; this is the function it calls to build one Hypothesis test per operation.
from schemathesis.pytest.lazy import get_all_tests

from evaluation.models import EvaluationRun
from leaderboard.services import leaderboard_refresh_run
from tests.factories import LanguageModelFactory, UserFactory, api_token_for, make_benchmark, make_run

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

#: cases per operation and generation mode (valid, invalid): enough to reach every parameter, quick on 2 cores
MAX_EXAMPLES = 12


@pytest.fixture
def token(db) -> Iterator[str]:
    """Two papers (one with two snippets), two models (one with its run finished, one still testing) in the
    release ``r1``, aggregated; the token of a submitter."""
    cache.clear()
    release, snippets = make_benchmark(
        {"old": (dt.date(2024, 1, 1), [2, 4]), "new": (dt.date(2025, 6, 1), [3])}, release="r1"
    )
    gpt = LanguageModelFactory(key="GPT", name="GPT", developer="OpenAI")
    llama = LanguageModelFactory(key="LLAMA", name="Llama", developer="Meta", open_weights=True)
    runs = [
        make_run(snippets, {"old": "PP PF", "new": "FP"}, model=gpt, release=release),
        make_run(snippets, {"old": "P F", "new": "P"}, model=llama, release=release,
                 status=EvaluationRun.Status.TESTING),
    ]  # fmt: skip
    for run in runs:
        leaderboard_refresh_run(run=run)
    yield api_token_for(UserFactory(username="submitter", password="pw"))
    cache.clear()


@pytest.fixture
def api_schema(token, settings, monkeypatch) -> Iterator[schemathesis.schemas.BaseSchema]:
    from config.wsgi import application

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "localhost"]  # schemathesis's WSGI client's host
    # Past the upload throttle's rate every upload would be a 429 and the rest of its cases untested.
    monkeypatch.setattr(ScopedRateThrottle, "THROTTLE_RATES", {"uploads": "100000/hour"})
    config = SchemathesisConfig.from_dict(
        {
            "headers": {"Authorization": f"Token {token}"},
            "generation": {
                "max-examples": MAX_EXAMPLES,
                "deterministic": True,
                "mode": "all",
                "database": "none",
            },
            "operations": [
                {
                    # The schema states the upload form's fields but cannot state its file's content (JSONL
                    # lines naming the release's tasks and snippets): a well-formed form whose file is not
                    # valid predictions is a 400 listing each line's error, not a refused valid request.
                    "include-path": "/api/v1/runs/upload/",
                    "checks": {
                        "positive_data_acceptance": {"expected-statuses": ["2xx", "400", "401", "403", "429"]}
                    },
                }
            ],
        }
    )
    # As Django's test client does: a request's end must not close the connection holding the test's
    # transaction.
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        schema = schemathesis.openapi.from_wsgi("/api/v1/schema/?format=json", application, config=config)
        schema.hook("filter_query")(_no_window_ending_before_it_starts)
        yield schema
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


def _no_window_ending_before_it_starts(ctx, query) -> bool:
    """The one rule between parameters that OpenAPI cannot state: a paper-date window whose ``paper_to`` is
    before its ``paper_from`` is a documented 400 naming ``paper_to``
    (tests/leaderboard/test_contamination_window.py asserts it). Such cases are not generated; every other
    combination of the board's parameters is."""
    if not isinstance(query, dict):
        return True
    start, end = query.get("paper_from"), query.get("paper_to")
    try:
        return not (dt.date.fromisoformat(start) > dt.date.fromisoformat(end))
    except (TypeError, ValueError):
        return True


def test_every_operation_keeps_the_schemas_contract_under_every_check(api_schema):
    cases = 0
    failures: list[str] = []

    def call(case) -> None:
        nonlocal cases
        cases += 1
        case.call_and_validate()

    operations = 0
    for result in get_all_tests(schema=api_schema, test_func=call, settings=None, given_kwargs={}):
        if not isinstance(result, Ok):
            failures.append(f"invalid schema: {result.err()}")
            continue
        operation, test = result.ok()
        operations += 1
        try:
            test()
        except (FailureGroup, InvalidSchema, AssertionError) as exc:
            failures.append(f"{operation.label}\n{exc}")
    print(f"schemathesis: {operations} operations, {cases} cases, {len(failures)} failing")
    assert operations >= 14
    assert not failures, "\n\n".join(failures)
