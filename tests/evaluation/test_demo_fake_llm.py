"""The demo's fake LLM (`manage.py serve_fake_llm`) and the web evaluation it makes possible (issue 12):
the demo maintainer starts an evaluation of the demo model from the web, a real worker generates through
the fake server and tests in the sandbox, and the score appears on the board of the release, template and
paper setting it ran with, neither 0 nor 100; its passes are near verbatim (it answers the reference code),
as the model and snippet pages show."""

from __future__ import annotations

import ast
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.core.cache import cache
from django.core.management import call_command

from evaluation.management.commands.serve_fake_llm import (
    UNKNOWN_ANSWER,
    WRONG_EVERY,
    FakeAnswers,
    plan_answers,
)
from evaluation.models import Completion, EvaluationRun, LanguageModel
from leaderboard.links import snippet_url
from leaderboard.management.commands.load_demo import DEMO_MODEL_KEY, DEMO_MODEL_KEY_ENV
from researchcodebench.annotations import split_lines, strip_tags
from researchcodebench.predictions import extract_answer
from researchcodebench.problems import TEMPLATES, build_prompt, fill_in
from researchcodebench.pset import read_pset
from tests.conftest import REPO, wait_for

EXAMPLES = REPO / "examples" / "pset"
START_URL = "/runs/new/"

pytestmark = pytest.mark.skipif(not EXAMPLES.is_dir(), reason=f"{EXAMPLES} is not in this checkout")


@dataclass
class FakeServer:
    proc: subprocess.Popen
    log_path: Path
    base_url: str
    port: int

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def post(self, body: bytes, path: str = "/v1/chat/completions") -> tuple[int, dict]:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}", data=body, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.load(response)
        except urllib.error.HTTPError as exc:
            return exc.code, json.load(exc)


@pytest.fixture
def fake_server(tmp_path) -> Iterator[FakeServer]:
    """The shipped command, started as demo.sh starts it (on a free port here), stopped after the test."""
    log_path = tmp_path / "fake-llm.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "serve_fake_llm", "--port", "0"],
            cwd=REPO,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 60
        match = None
        while match is None and time.monotonic() < deadline:
            assert proc.poll() is None, f"serve_fake_llm exited:\n{log_path.read_text()}"
            match = re.search(r"listening on (http://127\.0\.0\.1:(\d+)/v1)", log_path.read_text())
            time.sleep(0.1)
        assert match, f"serve_fake_llm did not start:\n{log_path.read_text()}"
        yield FakeServer(proc, log_path, match.group(1), int(match.group(2)))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=20)


def chat(prompt: str) -> bytes:
    return json.dumps({"model": "demo-fake", "messages": [{"role": "user", "content": prompt}]}).encode()


# --- the server --------------------------------------------------------------------------------------------


def test_every_example_prompt_gets_its_snippet_answer_in_every_template_and_paper_setting():
    planned = plan_answers(EXAMPLES)
    answers = FakeAnswers(planned)
    by_key = {(p.task, p.snippet): p for p in planned}
    for task in (t for t in read_pset(EXAMPLES).tasks if not t.errors):
        for snippet in task.snippets:
            plan = by_key[(task.id, snippet.name)]
            original = task.read_text(snippet.file)
            for template in TEMPLATES:
                for with_paper in (True, False):
                    prompt = build_prompt(task, snippet, template=template, with_paper=with_paper).text
                    assert answers.find(prompt) == plan, (task.id, snippet.name, template, with_paper)
                    code = extract_answer(plan.answer, template=template, indent=snippet.indent)
                    filled = fill_in(original, snippet, code)
                    ast.parse(filled)  # the answer sits at the block's indentation in both templates
                    if not plan.wrong:  # the reference itself, less the nested snippets' tag lines
                        assert _untagged(filled) == _untagged(original), (task.id, snippet.name, template)
    wrong = [p for p in planned if p.wrong]
    assert 0 < len(wrong) < len(planned) and len(wrong) >= len(planned) // (WRONG_EVERY + 1)


