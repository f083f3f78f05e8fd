"""Maintainers start generated evaluations from the web and the command line (issue 12 item 3); uploads
ask for the template and the paper setting and the run page names the board the run appears on.

The journeys run against the fake OpenAI-compatible server (tests/evaluation/fake_llm.py) with a real
Celery worker: generation, sandboxed tests and the leaderboard's aggregation all happen as in production.
"""

from __future__ import annotations

import io
import re
import textwrap

import pytest
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from evaluation.models import EvaluationRun
from evaluation.services.estimates import CHARS_PER_TOKEN, OUTPUT_FACTOR
from researchcodebench.problems import build_prompt
from tests.conftest import wait_for
from tests.evaluation.engine_helpers import answer_by_prompt, example_tasks, import_release
from tests.factories import (
    EvaluationRunFactory,
    LanguageModelFactory,
    MaintainerFactory,
    UserFactory,
    fake_llm_model,
    full_predictions,
    make_release,
)
from tests.factories.builders import token_api

START_URL = "/runs/new/"
TASK = "rmsnorm"


@pytest.fixture(autouse=True)
def fresh_cache():
    """The upload throttle and the board's cache live in the cache: every test starts without either."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def llm_key(monkeypatch):
    # Read by the worker processes, which inherit this environment when they start.
    monkeypatch.setenv("RCB_LLM_KEY_FAKE", "sk-test")


def reference_answers() -> dict[tuple[str, str], str]:
    """The reference code of every snippet of the task, fenced: an answer that passes its test."""
    return {
        (task.id, s.name): "```python\n" + textwrap.dedent(s.code).rstrip("\n") + "\n```\n"
        for task in example_tasks((TASK,))
        for s in task.snippets
    }


def settings_post(model_key: str, release: str, **extra: str) -> dict[str, str]:
    return {
        "model": model_key,
        "release": release,
        "template": "rcb-v2",
        "with_paper": "with",
        "n_completions": "1",
        "temperature": "",
        **extra,
    }


def board_keys(client, **params: str) -> list[str]:
    response = client.get("/api/v1/leaderboard/", params)
    assert response.status_code == 200, response.content
    return [row["model"]["key"] for row in response.json()["results"]]


# --- the web journey ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_maintainer_starts_an_evaluation_from_the_web_and_its_score_appears_on_its_board(
    transactional_db, client, tmp_path, fake_llm, llm_key, start_worker, settings
):
    settings.RCB_LEADERBOARD_DEBOUNCE_S = 0
    import_release(tmp_path, name="rms", task_ids=(TASK,))
    tasks = example_tasks((TASK,))
    fake_llm.answer = answer_by_prompt(tasks, reference_answers())
    model = fake_llm_model(fake_llm.base_url)
    client.force_login(MaintainerFactory())

    page = client.get(START_URL, {"model": model.key})
    assert page.status_code == 200
    html = page.content.decode()
    assert re.search(r'<option value="fake-model" selected>', html)
    assert re.search(r'value="with"[^>]*checked', html)

    estimate = client.post(START_URL, settings_post(model.key, "rms"))
    assert estimate.status_code == 200
    html = estimate.content.decode()
    n_snippets = len(tasks[0].snippets)
    assert f'data-estimate="requests">{n_snippets}<' in html
    assert "about $" in html and "An estimate" in html
    assert 'name="confirm" value="yes"' in html
    # Seeing the estimate creates nothing and sends nothing.
    assert not EvaluationRun.objects.exists() and fake_llm.requests == []

    started = client.post(START_URL, {**settings_post(model.key, "rms"), "confirm": "yes"})
    run = EvaluationRun.objects.get()
    assert started.status_code == 302 and started.url == f"/runs/{run.pk}/"
    assert (run.source, run.template, run.with_paper, run.n_completions) == ("generated", "rcb-v2", True, 1)
    run_page = client.get(started.url).content.decode()
    assert 'hx-trigger="every 2s"' in run_page  # live progress
    assert "the board of release rms, template rcb-v2, paper: with" in run_page

    start_worker(extra_env={"RCB_VERDICT_CACHE": "0", "RCB_LEADERBOARD_DEBOUNCE_S": "0"})
    wait_for(lambda: EvaluationRun.objects.get(pk=run.pk).is_final, timeout=240, what="the run to finish")
    run.refresh_from_db()
    assert run.status == EvaluationRun.Status.FINISHED, run.status_reason
    assert run.counts["passed"] == n_snippets
    assert len(fake_llm.requests) == n_snippets

    wait_for(
        lambda: (
            cache.clear() or model.key in board_keys(client, release="rms", template="rcb-v2", paper="with")
        ),
        timeout=60,
        what="the run on the board of its release, template and paper setting",
    )
    row = client.get("/api/v1/leaderboard/", {"release": "rms", "template": "rcb-v2", "paper": "with"}).json()
    assert row["results"][0]["run_id"] == run.pk and row["results"][0]["scaled_pass_at_1"] == 100.0
    assert model.key not in board_keys(client, release="rms", template="rcb-v2", paper="without")
    run_page = client.get(f"/runs/{run.pk}/").content.decode()
    assert 'href="/?release=rms&amp;template=rcb-v2&amp;paper=with"' in run_page


def test_the_estimate_counts_the_prompts_as_they_will_be_sent(db, client, tmp_path, fake_llm):
    import_release(tmp_path, name="rms", task_ids=(TASK,))
    model = fake_llm_model(fake_llm.base_url)
    client.force_login(MaintainerFactory())
    task = example_tasks((TASK,))[0]

    response = client.post(
        START_URL, settings_post(model.key, "rms", with_paper="without", n_completions="3")
    )

    assert response.status_code == 200
    estimate = response.context["estimate"]
    prompts = [build_prompt(task, s, template="rcb-v2", with_paper=False) for s in task.snippets]
    tokens_in = sum(-(-len(p.text) // CHARS_PER_TOKEN) for p in prompts)
    assert estimate.requests == 3 * len(task.snippets)
    assert estimate.input_tokens == 3 * tokens_in
    assert estimate.output_tokens > 0
    # the model's prices: $2 per 1M input tokens, $8 per 1M output tokens
    expected = (estimate.input_tokens * 2 + estimate.output_tokens * 8) / 1_000_000
    assert float(estimate.cost_usd) == pytest.approx(expected, abs=1e-4)
    assert OUTPUT_FACTOR > 1
    assert not EvaluationRun.objects.exists()


def test_contributor_cannot_open_or_post_the_start_page(db, client, fake_llm):
    make_release()
    model = fake_llm_model(fake_llm.base_url)
    client.force_login(UserFactory())
    assert client.get(START_URL, {"model": model.key}).status_code == 403
    posted = client.post(START_URL, {**settings_post(model.key, "r1"), "confirm": "yes"})
    assert posted.status_code == 403
    assert not EvaluationRun.objects.exists()


def test_the_queued_message_shows_once_and_the_progress_poll_removes_it_once_the_run_starts(
    db, client, fake_llm
):
    make_release()
    model = fake_llm_model(fake_llm.base_url)
    client.force_login(MaintainerFactory())
    started = client.post(START_URL, {**settings_post(model.key, "r1"), "confirm": "yes"})
    run = EvaluationRun.objects.get()
    poll = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "run-progress"}
    removal = f'<li id="message-run-{run.pk}-queued" hx-swap-oob="delete">'

    page = client.get(started.url).content.decode()
    assert re.search(
        rf'<li class="message message-success" id="message-run-{run.pk}-queued">Run {run.pk} ', page
    )
    assert "was queued." not in client.get(started.url).content.decode()  # shown once
    assert removal not in client.get(started.url, **poll).content.decode()  # still true while queued

    EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.GENERATING)
    assert removal in client.get(started.url, **poll).content.decode()


def test_anonymous_visitor_is_sent_to_sign_in(db, client):
    response = client.get(START_URL)
    assert response.status_code == 302 and response.url.startswith("/accounts/login/")


def test_start_refuses_a_model_the_portal_does_not_call_naming_the_field(db, client):
    make_release()
    published = LanguageModelFactory(key="paper-model", management="published")
    no_endpoint = LanguageModelFactory(
        key="no_endpoint_key", name="No Endpoint", provider="other", base_url=""
    )
    client.force_login(MaintainerFactory())

    refused = client.post(START_URL, {**settings_post(published.key, "r1"), "confirm": "yes"})
    assert refused.status_code == 400
    assert "model" in refused.context["form"].errors

    refused = client.post(START_URL, {**settings_post(no_endpoint.key, "r1"), "confirm": "yes"})
    assert refused.status_code == 400
    # in words: the model by its name, its provider by its label (issue 34 item 6)
    assert refused.context["form"].errors["model"] == [
        "No Endpoint: its provider (Other OpenAI-compatible endpoint) has no default endpoint; set a base URL."
    ]
    assert not EvaluationRun.objects.exists()


def test_start_refuses_a_sample_count_out_of_range(db, client, fake_llm):
    make_release()
    model = fake_llm_model(fake_llm.base_url)
    client.force_login(MaintainerFactory())
    refused = client.post(
        START_URL, {**settings_post(model.key, "r1", n_completions="1000"), "confirm": "yes"}
    )
    assert refused.status_code == 400 and "n_completions" in refused.context["form"].errors
    assert not EvaluationRun.objects.exists()


def test_model_pages_offer_start_evaluation_to_maintainers(db, client, fake_llm):
    model = fake_llm_model(fake_llm.base_url)
    LanguageModelFactory(key="paper-model", management="published")
    client.force_login(MaintainerFactory())
    html = client.get("/runs/models/").content.decode()
    assert f'href="/runs/new/?model={model.key}"' in html
    assert 'href="/runs/new/?model=paper-model"' not in html
    assert (
        f'href="/runs/new/?model={model.key}"'
        in client.get(f"/runs/models/{model.pk}/edit/").content.decode()
    )


# --- the command -------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_evaluate_model_command_starts_a_run_and_waits_for_it(
    transactional_db, tmp_path, fake_llm, llm_key, start_worker
):
    import_release(tmp_path, name="rms", task_ids=(TASK,))
    tasks = example_tasks((TASK,))
    fake_llm.answer = answer_by_prompt(tasks, reference_answers())
    model = fake_llm_model(fake_llm.base_url)
    start_worker(extra_env={"RCB_VERDICT_CACHE": "0"})
    out = io.StringIO()

    call_command(
        "evaluate_model", model.key, "--release", "rms", "--samples", "2", "--yes", "--wait",
        "--poll-s", "0.5", "--timeout-s", "240", stdout=out,
    )  # fmt: skip

    text = out.getvalue()
    run = EvaluationRun.objects.get()
    n = len(tasks[0].snippets)
    assert f"{2 * n} requests ({n} snippets of 1 tasks x 2)" in text
    assert "Estimated tokens:" in text and "Estimated cost: about $" in text
    assert f"Run {run.pk} queued" in text and "/?release=rms&template=rcb-v2&paper=with" in text
    assert f"run {run.pk} finished" in text
    assert f"{2 * n} of {2 * n} items finished (100.0%), {2 * n} of {2 * n} tests passed" in text
    assert (run.status, run.source, run.n_completions, run.with_paper) == ("finished", "generated", 2, True)


def test_evaluate_model_command_starts_nothing_unless_confirmed(db, tmp_path, fake_llm, monkeypatch):
    import_release(tmp_path, name="rms", task_ids=(TASK,))
    model = fake_llm_model(fake_llm.base_url)
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    out = io.StringIO()
    with pytest.raises(CommandError, match="not started"):
        call_command("evaluate_model", model.key, "--release", "rms", "--without-paper", stdout=out)
    assert "without the paper" in out.getvalue() and "Start this evaluation? [y/N]" in out.getvalue()
    assert not EvaluationRun.objects.exists() and fake_llm.requests == []


def test_evaluate_model_command_takes_the_paper_setting_and_names_bad_arguments(db, tmp_path, fake_llm):
    import_release(tmp_path, name="rms", task_ids=(TASK,))
    model = fake_llm_model(fake_llm.base_url)
    call_command(
        "evaluate_model", model.key, "--release", "rms", "--without-paper", "--yes", stdout=io.StringIO()
    )
    run = EvaluationRun.objects.get()
    assert (run.with_paper, run.template, run.status) == (False, "rcb-v2", "queued")
    with pytest.raises(CommandError, match="--release: no release is named 'nope'"):
        call_command("evaluate_model", model.key, "--release", "nope", "--yes")
    with pytest.raises(CommandError, match="no model has the key 'ghost'"):
        call_command("evaluate_model", "ghost", "--release", "rms", "--yes")
    with pytest.raises(CommandError, match="between 1 and"):
        call_command("evaluate_model", model.key, "--release", "rms", "--samples", "0", "--yes")


# --- uploads: template and paper setting -------------------------------------------------------------------


def upload_form(model_key: str, **fields: str) -> dict:
    return {
        "model": model_key,
        "release": "r1",
        "template": "rcb-v2",
        "with_paper": "with",
        "file": SimpleUploadedFile("p.jsonl", full_predictions()),
        **fields,
    }


def submitter():
    """Release r1 and a member who owns the self-reported model m1."""
    make_release()
    user = UserFactory()
    LanguageModelFactory(key="m1", self_reported=True, owner=user)
    return user


def test_upload_form_asks_for_the_paper_setting_and_the_run_page_names_its_board(db, client):
    client.force_login(submitter())

    response = client.post("/runs/upload/", upload_form("m1", template="rcb-2025", with_paper="without"))

    run = EvaluationRun.objects.get()
    assert response.status_code == 302 and response.url == f"/runs/{run.pk}/"
    assert (run.template, run.with_paper) == ("rcb-2025", False)
    html = client.get(response.url).content.decode()
    assert "the board of release r1, template rcb-2025, paper: without" in html
    assert 'href="/?release=r1&amp;template=rcb-2025&amp;paper=without"' in html


def test_upload_form_without_template_and_paper_setting_takes_the_release_defaults(db, client):
    client.force_login(submitter())
    form = upload_form("m1")
    del form["with_paper"], form["template"]
    response = client.post("/runs/upload/", form)
    assert response.status_code == 302
    run = EvaluationRun.objects.get()
    assert (run.template, run.with_paper) == ("rcb-v2", True)


def test_upload_form_preselects_the_release_defaults(db, client):
    make_release()
    published = make_release("published-like", with_metadata_only=False)
    EvaluationRunFactory(release=published, source="imported", template="rcb-2025", with_paper=True)
    client.force_login(UserFactory())

    html = client.get("/runs/upload/", {"release": "r1"}).content.decode()
    assert re.search(r'<option value="rcb-v2" selected>', html)
    assert re.search(r'value="with"[^>]*checked', html)

    # A release with published results: new runs default to its template, to be ranked beside them.
    html = client.get("/runs/upload/", {"release": "published-like"}).content.decode()
    assert re.search(r'<option value="rcb-2025" selected>', html)
    assert "This release's defaults: template <code>rcb-2025</code>, with the paper" in html


def test_api_upload_without_a_paper_setting_is_ranked_with_the_paper_by_default(db):
    # Before: every upload was recorded "without paper" and vanished from the default board.
    api = token_api(submitter())

    response = api.post(
        "/api/v1/runs/upload/",
        {"model": "m1", "release": "r1", "file": SimpleUploadedFile("p.jsonl", full_predictions())},
        format="multipart",
    )

    assert response.status_code == 201, response.content
    run = EvaluationRun.objects.get()
    assert (run.template, run.with_paper) == ("rcb-v2", True)
    body = response.json()
    assert (body["template"], body["with_paper"]) == ("rcb-v2", True)
    assert body["board_url"].endswith("/?release=r1&template=rcb-v2&paper=with")


def test_api_upload_stores_the_declared_template_and_paper_setting(db):
    api = token_api(submitter())

    response = api.post(
        "/api/v1/runs/upload/",
        {
            "model": "m1",
            "release": "r1",
            "template": "rcb-2025",
            "with_paper": "false",
            "file": SimpleUploadedFile("p.jsonl", full_predictions()),
        },
        format="multipart",
    )

    assert response.status_code == 201, response.content
    run = EvaluationRun.objects.get()
    assert (run.template, run.with_paper) == ("rcb-2025", False)
    assert response.json()["board_url"].endswith("/?release=r1&template=rcb-2025&paper=without")
    bad = api.post(
        "/api/v1/runs/upload/",
        {"model": "m1", "release": "r1", "with_paper": "maybe", "file": SimpleUploadedFile("p.jsonl", b"")},
        format="multipart",
    )
    assert bad.status_code == 400 and any(e.startswith("with_paper:") for e in bad.json()["errors"])
