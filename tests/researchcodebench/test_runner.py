"""Verdicts, categories, cache, calibration and isolation between runs of the test runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from researchcodebench.environments import resolve_environment
from researchcodebench.problems import blank_body
from researchcodebench.pset import read_pset
from researchcodebench.runner import (
    RESULT_MARK,
    START_MARK,
    TIMEOUT_FACTOR,
    EvalItem,
    Runner,
    Verdict,
    VerdictCache,
    evaluate,
    make_sandbox,
    normalise_code,
    verdict_from_run,
)
from researchcodebench.sandbox.base import OUTPUT_TAIL_BYTES, Limits, RunResult, RunSpec, SandboxUnavailable
from researchcodebench.sandbox.local import LocalSandbox
from researchcodebench.sandbox.unsandboxed import UnsandboxedRunner

from .runner_fixtures import body, checked_local_sandbox, eval_python, toy_task

WRONG = "result = [v + factor for v in values]"


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    return checked_local_sandbox(tmp_path_factory.mktemp("scratch"))


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    return toy_task(tmp_path_factory.mktemp("pset"))


@pytest.fixture(scope="module")
def warm(sandbox):
    # The warm server's isolation is tested with code the static screen would refuse before it ran.
    with Runner(
        sandbox=sandbox,
        environment=eval_python(),
        warm=True,
        calibrate=False,
        workers=1,
        static_screen=False,
        audit_hook=False,
    ) as runner:
        yield runner


@pytest.fixture(scope="module")
def cold(sandbox):
    with Runner(sandbox=sandbox, environment=eval_python(), warm=False, calibrate=False) as runner:
        yield runner


@pytest.mark.parametrize("mode", ["warm", "cold"])
def test_reference_passes_and_counts_unittest_tests(request, task, mode):
    runner = request.getfixturevalue(mode)
    snippet = task.snippets[0]
    verdict = runner.evaluate(task, snippet, snippet.code)
    assert (verdict.outcome, verdict.category, verdict.tier) == ("passed", "passed", "none")
    assert (verdict.tests_run, verdict.tests_failed) == (2, 0)
    assert verdict.exit_code == 0
    assert verdict.environment == resolve_environment(eval_python()).id
    assert verdict.warm is (mode == "warm")
    assert RESULT_MARK not in verdict.stderr_tail and START_MARK not in verdict.stderr_tail


@pytest.mark.parametrize("mode", ["warm", "cold"])
def test_wrong_result_fails_as_logic_error_with_failed_test_count(request, task, mode):
    runner = request.getfixturevalue(mode)
    verdict = runner.evaluate(task, task.snippets[0], body(WRONG))
    assert (verdict.outcome, verdict.category) == ("failed", "logic")
    assert verdict.exception_type == "AssertionError"
    # A runner that confirms passes runs every test of a failing run too (test_failfast.py says why).
    assert (verdict.tests_run, verdict.tests_failed) == (2, 2)
    assert verdict.exit_code == 1


def test_blank_body_fails_with_the_final_exception_category(warm, task):
    snippet = task.snippets[0]
    verdict = warm.evaluate(task, snippet, blank_body(snippet))
    assert (verdict.outcome, verdict.category) == ("failed", "name")
    assert verdict.exception_type == "NameError"


def test_no_code_is_a_verdict_without_a_run(warm, task):
    verdict = warm.evaluate(task, task.snippets[0], None)
    assert (verdict.outcome, verdict.category, verdict.tier) == ("no_code", "no_code", "model")
    assert verdict.duration_s == 0.0


@pytest.mark.parametrize(
    ("code", "category", "exception"),
    [
        ("result = [v * factor for v in values", "syntax", "SyntaxError"),
        ("result = [v * factr for v in values]", "name", "NameError"),
        ("result = values[10]", "index_key", "IndexError"),
        ("result = int('x')", "value_runtime", "ValueError"),
        ("result = values.scaled(factor)", "attribute", "AttributeError"),
        ("import not_a_real_package_xyz\nresult = values", "import", "ModuleNotFoundError"),
    ],
)
def test_categories_follow_the_final_exception(warm, task, code, category, exception):
    verdict = warm.evaluate(task, task.snippets[0], body(code))
    assert (verdict.outcome, verdict.category, verdict.tier) == ("failed", category, "model")
    assert verdict.exception_type == exception


def test_test_importing_a_package_missing_from_the_environment_is_infrastructure(tmp_path, warm):
    task = toy_task(tmp_path, prelude="import rcb_missing_dependency_pkg\n")
    snippet = task.snippets[0]
    verdict = warm.evaluate(task, snippet, snippet.code)
    assert (verdict.outcome, verdict.category, verdict.tier) == (
        "infra_error",
        "missing_dependency",
        "infrastructure",
    )
    assert verdict.reason == "missing dependency: rcb_missing_dependency_pkg"


def test_a_completion_of_a_task_whose_reference_fails_is_never_the_models_failure(sandbox):
    """The reference itself fails in this environment (here: its test expects a wrong value): every completion
    gets an infrastructure verdict naming the reference's error, not a model error (issue 19 item 8)."""
    fixtures = Path(__file__).resolve().parent / "fixtures" / "validation"
    task = read_pset(fixtures).task("failing-reference")
    snippet = task.snippets[0]
    with Runner(sandbox=sandbox, environment=eval_python(), warm=True, calibrate=True, workers=1) as runner:
        reference = runner.reference(task)
        assert not reference.passed
        for code in (snippet.code, "    return None\n"):
            verdict = runner.evaluate(task, snippet, code)
            assert (verdict.outcome, verdict.category, verdict.tier) == (
                "infra_error",
                "reference_failed",
                "infrastructure",
            ), verdict.reason
            assert verdict.reason.startswith("the task's reference fails in this environment too (")


