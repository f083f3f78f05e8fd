"""Generation against the fake OpenAI-compatible server, in process: retries, Retry-After, accounting, and
every failure recorded on its completion."""

from __future__ import annotations

import time
from decimal import Decimal

import pytest

from evaluation import llm
from evaluation.models import Completion, EvaluationRun
from evaluation.services import (
    LeaseResult,
    completion_generate,
    lease_acquire,
    model_test_connection,
    run_create,
)
from researchcodebench import chat
from researchcodebench.problems import build_prompt
from tests.evaluation.engine_helpers import example_tasks, import_release
from tests.evaluation.fake_llm import Failure
from tests.factories import fake_llm_model

Stage = Completion.Stage


@pytest.fixture
def fast_llm_settings(settings, monkeypatch):
    monkeypatch.setenv("RCB_LLM_KEY_FAKE", "sk-test")
    settings.RCB_LLM_MAX_REQUESTS = 3
    settings.RCB_LLM_BACKOFF_BASE_MS = 10
    settings.RCB_LLM_TIMEOUT_S = 1
    return settings


@pytest.fixture
def run_on_rmsnorm(db, tmp_path, fake_llm, fast_llm_settings):
    release = import_release(tmp_path, name="rms", task_ids=("rmsnorm",))
    model = fake_llm_model(fake_llm.base_url)
    return run_create(model=model, release=release, source="generated", verification="generated")


def generate_one(run: EvaluationRun) -> Completion:
    item = run.completions.select_related("snippet").first()
    acquired = lease_acquire(
        completion_id=item.pk,
        owner="t",
        stage_from=Stage.PENDING_GENERATION,
        stage_to=Stage.GENERATING,
        seconds=60,
    )
    assert acquired is LeaseResult.ACQUIRED
    completion_generate(completion_id=item.pk, owner="t")
    item.refresh_from_db()
    return item


def test_generation_stores_prompt_hash_code_tokens_cost_and_latency(run_on_rmsnorm, fake_llm):
    fake_llm.answer = lambda prompt: "Sure.\n```python\nvalue = 42\n```"
    item = generate_one(run_on_rmsnorm)
    task = example_tasks(("rmsnorm",))[0]
    snippet = task.snippet(item.snippet.name)
    prompt = build_prompt(task, snippet, template="rcb-v2")
    assert item.stage == Stage.PENDING_TEST
    assert item.prompt_hash == prompt.hash
    assert fake_llm.requests[-1].prompt == prompt.text
    assert item.code == " " * snippet.indent + "value = 42"
    assert item.input_tokens == len(prompt.text) // 4 and item.output_tokens > 0
    expected_cost = (Decimal(item.input_tokens) * 2 + Decimal(item.output_tokens) * 8) / Decimal(1_000_000)
    assert item.cost_usd == expected_cost.quantize(Decimal("0.000001"))
    assert item.latency_s is not None and item.latency_s > 0
    assert item.error == ""


def test_empty_content_is_tested_as_no_code(run_on_rmsnorm, fake_llm):
    fake_llm.mode = "empty"
    item = generate_one(run_on_rmsnorm)
    assert item.stage == Stage.PENDING_TEST and item.code_extracted is False and item.code == ""


def test_missing_api_key_is_recorded_naming_the_variable(run_on_rmsnorm, monkeypatch, fake_llm):
    monkeypatch.delenv("RCB_LLM_KEY_FAKE")
    item = generate_one(run_on_rmsnorm)
    assert item.stage == Stage.FAILED
    assert "RCB_LLM_KEY_FAKE is not set" in item.error
    assert fake_llm.requests == []


def test_server_errors_are_retried_then_recorded_with_the_number_of_requests(run_on_rmsnorm, fake_llm):
    fake_llm.mode = "500"
    item = generate_one(run_on_rmsnorm)
    assert item.stage == Stage.FAILED
    assert "HTTP 500" in item.error and "(3 requests)" in item.error
    assert [r.status for r in fake_llm.requests] == [500, 500, 500]


def test_a_transient_error_then_success_generates(run_on_rmsnorm, fake_llm):
    fake_llm.fail_next(Failure("status", 502), Failure("hang"))
    fake_llm.answer = lambda prompt: "```python\nok = True\n```"
    item = generate_one(run_on_rmsnorm)
    assert item.stage == Stage.PENDING_TEST and item.code.strip() == "ok = True"
    assert [r.behaviour for r in fake_llm.requests] == ["status", "hang", "ok"]


def test_a_bad_request_is_not_retried(run_on_rmsnorm, fake_llm):
    fake_llm.fail_next(Failure("status", 401))
    item = generate_one(run_on_rmsnorm)
    assert item.stage == Stage.FAILED and "HTTP 401" in item.error and "(1 requests)" in item.error
    assert len(fake_llm.requests) == 1


def test_retry_after_on_429_is_honoured_instead_of_the_backoff(db, fake_llm, monkeypatch):
    monkeypatch.setenv("RCB_LLM_KEY_FAKE", "sk-test")
    model = fake_llm_model(fake_llm.base_url)
    fake_llm.fail_next(Failure("status", 429, retry_after="1"))
    started = time.monotonic()
    # A 30 s backoff would be used if Retry-After were ignored.
    answer = llm.chat_complete(model=model, prompt="hi", backoff_base_s=30.0, max_requests=2, timeout_s=5)
    elapsed = time.monotonic() - started
    first, second = fake_llm.requests
    gap = second.at - first.at
    assert answer.requests == 2 and answer.waited_s == 1.0
    # The server's one second, not the 30 s backoff (a wide margin: a busy machine only adds to the gap).
    assert 1.0 <= gap < 15.0, gap
    assert elapsed < 15.0


def test_backoff_is_capped_exponential():
    assert [chat.backoff_s(n, 1.0) for n in range(1, 8)] == [1, 2, 4, 8, 16, 30, 30]


def test_retry_after_reads_seconds_and_http_dates():
    assert chat.retry_after_s({"retry-after": "7"}) == 7.0
    future = time.time() + 20
    from email.utils import formatdate

    assert 15 < chat.retry_after_s({"retry-after": formatdate(future, usegmt=True)}) <= 20
    assert chat.retry_after_s({"retry-after": "soon"}) is None


def test_provider_defaults_give_every_listed_provider_an_endpoint():
    for provider in ("openai", "openrouter", "deepseek", "xai", "google", "anthropic", "vllm", "ollama"):
        assert llm.PROVIDER_BASE_URLS[provider].startswith(("https://", "http://127.0.0.1"))


def test_connection_test_reports_success_and_failure(db, fake_llm, monkeypatch):
    monkeypatch.setenv("RCB_LLM_KEY_FAKE", "sk-test")
    model = fake_llm_model(fake_llm.base_url)
    fake_llm.answer = lambda prompt: "ok"
    ok, message = model_test_connection(model=model)
    assert ok and "'ok'" in message
    fake_llm.fail_next(Failure("status", 503))
    ok, message = model_test_connection(model=model)
    assert not ok and "HTTP 503" in message
    monkeypatch.delenv("RCB_LLM_KEY_FAKE")
    ok, message = model_test_connection(model=model)
    assert not ok and "RCB_LLM_KEY_FAKE" in message
