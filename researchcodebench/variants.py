"""Impossible variants of a task's test: versions of the test that the task's own reference fails.

A variant changes only files outside every completion's region, the test script and the oracle modules,
so no correct answer can pass it: the reference itself fails it, every time, by a failed assertion. A run
that passes a test the reference fails on a variant did not earn its pass: it forged it (docs/integrity.md).
Every pass is run once more against one variant of its snippet (``runner.Runner``; a reference mutant when the
snippet has one: ``confirmation_order``), and judged per test.

Two kinds of change make a variant; each keeps every line where it was (only text inside lines changes):

* ``expected-value``: every expected value the snippet's tests compare with is perturbed: the second argument
  of a comparison (``assert_close(got, want)``, ``assertEqual``, ``np.testing.assert_allclose``,
  ``torch.allclose``, ...) or the right side of ``==`` in an assertion becomes ``((want) * a + b)``, or, where
  that raises (lists, tuples), each number written in it does. ``a`` and ``b`` are drawn per variant
  (``|a - 1| >= 0.4``, ``b >= 0.25``): a forger cannot undo a perturbation it does not know. A test is kept only
  when the reference fails it even at a quarter of that perturbation, so its tolerance is far below the
  change and no answer within the tolerance of the truth can pass the full one.
* ``reference-mutant``: the snippet's copy in an oracle module (``*_ref.py``, found by aligning the two files)
  gets one mutant (an operator, a comparison, a constant, a statement made ``pass``). A completion that calls
  the oracle follows the mutant and passes the tests that compare with it; an honest one does not. Such a
  variant also perturbs the expected values of the snippet's other tests, and is kept only when the mutated
  code itself, put in the snippet's place, passes a test the reference fails: the mutant can be copied.

A variant is kept only when the reference fails it three times of three, on the same tests, each by a failed
assertion (not an error, a crash or a timeout), and **every test it fails runs the snippet's own code**: the
coverage run of the reference (the harness's ``trace``) says which tests execute a line of each snippet, and
a test that never calls the snippet cannot tell a forger of that snippet from an honest answer.

Derivation needs runs; this module only plans and judges them through a ``Probe`` (the runner's). Variant
sets are stored by task content hash and environment (``VariantStore``).
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import json
import os
import random
import secrets
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .annotations import END_TAG, START_TAG, Snippet, split_lines
from .mutants import ast_mutants

EXPECTED_VALUE = "expected-value"
REFERENCE_MUTANT = "reference-mutant"
#: Variants kept per snippet.
PER_SNIPPET = 2
#: Runs of the reference a variant must fail, the same way each time.
REPEATS = 3
#: Mutants of an oracle copy tried per snippet once one holds (the second variant may then be of the other kind).
MUTANT_TRIES = 6
#: Mutants tried before giving up on the kind while none holds: a snippet with an oracle copy is confirmed
#: against a mutant whenever one holds (``confirmation_order``), the only kind that catches a copier.
MUTANT_TRIES_FOR_ONE = 18
#: Rounds of fixing perturbations that make a test raise instead of fail.
SETTLE_ROUNDS = 3
#: The fraction of a perturbation the reference must still fail (the margin check).
MARGIN = 0.25
#: Every re-emitted file is padded to its public size plus PAD_BASE plus up to PAD_RANGE bytes, so its
#: size says nothing about which version a run holds; a variant may change a file by less than PAD_BASE.
PAD_BASE = 4096
PAD_RANGE = 4096
#: The stored form of variant sets (a new one when derivation changes what a variant is).
STORE_FORMAT = "v2"
#: How a test ended, as the harness writes it (sandbox/_harness.py).
PASSED = "passed"
FAILED = "failed"
#: The pseudo-test of a script that does not use unittest, and the coverage of code run at import.
SCRIPT = "<script>"
MODULE = "<module>"

#: Calls whose second argument is the value the first is compared with.
COMPARISONS = frozenset(
    {
        "assertEqual", "assertEquals", "assertAlmostEqual", "assertAlmostEquals", "assertListEqual",
        "assertTupleEqual", "assertSequenceEqual", "assert_close", "assert_allclose", "assert_array_equal",
        "assert_array_almost_equal", "assert_almost_equal", "assert_equal", "assert_array_max_ulp",
        "allclose", "isclose", "array_equal", "equal", "assertTensorEqual", "assert_tensor_equal",
    }
)  # fmt: skip
_EXPECTED_KEYWORDS = ("expected", "desired", "second", "want", "target", "other", "b", "y")
_ASSERT_CALLS = frozenset({"assertTrue", "assertFalse", "assert_", "assertIs"})


# ---------------------------------------------------------------------------- what a variant is


@dataclass(frozen=True)
class Change:
    """One edit of one file: characters ``start..end`` of its text (as ``Task.read_text`` gives it) become
    ``new``. Never adds or removes a line."""

    file: str
    start: int
    end: int
    new: str
    line: int
    kind: str
    what: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "start": self.start,
            "end": self.end,
            "new": self.new,
            "line": self.line,
            "kind": self.kind,
            "what": self.what,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Change:
        return cls(
            file=str(data["file"]),
            start=int(data["start"]),
            end=int(data["end"]),
            new=str(data["new"]),
            line=int(data["line"]),
            kind=str(data["kind"]),
            what=str(data.get("what", "")),
        )


@dataclass(frozen=True)
class Variant:
    """A version of the task's files that the reference fails: ``fails`` are the tests it fails (every
    time, by a failed assertion), all of which run the snippet's code."""

    id: str
    snippet: str
    changes: tuple[Change, ...]
    fails: tuple[str, ...]

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(sorted({c.kind for c in self.changes}))

    def describe(self) -> str:
        """One line: the kinds and the first changes."""
        parts = [f"{c.file}:{c.line}: {c.what}" for c in self.changes[:3]]
        more = f" (and {len(self.changes) - 3} more)" if len(self.changes) > 3 else ""
        return " + ".join(self.kinds) + ": " + "; ".join(parts) + more

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "snippet": self.snippet,
            "changes": [c.to_dict() for c in self.changes],
            "fails": list(self.fails),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Variant:
        return cls(
            id=str(data["id"]),
            snippet=str(data["snippet"]),
            changes=tuple(Change.from_dict(c) for c in data.get("changes", ())),
            fails=tuple(str(t) for t in data.get("fails", ())),
        )

    @classmethod
    def made(cls, snippet: str, changes: Sequence[Change], fails: Iterable[str]) -> Variant:
        material = json.dumps([snippet, [c.to_dict() for c in changes]], sort_keys=True)
        return cls(
            id=hashlib.sha256(material.encode()).hexdigest()[:12],
            snippet=snippet,
            changes=tuple(changes),
            fails=tuple(sorted(fails)),
        )


