"""Sandbox resources: a run can neither fill the host's disk through its task folder nor starve the host's
CPUs, and what it writes never lands on the host. Each behaviour is checked on the bare local sandbox
(cold) and through the runner both warm (fork server) and cold."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from researchcodebench.runner import Runner
from researchcodebench.sandbox import local
from researchcodebench.sandbox.base import Limits, RunSpec
from researchcodebench.sandbox.local import RunCgroup, detect_cgroups

from .runner_fixtures import body, checked_local_sandbox, eval_python, toy_task

#: The toy snippet's reference body: every run below passes its tests unless a limit stops it.
REFERENCE = body("result = [v * factor for v in values]")

#: Writes 48 MB into the task folder, 1 MB at a time (each write is far below the file-size rlimit).
WRITE_BIG = """\
with open("big.bin", "wb") as _big:
    for _ in range(48):
        _big.write(b"x" * (1 << 20))
"""

#: Three processes spin for one wall-clock second; the parent reports the CPU time they got.
SPIN = """\
import json as _json, os as _os, time as _time
_start = _time.monotonic()
_children = []
for _ in range(3):
    _pid = _os.fork()
    if _pid == 0:
        _end = _time.monotonic() + 1.0
        while _time.monotonic() < _end:
            pass
        _os._exit(0)
    _children.append(_pid)
for _pid in _children:
    _os.waitpid(_pid, 0)
_times = _os.times()
print("RCB-CPU " + _json.dumps({"cpu": _times.children_user + _times.children_system,
                                "wall": _time.monotonic() - _start}))
"""

#: Writes into the task folder and tries to create files next to the task view and the output files.
WRITE_AROUND = """\
import json as _json
open("written_by_the_run.txt", "w").write("run output")
_denied = {}
for _path in ("/run/rcb-src/planted.txt", "/run/rcb-io/planted.txt"):
    try:
        open(_path, "w").write("planted")
        _denied[_path] = False
    except OSError:
        _denied[_path] = True
