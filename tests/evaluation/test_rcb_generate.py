"""``rcb generate`` (researchcodebench/generate_cli.py) against the demo's fake model in a real HTTP server:
resuming after a kill never asks twice for a written completion, and its answers are the portal's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaluation.management.commands.serve_fake_llm import FakeAnswers, plan_answers
from evaluation.models import Completion
from evaluation.services import LeaseResult, completion_generate, lease_acquire, run_create
from researchcodebench.cli import main
from researchcodebench.predictions import extract_answer
from researchcodebench.pset import read_pset
from tests.evaluation.engine_helpers import import_release
from tests.evaluation.fake_llm import Failure, FakeLLM
from tests.factories import fake_llm_model

REPO = Path(__file__).resolve().parents[2]
PSET = REPO / "examples" / "pset"
SNIPPETS = sum(len(t.snippets) for t in read_pset(PSET).tasks if not t.errors)


@pytest.fixture(scope="module")
def demo_answers() -> FakeAnswers:
    return FakeAnswers(plan_answers(PSET))


@pytest.fixture
def demo_llm(demo_answers):
    """The fake server answering like the demo's model, 50 ms per answer so a kill lands mid-run."""

    def answer(prompt: str) -> str:
        time.sleep(0.05)
        found = demo_answers.find(prompt)
        return found.answer if found else "no code"

    server = FakeLLM(answer=answer).start()
    yield server
    server.stop()


def _generate(base_url: str, output: Path, *extra: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "researchcodebench", "generate", str(PSET), "--base-url", base_url]
    command += ["--model", "demo", "--output", str(output), "--concurrency", "4", *extra]
    env = {**os.environ, "OPENAI_API_KEY": "sk-test"}
    return subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _lines(output: Path) -> list[dict]:
    return [json.loads(line) for line in output.read_text().splitlines()]


def _keys(lines: list[dict]) -> list[tuple[str, str, int]]:
    return [(line["task"], line["snippet"], line["completion_idx"]) for line in lines]


def _stop_after(process: subprocess.Popen, server: FakeLLM, requests: int, signum: int) -> None:
    deadline = time.monotonic() + 60
    while len(server.requests) < requests and process.poll() is None:
        assert time.monotonic() < deadline, "rcb generate sent too few requests"
        time.sleep(0.01)
    process.send_signal(signum)
    process.communicate(timeout=60)
    time.sleep(0.3)  # answers the server was still computing at a kill are logged by now


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_a_killed_generate_resumes_without_asking_twice(tmp_path, demo_llm, signum):
    output = tmp_path / "predictions.jsonl"
    _stop_after(_generate(demo_llm.base_url, output), demo_llm, 30, signum)
    # A request the kill cut off before its body arrived reaches the server without a prompt: not an ask.
    asked_before = len(demo_llm.requests)
    first_prompts = [r.prompt for r in demo_llm.requests if r.prompt]
    written = _lines(output)
    assert 30 <= len(first_prompts) < SNIPPETS and len(written) <= len(first_prompts)

    rerun = _generate(demo_llm.base_url, output)
    _out, err = rerun.communicate(timeout=120)
    assert rerun.returncode == 0, err.decode()
    second_prompts = [r.prompt for r in demo_llm.requests[asked_before:]]
    lines = _lines(output)
    assert sorted(_keys(lines)) == sorted(set(_keys(lines))) and len(lines) == SNIPPETS
    assert len(first_prompts) + len(second_prompts) == len(set(first_prompts + second_prompts)) + (
        len(first_prompts) - len(written)
    )
    if signum == signal.SIGTERM:
        # The requests in flight were answered and written before the exit: nothing was asked twice.
        assert len(written) == len(first_prompts)
        assert len(set(first_prompts + second_prompts)) == len(first_prompts) + len(second_prompts)
    else:
        assert len(first_prompts) - len(written) <= 4  # only the requests in flight at the kill
    assert all(r.status == 200 for r in demo_llm.requests if r.prompt)