def _untagged(text: str) -> list[str]:
    return [line.rstrip() for line in strip_tags(split_lines(text))]


def test_the_server_answers_over_http_and_refuses_bad_requests_with_a_reason(fake_server):
    task = read_pset(EXAMPLES).task("rmsnorm")
    status, body = fake_server.post(chat(build_prompt(task, task.snippets[1], template="rcb-v2").text))
    assert status == 200 and body["object"] == "chat.completion"
    assert "```python" in body["choices"][0]["message"]["content"] and body["usage"]["total_tokens"] > 0

    status, body = fake_server.post(chat("Reply with OK."))
    assert status == 200 and body["choices"][0]["message"]["content"] == UNKNOWN_ANSWER

    status, body = fake_server.post(b"{not json")
    assert status == 400 and "bad request body" in body["error"]["message"]
    status, body = fake_server.post(json.dumps({"messages": []}).encode())
    assert status == 400 and "'messages'" in body["error"]["message"]
    status, body = fake_server.post(chat("x"), path="/v1/embeddings")
    assert status == 404 and "/v1/chat/completions" in body["error"]["message"]

    log = fake_server.log()
    assert "answered rmsnorm / partial rms over the first k features: reference" in log
    assert log.count("answered an unknown prompt") == 1


def test_the_server_listens_on_the_loopback_interface_only(fake_server):
    assert fake_server.base_url.startswith("http://127.0.0.1:")
    connections = subprocess.run(
        ["ss", "-Hltn", f"sport = :{fake_server.port}"], capture_output=True, text=True, check=False
    )
    if connections.returncode != 0:
        pytest.skip("ss is not available")
    listening = [line.split()[3] for line in connections.stdout.splitlines() if line.strip()]
    assert listening == [f"127.0.0.1:{fake_server.port}"]


# --- the demo journey --------------------------------------------------------------------------------------


def board(client, **params: str) -> list[dict]:
    cache.clear()
    response = client.get("/api/v1/leaderboard/", params)
    assert response.status_code == 200, response.content
    return response.json()["results"]


