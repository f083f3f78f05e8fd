"""Evaluation at the compute floor: where passes are not confirmed (the validation battery), a failing run
stops at its first failing test; a runner that confirms passes runs every test of every run, since a pass and
its confirmation against an impossible variant must not be told apart (a run that went on after a failure
would know it is the confirmation), and every run that derives variants does too, whatever the runner; a
passing run still runs every test (and its count is still checked), and a batch starts its longest expected
runs first."""

from __future__ import annotations

from pathlib import Path

import pytest

from researchcodebench.pset import Task, read_pset
from researchcodebench.runner import EvalItem, Runner, Verdict, longest_first

from .runner_fixtures import body, checked_local_sandbox, eval_python, make_pset

pytestmark = pytest.mark.sandbox

SLEEP_S = 2.0

# test_a fails for a wrong completion; test_b would fail too and test_c pass, each after a sleep. unittest
# runs a TestCase's tests in name order.
SLOW_TEST = """\
import time
import unittest

import toy


class ScaleTest(unittest.TestCase):
    def test_a_scales_each_value(self):
        self.assertEqual(toy.scale([1, 2, 3], 3), [3, 6, 9])

    def test_b_zero_factor_after_a_pause(self):
        time.sleep({sleep})
        self.assertEqual(toy.scale([4], 0), [0])

    def test_c_empty_list_after_a_pause(self):
        time.sleep({sleep})
        self.assertEqual(toy.scale([], 2), [])


if __name__ == "__main__":
    unittest.main()
"""

WRONG = body("result = [v + factor for v in values]")
EQUIVALENT = body("result = [factor * v for v in values]")


def slow_task(root: Path, *, sleep: float, task_id: str = "toy") -> Task:
    make_pset(root, task_id=task_id)
    (root / task_id / "paper2code_test.py").write_text(SLOW_TEST.format(sleep=sleep))
    return read_pset(root).tasks[0]


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    return checked_local_sandbox(tmp_path_factory.mktemp("scratch"))


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    return slow_task(tmp_path_factory.mktemp("pset"), sleep=SLEEP_S)


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_a_failing_run_stops_at_its_first_failing_test_where_passes_are_not_confirmed(sandbox, task, warm):
    with Runner(
        sandbox=sandbox, environment=eval_python(), warm=warm, calibrate=False, workers=1, confirm=False
    ) as runner:
        verdict = runner.evaluate(task, task.snippets[0], WRONG)
        # The same run with an answer that passes sleeps in both later tests: the yardstick, start-up included.
        full = runner.evaluate(task, task.snippets[0], EQUIVALENT)
    assert full.passed and full.duration_s >= 2 * SLEEP_S
    # The verdict a full run gives: the first failing test's assertion decides it.
    assert (verdict.outcome, verdict.category, verdict.exception_type) == (
        "failed",
        "logic",
        "AssertionError",
    )
    assert "[4, 5, 6]" in (verdict.exception_message or "")
    assert (verdict.tests_run, verdict.tests_failed) == (1, 1)
    assert verdict.exit_code == 1
    assert verdict.warm is warm


def test_a_runner_that_confirms_passes_runs_every_test_of_a_failing_run(sandbox, task):
    with Runner(sandbox=sandbox, environment=eval_python(), warm=True, calibrate=False, workers=1) as runner:
        verdict = runner.evaluate(task, task.snippets[0], WRONG)
    assert (verdict.outcome, verdict.exception_type) == ("failed", "AssertionError")
    assert (verdict.tests_run, verdict.tests_failed) == (3, 2)
    assert verdict.tests == {
        "ScaleTest.test_a_scales_each_value": "failed",
        "ScaleTest.test_b_zero_factor_after_a_pause": "failed",
        "ScaleTest.test_c_empty_list_after_a_pause": "passed",
    }


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_a_runner_that_does_not_confirm_derives_variants_from_runs_of_every_test(sandbox, tmp_path, warm):
    # Derivation runs the reference on changed files and needs how every test ends: the runs of a fail-fast
    # runner would have stopped at test_a, leaving test_b's perturbation unseen.
    quick = slow_task(tmp_path, sleep=0)
    with Runner(
        sandbox=sandbox,
        environment=eval_python(),
        warm=warm,
        calibrate=False,
        workers=1,
        confirm=False,
        variant_store=None,
    ) as runner:
        found = runner.snippet_variants(quick, quick.snippets[0])
    assert found.variants, found.note
    assert {v.fails for v in found.variants} == {
        ("ScaleTest.test_a_scales_each_value", "ScaleTest.test_b_zero_factor_after_a_pause")
    }


def test_a_passing_run_still_runs_every_test_and_matches_the_reference_count(sandbox, task):
    with Runner(
        sandbox=sandbox, environment=eval_python(), warm=False, calibrate=False, workers=1, confirm=False
    ) as runner:
        verdict = runner.evaluate(task, task.snippets[0], EQUIVALENT)
        reference = runner.reference(task)
    assert verdict.passed, verdict.reason
    assert (verdict.tests_run, verdict.tests_failed, verdict.tests_skipped) == (3, 0, 0)
    assert (reference.tests_run, reference.tests_skipped) == (verdict.tests_run, verdict.tests_skipped)
    assert verdict.duration_s >= 2 * SLEEP_S, "both slow tests ran"


def test_longest_first_orders_by_expected_duration_with_unknown_last_and_ties_stable():
    assert longest_first([1.0, None, 3.0, 1.0, 0.0, None]) == [2, 0, 3, 4, 1, 5]
    assert longest_first([]) == []


class _RecordingRunner(Runner):
    """Notes the order in which items start (the runner is used with one worker)."""

    started: list[tuple[str, str | None]]

    def evaluate(self, task, snippet, code, *, template=None, limits=None) -> Verdict:
        self.started.append((task.id, code))
        return super().evaluate(task, snippet, code, template=template, limits=limits)


def test_a_batch_starts_the_task_with_the_longest_reference_run_first(sandbox, tmp_path):
    fast = read_pset(make_pset(tmp_path / "fast", task_id="fast")).tasks[0]
    slow = slow_task(tmp_path / "slow", sleep=0.4, task_id="slow")
    items = [
        EvalItem(fast, fast.snippets[0], fast.snippets[0].code),
        EvalItem(slow, slow.snippets[0], WRONG),
        EvalItem(fast, fast.snippets[0], WRONG),
        EvalItem(slow, slow.snippets[0], EQUIVALENT),
    ]
    with _RecordingRunner(
        sandbox=sandbox, environment=eval_python(), warm=False, calibrate=True, workers=1, confirm=False
    ) as runner:
        runner.started = []
        verdicts = runner.evaluate_batch(items)
        expected = {t.id: runner.expected_duration_s(t) for t in (fast, slow)}
    assert expected["slow"] > expected["fast"]
    assert runner.started == [
        ("slow", WRONG),
        ("slow", EQUIVALENT),
        ("fast", fast.snippets[0].code),
        ("fast", WRONG),
    ]
    # Results still come back in the items' order.
    assert [v.passed for v in verdicts] == [True, False, False, True]
