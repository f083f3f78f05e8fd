"""The API keeps its OpenAPI contract: schemathesis, with every check, against the live app on a small board.

The schema is the one clients read (``/api/v1/schema/``), fetched through the WSGI app on the board below;
every operation is generated with valid and invalid data (schemathesis's examples, coverage and fuzzing
phases; a fixed seed, so a run is repeatable) and every answer goes through all of its checks: no 500s, only
documented statuses, content types, headers and bodies, invalid input refused, valid input accepted,
unsupported methods answered 405. The upload is sent with a submitter's token, so it is exercised past
authentication; what it writes is rolled back with the test's transaction.
"""

from __future__ import annotations

import csv
import datetime as dt
import importlib
import io
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import schemathesis
from django.core import signals
from django.core.cache import cache
from django.db import close_old_connections
from rest_framework.throttling import ScopedRateThrottle
from schemathesis.config import SchemathesisConfig
from schemathesis.core.errors import InvalidSchema
from schemathesis.core.failures import Failure, FailureGroup
from schemathesis.core.result import Ok
from schemathesis.openapi.checks import RejectedPositiveData

# The pinned version's pytest loader for a schema known only at run time (``from_fixture``) does not run
# under pytest 9; this is the function it calls to build one Hypothesis test per operation.
from schemathesis.pytest.lazy import get_all_tests

from evaluation.models import EvaluationRun
from leaderboard.services import leaderboard_refresh_run
from tests.factories import LanguageModelFactory, UserFactory, api_token_for, make_benchmark, make_run

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

#: cases per operation and generation mode (valid, invalid): enough to reach every parameter, quick on 2 cores;
#: ``RCB_SCHEMATHESIS_EXAMPLES=200`` runs a longer search from the command line
MAX_EXAMPLES = int(os.environ.get("RCB_SCHEMATHESIS_EXAMPLES", "12"))


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
            "checks": {"enabled": True},
        }
    )
    # As Django's test client does: a request's end must not close the connection holding the test's
    # transaction.
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield schemathesis.openapi.from_wsgi("/api/v1/schema/?format=json", application, config=config)
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


@dataclass(frozen=True)
class Refusal:
    """A 400 to a request the schema allows, by a rule OpenAPI cannot state (it compares two values, or a value
    with what the database holds, or reads inside the uploaded file). The schema states each one in words:
    the parameter's or field's description and the operation's 400. ``asserted_by`` is the test that asserts
    the refusal itself; ``message`` matches each of its error messages."""

    name: str
    operations: tuple[str, ...]
    message: str
    asserted_by: str

    def explains(self, operation: str, message: str) -> bool:
        return operation in self.operations and re.fullmatch(self.message, message, re.S) is not None


def _messages(body: Any) -> list[str]:
    """A 400's messages as ``<name>: <message>`` lines: the upload's ``errors`` as they are, another
    operation's ``{name: [messages]}`` joined."""
    if not isinstance(body, dict):
        return []
    if "errors" in body:
        return [line for line in body["errors"] if isinstance(line, str)]
    return [f"{name}: {m}" for name, messages in body.items() if isinstance(messages, list) for m in messages]


BOARD_OPERATIONS = tuple(
    f"GET /api/v1/{path}"
    for path in ("leaderboard/", "leaderboard/papers/", "leaderboard/errors/", "papers/{key}/")
)
UPLOAD = ("POST /api/v1/runs/upload/",)
COMPARE = ("GET /api/v1/compare/",)
#: every refusal of a request the schema allows: the only 400s the search below accepts for valid data
DOCUMENTED_REFUSALS = (
    Refusal(
        "paper-date window ending before it starts",
        BOARD_OPERATIONS,
        r"paper_to: paper_to: \S+ is before paper_from \(\S+\)\.",
        "tests/config/test_api_bounds.py::test_a_window_ending_before_it_starts_is_a_400_naming_paper_to",
    ),
    Refusal(
        "model names that match no model, several models, or fewer than two different models",
        COMPARE,
        r"models: (No model is called “.*”: give a model's key or display name, or a part of one\."
        r"|“.*” matches several models: .*\. Give the key of one of them\."
        r"|These names pick .* only: name at least two different models\.)",
        "tests/leaderboard/test_api_compare.py::test_a_name_that_picks_no_model_or_several_is_a_400_naming_models",
    ),
    Refusal(
        "model key of a model the token's user may not upload for",
        UPLOAD,
        r"model: .* (belongs to another user|is managed by the maintainers|is locked).*",
        "tests/config/test_api_bounds.py::test_documented_refusals_are_400s_naming_the_field[model-not-theirs]",
    ),
    Refusal(
        "new model whose key or name another model has, or one that reads the same",
        UPLOAD,
        r"(model|model_name): .*(exists with another key|exists: choose it instead|reads the same as the "
        r"existing model).*",
        "tests/config/test_api_bounds.py::test_documented_refusals_are_400s_naming_the_field[name-taken]",
    ),
    Refusal(
        "new model key without model_name",
        UPLOAD,
        r"model_name: no model has the key .*: give a display name to create it",
        "tests/config/test_api_bounds.py::test_documented_refusals_are_400s_naming_the_field[no-name]",
    ),
    Refusal(
        "file that is not valid predictions for the release (not UTF-8, not JSON objects, unknown tasks or "
        "snippets, past the limits)",
        UPLOAD,
        r"line \d+: .*|the file (is|has) .*|\.\.\. and \d+ more errors"
        # an empty file part: Django's parser drops it, DRF's field says it is missing or empty
        r"|file: (No file was submitted|The submitted file is empty)\.",
        "tests/config/test_api_bounds.py::test_documented_refusals_are_400s_naming_the_field[not-utf8] and "
        "[empty-file]",
    ),
)


def _documented(failure: Failure, operation: str, response: Any) -> bool:
    """True for a valid request refused with a 400 whose every message is one a documented refusal gives."""
    if not isinstance(failure, RejectedPositiveData) or failure.status_code != 400:
        return False
    if response.headers.get("content-type", [""])[0].startswith("text/csv"):
        # A table asked for as CSV answers its errors as ``field,message`` rows.
        rows = list(csv.DictReader(io.StringIO(response.content.decode())))
        messages = [f"{row['field']}: {row['message']}" for row in rows]
    else:
        try:
            messages = _messages(json.loads(response.content))
        except ValueError:
            return False
    return bool(messages) and all(
        any(refusal.explains(operation, message) for refusal in DOCUMENTED_REFUSALS) for message in messages
    )


def test_each_documented_refusal_names_a_test_that_asserts_it():
    for refusal in DOCUMENTED_REFUSALS:
        path, name = refusal.asserted_by.split("::")
        module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
        assert callable(getattr(module, name.split("[")[0])), refusal.name


def test_every_operation_keeps_the_schemas_contract_under_every_check(api_schema):
    cases = refused = 0
    failures: list[str] = []

    def call(case) -> None:
        nonlocal cases, refused
        cases += 1
        response = case.call()
        try:
            case.validate_response(response)
        except FailureGroup as group:
            label = case.operation.label
            rest = [f for f in group.exceptions if not _documented(f, label, response)]
            if rest:
                raise FailureGroup(rest, group.message) from None
            refused += 1

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
    print(
        f"schemathesis: {operations} operations, {cases} cases, {refused} documented refusals, "
        f"{len(failures)} failing"
    )
    assert operations >= 14
    assert not failures, "\n\n".join(failures)