@pytest.mark.parametrize("mode", ["warm", "cold"])
def test_script_test_may_end_with_its_own_sys_exit(request, tmp_path, mode):
    runner = request.getfixturevalue(mode)
    task = toy_task(tmp_path, script=True)
    snippet = task.snippets[0]
    good = runner.evaluate(task, snippet, snippet.code)
    bad = runner.evaluate(task, snippet, body(WRONG))
    assert good.outcome == "passed" and good.tests_run is None
    assert (bad.outcome, bad.category, bad.exit_code) == ("failed", "logic", 1)
    assert "result wrong" in bad.stdout_tail


def test_modules_and_files_of_one_run_never_reach_the_next(warm, task):
    snippet = task.snippets[0]
    leak = body(
        """
        import builtins, sys, types
        builtins.RCB_LEAK = 1
        sys.modules["rcb_leak_module"] = types.ModuleType("rcb_leak_module")
        open("/tmp/rcb-leak", "w").write("x")
        open("/dev/shm/rcb-leak", "w").write("x")
        result = [v * factor for v in values]
        """
    )
    probe = body(
        """
        import builtins, os, sys
        assert not hasattr(builtins, "RCB_LEAK"), "builtins leaked"
        assert "rcb_leak_module" not in sys.modules, "module leaked"
        assert not os.path.exists("/tmp/rcb-leak") and not os.path.exists("/dev/shm/rcb-leak"), "file leaked"
        result = [v * factor for v in values]
        """
    )
    assert warm.evaluate(task, snippet, leak).outcome == "passed"
    after = warm.evaluate(task, snippet, probe)
    assert after.warm and after.outcome == "passed", after.stderr_tail


def test_a_leftover_process_holding_gigabytes_is_killed_and_the_warm_server_kept(warm, task):
    # A killed process needs time (CPU) to free its memory: about a second for a few GB on a loaded
    # machine. The server must wait for it to vanish instead of calling itself unclean, which discarded it
    # and re-ran the item cold (warm=False).
    snippet = task.snippets[0]
    hog = body(
        """
        import os, time
        ready, signal_ready = os.pipe()
        if os.fork() == 0:
            os.setsid()
            block = bytearray(1536 * 1024 * 1024)
            for i in range(0, len(block), 4096):
                block[i] = 1
            os.write(signal_ready, b"x")
            time.sleep(600)
        os.read(ready, 1)
        result = [v * factor for v in values]
        """
    )
    first = warm.evaluate(task, snippet, hog)
    after = warm.evaluate(task, snippet, snippet.code)
    assert (first.outcome, first.warm) == ("passed", True), first.reason
    assert (after.outcome, after.warm) == ("passed", True), after.reason


