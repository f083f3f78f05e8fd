"""Attacks from inside a completion (issue 4 item 7): each must end contained, with the right outcome,
leaving no process or file behind and no secret in the recorded output. Every attack runs warm (forked
from a warm server), cold (a fresh sandbox per run) and in a container of a real Docker engine (the docker
sandbox, issue 19).

The static screen (researchcodebench/screen.py) and the harness's audit hook would refuse most of these
programs before they run or as they start; the runners here switch both off so that the sandbox itself is
what holds them (docs/integrity.md: layers), except where the screen is what is tested (reaching the oracle,
exits judged with every layer on)."""

from __future__ import annotations

import os
import random
import socket
import tempfile
import time
from pathlib import Path

import pytest

from researchcodebench.runner import Runner
from researchcodebench.sandbox.base import Limits

from .runner_fixtures import body, checked_local_sandbox, docker_runner, eval_python, toy_task

pytestmark = pytest.mark.sandbox

SECRETS = {
    "DJANGO_SECRET_KEY": "django-insecure-canary-5b1f0c",
    "DATABASE_URL": "postgres://canary:hunter2-canary@127.0.0.1:5432/db",
    "OPENAI_API_KEY": "sk-canary-7d3e91aa",
}


def _our_cgroups() -> list[str]:
    prefix = f"rcb-{os.getpid()}-"
    found = []
    for controller in ("memory", "pids", "unified"):
        base = os.path.join("/sys/fs/cgroup", controller)
        for folder, dirs, _files in os.walk(base):
            found += [os.path.join(folder, d) for d in dirs if d.startswith(prefix)]
    return found


def _processes_with(needle: str) -> list[int]:
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                cmdline = (
                    Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                )
            except OSError:
                continue
            if needle in cmdline:
                pids.append(int(name))
    return pids


@pytest.fixture(scope="module")
def env_secrets():
    saved = {k: os.environ.get(k) for k in SECRETS}
    os.environ.update(SECRETS)
    yield SECRETS
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, env_secrets):
    root = tmp_path_factory.mktemp("security")
    scratch = root / "scratch"
    temp = root / "temp"
    temp.mkdir()
    old_tempdir = tempfile.tempdir
    tempfile.tempdir = str(temp)
    try:
        sandbox = checked_local_sandbox(scratch)
    except pytest.fail.Exception:
        tempfile.tempdir = old_tempdir
        raise
    task = toy_task(root / "pset")
    secret_file = root / "outside" / "secret.txt"
    secret_file.parent.mkdir()
    secret_file.write_text("top-secret-canary-41c2\n")
    runners = {
        (mode, screened): Runner(
            sandbox=sandbox,
            environment=eval_python(),
            warm=mode == "warm",
            calibrate=False,
            workers=1,
            static_screen=screened,
            audit_hook=screened,
        )
        for mode in ("warm", "cold")
        for screened in (False, True)
    }
    yield {
        "task": task,
        "runners": runners,
        "root": root,
        "scratch": scratch,
        "temp": temp,
        "secret": secret_file,
    }
    for runner in runners.values():
        runner.close()
    tempfile.tempdir = old_tempdir
    assert not _our_cgroups(), "a cgroup of a run was left behind"
    assert not any(scratch.iterdir()) if scratch.exists() else True, "sandbox scratch files were left behind"


#: warm and cold runs of the local sandbox, and cold runs in containers of a real Docker engine (skipped,
#: naming why, where none answers).
MODES = ("warm", "cold", "docker")


def _runner(workspace, mode: str, screened: bool) -> Runner:
    if (mode, screened) not in workspace["runners"]:
        workspace["runners"][(mode, screened)] = docker_runner(static_screen=screened, audit_hook=screened)
    return workspace["runners"][(mode, screened)]


