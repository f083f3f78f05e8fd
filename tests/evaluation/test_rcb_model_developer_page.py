"""docs/model-developers.md is tested as written: its ``sh`` blocks, in order, are one bash session in a fresh
home folder beside a checkout, against a live portal with a real worker and the demo's fake model server. The
page's three stand-ins (its first section says which) are the only substitutions: the portal's address, the
model server's and the token. So the page cannot drift from what ``rcb`` does."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from evaluation.management.commands.serve_fake_llm import FakeAnswers, plan_answers
from evaluation.models import EvaluationRun
from tests.evaluation.engine_helpers import import_release
from tests.evaluation.fake_llm import FakeLLM
from tests.factories import UserFactory, api_token_for

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "model-developers.md"
EVAL_PYTHON = REPO / ".venv-eval" / "bin" / "python"
_SH_BLOCK = re.compile(r"^```sh\n(.*?)^```$", re.S | re.M)


def page_commands(markdown: str) -> list[str]:
    """The page's ``sh`` blocks, in order."""
    return _SH_BLOCK.findall(markdown)


def test_the_page_has_a_session_from_install_to_submit():
    script = "".join(page_commands(PAGE.read_text()))
    for step in ("pip install", "rcb download", "rcb generate", "rcb evaluate", "rcb submit"):
        assert step in script


@pytest.mark.slow
def test_the_model_developer_page_runs_as_written(transactional_db, live_server, start_worker, tmp_path):
    if not EVAL_PYTHON.exists():
        pytest.skip(f"no evaluation interpreter at {EVAL_PYTHON} (scripts/bootstrap.sh makes it)")
    import_release(tmp_path / "import", name="rms", task_ids=("rmsnorm",))
    answers = FakeAnswers(plan_answers(REPO / "examples" / "pset"))
    server = FakeLLM(answer=lambda prompt: found.answer if (found := answers.find(prompt)) else "no code")
    server.start()
    token = api_token_for(UserFactory(username="page-reader"))
    stand_ins = {
        "https://rcb.example.org": live_server.url,
        "http://127.0.0.1:8000/v1": server.base_url,
        "your-token": token,
    }
    script = "set -euo pipefail\n" + "".join(page_commands(PAGE.read_text()))
    for stand_in, real in stand_ins.items():
        script = script.replace(stand_in, real)
    home = tmp_path / "home"
    work = home / "work"
    work.mkdir(parents=True)
    (work / "researchcodebench-hub").symlink_to(REPO)
    keep = (
        "PATH",
        "LANG",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "PIP_",
        "PYENV",
        "RCB_VAR_DIR",
        "RCB_VARIANTS_DIR",
    )
    env = {k: v for k, v in os.environ.items() if k.startswith(keep)}
    # The evaluation interpreter the page says rcb evaluate takes from RCB_EVAL_PYTHON.
    env.update(HOME=str(home), RCB_EVAL_PYTHON=str(EVAL_PYTHON), RCB_CACHE_DIR=str(tmp_path / "cache"))
    start_worker(extra_env={"RCB_VERDICT_CACHE": "0", "RCB_LEADERBOARD_DEBOUNCE_S": "0"})
    try:
        ran = subprocess.run(
            ["bash", "-c", script], capture_output=True, text=True, cwd=work, env=env, timeout=1200
        )
    finally:
        server.stop()
    assert ran.returncode == 0, f"{ran.stdout[-3000:]}\n{ran.stderr[-3000:]}"
    assert re.search(r"^total: \d+ tasks, \d+ snippets, \d+ lines, 0 errors", ran.stdout, re.M)
    assert f"evaluation interpreter: {EVAL_PYTHON} (Python 3.11" in ran.stderr
    run = EvaluationRun.objects.get(model__key="qwen2.5-coder-32b")
    assert run.status == EvaluationRun.Status.FINISHED
    assert f"{live_server.url}/runs/{run.pk}/" in ran.stdout and "Scaled Pass@1: " in ran.stdout
