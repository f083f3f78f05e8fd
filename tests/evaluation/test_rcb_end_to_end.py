"""Issue 23's acceptance, end to end, as a model developer would do it: the core installed into a fresh virtual
environment from the checkout; ``rcb download`` fetches a release from a live portal, ``rcb generate`` asks the
demo's fake model (a real HTTP server) for every snippet, ``rcb evaluate`` scores the answers on this machine,
and ``rcb submit --wait`` uploads them to the portal, whose real Celery worker tests them again. The score
``rcb evaluate`` printed is the score the portal's board shows for the run, and the portal's verdicts are the
local ones."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evaluation.management.commands.serve_fake_llm import FakeAnswers, plan_answers
from evaluation.models import EvaluationRun, TestResult
from tests.evaluation.engine_helpers import import_release
from tests.evaluation.fake_llm import FakeLLM
from tests.factories import UserFactory, api_token_for

REPO = Path(__file__).resolve().parents[2]
EVAL_PYTHON = REPO / ".venv-eval" / "bin" / "python"
TASKS = ("rmsnorm", "lion")


def _rcb(venv: Path, *argv: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [str(venv / "bin" / "rcb"), *argv], capture_output=True, text=True, env=env, cwd=cwd, timeout=600
    )
    assert result.returncode == 0, f"rcb {argv[0]}: {result.stderr[-3000:]}"
    return result


@pytest.mark.slow
def test_install_generate_evaluate_and_submit_give_the_score_the_portal_shows(
    transactional_db, live_server, start_worker, tmp_path
):
    if not EVAL_PYTHON.exists():
        pytest.skip(f"no evaluation interpreter at {EVAL_PYTHON} (scripts/bootstrap.sh makes it)")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--quiet", str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert pip.returncode == 0, pip.stderr[-3000:]

    import_release(tmp_path / "import", name="rms", task_ids=TASKS)
    answers = FakeAnswers(plan_answers(REPO / "examples" / "pset"))
    wrong = sum(p.wrong for p in plan_answers(REPO / "examples" / "pset") if p.task in TASKS)
    assert wrong, "the fake model must get some snippets of these tasks wrong, or the scores prove little"

    def answer(prompt: str) -> str:
        found = answers.find(prompt)
        return found.answer if found else "no code"

    server = FakeLLM(answer=answer).start()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "DATABASE", "CELERY"))},
        "OPENAI_API_KEY": "sk-test",
        "RCB_TOKEN": api_token_for(UserFactory(username="model-dev")),
    }
    work = tmp_path / "work"
    work.mkdir()
    try:
        _rcb(venv, "download", "rms", "--portal", live_server.url, "--output", "rms", env=env, cwd=work)
        _rcb(venv, "generate", "rms", "--base-url", server.base_url, "--model", "demo", "--output", "p.jsonl",
             env=env, cwd=work)  # fmt: skip
    finally:
        server.stop()
    evaluated = _rcb(venv, "evaluate", "rms", "--predictions", "p.jsonl", "--python", str(EVAL_PYTHON), "--json",
                     "--no-cache", env=env, cwd=work)  # fmt: skip
    local = json.loads(evaluated.stdout)
    local_scaled = local["scores"]["line_rate"]["mean"]
    assert 0 < local_scaled < 100, local["scores"]

    start_worker(extra_env={"RCB_VERDICT_CACHE": "0", "RCB_LEADERBOARD_DEBOUNCE_S": "0"})
    submitted = _rcb(venv, "submit", "p.jsonl", "--portal", live_server.url, "--release", "rms",
                     "--model", "demo-dev", "--model-name", "Demo Dev", "--wait", "--poll", "0.5",
                     "--wait-timeout", "600", env=env, cwd=work)  # fmt: skip
    run = EvaluationRun.objects.get(model__key="demo-dev")
    url, score = submitted.stdout.strip().splitlines()
    assert url == f"{live_server.url}/runs/{run.pk}/" and run.status == EvaluationRun.Status.FINISHED
    assert score.startswith(f"Scaled Pass@1: {local_scaled:.2f}  "), (score, local["scores"])

    portal = {
        (r.completion.snippet.task_version.task.key, r.completion.snippet.name): r.passed
        for r in TestResult.objects.filter(completion__run=run).select_related(
            "completion__snippet__task_version__task"
        )
    }
    here = {(v["task"], v["snippet"]): v["outcome"] == "passed" for v in local["verdicts"]}
    assert portal == here
