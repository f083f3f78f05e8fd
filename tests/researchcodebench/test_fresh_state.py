"""Fresh state for every run (issue 18 items 1 and 6; docs/sandbox.md).

Each plant below is the strongest version of an attack: run with the screen and the audit hook off (a
contributed test, or a completion that got past both), it leaves behind whatever it can, read-only folders
and files in every writable place, big files in ``/dev`` and ``/dev/shm``, module state and ``sys.modules``
entries, and a read-only package in ``/task`` that shadows the task's module with the reference. Then the
same runner judges a wrong completion (it would pass if the shadow survived) and a probe that fails if
anything of the plant is still there. Warm and cold: 0 runs affected.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from researchcodebench.pset import read_pset
from researchcodebench.runner import Runner

from .runner_fixtures import (
    REGISTRY,
    TOY_CODE,
    TOY_REF,
    body,
    checked_local_sandbox,
    eval_python,
    toy_task,
)

pytestmark = pytest.mark.sandbox

WRONG = body("result = [v * factor + 1000 for v in values]")

#: Plants everything it can, everywhere it can (run as the toy's completion, and as a contributed test).
PLANT = """
import builtins, os, stat, sys, types
report = {}

def attempt(label, action):
    try:
        action()
        report[label] = "planted"
    except OSError as exc:
        report[label] = f"refused: {exc.strerror}"

def shadow_package(root):
    os.makedirs(root + "/toy", exist_ok=True)
    with open(root + "/toy/__init__.py", "w") as handle:
        handle.write("from " + "toy" + "_ref import *\\n")
    os.chmod(root + "/toy/__init__.py", 0o444)
    os.chmod(root + "/toy", 0o555)

def read_only_tree(root):
    os.makedirs(root + "/rcb-plant/deep", exist_ok=True)
    with open(root + "/rcb-plant/deep/marker", "w") as handle:
        handle.write("planted")
    os.chmod(root + "/rcb-plant/deep/marker", 0o444)
    os.chmod(root + "/rcb-plant/deep", 0o555)
    os.chmod(root + "/rcb-plant", 0o555)

def big_file(path, megabytes):
    with open(path, "wb") as handle:
        for _ in range(megabytes):
            handle.write(b"x" * (1 << 20))

for root in ("/task", "/tmp", "/dev/shm", "/dev", os.path.expanduser("~")):
    attempt("shadow package in " + root, lambda root=root: shadow_package(root))
    attempt("read-only tree in " + root, lambda root=root: read_only_tree(root))
attempt("big file in /dev", lambda: big_file("/dev/rcb-plant-big", 50))
attempt("big file in /dev/shm", lambda: big_file("/dev/shm/rcb-plant-big", 50))
attempt("big file in /tmp", lambda: big_file("/tmp/rcb-plant-big", 150))
attempt("user site-packages", lambda: (os.makedirs(os.path.expanduser("~/.local/lib/python3.11/site-packages"), exist_ok=True), open(os.path.expanduser("~/.local/lib/python3.11/site-packages/rcb.pth"), "w").write("import os\\n")))
fake = types.ModuleType("toy")
fake.scale = lambda values, factor: [v * factor for v in values]
sys.modules["toy"] = fake
sys.modules["rcb_plant"] = fake
builtins.RCB_PLANT = True
os.environ["RCB_PLANT"] = "1"
print("RCB-PLANT " + repr(report))
"""

#: Fails (names what it found) when anything of a plant is visible; otherwise the toy's correct body.
PROBE = """
import builtins, os, sys
found = []
for root in ("/task", "/tmp", "/dev/shm", "/dev", os.path.expanduser("~")):
    for name in ("toy", "rcb-plant", "rcb-plant-big"):
        if os.path.isdir(os.path.join(root, name)) or os.path.exists(os.path.join(root, name)):
            found.append(os.path.join(root, name))
if os.path.exists(os.path.expanduser("~/.local")):
    found.append("~/.local")
if "rcb_plant" in sys.modules or hasattr(builtins, "RCB_PLANT") or os.environ.get("RCB_PLANT"):
    found.append("interpreter state")