def test_a_killed_warm_server_is_replaced_and_the_item_rerun_cold(sandbox, task):
    snippet = task.snippets[0]
    with Runner(
        sandbox=sandbox,
        environment=eval_python(),
        warm=True,
        calibrate=False,
        workers=1,
        static_screen=False,
        audit_hook=False,
    ) as runner:
        first = runner.evaluate(task, snippet, snippet.code)
        servers = [s for group in runner.pool._idle.values() for s in group]
        assert first.warm and len(servers) == 1
        servers[0].box.popen.kill()
        servers[0].box.popen.wait()
        rerun = runner.evaluate(task, snippet, snippet.code + "\n")
        nxt = runner.evaluate(task, snippet, snippet.code)
    assert (rerun.outcome, rerun.warm) == ("passed", False)
    assert (nxt.outcome, nxt.warm) == ("passed", True)


def test_a_run_cannot_reach_the_warm_server_that_forked_it(sandbox, task):
    snippet = task.snippets[0]
    attack = body(
        """
        import os, signal
        assert os.getppid() == 0, "the run's parent is outside its pid namespace"
        for target in [int(n) for n in os.listdir("/proc") if n.isdigit() and int(n) != os.getpid()] + [-1]:
            try:
                os.kill(target, signal.SIGKILL)
            except ProcessLookupError:
                pass
        result = [v * factor for v in values]
        """
    )
    with Runner(
        sandbox=sandbox,
        environment=eval_python(),
        warm=True,
        calibrate=False,
        workers=1,
        static_screen=False,
        audit_hook=False,
    ) as runner:
        attacked = runner.evaluate(task, snippet, attack)
        nxt = runner.evaluate(task, snippet, snippet.code)
        alive = [s.alive() for group in runner.pool._idle.values() for s in group]
    assert (attacked.outcome, attacked.warm) == ("passed", True), attacked.reason
    assert (nxt.outcome, nxt.warm) == ("passed", True)
    assert alive == [True], "the server that forked the run is the one that served the next run"


def test_verdict_cache_hits_on_equal_normalised_code_only(tmp_path, sandbox, task):
    cache = VerdictCache(str(tmp_path / "cache"))
    snippet = task.snippets[0]
    with Runner(
        sandbox=sandbox, environment=eval_python(), warm=False, calibrate=False, cache=cache
    ) as runner:
        first = runner.evaluate(task, snippet, snippet.code, template="rcb-v2")
        again = runner.evaluate(task, snippet, snippet.code + "   \n\n", template="rcb-v2")
        other_template = runner.evaluate(task, snippet, snippet.code, template="rcb-2025")
        other_code = runner.evaluate(task, snippet, body(WRONG), template="rcb-v2")
    assert not first.cached and again.cached and not other_template.cached and not other_code.cached
    assert again.same_result(first)
    assert len(list((tmp_path / "cache" / "verdicts").rglob("*.json"))) == 3


def test_infrastructure_failures_are_not_cached(tmp_path):
    cache = VerdictCache(str(tmp_path))
    verdict = Verdict(outcome="infra_error", category="sandbox_failure", tier="infrastructure")
    cache.put("k" * 64, verdict)
    assert cache.get("k" * 64) is None


def test_normalised_code_ignores_line_endings_and_trailing_space():
    assert normalise_code("a = 1  \r\nb = 2\n\n") == normalise_code("a = 1\nb = 2")
    assert normalise_code("  a = 1") != normalise_code("a = 1")