def _run(workspace, mode: str, code: str, *, screened: bool = False, **limits: object):
    task = workspace["task"]
    snippet = task.snippets[0]
    runner = _runner(workspace, mode, screened)
    # A fresh container's start counts against the deadline; under a loaded CI machine one took over 10 s.
    # The attacks that are about deadlines set their own.
    run_limits = Limits(**{"timeout_s": 60.0 if mode == "docker" else 10.0, **limits})
    verdict = runner.evaluate(task, snippet, body(code), limits=run_limits)
    recorded = verdict.stdout_tail + verdict.stderr_tail + verdict.reason + (verdict.exception_message or "")
    for value in SECRETS.values():
        assert value not in recorded
    assert "top-secret-canary" not in recorded
    assert not any(workspace["temp"].iterdir()), "a run folder was left behind"
    return verdict


@pytest.mark.parametrize("mode", MODES)
def test_connecting_to_host_postgres_is_refused(workspace, mode):
    with socket.socket() as probe:
        probe.settimeout(2)
        reachable = probe.connect_ex(("127.0.0.1", 5432)) == 0
    verdict = _run(
        workspace,
        mode,
        """
        import socket
        socket.create_connection(("127.0.0.1", 5432), timeout=3).close()
        result = [v * factor for v in values]
        """,
    )
    assert verdict.outcome == "failed"
    assert verdict.exception_type in ("ConnectionRefusedError", "OSError", "TimeoutError")
    assert reachable or verdict.exception_type  # the host side is informational: the sandbox refused


@pytest.mark.parametrize("mode", MODES)
def test_reading_a_secret_outside_the_task_folder_and_etc_shadow_fails(workspace, mode):
    secret = workspace["secret"]
    verdict = _run(
        workspace,
        mode,
        f"""
        found = []
        for path in ({str(secret)!r}, "/etc/shadow", "/root/.bash_history", "/work/main/requirements.txt"):
            try:
                found.append(open(path).read())
            except OSError as exc:
                print("blocked", path, type(exc).__name__)
        print("FOUND", found)
        result = [v * factor for v in values]
        """,
    )
    assert verdict.outcome == "passed"
    assert "FOUND []" in verdict.stdout_tail
    for path in (str(secret), "/etc/shadow", "/root/.bash_history", "/work/main/requirements.txt"):
        assert f"blocked {path}" in verdict.stdout_tail


@pytest.mark.parametrize("mode", MODES)
def test_writing_outside_the_task_folder_leaves_the_host_untouched(workspace, mode):
    target = workspace["root"] / f"escape-{mode}.txt"
    verdict = _run(
        workspace,
        mode,
        f"""
        import os
        written = []
        for path in ({str(target)!r}, "/usr/escape.txt", "/escape.txt", "/etc/escape.txt", "/tmp/inside.txt"):
            try:
                with open(path, "w") as handle:
                    handle.write("x")
                written.append(path)
            except OSError:
                pass
        print("WRITTEN", written)
        result = [v * factor for v in values]
        """,
    )
    assert verdict.outcome == "passed"
    assert "WRITTEN ['/tmp/inside.txt']" in verdict.stdout_tail
    assert not target.exists()
    assert not os.path.exists("/usr/escape.txt") and not os.path.exists("/escape.txt")


@pytest.mark.parametrize("mode", MODES)
def test_printing_the_environment_reveals_no_secret(workspace, mode):
    verdict = _run(
        workspace,
        mode,
        """
        import os
        print(dict(os.environ))
        for pid in ("1", "self"):
            try:
                print(open(f"/proc/{pid}/environ").read())
            except OSError:
                pass
        result = [v * factor for v in values]
        """,
    )
    assert verdict.outcome == "passed"
    assert "OMP_NUM_THREADS" in verdict.stdout_tail
    assert "DJANGO_SECRET_KEY" not in verdict.stdout_tail


@pytest.mark.parametrize("mode", MODES)
def test_fork_flood_is_capped_and_killed(workspace, mode):
    verdict = _run(
        workspace,
        mode,
        """
        import os, time
        children = 0
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                if os.fork() == 0:
                    time.sleep(60)
                    os._exit(0)
                children += 1
            except OSError:
                time.sleep(0.01)
        """,
        timeout_s=3.0,
        max_procs=32,
    )
    assert verdict.outcome == "timeout"
    assert verdict.duration_s < 8


