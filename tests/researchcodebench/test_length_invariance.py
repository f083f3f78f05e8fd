"""A correct answer passes whatever its length: every example snippet's reference, rewritten the ways model
answers differ from it in form (a comment line added at its top, its blank lines removed (one added where it
has none), a statement split
over two lines, a small helper function defined at the top of the region and used by it), passes and is
confirmed against an impossible variant: warm, every snippet in one of the forms, the forms taken in turn;
cold every other task's rewrite and in containers every third, taking other tasks (every rewrite of every snippet in every lane with
RCB_FULL_BATTERY=1, ``make batteries``).

Model answers almost never have the reference's line count, and real papers' tests import into their own
module functions defined below a masked region of the same file (examples/pset/mean-teacher is built so):
every function below the region moves when the answer is longer or shorter. Nothing of the verdict may
depend on where a function sits.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from researchcodebench.pset import read_pset
from researchcodebench.runner import EvalItem, Runner

from .runner_fixtures import checked_local_sandbox, docker_runner, eval_python

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "pset"
FULL = bool(os.environ.get("RCB_FULL_BATTERY"))
_TAG = re.compile(r"^\s*#\s*</?paper2code\b")
_ASSIGN = re.compile(r"^(\s*)([A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*)\s*=\s*(?!=)(.+)$")
_RETURN = re.compile(r"^(\s*)return\s+(.+)$")


def _is_expression(text: str) -> bool:
    try:
        ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        return False
    return True


def _code_line(line: str) -> bool:
    return bool(line.strip()) and not line.strip().startswith("#")


def with_comment(code: str, indent: int) -> str | None:
    return " " * indent + "# a note the model added before its code\n" + code


def blank_lines_changed(code: str, indent: int) -> str | None:
    """Its blank lines removed; where it has none, one added after its first line."""
    lines = code.split("\n")
    kept = [line for line in lines if line.strip()]
    if kept != lines:
        return "\n".join(kept)
    return "\n".join(lines[:1] + [""] + lines[1:])


def statement_split(code: str, indent: int) -> str | None:
    """The first one-line assignment written over two lines (its value in parentheses)."""
    lines = code.split("\n")
    for number, line in enumerate(lines):
        match = _ASSIGN.match(line)
        if match and not _TAG.match(line) and _is_expression(match.group(3)) and "#" not in match.group(3):
            pad, target, value = match.groups()
            lines[number] = f"{pad}{target} = (\n{pad}    {value.strip()}\n{pad})"
            return "\n".join(lines)
    return None


def with_helper(code: str, indent: int) -> str | None:
    """A helper defined at the top of the region and used by its first top-level assignment or return."""
    lines = code.split("\n")
    pad = " " * indent
    for number, line in enumerate(lines):
        if not _code_line(line) or line[: len(line) - len(line.lstrip())] != pad:
            continue
        assign, ret = _ASSIGN.match(line), _RETURN.match(line)
        if assign and _is_expression(assign.group(3)) and "#" not in assign.group(3):
            lines[number] = f"{pad}{assign.group(2)} = _same_value({assign.group(3).strip()})"
        elif ret and _is_expression(ret.group(2)) and "#" not in ret.group(2):
            lines[number] = f"{pad}return _same_value({ret.group(2).strip()})"
        else:
            continue
        helper = f"{pad}def _same_value(value):\n{pad}    return value\n"
        return helper + "\n".join(lines)
    return None


FORMS: dict[str, Callable[[str, int], str | None]] = {
    "comment": with_comment,
    "blank lines": blank_lines_changed,
    "split statement": statement_split,
    "helper": with_helper,
}


def _items() -> list[tuple[str, EvalItem]]:
    items = []
    for task in read_pset(EXAMPLES).tasks:
        for snippet in task.snippets:
            for form, rewrite in FORMS.items():
                code = rewrite(snippet.code, snippet.indent)
                if code is not None and code != snippet.code:
                    items.append((f"{task.id}/{snippet.name}/{form}", EvalItem(task, snippet, code)))
    return items


ITEMS = _items()


def test_every_form_applies_to_most_snippets():
    """The rewrites are not vacuous: each form changes most snippets (a form that does not apply to a
    snippet, e.g. one with no blank line, is left out for it)."""
    snippets = sum(len(t.snippets) for t in read_pset(EXAMPLES).tasks)
    by_form = {form: sum(1 for label, _ in ITEMS if label.endswith("/" + form)) for form in FORMS}
    assert by_form["comment"] == by_form["blank lines"] == snippets
    assert all(count >= snippets // 3 for count in by_form.values()), by_form


def _judge(runner: Runner, chosen: list[tuple[str, EvalItem]]) -> list[str]:
    verdicts = runner.evaluate_batch([item for _, item in chosen])
    wrong = []
    for (label, item), verdict in zip(chosen, verdicts, strict=True):
        variants = runner.snippet_variants(item.task, item.snippet).variants
        expected = "confirmed" if variants else "unconfirmed"
        if not verdict.passed or verdict.confirmation != expected:
            wrong.append(
                f"{label}: {verdict.outcome} {verdict.category} {verdict.confirmation!r} {verdict.reason}"
            )
    return wrong


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    return checked_local_sandbox(tmp_path_factory.mktemp("scratch"))


def _sample() -> list[tuple[str, EvalItem]]:
    """One rewrite per task, the forms taken in turn (every one with RCB_FULL_BATTERY=1): a cold run starts an
    interpreter and imports torch afresh, about 2 s of CPU."""
    if FULL:
        return ITEMS
    forms = list(FORMS)
    tasks: list[str] = []
    chosen = []
    for label, item in ITEMS:
        if item.task.id not in tasks:
            tasks.append(item.task.id)
        wanted = forms[(len(tasks) - 1) % len(forms)]
        if label.endswith("/" + wanted) and all(item.task.id != other.task.id for _, other in chosen):
            chosen.append((label, item))
    return chosen


def _each_snippet_once() -> list[tuple[str, EvalItem]]:
    """Every snippet once, the forms taken in turn from one snippet to the next (a form that does not apply
    to a snippet passes its turn to the next form), so each form is judged on about a quarter of the snippets
    and every snippet in one form; every rewrite of every snippet with RCB_FULL_BATTERY=1 (``make
    batteries``). Each judgement runs the test and its confirmation, about 0.6 s of CPU warm."""
    if FULL:
        return ITEMS
    forms = list(FORMS)
    by_snippet: dict[tuple[str, str], dict[str, tuple[str, EvalItem]]] = {}
    for label, item in ITEMS:
        form = label.rsplit("/", 1)[1]
        by_snippet.setdefault((item.task.id, item.snippet.name), {})[form] = (label, item)
    chosen = []
    for turn, rewrites in enumerate(by_snippet.values()):
        for step in range(len(forms)):
            form = forms[(turn + step) % len(forms)]
            if form in rewrites:
                chosen.append(rewrites[form])
                break
    return chosen


def test_the_warm_sample_judges_every_snippet_and_every_form():
    chosen = _each_snippet_once()
    snippets = {(t.id, s.name) for t in read_pset(EXAMPLES).tasks for s in t.snippets}
    assert {(item.task.id, item.snippet.name) for _, item in chosen} == snippets
    forms = {label.rsplit("/", 1)[1] for label, _ in chosen}
    assert forms == set(FORMS)


@pytest.mark.slow
def test_each_snippets_rewritten_reference_passes_and_is_confirmed_warm(sandbox):
    chosen = _each_snippet_once()
    with Runner(sandbox=sandbox, environment=eval_python(), workers=2) as runner:
        wrong = _judge(runner, chosen)
    assert not wrong, (
        f"{len(wrong)} of {len(chosen)} correct answers were not passed and confirmed:\n" + "\n".join(wrong)
    )


@pytest.mark.slow
def test_rewritten_references_pass_and_are_confirmed_cold(sandbox):
    chosen = _sample() if FULL else _sample()[::2]
    with Runner(sandbox=sandbox, environment=eval_python(), warm=False, workers=2) as runner:
        wrong = _judge(runner, chosen)
    assert not wrong, "\n".join(wrong)


@pytest.mark.slow
def test_rewritten_references_pass_and_are_confirmed_in_containers():
    chosen = _sample() if FULL else _sample()[1::3]
    with docker_runner() as runner:
        wrong = _judge(runner, chosen)
    assert not wrong, "\n".join(wrong)