class ScriptedSandbox:
    """A sandbox that runs nothing: every run passes and reports ``duration_s`` (deterministic timing)."""

    name = "scripted"

    def __init__(self, duration_s: float) -> None:
        self.duration_s = duration_s
        self.timeouts: list[float] = []

    def check(self) -> None:
        pass

    def run(self, spec: RunSpec) -> RunResult:
        self.timeouts.append(spec.limits.timeout_s)
        nonce = (spec.stdin or b"").decode().strip()
        record = json.dumps(
            {"nonce": nonce, "early_exit": False, "status": 0, "exception": None, "breaches": []}
        )
        stderr = f"\n{START_MARK} {nonce}\n\n{RESULT_MARK} {record}\n"
        return RunResult(exit_code=0, duration_s=self.duration_s, stderr=stderr.encode())


@pytest.mark.parametrize(
    ("reference_s", "floor_s", "expected_s"),
    [
        (0.1, 2.0, 2.0),  # 10 x 0.1 s is under the floor: the floor applies
        (0.35, 2.0, 3.5),  # TIMEOUT_FACTOR x the reference run
        (5.0, 2.0, 20.0),  # capped by the manifest's timeout_s
        (0.1, 30.0, 20.0),  # a floor above the cap is capped too
    ],
)
def test_timeout_is_factor_times_reference_between_floor_and_cap(tmp_path, reference_s, floor_s, expected_s):
    task = toy_task(tmp_path)
    box = ScriptedSandbox(reference_s)
    with Runner(
        sandbox=box, environment=eval_python(), warm=False, timeout_floor_s=floor_s, confirm=False
    ) as runner:
        assert runner.timeout_for(task) == pytest.approx(expected_s)
        verdict = runner.evaluate(task, task.snippets[0], body(WRONG))
    # The reference ran under the cap; the completion under the calibrated timeout.
    assert box.timeouts == [20.0, pytest.approx(expected_s)]
    assert verdict.timeout_s == pytest.approx(expected_s)


def test_timeout_is_the_cap_when_the_manifest_sets_none(tmp_path):
    task = toy_task(tmp_path)
    object.__setattr__(task.manifest, "timeout_s", None)
    box = ScriptedSandbox(5.0)
    with Runner(sandbox=box, environment=eval_python(), warm=False, limits=Limits(timeout_s=4)) as runner:
        assert runner.timeout_for(task) == 4.0  # no manifest timeout: the limits' default is the cap


class RecordingSandbox:
    """The real local sandbox, recording how long each run took (the reference's measured duration)."""

    name = "local"

    def __init__(self, inner: LocalSandbox) -> None:
        self.inner = inner
        self.durations: list[float] = []

    def check(self) -> None:
        self.inner.check()

    def run(self, spec: RunSpec) -> RunResult:
        result = self.inner.run(spec)
        self.durations.append(result.duration_s)
        return result


def test_calibrated_timeout_ends_a_real_infinite_loop(sandbox, tmp_path):
    task = toy_task(tmp_path)
    box = RecordingSandbox(sandbox)
    with Runner(sandbox=box, environment=eval_python(), warm=False, timeout_floor_s=2.0) as runner:
        calibrated = runner.timeout_for(task)
        # The toy reference takes ~0.1 s on an idle machine, longer on a loaded one: derive the expected
        # value from the duration this run actually measured, not from a guess.
        (reference_s,) = box.durations
        assert calibrated == pytest.approx(min(max(TIMEOUT_FACTOR * round(reference_s, 4), 2.0), 20.0))
        verdict = runner.evaluate(task, task.snippets[0], body("while True:\n    pass"))
    assert (verdict.outcome, verdict.timeout_s) == ("timeout", calibrated)


def test_nested_oracle_is_matched_by_its_dotted_path_only(tmp_path):
    from researchcodebench.runner import oracle_access

    task = toy_task(tmp_path)
    snippet = task.snippets[0]
    oracles = ("ref/toy.py",)
    assert oracle_access(task, snippet, body("import ref.toy\nresult = values"), oracles)
    assert oracle_access(task, snippet, body("toy = 1\nresult = values"), oracles) is None
    assert oracle_access(task, snippet, body("result = open('ref/toy.py').read()"), oracles)