print("RCB-DENIED " + _json.dumps(_denied))
"""


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    return checked_local_sandbox(tmp_path_factory.mktemp("scratch"))


def _needs_cpu_controller(box: local.LocalSandbox) -> None:
    if box.cgroups is None or not box.cgroups.cpu:
        pytest.skip("no cpu cgroup controller here: " + "; ".join(box.notes))


def _tree_size(root: str) -> int:
    total = 0
    for folder, _dirs, files in os.walk(root):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                pass
    return total


def _tree_names(root: str) -> set[str]:
    return {name for _folder, dirs, files in os.walk(root) for name in dirs + files}


def _marked(stdout: str, mark: str) -> dict:
    (line,) = [line for line in stdout.splitlines() if line.startswith(mark + " ")]
    return json.loads(line[len(mark) + 1 :])


def _runner(box: local.LocalSandbox, *, warm: bool, limits: Limits) -> Runner:
    return Runner(
        sandbox=box, environment=eval_python(), limits=limits, warm=warm, calibrate=False, workers=1
    )


# ---------------------------------------------------------------------------- the task folder's size


def test_a_run_writing_past_the_task_folder_limit_gets_enospc_and_leaves_the_host_folder_untouched(
    sandbox, tmp_path
):
    (tmp_path / "data.txt").write_text("data")
    python = eval_python()
    code = WRITE_BIG.replace('"big.bin"', '"/task/big.bin"')
    spec = RunSpec(
        workdir=str(tmp_path),
        argv=(python, "-I", "-c", code),
        python=python,
        limits=Limits(timeout_s=20, task_dir_mb=8),
    )
    result = sandbox.run(spec)
    assert result.exit_code == 1 and result.infra_error is None
    assert b"No space left on device" in result.stderr
    assert sorted(os.listdir(tmp_path)) == ["data.txt"]
    assert _tree_size(sandbox.scratch_root) < 1 << 20


def test_a_task_folder_larger_than_its_limit_is_an_infra_error_naming_the_limit(sandbox, tmp_path):
    (tmp_path / "weights.bin").write_bytes(b"\0" * (3 << 20))
    python = eval_python()
    spec = RunSpec(
        workdir=str(tmp_path),
        argv=(python, "-I", "-c", "print('never')"),
        python=python,
        limits=Limits(timeout_s=20, task_dir_mb=1),
    )
    result = sandbox.run(spec)
    assert result.infra_error is not None and "task folder limit 1 MB" in result.infra_error
    assert b"never" not in result.stdout


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_runner_fails_a_run_that_fills_its_task_folder_with_a_clear_reason(sandbox, tmp_path, warm):
    task = toy_task(tmp_path / "pset", prelude=WRITE_BIG)
    snippet = task.snippets[0]
    with _runner(sandbox, warm=warm, limits=Limits(timeout_s=20, task_dir_mb=8)) as runner:
        verdict = runner.evaluate(task, snippet, REFERENCE)
        # While the runner (and its warm server) is still alive: nothing of the 48 MB is on the host.
        assert _tree_size(sandbox.scratch_root) < 1 << 20
    assert verdict.warm is warm
    assert verdict.outcome == "failed" and verdict.tier == "model"
    assert verdict.exception_type == "OSError" and "No space left on device" in verdict.reason


def test_warm_server_empties_its_task_folder_after_each_run(sandbox, tmp_path):
    # The second run fits only if the first run's 48 MB were removed from the 64 MB task folder.
    task = toy_task(tmp_path / "pset", prelude=WRITE_BIG)
    snippet = task.snippets[0]
    with _runner(sandbox, warm=True, limits=Limits(timeout_s=20, task_dir_mb=64)) as runner:
        first = runner.evaluate(task, snippet, REFERENCE)
        second = runner.evaluate(task, snippet, REFERENCE + "\n")
    assert first.warm and second.warm
    assert first.passed and second.passed, (first.reason, second.reason)


# ---------------------------------------------------------------------------- what lands on the host


def test_files_a_cold_run_writes_never_land_on_the_host(sandbox, tmp_path):
    (tmp_path / "data.txt").write_text("data")
    python = eval_python()
    code = WRITE_AROUND.replace('"written_by_the_run.txt"', '"/task/written_by_the_run.txt"')
    spec = RunSpec(
        workdir=str(tmp_path), argv=(python, "-I", "-c", code), python=python, limits=Limits(timeout_s=20)
    )
    result = sandbox.run(spec)
    assert result.exit_code == 0, result.stderr
    assert _marked(result.stdout.decode(), "RCB-DENIED")["/run/rcb-src/planted.txt"] is True
    assert sorted(os.listdir(tmp_path)) == ["data.txt"]


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_files_a_run_writes_never_land_on_the_host_warm_or_cold(sandbox, tmp_path, warm):
    task = toy_task(tmp_path / "pset", prelude=WRITE_AROUND)
    with _runner(sandbox, warm=warm, limits=Limits(timeout_s=20)) as runner:
        verdict = runner.evaluate(task, task.snippets[0], REFERENCE)
        on_host = _tree_names(sandbox.scratch_root) | _tree_names(str(tmp_path))
        owners = {
            os.lstat(os.path.join(f, n)).st_uid for f, d, fs in os.walk(sandbox.scratch_root) for n in fs
        }
    assert verdict.passed, verdict.reason
    denied = _marked(verdict.stdout_tail, "RCB-DENIED")
    assert all(denied.values()), denied
    assert not {"written_by_the_run.txt", "planted.txt"} & on_host
    # Whatever the sandbox could write on the host (the warm output files) the runner created itself, for
    # the sandbox's unprivileged uid when the runner is root (never a file the run made).
    assert owners <= {os.getuid(), 65534}


# ---------------------------------------------------------------------------- the CPU quota


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_busy_processes_are_held_to_the_run_cpu_quota(sandbox, tmp_path, warm):
    _needs_cpu_controller(sandbox)
    task = toy_task(tmp_path / "pset", prelude=SPIN)
    with _runner(sandbox, warm=warm, limits=Limits(timeout_s=20, cpu_quota=0.2)) as runner:
        verdict = runner.evaluate(task, task.snippets[0], REFERENCE)
    assert verdict.passed and verdict.warm is warm, verdict.reason
    used = _marked(verdict.stdout_tail, "RCB-CPU")
    # Unlimited, three spinners get every free core for the whole second (1-3 CPU-seconds on two cores);
    # at 0.2 cores they get 0.2 CPU-seconds per wall second, plus at most one CFS period of slack.
    assert used["cpu"] <= 0.2 * used["wall"] + 0.3, used


def test_cpu_quota_is_written_to_the_v1_cpu_controller_and_counts_throttling(sandbox):
    _needs_cpu_controller(sandbox)
    group = RunCgroup(sandbox.cgroups, 256 << 20, 8, cpu_quota=0.5)
    try:
        folder = group.dirs.get("cpu") or group.dirs["unified"]
        if sandbox.cgroups.mode == "v1":
            assert Path(folder, "cpu.cfs_quota_us").read_text().strip() == "50000"
            assert Path(folder, "cpu.cfs_period_us").read_text().strip() == "100000"
        else:
            assert Path(folder, "cpu.max").read_text().split() == ["50000", "100000"]
        assert group.cpu_throttled() == 0
    finally:
        group.remove()


def _fake_v2_tree(root: Path, controllers: str) -> None:
    own = local._own_cgroup("") or "/"
    folder = root / own.lstrip("/")
    folder.mkdir(parents=True, exist_ok=True)
    (root / "cgroup.controllers").write_text(controllers + "\n")
    (folder / "cgroup.subtree_control").write_text(controllers + "\n")


def test_v2_layout_with_the_cpu_controller_sets_cpu_max(tmp_path):
    _fake_v2_tree(tmp_path, "cpu memory pids")
    layout = detect_cgroups(str(tmp_path))
    assert layout is not None and layout.mode == "v2" and layout.cpu
    group = RunCgroup(layout, 256 << 20, 8, cpu_quota=1.5)
    assert Path(group.dirs["unified"], "cpu.max").read_text() == "150000 100000"
    assert Path(group.dirs["unified"], "pids.max").read_text() == "8"
    for name in os.listdir(group.dirs["unified"]):
        os.unlink(os.path.join(group.dirs["unified"], name))
    group.remove()


def test_v2_layout_without_the_cpu_controller_limits_memory_but_sets_no_quota(tmp_path):
    _fake_v2_tree(tmp_path, "memory pids")
    layout = detect_cgroups(str(tmp_path))
    assert layout is not None and layout.mode == "v2" and not layout.cpu
    group = RunCgroup(layout, 256 << 20, 8, cpu_quota=1.5)
    assert not Path(group.dirs["unified"], "cpu.max").exists()
    assert group.cpu_throttled() == 0


def test_limits_refuse_a_non_positive_cpu_quota_or_task_folder_naming_the_field():
    with pytest.raises(ValueError, match="cpu_quota"):
        Limits(cpu_quota=0)
    with pytest.raises(ValueError, match="task_dir_mb"):
        Limits(task_dir_mb=0)
    assert Limits.from_dict({"cpu_quota": 2.5, "task_dir_mb": 64}) == Limits(cpu_quota=2.5, task_dir_mb=64)


def test_a_busy_sandbox_is_throttled_by_its_cgroup_while_it_runs(sandbox, tmp_path):
    # Read from the host while the run spins: the kernel's own count of periods the quota held it back.
    _needs_cpu_controller(sandbox)
    python = eval_python()
    spin = "import os\nos.fork(); os.fork()\nwhile True:\n    pass"
    box = sandbox.spawn(
        (python, "-I", "-c", spin),
        python=python,
        workdir=str(tmp_path),
        env={},
        limits=Limits(timeout_s=20, cpu_quota=0.1),
        stdin=None,
        stdout=None,
    )
    try:
        deadline = time.monotonic() + 10
        while box.cgroup.cpu_throttled() < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert box.cgroup.cpu_throttled() >= 3
    finally:
        box.close()