@pytest.mark.parametrize("mode", MODES)
def test_allocating_30_gb_is_out_of_memory(workspace, mode):
    verdict = _run(
        workspace, mode, "block = bytearray(30 * 1024 ** 3)\nresult = [v * factor for v in values]"
    )
    assert verdict.outcome == "oom"
    assert verdict.category == "oom"


@pytest.mark.parametrize("mode", MODES)
def test_growing_past_the_memory_limit_is_out_of_memory(workspace, mode):
    verdict = _run(
        workspace,
        mode,
        """
        blocks = []
        for _ in range(200):
            blocks.append(bytearray(b"x" * (16 * 1024 * 1024)))
        result = [v * factor for v in values]
        """,
        memory_mb=256,
    )
    assert verdict.outcome == "oom"


@pytest.mark.parametrize("mode", MODES)
def test_infinite_loop_times_out_at_the_deadline(workspace, mode):
    verdict = _run(workspace, mode, "while True:\n    pass", timeout_s=2.0)
    assert verdict.outcome == "timeout"
    assert verdict.category == "timeout" and verdict.tier == "model"
    # The limit enforced: the run ended at its deadline (the sandbox's own measure), not at the loop's end.
    assert verdict.duration_s < 2.0 + 6


@pytest.mark.parametrize("mode", MODES)
def test_detached_daemon_does_not_outlive_the_run(workspace, mode):
    token = f"{random.randint(10**6, 10**7)}.{random.randint(100, 999)}"
    verdict = _run(
        workspace,
        mode,
        f"""
        import os
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv("/bin/sleep", ["sleep", "{token}"])
            os._exit(0)
        os.wait()
        result = [v * factor for v in values]
        """,
    )
    assert verdict.outcome == "passed"
    deadline = time.monotonic() + 3
    while _processes_with(f"sleep {token}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _processes_with(f"sleep {token}") == []


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "code",
    [
        "import os\nos._exit(0)",
        "import sys\nsys.exit(0)",
        "raise SystemExit(0)",
        "exit()",
    ],
    ids=["os._exit", "sys.exit", "SystemExit", "exit"],
)
def test_exiting_early_with_status_zero_fails(workspace, mode, code):
    verdict = _run(workspace, mode, code)
    assert verdict.outcome == "failed"
    assert verdict.category == "early_exit"
    # The screen lets exits through since issue 32: the harness's accounting fails them the same way.
    screened = _run(workspace, mode, code, screened=True)
    assert (screened.outcome, screened.category) == ("failed", "early_exit")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "code",
    [
        "import toy_ref\nresult = toy_ref.scale(values, factor)",
        "from toy_ref import scale as s\nresult = s(values, factor)",
        "result = __import__('toy_ref').scale(values, factor)",
        "import json\nresult = json.load(open('expected.json'))['scale']",
    ],
    ids=["import", "from-import", "dunder-import", "open-hidden-oracle"],
)
def test_using_the_oracle_fails_before_running(workspace, mode, code):
    # Reaching the oracle is one of the things the screen keeps (docs/integrity.md), so it runs here.
    verdict = _run(workspace, mode, code, screened=True)
    assert verdict.outcome == "failed"
    assert verdict.category == "oracle_access"
    assert verdict.duration_s == 0.0


@pytest.mark.parametrize("mode", MODES)
def test_hidden_oracle_file_is_absent_even_when_named_indirectly(workspace, mode):
    verdict = _run(
        workspace,
        mode,
        """
        import os
        print("SEEN", sorted(os.listdir(".")))
        result = [v * factor for v in values]
        """,
    )
    assert verdict.outcome == "passed"
    assert "expected.json" not in verdict.stdout_tail
    assert "toy_ref.py" in verdict.stdout_tail