if sys.modules["toy"].__file__ != "/task/toy.py":
    found.append("toy imported from " + str(sys.modules["toy"].__file__))
if sorted(os.listdir("/dev")) != sorted(os.listdir("/dev")):
    found.append("/dev")
assert not found, "left by an earlier run: " + ", ".join(found)
result = [v * factor for v in values]
"""

#: A contributed task whose test plants at import, then passes its one test.
PLANTER_TEST = (
    PLANT
    + """
import unittest
import toy


class Plants(unittest.TestCase):
    def test_reference(self):
        self.assertEqual(toy.scale([1, 2], 2), [2, 4])


if __name__ == "__main__":
    unittest.main()
"""
)


def _planter(root: Path):
    task = root / "planter"
    task.mkdir(parents=True)
    (task / "toy.py").write_text(TOY_CODE)
    (task / "toy_ref.py").write_text(TOY_REF)
    (task / "paper2code_test.py").write_text(PLANTER_TEST)
    (task / "paper2code_paper.md").write_text("# Planter\n")
    (root / "papers.yaml").write_text(REGISTRY.format(id="planter"))
    return read_pset(root).tasks[0]


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    return checked_local_sandbox(tmp_path_factory.mktemp("fresh") / "scratch")


def _runner(sandbox, mode: str) -> Runner:
    # Screen and audit hook off: the plants must be held by the sandbox and the fresh namespaces alone.
    return Runner(
        sandbox=sandbox,
        environment=eval_python(),
        warm=mode == "warm",
        calibrate=False,
        workers=1,
        static_screen=False,
        audit_hook=False,
    )


def _report(verdict) -> dict[str, str]:
    line = next(line for line in verdict.stdout_tail.splitlines() if line.startswith("RCB-PLANT "))
    return eval(line[len("RCB-PLANT ") :], {})  # noqa: S307 - a dict literal printed by our own plant


@pytest.mark.parametrize("mode", ["warm", "cold"])
def test_nothing_a_completion_plants_reaches_a_later_run(sandbox, tmp_path, mode):
    task = toy_task(tmp_path)
    snippet = task.snippets[0]
    with _runner(sandbox, mode) as runner:
        planted = runner.evaluate(task, snippet, body(PLANT + "\nresult = [v * factor for v in values]"))
        report = _report(planted)
        wrong = runner.evaluate(task, snippet, WRONG)
        probe = runner.evaluate(task, snippet, body(PROBE))
        if mode == "warm":
            servers = [s for group in runner.pool._idle.values() for s in group]
            assert servers, "the warm server survived the plant and served the later runs"
    # Everything but /dev was writable by the run: the plants really were made. (The plant's own run fails:
    # the guard finds the planted module.)
    assert report["shadow package in /task"] == "planted" and report["big file in /dev/shm"] == "planted"
    assert report["big file in /dev"].startswith("refused") and report["shadow package in /dev"].startswith(
        "refused"
    )
    assert (wrong.outcome, wrong.category) == ("failed", "logic"), wrong.reason
    assert probe.passed, probe.reason
    assert wrong.warm is probe.warm is (mode == "warm")


@pytest.mark.parametrize("mode", ["warm", "cold"])
def test_nothing_a_contributed_test_plants_reaches_another_tasks_runs(sandbox, tmp_path, mode):
    planter = _planter(tmp_path / "contributed")
    task = toy_task(tmp_path / "example")
    snippet = task.snippets[0]
    with _runner(sandbox, mode) as runner:
        validated = runner.reference(planter)
        wrong = [runner.evaluate(task, snippet, WRONG + f"\n    # answer {n}") for n in range(3)]
        probe = runner.evaluate(task, snippet, body(PROBE))
    assert validated.passed, validated.reason
    assert _report(validated)["shadow package in /task"] == "planted"
    assert all((w.outcome, w.category) == ("failed", "logic") for w in wrong), [w.reason for w in wrong]
    assert probe.passed, probe.reason


def test_memory_a_run_wrote_is_released_when_it_ends(sandbox, tmp_path):
    task = toy_task(tmp_path)
    snippet = task.snippets[0]
    with _runner(sandbox, "warm") as runner:
        runner.evaluate(task, snippet, snippet.code)
        server = next(s for group in runner.pool._idle.values() for s in group)
        if server.box.cgroup is None:
            pytest.skip("no cgroup here to read the warm server's memory from")
        before = server.box.cgroup.usage()
        planted = runner.evaluate(task, snippet, body(PLANT + "\nresult = [v * factor for v in values]"))
        after = server.box.cgroup.usage()
        again = next(s for group in runner.pool._idle.values() for s in group)
    assert _report(planted)["big file in /tmp"] == "planted"
    assert again is server
    # 200 MB were written to /tmp and /dev/shm; they left with the run's namespaces.
    assert after - before < 40 * 1024 * 1024, (before, after)


PROC_PROBE = """
import json, os
procs = {}
for name in os.listdir("/proc"):
    if name.isdigit():
        with open(f"/proc/{name}/cmdline", "rb") as handle:
            cmdline = handle.read().replace(b"\\0", b" ").decode(errors="replace")
        with open(f"/proc/{name}/environ", "rb") as handle:
            environ = handle.read().replace(b"\\0", b" ").decode(errors="replace")
        procs[name] = {"start": cmdline[:40], "text": cmdline + " " + environ}
