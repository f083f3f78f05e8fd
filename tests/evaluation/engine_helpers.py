"""Shared set-up of the evaluation engine tests: a release of the example pset, scripted answers per snippet
(the model on the fake LLM server is ``tests.factories.fake_llm_model``), and the same answers evaluated
directly by the core library."""

from __future__ import annotations

import ast
import os
import re
import signal
import textwrap
from collections.abc import Callable
from pathlib import Path

from contributions.models import Release
from contributions.services import release_create_from_pset
from evaluation.models import Completion, EvaluationRun, LanguageModel, TestResult
from evaluation.services import run_create
from researchcodebench.annotations import Snippet
from researchcodebench.predictions import extract_answer
from researchcodebench.problems import fill_in
from researchcodebench.pset import Task, read_pset, write_pset

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "pset"
_BLOCK = re.compile(r'# TODO: Implement block "(.+?)"')


def example_tasks(task_ids: tuple[str, ...] | None = None) -> list[Task]:
    """The example pset's tasks without validation errors (all, or those named)."""
    tasks = [t for t in read_pset(EXAMPLES).tasks if not t.errors]
    return [t for t in tasks if task_ids is None or t.id in task_ids]


def import_release(
    tmp_path: Path, *, name: str = "examples", task_ids: tuple[str, ...] | None = None
) -> Release:
    """The example pset (or some of its tasks) imported as a release through the catalogue's service."""
    folder = tmp_path / f"pset-{name}"
    write_pset(example_tasks(task_ids), folder)
    return release_create_from_pset(path=folder, name=name)


def _fence(code: str) -> str:
    return "Here is the block.\n```python\n" + code.rstrip("\n") + "\n```\n"


def _slow_code(task: Task, snippet: Snippet, seconds: float) -> str | None:
    """The reference code with a sleep in front, if that still parses where the block sits."""
    body = textwrap.dedent(snippet.code)
    slow = f"import time\ntime.sleep({seconds})\n{body}"
    indented = textwrap.indent(slow, " " * snippet.indent)
    try:
        ast.parse(fill_in(task.read_text(snippet.file), snippet, indented))
    except SyntaxError:
        return None
    return slow


def scripted_answers(tasks: list[Task], *, sleep_s: float = 0.0) -> dict[tuple[str, str], str]:
    """A deterministic mix per snippet (in document order): every 5th a wrong body that raises, every
    7th (offset 3) prose without code, the rest the reference body (after ``sleep_s`` when it parses)."""
    answers: dict[tuple[str, str], str] = {}
    index = 0
    for task in tasks:
        for snippet in task.snippets:
            if index % 5 == 0:
                answers[(task.id, snippet.name)] = _fence('raise RuntimeError("wrong on purpose")')
            elif index % 7 == 3:
                answers[(task.id, snippet.name)] = "I would rather not write this block."
            else:
                code = (_slow_code(task, snippet, sleep_s) if sleep_s else None) or textwrap.dedent(
                    snippet.code
                )
                answers[(task.id, snippet.name)] = _fence(code)
            index += 1
    return answers


def answer_by_prompt(tasks: list[Task], answers: dict[tuple[str, str], str]) -> Callable[[str], str]:
    """The fake server's answer function: find the task and block a prompt asks for."""
    papers = {t.id: t.read_text(t.paper_file)[:400] for t in tasks if t.paper_file}

    def answer(prompt: str) -> str:
        match = _BLOCK.search(prompt)
        if match is None:
            return "no block asked"
        name = match.group(1)
        candidates = [
            t.id
            for t in tasks
            if any(s.name == name for s in t.snippets) and papers.get(t.id, "\0") in prompt
        ]
        if len(candidates) != 1:
            return f"ambiguous block {name!r}: {candidates}"
        return answers[(candidates[0], name)]

    return answer


def core_verdict_outcomes(
    tasks: list[Task], answers: dict[tuple[str, str], str], *, template: str = "rcb-v2"
) -> dict[tuple[str, str], tuple[str, bool]]:
    """The same answers extracted and evaluated by the core library alone: (task, snippet) -> (outcome,
    passed)."""
    from researchcodebench.runner import EvalItem, evaluate_batch, make_sandbox

    items = []
    for task in tasks:
        for snippet in task.snippets:
            code = extract_answer(answers[(task.id, snippet.name)], template=template, indent=snippet.indent)
            items.append(EvalItem(task=task, snippet=snippet, code=code, template=template))
    verdicts = evaluate_batch(items, sandbox=make_sandbox("local"), workers=2)
    return {
        (item.task.id, item.snippet.name): (v.outcome, v.passed)
        for item, v in zip(items, verdicts, strict=True)
    }


# ------------------------------------------------------------------------------------- runs and workers

#: the worker environment of the engine tests: the fake model's key, and no verdict cache (each item tested)
WORKER_ENV = {"RCB_LLM_KEY_FAKE": "sk-test", "RCB_VERDICT_CACHE": "0"}
Stage = Completion.Stage


def start_run(model: LanguageModel, release: Release) -> EvaluationRun:
    """A generated run of ``model`` on ``release`` (queued on the configured broker)."""
    return run_create(model=model, release=release, source="generated", verification="generated")


def run_state(run: EvaluationRun) -> EvaluationRun:
    run.refresh_from_db()
    return run


def stop_together(workers: list) -> None:
    """Ask every worker (``tests.conftest.WorkerProcess``) to shut down at once (each takes several seconds),
    then wait for them all."""
    for worker in workers:
        if worker.proc.poll() is None:
            os.killpg(worker.proc.pid, signal.SIGTERM)
    for worker in workers:
        worker.stop()


def assert_every_item_recorded_once(run: EvaluationRun) -> None:
    """No item of ``run`` is still waiting or leased, and every done item has exactly one result."""
    items = Completion.objects.filter(run=run)
    assert not items.filter(
        stage__in=(Stage.PENDING_GENERATION, Stage.GENERATING, Stage.PENDING_TEST, Stage.TESTING)
    )
    results = TestResult.objects.filter(completion__run=run)
    assert results.count() == items.filter(stage=Stage.DONE).count()
    assert results.values("completion").distinct().count() == results.count()