def confirmation_order(
    found: Iterable[Variant], rng: random.Random | secrets.SystemRandom | None = None
) -> list[Variant]:
    """The order a pass is confirmed against ``found``: the variants with a reference mutant first, each kind
    shuffled (``rng``, by default ``secrets.SystemRandom``). A mutant variant catches a forger and a
    completion that takes its answer from the oracle (it follows the mutant); an expected-value variant
    only the first, since the oracle still computes the truth there. So a snippet that has a mutant variant
    is always confirmed against one, and the draw among them stays unknown to the run."""
    rng = rng or secrets.SystemRandom()
    mutants = [v for v in found if REFERENCE_MUTANT in v.kinds]
    others = [v for v in found if REFERENCE_MUTANT not in v.kinds]
    rng.shuffle(mutants)
    rng.shuffle(others)
    return mutants + others


@dataclass(frozen=True)
class SnippetVariants:
    """The variants of one snippet, the tests that run its code, and why there are none when so."""

    snippet: str
    variants: tuple[Variant, ...]
    tests: tuple[str, ...] = ()
    note: str = ""
    runs: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "snippet": self.snippet,
            "variants": [v.to_dict() for v in self.variants],
            "tests": list(self.tests),
            "note": self.note,
            "runs": self.runs,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SnippetVariants:
        return cls(
            snippet=str(data["snippet"]),
            variants=tuple(Variant.from_dict(v) for v in data.get("variants", ())),
            tests=tuple(str(t) for t in data.get("tests", ())),
            note=str(data.get("note", "")),
            runs=int(data.get("runs", 0)),
        )


