"""Warm (forked from a pre-imported interpreter) and cold (a fresh interpreter per run) evaluation must give
identical verdicts: every example snippet with its reference, the first two snippets of each task with a
blank body (every snippet's with RCB_FULL_BATTERY=1, ``make batteries``), plus mutated completions for a
deterministic subset (the first snippet of each task, and one AST mutant per task: an operator swap, a
constant change or a comparison flip). Both paths confirm every pass against an impossible variant of its
test and run every test of every run, so the confirmation and the tests run and failed are compared too.

Cold runs import torch afresh (~1-3 s of CPU each), so identical inputs are run cold once: every reference
completion of a task yields the same filled-in folder, and the test groups items by the exact file they
produce.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pytest

from researchcodebench.mutants import KINDS, ast_mutants
from researchcodebench.problems import blank_body, fill_in
from researchcodebench.pset import Task, read_pset
from researchcodebench.runner import EvalItem, Runner

from .runner_fixtures import checked_local_sandbox, eval_python

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "pset"
#: Blank bodies judged warm and cold per task in the suite (each unique body costs a cold run, about 1 s of
#: CPU); RCB_FULL_BATTERY=1 (``make batteries``) judges every snippet's.
BLANKS_PER_TASK = 1


def _code_lines(code: str) -> list[int]:
    lines = code.split("\n")
    return [i for i, line in enumerate(lines) if line.strip() and not line.strip().startswith("#")]


def mutate_operator(code: str) -> str | None:
    """Swap the first arithmetic operator outside comments (+ <-> -, * -> /)."""
    lines = code.split("\n")
    for i in _code_lines(code):
        match = re.search(r"(?<=\s)([+\-*])(?=\s)", lines[i])
        if match:
            swapped = {"+": "-", "-": "+", "*": "/"}[match.group(1)]
            lines[i] = lines[i][: match.start()] + swapped + lines[i][match.end() :]
            return "\n".join(lines)
    return None


def mutate_drop_last(code: str) -> str | None:
    """Drop the last code line (a snippet of one line becomes its indentation + ``pass``)."""
    lines = code.split("\n")
    numbered = _code_lines(code)
    if not numbered:
        return None
    last = numbered[-1]
    indent = lines[last][: len(lines[last]) - len(lines[last].lstrip())]
    lines[last] = indent + "pass"
    return "\n".join(lines)


def ast_mutant(task: Task, kind: str) -> EvalItem | None:
    """The first AST mutant of ``kind`` among the task's snippets (researchcodebench/mutants.py)."""
    for snippet in task.snippets:
        for mutant in ast_mutants(snippet.code or ""):
            if mutant.kind == kind:
                return EvalItem(task, snippet, mutant.code, completion_idx=4)
    return None


def _items(*, full: bool) -> list[EvalItem]:
    pset = read_pset(EXAMPLES)
    items: list[EvalItem] = []
    for number, task in enumerate(pset.tasks):
        # One AST mutant per task, the kinds taken in turn, so every kind is judged warm and cold.
        mutant = ast_mutant(task, KINDS[number % len(KINDS)])
        if mutant is not None:
            items.append(mutant)
        for number_in_task, snippet in enumerate(task.snippets):
            items.append(EvalItem(task, snippet, snippet.code, completion_idx=0))
            if full or number_in_task < BLANKS_PER_TASK:
                items.append(EvalItem(task, snippet, blank_body(snippet), completion_idx=1))
        first = task.snippets[0]
        # Cold runs cost ~2.5 s of CPU each: mutate the first snippet of each task (an operator swap), and
        # the first task's also by dropping its last line, to keep this test near two minutes on 2 cores.
        mutations = [(2, mutate_operator)] + ([(3, mutate_drop_last)] if task is pset.tasks[0] else [])
        for idx, mutate in mutations:
            mutated = mutate(first.code)
            if mutated is not None and mutated != first.code:
                items.append(EvalItem(task, first, mutated, completion_idx=idx))
    return items


def _content_key(item: EvalItem) -> str:
    filled = fill_in(item.task.read_text(item.snippet.file), item.snippet, item.code or "")
    return hashlib.sha256(f"{item.task.root}\0{item.snippet.file}\0{filled}".encode()).hexdigest()


@pytest.mark.slow  # the example snippets' bodies run warm and cold: about a minute on two cores
@pytest.mark.skipif(not (EXAMPLES / "papers.yaml").exists(), reason="examples/pset is not present")
def test_warm_and_cold_runs_give_identical_verdicts(tmp_path):
    sandbox = checked_local_sandbox(tmp_path / "scratch")
    full = os.environ.get("RCB_FULL_BATTERY") == "1"
    items = _items(full=full)
    representatives: dict[str, EvalItem] = {}
    for item in items:
        representatives.setdefault(_content_key(item), item)
    unique = list(representatives.values())
    with Runner(sandbox=sandbox, environment=eval_python(), warm=True, calibrate=False, workers=2) as warm:
        warm_verdicts = warm.evaluate_batch(items)
    with Runner(sandbox=sandbox, environment=eval_python(), warm=False, calibrate=False, workers=2) as cold:
        cold_unique = cold.evaluate_batch(unique)
    cold_by_key = {_content_key(item): v for item, v in zip(unique, cold_unique, strict=True)}

    assert all(v.warm for v in warm_verdicts), "every warm verdict came from a warm server"
    assert not any(v.warm for v in cold_unique)
    mismatches = []
    for item, verdict in zip(items, warm_verdicts, strict=True):
        other = cold_by_key[_content_key(item)]
        if not verdict.same_result(other) or (
            verdict.tests_run,
            verdict.tests_failed,
            verdict.confirmation,
        ) != (
            other.tests_run,
            other.tests_failed,
            other.confirmation,
        ):
            mismatches.append(
                (item.task.id, item.snippet.name, item.completion_idx, verdict.reason, other.reason)
            )
    assert mismatches == []
    references = [v for item, v in zip(items, warm_verdicts, strict=True) if item.completion_idx == 0]
    blanks = [v for item, v in zip(items, warm_verdicts, strict=True) if item.completion_idx == 1]
    tasks = read_pset(EXAMPLES).tasks
    assert len(references) == sum(len(t.snippets) for t in tasks)
    assert references and all(v.outcome == "passed" for v in references)
    assert all(v.confirmation == "confirmed" for v in references)
    assert blanks and not any(v.outcome == "passed" for v in blanks)
    sampled = sum(min(len(t.snippets), BLANKS_PER_TASK) for t in tasks)
    assert len(blanks) == (len(references) if full else sampled)
    assert sum(1 for item in items if item.completion_idx >= 2) >= len({i.task.id for i in items})
    assert {item.completion_idx for item in items} >= {4}, "AST mutants were judged"
