"""Outcomes and error categories in words on the pages (issue 22 item 5): the run page's failed snippets and
the snippet page's completions show "No code extracted" and "Value/Runtime Errors", never ``no_code`` or
``value_runtime`` (one mapping each: the outcome's choices and ``researchcodebench.errors.LABELS``)."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from evaluation.models import Completion, TestResult
from tests.factories import LanguageModelFactory, make_release
from tests.factories.builders import make_staged_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def run():
    cache.clear()
    done = [Completion.Stage.DONE] * 3
    run = make_staged_run(
        model=LanguageModelFactory(key="m1"),
        release=make_release(),
        status="completed",
        stages=done,
        outcomes={0: "no_code", 1: "failed"},
    )
    TestResult.objects.filter(outcome="no_code").update(category="no_code")
    TestResult.objects.filter(outcome="failed").update(category="value_runtime")
    return run


def test_run_page_names_outcomes_and_categories_in_words(client, run):
    html = client.get(f"/runs/{run.pk}/").content.decode()
    failures = html[html.index('id="run-failures"') :]
    failures = failures[: failures.index("</section>")]
    assert "No code extracted" in failures and "Value/Runtime Errors" in failures
    assert "no_code" not in failures and "value_runtime" not in failures


def test_snippet_page_names_outcomes_and_categories_in_words(client, run):
    result = TestResult.objects.select_related("completion__snippet").get(outcome="no_code")
    snippet = result.completion.snippet
    html = client.get(f"/papers/P/snippets/{snippet.name}/").content.decode()
    assert "No code extracted" in html
    assert ">no_code<" not in html and ">no_code " not in html