def test_generate_retries_rate_limits_and_server_errors(tmp_path, demo_llm, capsys):
    output = tmp_path / "predictions.jsonl"
    demo_llm.fail_next(Failure("status", 429, retry_after="0"), Failure("status", 503), Failure("hang"))
    demo_llm.hang_s = 2.0
    argv = ["generate", str(PSET), "--base-url", demo_llm.base_url, "--model", "demo", "--tasks", "rmsnorm"]
    argv += ["--output", str(output), "--concurrency", "1", "--backoff-base", "0.01", "--timeout", "1"]
    argv += ["--input-price", "2", "--output-price", "8", "--api-key-env", "RCB_TEST_NO_SUCH_KEY"]
    assert main(argv) == 0
    snippets = len(read_pset(PSET).task("rmsnorm").snippets)
    assert [r.status for r in demo_llm.requests[:3]] == [429, 503, 0]
    assert len(demo_llm.requests) == snippets + 3
    lines = _lines(output)
    assert len(lines) == snippets and lines[0]["requests"] == 4
    assert all(line["cost_usd"] > 0 for line in lines)
    assert "$" in capsys.readouterr().err


def test_a_bad_key_stops_generate_at_the_first_answer(tmp_path, demo_llm, capsys):
    demo_llm.mode = "ok"
    demo_llm.fail_next(*[Failure("status", 401)] * 10)
    argv = ["generate", str(PSET), "--base-url", demo_llm.base_url, "--model", "demo", "--concurrency", "1"]
    assert main([*argv, "--output", str(tmp_path / "p.jsonl")]) == 1
    assert len(demo_llm.requests) == 1
    assert "HTTP 401" in capsys.readouterr().err


@pytest.mark.django_db
def test_rcb_generate_writes_what_the_portal_generates(tmp_path, demo_llm, settings, monkeypatch):
    monkeypatch.setenv("RCB_LLM_KEY_FAKE", "sk-test")
    release = import_release(tmp_path, name="rms", task_ids=("rmsnorm",))
    run = run_create(
        model=fake_llm_model(demo_llm.base_url), release=release, source="generated", verification="generated"
    )
    portal = {}
    for item in run.completions.select_related("snippet"):
        acquired = lease_acquire(
            completion_id=item.pk,
            owner="t",
            stage_from=Completion.Stage.PENDING_GENERATION,
            stage_to=Completion.Stage.GENERATING,
            seconds=60,
        )
        assert acquired is LeaseResult.ACQUIRED
        completion_generate(completion_id=item.pk, owner="t")
        item.refresh_from_db()
        portal[item.snippet.name] = item
    output = tmp_path / "rcb.jsonl"
    argv = ["generate", str(PSET), "--base-url", demo_llm.base_url, "--model", "fake-1", "--tasks", "rmsnorm"]
    assert main([*argv, "--output", str(output), "--api-key-env", "RCB_LLM_KEY_FAKE"]) == 0
    task = read_pset(PSET).task("rmsnorm")
    lines = {line["snippet"]: line for line in _lines(output)}
    assert set(lines) == set(portal) and len(lines) == len(task.snippets)
    for name, line in lines.items():
        item = portal[name]
        code = extract_answer(line["response"], template=line["template"], indent=task.snippet(name).indent)
        assert line["prompt_hash"] == item.prompt_hash
        assert line["response"] == item.raw_response
        assert code == item.code and item.code_extracted
        assert (line["input_tokens"], line["output_tokens"]) == (item.input_tokens, item.output_tokens)


def test_an_endpoint_that_keeps_failing_stops_generate_after_three_completions(tmp_path, demo_llm, capsys):
    demo_llm.mode = "500"
    argv = ["generate", str(PSET), "--base-url", demo_llm.base_url, "--model", "demo", "--concurrency", "1"]
    argv += ["--max-requests", "2", "--backoff-base", "0.01", "--output", str(tmp_path / "p.jsonl")]
    assert main(argv) == 1
    assert [r.status for r in demo_llm.requests] == [500] * 6
    err = capsys.readouterr().err
    assert "3 completions failed" in err and "3 completions in a row failed every retry" in err
