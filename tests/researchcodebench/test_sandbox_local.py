"""The bubblewrap backend on its own: isolation, limits, cleanup and its command line."""

from __future__ import annotations

import json
import os

import pytest

from researchcodebench.sandbox import local
from researchcodebench.sandbox.base import Limits, RunSpec, SandboxUnavailable
from researchcodebench.sandbox.local import LocalSandbox, detect_cgroups

from .runner_fixtures import checked_local_sandbox, eval_python

PROBE = r"""
import json, os
net = [line.split(":")[0].strip() for line in open("/proc/net/dev").read().splitlines()[2:]]
print(json.dumps({
    "uid": os.getuid(), "cwd": os.getcwd(), "env": dict(os.environ), "net": net,
    "root": sorted(os.listdir("/")), "etc": sorted(os.listdir("/etc")), "pids": sorted(
        int(p) for p in os.listdir("/proc") if p.isdigit()),
    "hidden": open("oracle.txt").read(), "visible": open("data.txt").read(),
}))
"""


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    return checked_local_sandbox(tmp_path_factory.mktemp("scratch"))


def _spec(workdir, code: str, **kwargs) -> RunSpec:
    python = eval_python()
    return RunSpec(workdir=str(workdir), argv=(python, "-I", "-c", code), python=python, **kwargs)


def test_missing_bubblewrap_is_refused_with_install_hint(tmp_path):
    box = LocalSandbox(bwrap=str(tmp_path / "no-bwrap"))
    with pytest.raises(SandboxUnavailable, match="apt-get install bubblewrap"):
        box.check()


def test_process_sees_only_the_task_folder_loopback_and_its_own_environment(sandbox, tmp_path):
    (tmp_path / "oracle.txt").write_text("the answer")
    (tmp_path / "data.txt").write_text("data")
    result = sandbox.run(_spec(tmp_path, PROBE, env={"ONLY": "this"}, hidden_paths=("oracle.txt",)))
    assert result.exit_code == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["uid"] == 65534
    assert seen["cwd"] == "/task"
    # PWD comes from bwrap's --chdir, LC_CTYPE from Python's own C-locale coercion (PEP 538),
    # LD_LIBRARY_PATH from the interpreter's view (a shared libpython shown at /opt/rcb/python/lib).
    assert seen["env"]["ONLY"] == "this"
    assert set(seen["env"]) <= {"ONLY", "PWD", "LC_CTYPE", "LD_LIBRARY_PATH"}
    assert seen["env"].get("LD_LIBRARY_PATH", "/opt/rcb/python/lib") == "/opt/rcb/python/lib"
    assert seen["net"] == ["lo"]
    # The interpreter appears at /opt/rcb (never at its host path: here /root/.pyenv and the checkout).
    assert "opt" in seen["root"] and not {"root", "home", "var", "work"} & set(seen["root"])
    assert "shadow" not in seen["etc"] and "passwd" in seen["etc"]
    assert seen["hidden"] == "" and seen["visible"] == "data"
    assert max(seen["pids"]) < 10  # a private pid namespace


def test_memory_limit_kill_is_reported_as_oom_and_the_cgroup_removed(sandbox, tmp_path):
    if sandbox.cgroups is None:
        pytest.skip("no usable cgroup on this machine")
    code = "b = []\nwhile True:\n    b.append(bytearray(b'x' * (8 << 20)))"
    result = sandbox.run(_spec(tmp_path, code, limits=Limits(memory_mb=128, timeout_s=20)))
    assert result.oom and not result.timed_out
    assert not [
        d
        for d in os.listdir(
            sandbox.cgroups.parents["memory" if "memory" in sandbox.cgroups.parents else "unified"]
        )
        if d.startswith(f"rcb-{os.getpid()}-")
    ]


def test_deadline_kills_the_process_tree(sandbox, tmp_path):
    code = "import os, time\nos.fork(); os.fork()\ntime.sleep(60)"
    result = sandbox.run(_spec(tmp_path, code, limits=Limits(timeout_s=1)))
    assert result.timed_out and result.exit_code is None
    assert result.duration_s < 5


def test_process_limit_stops_a_fork_bomb(sandbox, tmp_path):
    if sandbox.cgroups is None:
        pytest.skip("no usable cgroup on this machine")
    code = (
        "import os\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n            import time; time.sleep(30)\n"
        "        n += 1\nexcept OSError:\n    print(n)"
    )
    result = sandbox.run(_spec(tmp_path, code, limits=Limits(timeout_s=10, max_procs=16)))
    assert result.exit_code == 0
    assert int(result.stdout) < 16


def test_gpu_devices_are_exposed_only_to_tasks_that_need_a_gpu(sandbox, tmp_path, monkeypatch):
    monkeypatch.setattr(
        local.glob, "glob", lambda pattern: ["/dev/nvidia0"] if pattern == "/dev/nvidia*" else []
    )
    common = dict(scratch=str(tmp_path), workdir=str(tmp_path), bind_paths=(), env={}, limits=Limits())
    with_gpu = sandbox.command(needs_gpu=True, **common)
    without = sandbox.command(needs_gpu=False, **common)
    assert "/dev/nvidia0" in with_gpu and "/dev/nvidia0" not in without
    for flag in ("--unshare-all", "--die-with-parent", "--new-session", "--clearenv", "--remount-ro"):
        assert flag in without
    assert not any("shadow" in arg for arg in without)


def test_an_interpreter_under_tmp_is_bound_on_top_of_the_private_tmp(tmp_path):
    venv = "/tmp/checkout/.venv-eval"
    argv = LocalSandbox().command(
        scratch=str(tmp_path), workdir=str(tmp_path), bind_paths=(venv,), env={}, limits=Limits()
    )
    tmpfs_at = next(i for i in range(len(argv) - 1) if argv[i : i + 2] == ["--tmpfs", "/tmp"])
    bind_at = next(i for i in range(len(argv) - 2) if argv[i : i + 3] == ["--ro-bind", venv, venv])
    assert bind_at > tmpfs_at, (
        "a later mount shadows an earlier one: the venv must come after the private /tmp"
    )


def test_without_cgroups_memory_falls_back_to_rlimit_as_with_a_note():
    box = LocalSandbox(use_cgroups=False)
    assert box.notes and "RLIMIT_AS" in box.notes[0]
    assert box.harness_limits(Limits(memory_mb=512))["address_space_bytes"] == 512 * 1024 * 1024


def test_cgroup_layout_is_detected_here():
    layout = detect_cgroups()
    if layout is None:
        pytest.skip("no cgroup controllers available")
    assert layout.mode in ("v1", "v2")
    assert all(os.path.isdir(p) for p in layout.parents.values())


def test_leftovers_of_dead_runner_processes_are_removed(tmp_path):
    import subprocess

    dead = subprocess.Popen(["/bin/true"])
    dead.wait()
    scratch = tmp_path / "scratch"
    box = LocalSandbox(scratch_root=str(scratch))
    (scratch / f"box-{dead.pid}-abc").mkdir(parents=True)
    (scratch / f"box-{os.getpid()}-live").mkdir()
    leftovers = []
    if box.cgroups is not None:
        for parent in box.cgroups.parents.values():
            path = os.path.join(parent, f"rcb-{dead.pid}-0")
            os.mkdir(path)
            leftovers.append(path)
    assert box.cleanup_stale() == 1 + len(leftovers)
    assert sorted(p.name for p in scratch.iterdir()) == [f"box-{os.getpid()}-live"]
    assert not any(os.path.exists(p) for p in leftovers)