def test_forged_result_line_without_the_nonce_is_an_early_exit():
    forged = json.dumps({"nonce": "guess", "status": 0, "early_exit": False, "exception": None})
    result = RunResult(
        exit_code=0, duration_s=0.1, stderr=f"{START_MARK} n1\n{RESULT_MARK} {forged}\n".encode()
    )
    verdict = verdict_from_run(result, "n1", facts=None, environment="e")
    assert (verdict.outcome, verdict.category) == ("failed", "early_exit")


def test_process_that_never_started_is_a_sandbox_failure():
    result = RunResult(exit_code=1, duration_s=0.01, stderr=b"bwrap: Can't mount proc on /newroot/proc\n")
    verdict = verdict_from_run(result, "n1", facts=None, environment="e")
    assert (verdict.outcome, verdict.category, verdict.tier) == (
        "infra_error",
        "sandbox_failure",
        "infrastructure",
    )
    assert "Can't mount proc" in verdict.reason


def test_a_deadline_before_the_start_mark_is_the_sandboxes_and_after_it_the_completions():
    """A stalled engine or machine can spend a run's whole deadline before the harness starts the test; no
    code of the completion ran, so that is no timeout of the model's. Once the mark is written the deadline
    is the completion's, and flooding stderr (which could push the mark out of the kept tail) does not
    turn a timeout into an infrastructure verdict."""
    stalled = RunResult(exit_code=None, signal=9, duration_s=10.0, timed_out=True, stderr=b"")
    verdict = verdict_from_run(stalled, "n1", facts=None, environment="e")
    assert (verdict.outcome, verdict.tier) == ("infra_error", "infrastructure")
    assert "had not started the test" in verdict.reason
    ran = RunResult(
        exit_code=None, signal=9, duration_s=10.0, timed_out=True, stderr=f"{START_MARK} n1\n".encode()
    )
    assert verdict_from_run(ran, "n1", facts=None, environment="e").outcome == "timeout"
    flood = b"x" * OUTPUT_TAIL_BYTES
    flooded = RunResult(exit_code=None, signal=9, duration_s=10.0, timed_out=True, stderr=flood)
    assert verdict_from_run(flooded, "n1", facts=None, environment="e").outcome == "timeout"


def _result(*records: dict, exit_code: int = 0) -> RunResult:
    lines = [f"{START_MARK} n1"] + [f"{RESULT_MARK} {json.dumps(r)}" for r in records]
    return RunResult(exit_code=exit_code, duration_s=0.1, stderr=("\n".join(lines) + "\n").encode())


CLEAN = {"nonce": "n1", "early_exit": False, "status": 0, "exception": None, "breaches": []}


def test_a_run_whose_result_channel_was_replaced_is_tampering_whatever_its_status():
    verdict = verdict_from_run(
        _result({**CLEAN, "breaches": ["the result channel was replaced"]}), "n1", facts=None, environment="e"
    )
    assert (verdict.outcome, verdict.category) == ("failed", "harness_tampering")
    assert "result channel" in verdict.reason


def test_a_test_that_did_not_return_normally_in_a_successful_run_is_tampering_naming_it():
    """unittest's own runner counts a test that raised its internal stop signal as a success: the harness's
    wrapper of the test method saw it raise, so the run does not pass."""
    record = {
        **CLEAN,
        "tests": {"T.test_a": "passed", "T.test_b": "stopped (unittest's internal stop signal)"},
        "silenced": ["T.test_b"],
    }
    verdict = verdict_from_run(_result(record), "n1", facts=None, environment="e")
    assert (verdict.outcome, verdict.category) == ("failed", "harness_tampering")
    assert "T.test_b (stopped (unittest's internal stop signal))" in verdict.reason
    assert verdict.tests == {"T.test_a": "passed", "T.test_b": "stopped (unittest's internal stop signal)"}


