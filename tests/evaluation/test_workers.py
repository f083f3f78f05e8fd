"""The engine end to end: real database, the configured broker and real Celery worker processes.

A model on the fake LLM server is evaluated on the example pset; workers are killed with SIGKILL while
they test; the provider fails; a run is cancelled. Every run must end with one recorded outcome per
completion and a reason for anything that did not pass -- never "stuck".
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from evaluation.models import Completion, EvaluationRun, TestResult
from evaluation.selectors import run_snippet_results
from evaluation.services import leases_reap, run_cancel, run_create
from researchcodebench.scoring import SnippetResult, line_rates, score_model, task_rates
from tests.conftest import WorkerProcess, wait_for
from tests.evaluation.engine_helpers import (
    answer_by_prompt,
    core_verdict_outcomes,
    example_tasks,
    import_release,
    scripted_answers,
)
from tests.factories import fake_llm_model

pytestmark = pytest.mark.slow

Stage = Completion.Stage
WORKER_ENV = {"RCB_LLM_KEY_FAKE": "sk-test", "RCB_VERDICT_CACHE": "0"}


def start_run(model, release) -> EvaluationRun:
    return run_create(model=model, release=release, source="generated", verification="generated")


def run_state(run: EvaluationRun) -> EvaluationRun:
    run.refresh_from_db()
    return run


def stop_together(workers: list[WorkerProcess]) -> None:
    """Ask every worker to shut down at once (each takes several seconds), then wait for them all."""
    for worker in workers:
        if worker.proc.poll() is None:
            os.killpg(worker.proc.pid, signal.SIGTERM)
    for worker in workers:
        worker.stop()


def assert_every_item_recorded_once(run: EvaluationRun) -> None:
    items = Completion.objects.filter(run=run)
    assert not items.filter(
        stage__in=(Stage.PENDING_GENERATION, Stage.GENERATING, Stage.PENDING_TEST, Stage.TESTING)
    )
    results = TestResult.objects.filter(completion__run=run)
    assert results.count() == items.filter(stage=Stage.DONE).count()
    assert results.values("completion").distinct().count() == results.count()


def test_generated_run_on_the_example_pset_with_two_workers_scores_like_the_core_library(
    start_worker,
    tmp_path,
    fake_llm,
):
    tasks = example_tasks()
    answers = scripted_answers(tasks)
    fake_llm.answer = answer_by_prompt(tasks, answers)
    expected = core_verdict_outcomes(tasks, answers)
    release = import_release(tmp_path)
    model = fake_llm_model(fake_llm.base_url)
    workers = [start_worker(concurrency=1, extra_env=WORKER_ENV) for _ in range(2)]

    started = time.monotonic()
    run = start_run(model, release)
    wait_for(lambda: run_state(run).is_final, timeout=90, interval=0.2, what="the run to finish")
    elapsed = time.monotonic() - started
    print(f"\nrun of {run.total_items} completions with 2 workers: {elapsed:.1f} s")

    assert run.status == EvaluationRun.Status.FINISHED, run.status_reason
    assert run.counts["generated"] == run.counts["tested"] == run.total_items == len(expected)
    assert_every_item_recorded_once(run)
    portal = {
        (c.snippet.task_version.task.key, c.snippet.name): (c.result.outcome, c.result.passed)
        for c in run.completions.select_related("snippet__task_version__task", "result")
    }
    assert portal == expected
    assert {outcome for outcome, _ in expected.values()} >= {"passed", "failed", "no_code"}

    lines = {(t.id, s.name): s.lines for t in tasks for s in t.snippets}
    core_results = [
        SnippetResult(task=task, snippet=name, lines=lines[(task, name)], completion_idx=0, passed=passed)
        for (task, name), (_outcome, passed) in expected.items()
    ]
    ours = score_model("fake", "Fake", run_snippet_results(run=run), expected=lines)
    theirs = score_model("fake", "Fake", core_results, expected=lines)
    assert (ours.line, ours.task, ours.coverage) == (theirs.line, theirs.task, theirs.coverage)
    assert line_rates(run_snippet_results(run=run)).mean == pytest.approx(line_rates(core_results).mean)
    assert 0 < task_rates(core_results).mean < 100
    assert run.input_tokens > 0 and run.cost_usd > 0
    assert elapsed < 45, f"the run took {elapsed:.1f} s"
    stop_together(workers)


def test_a_worker_killed_while_testing_loses_and_duplicates_nothing(
    start_worker, tmp_path, fake_llm, settings
):
    names = ("rmsnorm", "roformer", "focal-loss")
    tasks = example_tasks(names)
    fake_llm.answer = answer_by_prompt(tasks, scripted_answers(tasks))
    release = import_release(tmp_path, name="crash", task_ids=names)
    model = fake_llm_model(fake_llm.base_url)
    settings.RCB_PENDING_RESEND_S = 5
    env = {**WORKER_ENV, "RCB_LEASE_SECONDS": "2"}
    first = start_worker(concurrency=1, extra_env=env)
    run = start_run(model, release)
    total = run.total_items

    def testing_midway() -> bool:
        done = TestResult.objects.filter(completion__run=run).count()
        return 3 <= done < total - 3 and Completion.objects.filter(run=run, stage=Stage.TESTING).exists()

    def leased() -> list[int]:
        return list(
            Completion.objects.filter(run=run, stage__in=(Stage.GENERATING, Stage.TESTING)).values_list(
                "pk", flat=True
            )
        )

    # The worker may finish its item between our look at the database and the kill, and a worker killed
    # between two items loses nothing. So freeze it first (SIGSTOP: it can record nothing more), read what
    # it holds from the frozen state, and kill it only while it holds a lease; else let it go on and retry.
    lost: list[int] = []
    deadline = time.monotonic() + 60
    while not lost:
        assert time.monotonic() < deadline, "never caught the worker holding a lease mid-run"
        wait_for(
            testing_midway, timeout=60, interval=0.02, what="a test in flight with some results recorded"
        )
        os.killpg(first.proc.pid, signal.SIGSTOP)
        lost = leased()
        if not lost:
            os.killpg(first.proc.pid, signal.SIGCONT)
    first.kill()
    before = TestResult.objects.filter(completion__run=run).count()
    assert set(leased()) == set(lost)
    second = start_worker(concurrency=1, extra_env=env)

    def finished() -> bool:
        leases_reap()
        return run_state(run).is_final

    wait_for(finished, timeout=120, interval=0.5, what="the run to finish after the crash")
    print(f"\nkilled after {before}/{total} results with {len(lost)} leased item(s) lost")
    assert run.status == EvaluationRun.Status.FINISHED, run.status_reason
    assert TestResult.objects.filter(completion__run=run).count() == total
    assert_every_item_recorded_once(run)
    assert not TestResult.objects.filter(completion__run=run, category="worker_lost").exists()
    assert max(Completion.objects.filter(run=run).values_list("attempts", flat=True)) <= 2
    # The items the dead worker held were taken again after their lease expired.
    assert lost and set(Completion.objects.filter(pk__in=lost).values_list("attempts", flat=True)) == {2}
    stop_together([first, second])


def test_a_provider_outage_ends_in_recorded_errors_not_a_hang(start_worker, tmp_path, fake_llm):
    release = import_release(tmp_path, name="rms", task_ids=("rmsnorm",))
    model = fake_llm_model(fake_llm.base_url)
    env = {
        **WORKER_ENV,
        "RCB_LLM_MAX_REQUESTS": "2",
        "RCB_LLM_BACKOFF_BASE_MS": "50",
        "RCB_LLM_TIMEOUT_S": "1",
    }
    # Generation only: the outage never reaches the test queues.
    start_worker("site", concurrency=4, extra_env=env)

    for mode, symptom in (("500", "HTTP 500"), ("hang", "timed out after 1s")):
        fake_llm.mode = mode
        run = start_run(model, release)
        wait_for(lambda run=run: run_state(run).is_final, timeout=60, what=f"the run to end ({mode})")
        assert run.status == EvaluationRun.Status.FAILED
        assert run.status_reason.startswith(f"all {run.total_items} completions failed generation")
        assert symptom in run.status_reason
        errors = list(run.completions.values_list("stage", "error"))
        assert all(
            stage == Stage.FAILED and symptom in error and "(2 requests)" in error for stage, error in errors
        )
        assert not TestResult.objects.filter(completion__run=run).exists()


def test_cancel_stops_further_generation_and_testing(start_worker, tmp_path, fake_llm):
    tasks = example_tasks(("rmsnorm", "roformer"))
    answers = scripted_answers(tasks)
    slow = answer_by_prompt(tasks, answers)

    def slow_answer(prompt: str) -> str:
        time.sleep(0.3)
        return slow(prompt)

    fake_llm.answer = slow_answer
    release = import_release(tmp_path, name="two", task_ids=("rmsnorm", "roformer"))
    model = fake_llm_model(fake_llm.base_url)
    start_worker(concurrency=1, extra_env=WORKER_ENV)
    run = start_run(model, release)
    wait_for(lambda: len(fake_llm.requests) >= 3, timeout=60, what="generation to start")
    run_cancel(run=run, by="tester")
    requests_at_cancel = len(fake_llm.requests)
    results_at_cancel = TestResult.objects.filter(completion__run=run).count()
    time.sleep(3)
    run = run_state(run)
    assert run.status == EvaluationRun.Status.CANCELLED and run.status_reason == "cancelled by tester"
    assert len(fake_llm.requests) <= requests_at_cancel + 1
    assert TestResult.objects.filter(completion__run=run).count() == results_at_cancel
    stages = set(run.completions.values_list("stage", flat=True))
    assert stages <= {Stage.CANCELLED, Stage.DONE}
    assert run.counts["cancelled"] >= run.total_items - 4