@pytest.mark.slow
def test_the_demo_maintainer_evaluates_the_demo_model_from_the_web_and_its_score_reaches_its_board(
    transactional_db, client, fake_server, start_worker, settings, monkeypatch, capsys
):
    # As scripts/demo.sh sets them: a dummy key, and the fake server's host:port among the allowed hosts.
    monkeypatch.setenv(DEMO_MODEL_KEY_ENV, "demo-key-not-secret")
    allowed = f"api.openai.com,127.0.0.1:{fake_server.port}"
    settings.RCB_LLM_ALLOWED_HOSTS = allowed.split(",")
    settings.RCB_LEADERBOARD_DEBOUNCE_S = 0
    settings.RCB_VERDICT_CACHE = False
    call_command("load_demo", accounts=True, fake_llm_url=fake_server.base_url)
    out = capsys.readouterr().out
    assert f"demo model: '{DEMO_MODEL_KEY}' created, served by the fake LLM at {fake_server.base_url}" in out
    model = LanguageModel.objects.get(key=DEMO_MODEL_KEY)
    assert (model.management, model.active, model.provider, model.api_key_env) == (
        "maintainer",
        True,
        "other",
        DEMO_MODEL_KEY_ENV,
    )

    signed_in = client.post(
        "/accounts/login/", {"login": "maintainer@example.org", "password": "demo-maintainer-password"}
    )
    assert signed_in.status_code == 302
    page = client.get(START_URL, {"model": DEMO_MODEL_KEY, "release": "demo"})
    assert page.status_code == 200
    assert re.search(rf'<option value="{DEMO_MODEL_KEY}" selected>', page.content.decode())
    chosen = {
        "model": DEMO_MODEL_KEY,
        "release": "demo",
        "template": "rcb-v2",
        "with_paper": "with",
        "n_completions": "1",
        "temperature": "",
    }
    estimate = client.post(START_URL, chosen)
    assert estimate.status_code == 200 and 'name="confirm" value="yes"' in estimate.content.decode()
    started = client.post(START_URL, {**chosen, "confirm": "yes"})
    run = EvaluationRun.objects.get(model=model)
    assert started.status_code == 302 and started.url == f"/runs/{run.pk}/"
    assert (
        "the board of release demo, template rcb-v2, paper: with" in client.get(started.url).content.decode()
    )

    start_worker(
        concurrency=2,
        extra_env={
            "RCB_LLM_ALLOWED_HOSTS": allowed,
            "RCB_VERDICT_CACHE": "0",
            "RCB_LEADERBOARD_DEBOUNCE_S": "0",
        },
    )
    wait_for(lambda: EvaluationRun.objects.get(pk=run.pk).is_final, timeout=900, what="the run to finish")
    run.refresh_from_db()
    assert run.status == EvaluationRun.Status.FINISHED, run.status_reason
    planned = plan_answers(EXAMPLES)
    right = sum(not p.wrong for p in planned)
    assert run.total_items == len(planned)
    assert run.counts["passed"] == right, run.counts
    log = fake_server.log()
    answered = re.findall(r"^answered (.+) / .+: (reference|wrong)$", log, re.M)
    assert len(answered) == len(planned) and "unknown prompt" not in log

    wait_for(
        lambda: any(
            r["model"]["key"] == DEMO_MODEL_KEY
            for r in board(client, release="demo", template="rcb-v2", paper="with")
        ),
        timeout=120,
        what="the demo model on the board of release demo, template rcb-v2, with the paper",
    )
    (row,) = [
        r
        for r in board(client, release="demo", template="rcb-v2", paper="with")
        if r["model"]["key"] == DEMO_MODEL_KEY
    ]
    assert row["run_id"] == run.pk and 0 < row["scaled_pass_at_1"] < 100
    assert DEMO_MODEL_KEY not in [r["model"]["key"] for r in board(client, release="demo", paper="without")]
    assert DEMO_MODEL_KEY not in [
        r["model"]["key"] for r in board(client, release="demo", template="rcb-2025")
    ]

    # Memorisation (issue 22, item 8): the fake model answers with the reference code, so every pass whose
    # reference is long enough to tell is near verbatim, and the snippet page marks it; the demo model has no
    # knowledge cutoff, so the model page says its passes cannot be split by the papers' dates.
    passes = Completion.objects.filter(run=run, result__passed=True)
    told = passes.exclude(near_verbatim=None)
    assert 0 < told.count() < passes.count() and not told.filter(near_verbatim=False).exists()
    assert not Completion.objects.filter(run=run, result__passed=False, near_verbatim=True).exists()
    cache.clear()
    shown = _text(client.get(f"/models/{DEMO_MODEL_KEY}/").content.decode())
    figures = re.search(r"Of run \d+'s \d+ passes, .*? near verbatim, [\d.]+% \.", shown)
    assert figures and figures.group(0) == (
        f"Of run {run.pk}'s {passes.count()} passes, {told.count()} could be compared with the reference: "
        f"{told.count()} near verbatim, 100.0% ."
    )
    assert "The model's knowledge cutoff is unknown, so its passes cannot be split" in shown
    example = told.select_related("snippet__task_version__task__paper").order_by("snippet_id").first()
    snippet = example.snippet
    page = client.get(
        snippet_url(snippet.task_version.task.paper.key, snippet.name, snippet.pk)
    ).content.decode()
    mark = re.search(r"Overlap with the reference .*? one unbroken run\)\.", _text(page))
    assert ">near verbatim</span>" in page and mark
    with capsys.disabled():
        print(
            f"\nmodel page: {figures.group(0)}\nsnippet page ({snippet.task_version.task.paper.key} / {snippet.name}): {mark.group(0)}"
        )


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))