def test_a_result_without_the_harness_checks_field_or_with_a_second_line_is_tampering():
    missing = {k: v for k, v in CLEAN.items() if k != "breaches"}
    assert (
        verdict_from_run(_result(missing), "n1", facts=None, environment="e").category == "harness_tampering"
    )
    twice = verdict_from_run(_result(CLEAN, CLEAN), "n1", facts=None, environment="e")
    assert twice.category == "harness_tampering"
    assert verdict_from_run(_result(CLEAN), "n1", facts=None, environment="e").passed


def test_failed_tests_with_exit_status_zero_do_not_pass():
    record = {**CLEAN, "unittest": True, "tests_run": 7, "tests_failed": 6, "tests_skipped": 0}
    record["exception"] = {"type": "AssertionError", "message": "x", "module": None, "builtin_base": None}
    verdict = verdict_from_run(_result(record), "n1", facts=None, environment="e")
    assert (verdict.outcome, verdict.category, verdict.tests_failed) == ("failed", "logic", 6)


def test_a_failure_streamed_during_the_run_cannot_be_taken_back():
    record = {**CLEAN, "unittest": True, "tests_run": 7, "tests_failed": 0, "tests_skipped": 0}
    lines = [f"{START_MARK} n1", "@@RCB-FAIL@@", f"{RESULT_MARK} {json.dumps(record)}"]
    result = RunResult(exit_code=0, duration_s=0.1, stderr=("\n".join(lines) + "\n").encode())
    verdict = verdict_from_run(result, "n1", facts=None, environment="e")
    assert not verdict.passed and verdict.tests_failed == 1


def test_batch_keeps_item_order_and_reports_progress(warm, task):
    snippet = task.snippets[0]
    items = [
        EvalItem(task, snippet, code, completion_idx=i)
        for i, code in enumerate([snippet.code, body(WRONG), None])
    ]
    seen: list[tuple[int, int]] = []
    verdicts = warm.evaluate_batch(items, workers=2, progress=lambda d, n: seen.append((d, n)))
    assert [v.outcome for v in verdicts] == ["passed", "failed", "no_code"]
    assert sorted(seen) == [(1, 3), (2, 3), (3, 3)]


def test_one_shot_evaluate_function_runs_cold(sandbox, task):
    snippet = task.snippets[0]
    verdict = evaluate(task, snippet, snippet.code, sandbox=sandbox, env=eval_python())
    assert verdict.outcome == "passed" and not verdict.warm


def test_unsandboxed_runner_is_refused_unless_the_caller_allows_it(monkeypatch, task):
    # The variable alone does not allow it: the library reads no environment, its caller opts in.
    monkeypatch.setenv("RCB_ALLOW_UNSANDBOXED", "1")
    with pytest.raises(SandboxUnavailable, match="RCB_ALLOW_UNSANDBOXED=1"):
        Runner(sandbox=UnsandboxedRunner(), environment=eval_python())
    with pytest.raises(SandboxUnavailable, match="RCB_ALLOW_UNSANDBOXED=1"):
        Runner(sandbox=make_sandbox("none"), environment=eval_python())
    snippet = task.snippets[0]
    allowed = make_sandbox("none", allow_unsandboxed=True)
    with Runner(
        sandbox=allowed, environment=eval_python(), calibrate=False, static_screen=False, audit_hook=False
    ) as runner:
        assert runner.pool is None
        assert runner.evaluate(task, snippet, snippet.code).outcome == "passed"
        assert runner.evaluate(task, snippet, body("import sys\nsys.exit(0)")).category == "early_exit"


def test_make_sandbox_selects_backends_by_name(monkeypatch):
    assert isinstance(make_sandbox("local"), LocalSandbox)
    assert make_sandbox("docker").name == "docker"
    assert make_sandbox("docker", docker_image="rcb-eval:chosen").image == "rcb-eval:chosen"
    assert isinstance(make_sandbox("none"), UnsandboxedRunner)
    with pytest.raises(SandboxUnavailable, match="unknown sandbox"):
        make_sandbox("vm")


def test_verdict_round_trips_through_json():
    verdict = Verdict(
        outcome="failed", category="type", tier="model", exception_type="TypeError", tests_run=3
    )
    assert Verdict.from_dict(json.loads(json.dumps(verdict.to_dict()))) == verdict
