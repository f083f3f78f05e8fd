"""Raw answers on the snippet page (issue 22 item 8): a chosen model's raw response next to the code extracted
from it, with the verdict, escaped (a response is adversarial), and words where an upload has none."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evaluation.models import Completion, EvaluationRun, TestResult
from tests.factories import LanguageModelFactory, make_benchmark, make_run
from tests.leaderboard.test_pages import assert_accessible

pytestmark = pytest.mark.django_db

HOSTILE = 'Sure!\n<script>alert("x")</script><img src=x onerror=alert(1)>\n```python\ny = x * 2\n```\n'


@pytest.fixture
def runs():
    rel, snippets = make_benchmark({"alpha": (None, [2])}, release="r1")
    generated = make_run(snippets, {"alpha": "P"}, release=rel, model=LanguageModelFactory(name="Gen Model"))
    Completion.objects.filter(run=generated).update(raw_response=HOSTILE, code="y = x * 2\n")
    silent = make_run(snippets, {"alpha": "F"}, release=rel, model=LanguageModelFactory(name="Silent Model"))
    Completion.objects.filter(run=silent).update(
        raw_response="I would rather not.", code="", code_extracted=False
    )
    TestResult.objects.filter(completion__run=silent).update(
        outcome=TestResult.Outcome.NO_CODE, category="no_code"
    )
    uploaded = make_run(
        snippets,
        {"alpha": "F"},
        release=rel,
        model=LanguageModelFactory(name="Upload Model"),
        source=EvaluationRun.Source.UPLOADED,
    )
    Completion.objects.filter(run=uploaded).update(raw_response="", code="return None\n")
    return snippets["alpha"][0], generated, silent, uploaded


def page(client, snippet, **params) -> str:
    url = reverse("leaderboard:snippet", args=["alpha", snippet.name])
    response = client.get(url, {"id": snippet.pk, **params})
    assert response.status_code == 200
    return response.content.decode()


def raw_section(html: str) -> str:
    start = html.index('id="raw-answer"')
    return html[start : html.index('<section aria-labelledby="attempts-h">', start)]


def test_the_snippet_page_shows_a_chosen_models_raw_response_escaped_next_to_the_extracted_code(client, runs):
    snippet, generated, _silent, _uploaded = runs
    html = page(client, snippet, run=generated.pk)
    assert_accessible(html)
    section = raw_section(html)
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in section
    assert "<script>alert" not in html and "<img src=x" not in html
    assert 'class="code-block raw-response" tabindex="0"' in section
    assert '<pre class="code-block extracted-code" tabindex="0"' in section and "y = x * 2" in section
    assert '<span class="badge ok">passed</span>' in section
    # Every model is a choice (a plain link); only the chosen one's answer is shown.
    assert section.count('<li><a href="') == 3 and 'aria-current="true">Gen Model</a>' in section
    assert "I would rather not." not in section


def test_a_no_code_verdict_shows_the_answer_no_code_could_be_extracted_from(client, runs):
    snippet, _generated, silent, _uploaded = runs
    section = raw_section(page(client, snippet, run=silent.pk))
    assert "I would rather not." in section
    assert "No code could be extracted from the answer" in section and "No code extracted" in section


def test_an_uploaded_prediction_without_a_raw_response_says_so_in_words(client, runs):
    snippet, _generated, _silent, uploaded = runs
    section = raw_section(page(client, snippet, run=uploaded.pk))
    assert "No raw response: this completion was uploaded as predictions" in section
    assert "return None" in section


def test_without_a_chosen_model_the_page_offers_the_choice_and_shows_no_answer(client, runs):
    snippet, generated, _silent, _uploaded = runs
    html = page(client, snippet)
    section = raw_section(html)
    assert f"&amp;run={generated.pk}#raw-answer" in section and "raw-response" not in section
    assert f"&amp;run={generated.pk}#raw-{generated.pk}-0" in html  # each completion links to its answer
    assert "has no completion of this snippet" in raw_section(page(client, snippet, run="999999"))