leaks = sorted({n for n in NEEDLES for p in procs.values() if n in p["text"]})
print("RCB-PROC " + json.dumps({"pids": sorted(procs), "init": procs.get("1", {}).get("start"), "leaks": leaks}))
result = [v * factor for v in values]
"""


@pytest.mark.parametrize("mode", ["warm", "cold"])
def test_proc_shows_only_the_runs_own_processes_and_no_host_path(sandbox, tmp_path, mode):
    task = toy_task(tmp_path)
    snippet = task.snippets[0]
    needles = [str(tmp_path), sandbox.scratch_root, "bwrap", "rcb-sandbox", "DJANGO", "/work/"]
    probe = PROC_PROBE.replace("NEEDLES", repr(needles))
    with _runner(sandbox, mode) as runner:
        verdict = runner.evaluate(task, snippet, body(probe))
    assert verdict.passed, verdict.reason
    line = next(line for line in verdict.stdout_tail.splitlines() if line.startswith("RCB-PROC "))
    seen = json.loads(line[len("RCB-PROC ") :])
    # pid 1 is the run's init (a sleeper), pid 2 the test itself: nothing of the worker, the sandbox or the
    # warm server that forked the run.
    assert seen["pids"] == ["1", "2"], seen
    assert seen["init"].startswith(("/usr/bin/sleep", "/bin/sleep")), seen
    assert seen["leaks"] == [], seen


def test_a_run_cannot_write_the_hosts_kernel_settings(sandbox, tmp_path):
    """The sandbox's uid is an unprivileged host uid (65534), never root: /proc/sys stays read-only to it,
    even when the runner itself is root."""
    task = toy_task(tmp_path)
    snippet = task.snippets[0]
    probe = body(
        textwrap.dedent(
            """
            import os
            value = open("/proc/sys/kernel/printk_ratelimit").read()
            try:
                open("/proc/sys/kernel/printk_ratelimit", "w").write(value)
                raise AssertionError("the run could write a kernel setting")
            except PermissionError:
                pass
            assert os.getuid() == 65534
            result = [v * factor for v in values]
            """
        )
    )
    for mode in ("warm", "cold"):
        with _runner(sandbox, mode) as runner:
            verdict = runner.evaluate(task, snippet, probe)
        assert verdict.passed, (mode, verdict.reason)


def test_the_test_itself_is_unchanged_by_a_shadow_in_its_own_run(sandbox, tmp_path):
    """Within one run, a completion cannot shadow a module the test imports later: writing a file Python
    would import is refused by the audit hook (with every layer on)."""
    task = toy_task(tmp_path)
    snippet = task.snippets[0]
    plant = body(
        """
        handle = open("json_" + "helper.py", "w")
        result = [v * factor for v in values]
        """
    )
    with Runner(sandbox=sandbox, environment=eval_python(), warm=True, calibrate=False, workers=1) as runner:
        verdict = runner.evaluate(task, snippet, plant)
    assert verdict.category == "harness_tampering" and "would import" in verdict.reason, verdict.reason