# ---------------------------------------------------------------------------- applying and re-emitting


def apply_changes(text: str, changes: Iterable[Change]) -> str:
    """``text`` with ``changes`` (all of one file, not overlapping) applied."""
    out = text
    for change in sorted(changes, key=lambda c: c.start, reverse=True):
        out = out[: change.start] + change.new + out[change.end :]
    return out


def variant_texts(texts: Mapping[str, str], changes: Iterable[Change]) -> dict[str, str]:
    """The texts of the files ``changes`` touch, changed (``texts``: the public text of each file)."""
    by_file: dict[str, list[Change]] = {}
    for change in changes:
        by_file.setdefault(change.file, []).append(change)
    return {name: apply_changes(texts[name], group) for name, group in by_file.items()}


def re_emitted(text: str, public_size: int, rng: random.Random | secrets.SystemRandom | None = None) -> str:
    """``text`` with a comment of random characters appended, so that its size is ``public_size`` (the size
    of the file as published) plus ``PAD_BASE`` plus a random number of bytes below ``PAD_RANGE``, whatever
    version of the file ``text`` is: neither the bytes nor the size of a run's copy say which one it is. Lines
    already in the file keep their numbers."""
    rng = rng or secrets.SystemRandom()
    body = text if text.endswith("\n") or not text else text + "\n"
    target = public_size + PAD_BASE + rng.randrange(PAD_RANGE)
    room = target - len(body.encode("utf-8")) - len("# \n")
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    return body + "# " + "".join(rng.choice(alphabet) for _ in range(max(8, room))) + "\n"


# ---------------------------------------------------------------------------- finding expected values


class _Offsets:
    """Character offsets of a text from the syntax tree's (line, UTF-8 byte column) positions."""

    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")
        self.starts = [0]
        for line in self.lines[:-1]:
            self.starts.append(self.starts[-1] + len(line) + 1)

    def at(self, lineno: int, col: int) -> int:
        line = self.lines[lineno - 1]
        return self.starts[lineno - 1] + len(line.encode("utf-8")[:col].decode("utf-8", "ignore"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (
            self.at(node.lineno, node.col_offset),  # type: ignore[attr-defined]
            self.at(node.end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
        )


@dataclass(frozen=True)
class Site:
    """An expected value in the test: ``start..end`` of the test script's text, on ``line``, and the spans
    of the numbers written in it (the fallback perturbation)."""

    start: int
    end: int
    line: int
    numbers: tuple[tuple[int, int], ...]


def _callee(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _numbers(node: ast.AST, offsets: _Offsets) -> tuple[tuple[int, int], ...]:
    spans = []
    for child in ast.walk(node):
        if (
            isinstance(child, ast.Constant)
            and type(child.value) in (int, float)
            and not isinstance(child.value, bool)
        ):
            spans.append(offsets.span(child))
    return tuple(sorted(spans))


def _sites_in(body: ast.AST, offsets: _Offsets) -> list[Site]:
    """The expected values compared in ``body`` (a test method, or a script's module)."""
    found: dict[tuple[int, int], Site] = {}

    def add(node: ast.AST) -> None:
        start, end = offsets.span(node)
        found.setdefault((start, end), Site(start, end, node.lineno, _numbers(node, offsets)))  # type: ignore[attr-defined]

    asserted: list[ast.AST] = []
    for node in ast.walk(body):
        if isinstance(node, ast.Call):
            name = _callee(node)
            if name in COMPARISONS:
                if len(node.args) >= 2 and not isinstance(node.args[1], ast.Starred):
                    add(node.args[1])
                else:
                    keyword = next((k for k in node.keywords if k.arg in _EXPECTED_KEYWORDS), None)
                    if keyword is not None:
                        add(keyword.value)
            elif name in _ASSERT_CALLS and node.args:
                asserted.append(node.args[0])
        elif isinstance(node, ast.Assert):
            asserted.append(node.test)
    for test in asserted:
        for node in ast.walk(test):
            if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq):
                add(node.comparators[0])
    return sorted(found.values(), key=lambda s: s.start)


def _class_methods(tree: ast.Module) -> dict[str, tuple[ast.ClassDef, dict[str, ast.FunctionDef]]]:
    classes: dict[str, tuple[ast.ClassDef, dict[str, ast.FunctionDef]]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            methods = {
                item.name: item
                for item in node.body
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
            }
            classes.setdefault(node.name, (node, methods))  # type: ignore[arg-type]
    return classes


def _method(classes: Mapping[str, Any], cls: str, name: str, depth: int = 0) -> ast.AST | None:
    """The method ``name`` of the class ``cls`` of the script, looked up through bases of the same file."""
    if cls not in classes or depth > 10:
        return None
    node, methods = classes[cls]
    if name in methods:
        return methods[name]
    for base in node.bases:
        base_name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", None)
        if base_name:
            found = _method(classes, base_name, name, depth + 1)
            if found is not None:
                return found
    return None


def expected_sites(test_text: str, tests: Iterable[str]) -> dict[str, list[Site]]:
    """test id -> the expected values its method compares with (``SCRIPT``: the module's, for a script
    without test methods). Tests whose method is not in the script are left out."""
    try:
        tree = ast.parse(test_text)
    except (SyntaxError, ValueError):
        return {}
    offsets = _Offsets(test_text)
    classes = _class_methods(tree)
    out: dict[str, list[Site]] = {}
    for test in tests:
        if test == SCRIPT:
            sites = _sites_in(tree, offsets)
        else:
            parts = test.split(".")
            if len(parts) < 2:
                continue
            method = _method(classes, parts[-2], parts[-1])
            sites = _sites_in(method, offsets) if method is not None else []
        if sites:
            out[test] = sites
    return out


@dataclass(frozen=True)
class Perturbation:
    """``x -> ((x) * scale + shift)``, at a ``strength`` between 0 and 1 of itself."""

    scale: float
    shift: float

    @classmethod
    def drawn(cls, rng: random.Random | secrets.SystemRandom) -> Perturbation:
        scale = rng.choice((1.0, -1.0)) * rng.uniform(0.4, 0.9) + 1.0
        return cls(round(scale, 4), round(rng.uniform(0.25, 0.75), 4))

    def at(self, strength: float) -> Perturbation:
        return Perturbation(round(1.0 + (self.scale - 1.0) * strength, 6), round(self.shift * strength, 6))

    def wrap(self, text: str) -> str:
        return f"(({text}) * {self.scale!r} + {self.shift!r})"


def perturbed(
    test_file: str,
    test_text: str,
    sites: Mapping[str, Sequence[Site]],
    forms: Mapping[str, int],
    how: Perturbation,
) -> list[Change]:
    """The changes perturbing every site of each test in ``sites`` (form 0: the whole value wrapped, form 1:
    each number written in it)."""
    changes: dict[tuple[int, int], Change] = {}
    for test, group in sites.items():
        form = forms.get(test, 0)
        for site in group:
            if form == 0:
                text = test_text[site.start : site.end]
                changes.setdefault(
                    (site.start, site.end),
                    Change(test_file, site.start, site.end, how.wrap(text), site.line, EXPECTED_VALUE,
                           f"{text[:60]} -> {how.wrap('.')}"),
                )  # fmt: skip
            else:
                for start, end in site.numbers:
                    text = test_text[start:end]
                    changes.setdefault(
                        (start, end),
                        Change(test_file, start, end, how.wrap(text), site.line, EXPECTED_VALUE,
                               f"{text} -> {how.wrap(text)}"),
                    )  # fmt: skip
    return _without_overlaps(changes.values())


def _without_overlaps(changes: Iterable[Change]) -> list[Change]:
    """Outermost changes only (a site inside another site's value is already perturbed by it)."""
    kept: list[Change] = []
    for change in sorted(changes, key=lambda c: (c.start, -(c.end - c.start))):
        if kept and kept[-1].file == change.file and change.start < kept[-1].end:
            continue
        kept.append(change)
    return kept


# ---------------------------------------------------------------------------- the snippet's copy in an oracle


def _code_lines(lines: Sequence[str]) -> list[str]:
    return [line.strip() for line in lines]


def oracle_copy(annotated: str, oracle: str, snippet: Snippet) -> tuple[int, int] | None:
    """The lines ``(first, last)`` (1-based) of ``oracle`` that are the snippet's code, found by aligning
    the annotated file (tags left out) with the oracle; None when the snippet's code is not there whole."""
    source = split_lines(annotated)
    kept = [
        (number, line)
        for number, line in enumerate(source, start=1)
        if not START_TAG.match(line) and not END_TAG.match(line)
    ]
    target = split_lines(oracle)
    matcher = difflib.SequenceMatcher(
        None, _code_lines([line for _, line in kept]), _code_lines(target), autojunk=False
    )
    mapped: dict[int, int] = {}
    for block in matcher.get_matching_blocks():
        for offset in range(block.size):
            mapped[kept[block.a + offset][0]] = block.b + offset + 1
    wanted = [
        number
        for number, line in kept
        if snippet.start_line < number < snippet.end_line
        and line.strip()
        and not line.strip().startswith("#")
    ]
    if not wanted or any(number not in mapped for number in wanted):
        return None
    lines = [mapped[number] for number in wanted]
    if lines != sorted(lines) or lines[-1] - lines[0] != wanted[-1] - wanted[0] - _tags_between(
        source, wanted
    ):
        return None
    return lines[0], lines[-1]


def _tags_between(source: Sequence[str], wanted: Sequence[int]) -> int:
    return sum(
        1
        for number in range(wanted[0], wanted[-1] + 1)
        if START_TAG.match(source[number - 1]) or END_TAG.match(source[number - 1])
    )


@dataclass(frozen=True)
class Mutation:
    """One mutant of an oracle copy: the change in the oracle, and the same edit made to the snippet's code
    (what a completion that copies the oracle would hold)."""

    change: Change
    code: str


def mutations(oracle_file: str, oracle: str, first: int, last: int, snippet: Snippet) -> list[Mutation]:
    """Line-keeping mutants of lines ``first..last`` of ``oracle`` (operators, comparisons, constants other
    than tiny ones, one-line statements made ``pass``), each with the matching edit of ``snippet.code``. Only
    code inside a function body is mutated: what a mutant changes then shows only when the oracle is called,
    which the audit hook refuses the completion, never in a value of the module a completion could read."""
    if not _inside_a_function(oracle, first, last):
        return []
    lines = split_lines(oracle)
    block = "\n".join(lines[first - 1 : last])
    offset = sum(len(line) + 1 for line in lines[: first - 1])
    found: list[Mutation] = []
    for mutant in ast_mutants(block, kinds=("operator", "comparison", "constant")):
        start, end, new = _edit(block, mutant.code)
        if start is None or "\n" in block[start:end] or "\n" in new:
            continue
        old = block[start:end]
        if _tiny_constant(old):
            continue
        change = Change(
            oracle_file, offset + start, offset + end, new, first + block.count("\n", 0, start),
            REFERENCE_MUTANT, f"{mutant.kind}: {mutant.change}",
        )  # fmt: skip
        code = _same_edit(snippet.code, block, start, end, new)
        if code is not None:
            found.append(Mutation(change, code))
    for start, end, line in _statement_spans(block):
        new = "pass"
        change = Change(
            oracle_file, offset + start, offset + end, new, first + line - 1, REFERENCE_MUTANT,
            f"statement made pass: {block[start:end].strip()[:60]}",
        )  # fmt: skip
        code = _same_edit(snippet.code, block, start, end, new)
        if code is not None:
            found.append(Mutation(change, code))
    return found


def _inside_a_function(text: str, first: int, last: int) -> bool:
    """Whether lines ``first..last`` of ``text`` lie within one function's body."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return any(
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body[0].lineno <= first
        and last <= (node.end_lineno or 0)
        for node in ast.walk(tree)
    )


def _tiny_constant(text: str) -> bool:
    """An epsilon-like float: doubling it moves results by less than a tolerance may allow."""
    try:
        value = float(text)
    except ValueError:
        return False
    return value != 0 and abs(value) < 1e-3


def _edit(before: str, after: str) -> tuple[int | None, int, str]:
    """The one span of ``before`` that ``after`` changes: (start, end, new text)."""
    if before == after:
        return None, 0, ""
    head = 0
    while head < min(len(before), len(after)) and before[head] == after[head]:
        head += 1
    tail = 0
    while (
        tail < min(len(before), len(after)) - head
        and before[len(before) - 1 - tail] == after[len(after) - 1 - tail]
    ):
        tail += 1
    return head, len(before) - tail, after[head : len(after) - tail]


def _same_edit(code: str, block: str, start: int, end: int, new: str) -> str | None:
    """``code`` (the snippet's lines, tags and all) with the edit ``block[start:end] -> new`` made on the
    line that holds it, when that line is in ``code`` once."""
    line_start = block.rfind("\n", 0, start) + 1
    line_end = block.find("\n", end)
    line = block[line_start : len(block) if line_end < 0 else line_end]
    changed = line[: start - line_start] + new + line[end - line_start :]
    stripped = line.strip()
    matches = [i for i, candidate in enumerate(code.split("\n")) if candidate.strip() == stripped]
    if len(matches) != 1:
        return None
    lines = code.split("\n")
    indent = lines[matches[0]][: len(lines[matches[0]]) - len(lines[matches[0]].lstrip())]
    lines[matches[0]] = indent + changed.strip()
    return "\n".join(lines)


def _statement_spans(block: str) -> list[tuple[int, int, int]]:
    """(start, end, line) of every simple statement of ``block`` written on one line."""
    try:
        tree = ast.parse("if True:\n" + block)
        shift = 1
    except (SyntaxError, ValueError):
        try:
            tree = ast.parse(block)
            shift = 0
        except (SyntaxError, ValueError):
            return []
    offsets = _Offsets(("if True:\n" if shift else "") + block)
    prefix = len("if True:\n") if shift else 0
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)) and node.lineno > shift:
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                continue
            if node.lineno != node.end_lineno:
                continue
            start, end = offsets.span(node)
            spans.append((start - prefix, end - prefix, node.lineno - shift))
    return spans


# ---------------------------------------------------------------------------- derivation


class Probe(Protocol):
    """Runs the task's test once, with some files replaced, and says how each test ended (``SCRIPT`` for a
    script without unittest); None when the run ended without a result (crash, timeout, sandbox failure).
    ``code``: the snippet's code in its region (None: the reference)."""

    def __call__(
        self, overrides: Mapping[str, str], *, snippet: Snippet | None = None, code: str | None = None
    ) -> dict[str, str] | None: ...


@dataclass
class _Work:
    """What one snippet's derivation has found so far."""

    runs: int = 0
    notes: list[str] = field(default_factory=list)


def derive_snippet(
    *,
    snippet: Snippet,
    texts: Mapping[str, str],
    test_file: str,
    oracle_files: Sequence[str],
    annotated: str,
    covering: Iterable[str],
    reference_tests: Mapping[str, str],
    probe: Probe,
    rng: random.Random | secrets.SystemRandom | None = None,
    parallel: Callable[[Sequence[Callable[[], Any]]], list[Any]] | None = None,
) -> SnippetVariants:
    """The impossible variants of ``snippet`` (see the module docstring).

    ``texts``: the public text of the test script and of every oracle module; ``covering``: the tests that
    run a line of the snippet (``MODULE`` among them: every test, the snippet runs at import);
    ``reference_tests``: how each test ended in the reference run; ``parallel``: runs thunks side by side
    (the runner's workers), else one after another."""
    rng = rng or secrets.SystemRandom()
    run_all = parallel or (lambda thunks: [thunk() for thunk in thunks])
    work = _Work()
    passed = {t for t, outcome in reference_tests.items() if outcome == PASSED}
    covering = set(covering)
    tests = passed if MODULE in covering or SCRIPT in covering else covering & passed
    if not tests:
        return SnippetVariants(
            snippet.name, (), (), "no test that the reference passes runs this snippet's code"
        )

    def run(overrides: Mapping[str, str], code: str | None = None) -> dict[str, str] | None:
        work.runs += 1
        return probe(overrides, snippet=snippet if code is not None else None, code=code)

    test_text = texts.get(test_file, "")
    sites = expected_sites(test_text, sorted(tests)) if test_file in texts else {}
    settled = _settle(test_file, test_text, sites, tests, run, rng)
    variants: list[Variant] = []
    for oracle_file in oracle_files:
        if len(variants) >= PER_SNIPPET:
            break
        span = oracle_copy(annotated, texts[oracle_file], snippet)
        if span is None:
            continue
        candidates = mutations(oracle_file, texts[oracle_file], span[0], span[1], snippet)
        rng.shuffle(candidates)
        for tried, mutation in enumerate(candidates):
            enough = variants and tried >= MUTANT_TRIES
            if len(variants) >= PER_SNIPPET or enough or tried >= MUTANT_TRIES_FOR_ONE:
                break
            variant = _mutant_variant(
                mutation, snippet, texts, test_file, test_text, settled, tests, run, run_all, rng
            )
            if variant is not None:
                variants.append(variant)
    tries = 0
    while len(variants) < PER_SNIPPET and settled and tries < PER_SNIPPET + 1:
        tries += 1
        how = Perturbation.drawn(rng)
        changes = perturbed(test_file, test_text, settled, settled.forms, how)
        fails = _repeatable(changes, texts, tests, run_all, run)
        if fails:
            variants.append(Variant.made(snippet.name, changes, fails))
    note = "" if variants else _why_none(settled, tests)
    return SnippetVariants(snippet.name, tuple(variants), tuple(sorted(tests)), note, work.runs)


class _Settled(dict):
    """test id -> its sites, for the tests whose perturbation the reference fails by assertion; ``forms``:
    the perturbation form each takes."""

    forms: dict[str, int]


def _settle(
    test_file: str,
    test_text: str,
    sites: Mapping[str, list[Site]],
    tests: set[str],
    run: Callable[..., dict[str, str] | None],
    rng: random.Random | secrets.SystemRandom,
) -> _Settled:
    """The tests (among ``tests``) whose expected values can be perturbed so that the reference fails them by
    a failed assertion, at full strength and at ``MARGIN`` of it."""
    live = {t: s for t, s in sites.items() if t in tests}
    forms = dict.fromkeys(live, 0)
    probe_how = Perturbation.drawn(rng)

    def texts_of(how: Perturbation, chosen: Mapping[str, list[Site]]) -> dict[str, str]:
        return {test_file: apply_changes(test_text, perturbed(test_file, test_text, chosen, forms, how))}

    for _ in range(SETTLE_ROUNDS):
        if not live:
            break
        outcomes = run(texts_of(probe_how, live))
        if outcomes is None:
            live = {}
            break
        changed = False
        for test in list(live):
            outcome = outcomes.get(test)
            if outcome == FAILED:
                continue
            if outcome not in (PASSED, None) and forms[test] == 0 and any(s.numbers for s in live[test]):
                forms[test] = 1
            else:
                del live[test]
            changed = True
        if not changed:
            break
    if live:
        outcomes = run(texts_of(probe_how.at(MARGIN), live))
        live = {t: s for t, s in live.items() if outcomes is not None and outcomes.get(t) == FAILED}
    settled = _Settled(live)
    settled.forms = {t: forms[t] for t in live}
    return settled


def _repeatable(
    changes: Sequence[Change],
    texts: Mapping[str, str],
    tests: set[str],
    run_all: Callable[[Sequence[Callable[[], Any]]], list[Any]],
    run: Callable[..., dict[str, str] | None],
) -> tuple[str, ...] | None:
    """The tests the reference fails on ``changes``, when it fails the same ones every time of ``REPEATS``,
    all by a failed assertion and all among ``tests``; else None."""
    overrides = variant_texts(texts, changes)
    results = run_all([lambda: run(overrides) for _ in range(REPEATS)])
    seen = None
    for outcomes in results:
        if outcomes is None:
            return None
        bad = {t: o for t, o in outcomes.items() if o != PASSED}
        if not bad or any(o != FAILED for o in bad.values()) or not set(bad) <= tests:
            return None
        if seen is not None and set(bad) != seen:
            return None
        seen = set(bad)
    return tuple(sorted(seen or ()))


def _mutant_variant(
    mutation: Mutation,
    snippet: Snippet,
    texts: Mapping[str, str],
    test_file: str,
    test_text: str,
    settled: _Settled,
    tests: set[str],
    run: Callable[..., dict[str, str] | None],
    run_all: Callable[[Sequence[Callable[[], Any]]], list[Any]],
    rng: random.Random | secrets.SystemRandom,
) -> Variant | None:
    """A reference-mutant variant from ``mutation``, with the expected values of the tests the mutant alone
    does not fail perturbed too; None when it does not hold (module docstring)."""
    alone = run(variant_texts(texts, [mutation.change]))
    if alone is None:
        return None
    by_mutant = {t for t, o in alone.items() if o != PASSED}
    if not by_mutant or not by_mutant <= tests or any(alone[t] != FAILED for t in by_mutant):
        return None
    rest = _Settled({t: s for t, s in settled.items() if t not in by_mutant})
    rest.forms = {t: settled.forms[t] for t in rest}
    changes = [mutation.change]
    if rest:
        changes += perturbed(test_file, test_text, rest, rest.forms, Perturbation.drawn(rng))
    fails = _repeatable(changes, texts, tests, run_all, run)
    if not fails or not by_mutant <= set(fails):
        return None
    copied = run(variant_texts(texts, changes), code=mutation.code)
    if copied is None or not any(copied.get(t) == PASSED for t in by_mutant):
        return None
    return Variant.made(snippet.name, changes, fails)


def _why_none(settled: _Settled, tests: set[str]) -> str:
    if not settled:
        return (
            f"none of the {len(tests)} test(s) running this snippet compares with a value that can be "
            "perturbed so that the reference fails by an assertion, and no mutant of an oracle copy of it holds"
        )
    return "the reference did not fail a variant the same way three times"


# ---------------------------------------------------------------------------- storing them


class VariantStore:
    """Variant sets as JSON files under ``root/variants/<task hash>/<environment>/``: ``coverage.json`` (the
    reference's per-test outcomes and which tests run each snippet) and one file per snippet. Written
    atomically; safe for several processes."""

    def __init__(self, root: str) -> None:
        self.root = os.path.join(root, "variants", STORE_FORMAT)

    def _folder(self, task_hash: str, environment: str) -> str:
        safe = hashlib.sha256(environment.encode()).hexdigest()[:16]
        return os.path.join(self.root, task_hash, safe)

    @staticmethod
    def _name(snippet: str) -> str:
        return hashlib.sha256(snippet.encode()).hexdigest()[:24] + ".json"

    def _read(self, path: str) -> Any:
        try:
            with open(path, encoding="utf-8") as handle:
                return json.load(handle)
        except (OSError, ValueError):
            return None

    def _write(self, path: str, data: Any) -> None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
        os.replace(tmp, path)

    def coverage(self, task_hash: str, environment: str) -> dict[str, Any] | None:
        data = self._read(os.path.join(self._folder(task_hash, environment), "coverage.json"))
        return data if isinstance(data, dict) else None

    def put_coverage(self, task_hash: str, environment: str, data: Mapping[str, Any]) -> None:
        self._write(os.path.join(self._folder(task_hash, environment), "coverage.json"), dict(data))

    def get(self, task_hash: str, environment: str, snippet: str) -> SnippetVariants | None:
        data = self._read(os.path.join(self._folder(task_hash, environment), self._name(snippet)))
        if not isinstance(data, dict):
            return None
        try:
            return SnippetVariants.from_dict(data)
        except (KeyError, TypeError, ValueError):
            return None

    def put(self, task_hash: str, environment: str, found: SnippetVariants) -> None:
        self._write(
            os.path.join(self._folder(task_hash, environment), self._name(found.snippet)), found.to_dict()
        )


_DEFAULT: list[VariantStore | None] = [None]


def default_store() -> VariantStore | None:
    """The store a ``Runner`` uses when it is given none (None unless ``use_default_store`` set one)."""
    return _DEFAULT[0]


def use_default_store(store: VariantStore | None) -> None:
    """Make ``store`` the process's default: a test suite shares one across its runners."""
    _DEFAULT[0] = store


__all__ = [
    "EXPECTED_VALUE",
    "REFERENCE_MUTANT",
    "Change",
    "Perturbation",
    "Probe",
    "SnippetVariants",
    "Variant",
    "VariantStore",
    "apply_changes",
    "derive_snippet",
    "expected_sites",
    "mutations",
    "oracle_copy",
    "re_emitted",
    "variant_texts",
]
