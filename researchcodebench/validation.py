"""The validation battery of a task (docs/validation.md): is every snippet really checked by the test?

``validate_task`` runs, through the same ``Runner`` (sandbox, warm interpreters) that evaluates models:

* **annotations**: every problem of the task folder, with ``file:line`` (``Task.issues``);
* **environment**: every package the task's files import (outside ``try`` blocks) exists in the evaluation
  environment, else "missing dependency X" naming the import's ``file:line``;
* **oracle**: declared oracle files exist and a completion naming them fails as ``oracle_access``; a
  Python file (or a context file, which models are shown) that holds a snippet's code is an undeclared
  oracle; a data file the test names but nobody declared is a warning;
* **reference** / **flaky**: the unchanged task passes ``repeats`` times out of ``repeats`` (else it fails,
  or is flaky, with the failing output); the slowest run sets the task timeout;
* **sandbox**: a failing reference run that used the network, wrote outside its folder or ran over the
  time or memory limit says so; a reference too slow for a tenfold margin under the cap is a warning;
* **variants**: for every snippet, the impossible variants of its test (``variants.py``: versions of the
  test the reference fails, every time, by a failed assertion, only in tests that run the snippet's code),
  derived with the battery's runner (``Runner.snippet_variants``) or read from its store; every pass of a
  model is confirmed against one of them. A snippet with none is an error at its line, saying why (a test
  that does not run its code, or none that compares with a value that can be perturbed): a maintainer may
  accept it as a snippet its test does not check. The report holds the whole set (``variants``, per snippet
  ``SnippetVariants.to_dict()``, derived in the environment ``variants_environment``);
* **mutation**: for every snippet, the placeholder (the masked file a model sees) and trivially wrong
  fills (``pass``, ``return None``, returning the first input unchanged, ``raise NotImplementedError``)
  must each fail the test, and so must most of ``MUTANTS_PER_SNIPPET`` mutants of the snippet's own
  reference (an operator swapped, a constant perturbed, a comparison flipped, a statement dropped) drawn at
  random for this validation from a seed the test cannot know (``mutants.draw``): a test that only
  recognises the fixed fills does not check the snippet. A snippet whose test passes a fill, or lets most
  of its mutants through, is "not checked by the test"; its record has the mutation score. The mutation
  runs only when the reference passed every time (otherwise their verdicts mean nothing).

Findings of severity ``error`` block approval (the portal lets a maintainer override a mutation or a variants
finding with a written reason; that decision is not the core's). Runs go through ``Runner.evaluate`` in
parallel, so the battery costs about one warm start plus (5 + 9 x snippets) fork-per-run tests, and the
derivation of variants about 10 to 20 runs per snippet more (none when the runner's store has them).
"""

from __future__ import annotations

import ast
import json
import os
import re
import secrets
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field, replace
from pathlib import PurePosixPath
from typing import Any

from . import errors, mutants, variants
from .annotations import Snippet, split_lines
from .gpu import gpu_uses
from .problems import placeholder_lines
from .pset import MANIFEST, PAPER_FILES, Task
from .runner import (
    TIMEOUT_FACTOR,
    DerivationOutOfTime,
    Runner,
    TaskFacts,
    Verdict,
    normalise_code,
    oracle_access,
)

CHECKS = (
    "annotations",
    "reference",
    "flaky",
    "mutation",
    "variants",
    "oracle",
    "environment",
    "sandbox",
    "timeout",
)
ERROR = "error"
WARNING = "warning"
#: Longest one-line message and longest detail (output, code) a finding keeps.
MESSAGE_CHARS = 300
DETAIL_CHARS = 4000
DEFAULT_REPEATS = 5
#: The fills every snippet's test must reject, in the order they are tried and reported.
FILL_KINDS = ("placeholder", "pass", "return None", "return input", "raise NotImplementedError")
#: Mutants of its own reference drawn for every snippet, of which more than ``MUTATION_SCORE_MIN`` must fail
#: (when a snippet has only one or two, one failing is enough: an equivalent mutant, ``* sign`` -> ``/ sign``
#: of a +-1, is then likely to be among them).
MUTANTS_PER_SNIPPET = 4
MUTATION_SCORE_MIN = 0.5
#: Further mutants drawn (same seed) for a snippet whose first draw looks weak, before it is judged.
MUTANTS_CONFIRM = 12


#: A battery's time budget (``battery_budget_s``): seconds beyond its runs (facts, report), and how many
#: times the slowest reference run each fill or mutant may take on average.
BATTERY_OVERHEAD_S = 60.0
BATTERY_RUN_FACTOR = 3.0
#: The most runs deriving one snippet's variants can take (``variants.derive_snippet``): settling its
#: tests' perturbations (and their margin check), each mutant tried (alone, three repeats, its copy), and each
#: perturbation drawn (three repeats).
VARIANT_RUNS_PER_SNIPPET = (
    variants.SETTLE_ROUNDS
    + 1
    + variants.MUTANT_TRIES_FOR_ONE * (variants.REPEATS + 2)
    + (variants.PER_SNIPPET + 1) * variants.REPEATS
)
#: The result of a fill or mutant the battery had no time left to run.
OUT_OF_TIME = "not run: the validation reached its time limit"


def battery_budget_s(*, snippets: int, slowest_reference_s: float, workers: int = 1) -> float:
    """Seconds the fills and mutants of ``snippets`` snippets may take, once the slowest reference run is
    known: every run they can need (each fill, the first draw and the confirmation draw of mutants, the
    derivation of its variants) at ``BATTERY_RUN_FACTOR`` times the slowest reference run (at least 1 s each),
    over ``workers``, plus ``BATTERY_OVERHEAD_S``. A test that sleeps therefore cannot hold a worker for more
    than a few times what its own reference takes per run."""
    per_snippet = len(FILL_KINDS) + MUTANTS_PER_SNIPPET + MUTANTS_CONFIRM + VARIANT_RUNS_PER_SNIPPET
    runs = max(0, snippets) * per_snippet
    per_run = BATTERY_RUN_FACTOR * max(1.0, slowest_reference_s)
    return round(BATTERY_OVERHEAD_S + runs * per_run / max(1, workers), 1)


def weakly_checked(killed: int, total: int) -> bool:
    """Whether ``killed`` failing mutants of ``total`` are too few for a snippet to count as checked."""
    if total <= 2:
        return killed == 0
    return killed <= MUTATION_SCORE_MIN * total


#: A snippet's code counts as present in another file only from this many code lines, or this many
#: characters of code, on (shorter runs, such as ``return out``, occur by chance).
ORACLE_MIN_LINES = 2
ORACLE_MIN_CHARS = 30
#: Interpreter start-up and import lookups of the dependency probe.
PROBE_TIMEOUT_S = 60
#: Output of a failing run that names network use or a write outside the task folder.
_NETWORK = re.compile(
    r"Network is unreachable|Temporary failure in name resolution|Name or service not known|"
    r"gaierror|No address associated with hostname|Cannot assign requested address|"
    r"ConnectionRefusedError|URLError|NewConnectionError|MaxRetryError|ConnectError"
)
_OUTSIDE_WRITE = re.compile(r"Read-only file system|\[Errno 30\]|PermissionError: \[Errno 13\]")
_NETWORK_MODULES = frozenset(
    {"socket", "urllib", "http", "requests", "httpx", "aiohttp", "ftplib", "smtplib"}
)
#: ``try`` statements (``except*`` ones too, where the parser has them).
_TRY_NODES = tuple(t for t in (ast.Try, getattr(ast, "TryStar", None)) if t is not None)
_MISSING_PROBE = (
    "import importlib.util, json, sys\n"
    "missing = []\n"
    "for name in json.loads(sys.argv[1]):\n"
    "    try:\n"
    "        found = importlib.util.find_spec(name) is not None\n"
    "    except (ImportError, ValueError):\n"
    "        found = False\n"
    "    if not found:\n"
    "        missing.append(name)\n"
    "print(json.dumps(missing))\n"
)


def _line(text: str) -> str:
    one = " ".join(text.split())
    return one if len(one) <= MESSAGE_CHARS else one[: MESSAGE_CHARS - 3] + "..."


def _bounded(text: str) -> str:
    # The end of an output holds the traceback; keep that.
    return text if len(text) <= DETAIL_CHARS else "..." + text[-(DETAIL_CHARS - 3) :]


@dataclass(frozen=True)
class Finding:
    """One result of the battery. ``severity`` "error" blocks approval; ``message`` is one bounded line;
    ``detail`` holds the evidence (a fill that passed, a failing output), bounded too."""

    check: str
    severity: str
    message: str
    file: str | None = None
    line: int | None = None
    snippet: str | None = None
    detail: str = ""

    def __post_init__(self) -> None:
        if self.check not in CHECKS:
            raise ValueError(f"unknown check {self.check!r}; expected one of {', '.join(CHECKS)}")
        if self.severity not in (ERROR, WARNING):
            raise ValueError(f"unknown severity {self.severity!r}; expected 'error' or 'warning'")
        object.__setattr__(self, "message", _line(self.message))
        object.__setattr__(self, "detail", _bounded(self.detail))

    @property
    def is_error(self) -> bool:
        return self.severity == ERROR

    def location(self) -> str | None:
        if self.file is None:
            return None
        return f"{self.file}:{self.line}" if self.line else self.file

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Finding:
        return cls(
            check=str(data["check"]),
            severity=str(data["severity"]),
            message=str(data["message"]),
            file=data.get("file"),
            line=data.get("line"),
            snippet=data.get("snippet"),
            detail=str(data.get("detail", "")),
        )


@dataclass
class ValidationReport:
    """The battery's result. ``ok``: no error finding. ``snippets``: one dict per snippet (name, file,
    start_line, end_line, lines, ``fills`` tried with their verdicts or the note why one was skipped,
    ``checked``: True / False / None when the mutation check did not run). ``timeout_s``: the task timeout
    the reference runs set (None when the reference never passed). ``variants``: snippet name -> its
    impossible variants (``SnippetVariants.to_dict()``; a snippet left out was not derived: the reference did
    not pass every time, or the battery ran out of time), derived in the environment ``variants_environment``
    (an ``Environment.id``; the task version stores both)."""

    ok: bool
    findings: list[Finding]
    reference_durations_s: list[float]
    timeout_s: float | None
    snippets: list[dict[str, Any]]
    duration_s: float
    environment: str
    #: the seed the snippets' mutants were drawn with (kept for a maintainer who wants the same draw again)
    mutation_seed: str = ""
    variants: dict[str, dict[str, Any]] = field(default_factory=dict)
    variants_environment: str = ""

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.is_error]

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "findings": [f.to_dict() for f in self.findings],
            "reference_durations_s": list(self.reference_durations_s),
            "timeout_s": self.timeout_s,
            "snippets": [dict(s) for s in self.snippets],
            "duration_s": self.duration_s,
            "environment": self.environment,
            "mutation_seed": self.mutation_seed,
            "variants": {name: dict(found) for name, found in self.variants.items()},
            "variants_environment": self.variants_environment,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ValidationReport:
        timeout = data.get("timeout_s")
        return cls(
            ok=bool(data["ok"]),
            findings=[Finding.from_dict(f) for f in data.get("findings", ())],
            reference_durations_s=[float(d) for d in data.get("reference_durations_s", ())],
            timeout_s=None if timeout is None else float(timeout),
            snippets=[dict(s) for s in data.get("snippets", ())],
            duration_s=float(data.get("duration_s", 0.0)),
            environment=str(data.get("environment", "")),
            mutation_seed=str(data.get("mutation_seed", "")),
            variants={str(k): dict(v) for k, v in (data.get("variants") or {}).items()},
            variants_environment=str(data.get("variants_environment", "")),
        )


# ---------------------------------------------------------------------------- fills


@dataclass(frozen=True)
class Fill:
    """One wrong fill of a snippet: ``code`` to put between its tags, or None with ``note`` saying why
    this kind does not apply."""

    kind: str
    code: str | None
    note: str = ""


def _scope_of(tree: ast.AST, snippet: Snippet) -> ast.AST | None:
    """The innermost function or class whose body holds the whole snippet (None: module level)."""
    best: ast.AST | None = None
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        end = getattr(node, "end_lineno", None) or node.lineno
        if node.lineno < snippet.start_line and end >= snippet.end_line - 1:
            if best is None or node.lineno >= best.lineno:  # type: ignore[attr-defined]
                best = node
    return best


def _first_input(function: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    args = [*function.args.posonlyargs, *function.args.args]
    if args and args[0].arg in ("self", "cls"):
        args = args[1:]
    args += function.args.kwonlyargs
    return args[0].arg if args else None


def _block_indent(text: str, snippet: Snippet) -> str:
    """The whitespace that starts the snippet's first code line (the tag line's when there is none), as
    written: a file indented with tabs gets tabs."""
    lines = split_lines(text)
    for line in lines[snippet.start_line : snippet.end_line - 1]:
        if line.strip():
            return line[: len(line) - len(line.lstrip())]
    tag = lines[snippet.start_line - 1]
    return tag[: len(tag) - len(tag.lstrip())]


def _same_code(a: str, b: str) -> bool:
    def words(code: str) -> list[str]:
        return [line.strip() for line in normalise_code(code).split("\n") if line.strip()]

    return words(a) == words(b)


def mutation_fills(text: str, snippet: Snippet) -> list[Fill]:
    """The fills of ``FILL_KINDS`` for ``snippet`` of the annotated file ``text``, each indented like the
    snippet's code. ``return`` fills apply inside a function only; returning an input needs a parameter
    other than ``self``/``cls``; a fill that is the reference itself is skipped."""
    pad = _block_indent(text, snippet)
    try:
        scope = _scope_of(ast.parse(text), snippet)
        parse_note = ""
    except (SyntaxError, ValueError) as exc:
        scope = None
        parse_note = f"the file does not parse ({exc.__class__.__name__}), so its functions are unknown"
    in_function = isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef))
    not_function = parse_note or "the snippet is not inside a function"
    fills = [
        Fill("placeholder", "\n".join(placeholder_lines(snippet))),
        Fill("pass", pad + "pass"),
        Fill("return None", pad + "return None") if in_function else Fill("return None", None, not_function),
    ]
    first = _first_input(scope) if in_function else None  # type: ignore[arg-type]
    if first is not None:
        fills.append(Fill("return input", f"{pad}return {first}"))
    else:
        note = not_function if not in_function else "the function takes no input other than self"
        fills.append(Fill("return input", None, note))
    fills.append(Fill("raise NotImplementedError", pad + "raise NotImplementedError"))
    return [
        Fill(f.kind, None, "the fill is the reference code itself")
        if f.code is not None and f.kind != "placeholder" and _same_code(f.code, snippet.code)
        else f
        for f in fills
    ]


# ---------------------------------------------------------------------------- static checks


def annotation_findings(task: Task) -> list[Finding]:
    """Every problem of the task folder as a finding with its ``file:line`` and hint."""
    return [
        Finding(
            check="annotations",
            severity=ERROR if issue.is_error else WARNING,
            message=issue.message,
            file=issue.file,
            line=issue.line or None,
            detail=issue.hint,
        )
        for issue in task.issues
    ]


def _required_imports(source: str) -> list[tuple[str, int]]:
    """(top-level module, line) of the absolute imports outside ``try`` blocks (those inside are
    optional by construction)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, optional: bool) -> None:
        if isinstance(node, ast.Import) and not optional:
            found.extend((alias.name.split(".", 1)[0], node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not optional and node.level == 0 and node.module:
            found.append((node.module.split(".", 1)[0], node.lineno))
        for child in ast.iter_child_nodes(node):
            visit(child, optional or isinstance(node, _TRY_NODES))

    visit(tree, False)
    return found


def _missing_modules(python: str, names: Sequence[str]) -> tuple[list[str], str | None]:
    """The names the evaluation interpreter cannot find (looked up, never imported), or a reason why the
    interpreter could not be asked."""
    if not names:
        return [], None
    try:
        done = subprocess.run(
            [python, "-I", "-c", _MISSING_PROBE, json.dumps(sorted(names))],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            env={"PATH": "/usr/bin:/bin"},
        )
        if done.returncode != 0:
            return [], f"exit {done.returncode}: {done.stderr[-300:]}"
        missing = json.loads(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError) as exc:
        return [], str(exc)
    return [str(name) for name in missing], None


def environment_findings(task: Task, facts: TaskFacts, python: str) -> list[Finding]:
    """A missing package (one finding per package, at its first import) and, as warnings, network
    modules the task imports (the sandbox has no network)."""
    hidden = set(facts.hidden)
    where: dict[str, tuple[str, int]] = {}
    for rel in facts.files:
        if not rel.endswith(".py") or rel in hidden:
            continue
        try:
            source = task.read_text(rel)
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        for name, line in _required_imports(source):
            where.setdefault(name, (rel, line))
    candidates = [
        n
        for n in where
        if n not in facts.local_modules and n not in sys.builtin_module_names and n.isidentifier()
    ]
    missing, problem = _missing_modules(python, candidates)
    findings = []
    if problem is not None:
        findings.append(
            Finding(
                "environment",
                WARNING,
                "could not ask the evaluation interpreter which packages it has; the reference run decides",
                detail=problem,
            )
        )
    for name in missing:
        rel, line = where[name]
        findings.append(
            Finding(
                "environment",
                ERROR,
                f"missing dependency {name}: the evaluation environment has no module {name!r}",
                file=rel,
                line=line,
                detail="add it to task.yaml requirements, or remove the import",
            )
        )
    for name in sorted(set(where) & _NETWORK_MODULES):
        rel, line = where[name]
        findings.append(
            Finding(
                "sandbox",
                WARNING,
                f"the task imports {name}: tests run without network access",
                file=rel,
                line=line,
            )
        )
    return findings


def gpu_findings(task: Task, facts: TaskFacts) -> list[Finding]:
    """A warning at the first place the code asks for a CUDA device when the manifest does not say
    ``needs_gpu``: such a task is validated and evaluated on CPU workers (the ``eval-cpu`` queue)."""
    if task.manifest.needs_gpu:
        return []
    uses = gpu_uses(task.root, facts.files)
    if not uses:
        return []
    first = uses[0]
    more = f" (and {len(uses) - 1} more)" if len(uses) > 1 else ""
    return [
        Finding(
            "environment",
            WARNING,
            f"the code asks for a GPU ({first.code}){more} but task.yaml does not set needs_gpu",
            file=first.file,
            line=first.line,
            detail="if the test needs a GPU, set needs_gpu: true in task.yaml: its validation and model "
            "tests then run on a GPU worker (the eval-gpu queue); otherwise let it fall back to the CPU",
        )
    ]


def _code_lines(text: str) -> list[str]:
    return [s for s in (line.strip() for line in split_lines(text)) if s and not s.startswith("#")]


def _contains(haystack: list[str], needle: list[str]) -> bool:
    size = len(needle)
    return any(haystack[i : i + size] == needle for i in range(len(haystack) - size + 1))


def _probe_completion(oracle: str, pad: str) -> str:
    path = PurePosixPath(oracle)
    dotted = ".".join(path.with_suffix("").parts)
    if path.suffix == ".py" and all(part.isidentifier() for part in dotted.split(".")):
        return f"{pad}import {dotted}"
    return f"{pad}open({oracle!r})"


def oracle_findings(task: Task, facts: TaskFacts) -> list[Finding]:
    """Oracle hygiene (see the module docstring). Static: nothing runs."""
    findings: list[Finding] = []
    present = set(facts.files)
    for name in task.manifest.oracle_files:
        if name not in present:
            findings.append(
                Finding(
                    "oracle",
                    ERROR,
                    f"declared oracle file {name!r} does not exist in the task folder",
                    file=MANIFEST,
                    detail="fix oracle_files in task.yaml",
                )
            )
    oracles = set(facts.oracles)
    if task.snippets:
        first = task.snippets[0]
        pad = " " * first.indent
        for oracle in facts.oracles:
            probe = _probe_completion(oracle, pad)
            if oracle_access(task, first, probe, facts.oracles) is None:
                findings.append(
                    Finding(
                        "oracle",
                        ERROR,
                        f"a completion naming the oracle {oracle!r} would not be refused as oracle access",
                        file=oracle,
                        detail=probe.strip(),
                    )
                )
    annotated = {s.file for s in task.snippets}
    context = set(task.meta.context_file_paths)
    needles = [(s, _code_lines(s.code)) for s in task.snippets]
    needles = [
        (s, lines)
        for s, lines in needles
        if lines and (len(lines) >= ORACLE_MIN_LINES or len("".join(lines)) >= ORACLE_MIN_CHARS)
    ]
    for rel in facts.files:
        if not rel.endswith(".py") or rel in annotated or rel in oracles or rel == task.manifest.test_entry:
            continue
        try:
            haystack = _code_lines(task.read_text(rel))
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        leaked = [s for s, lines in needles if _contains(haystack, lines)]
        if not leaked:
            continue
        names = ", ".join(repr(s.name) for s in leaked[:5]) + (" ..." if len(leaked) > 5 else "")
        if rel in context:
            message = f"context file {rel!r} (shown to models) holds the code of snippet(s) {names}"
            hint = "remove that code from the context file, or stop listing it as context"
        else:
            message = f"undeclared oracle: {rel!r} holds the code of snippet(s) {names}"
            hint = "declare it in task.yaml oracle_files (or name it *_ref.py) so that completions cannot read it"
        findings.append(Finding("oracle", ERROR, message, file=rel, snippet=leaked[0].name, detail=hint))
    findings.extend(_named_data_files(task, facts, oracles))
    return findings


def _named_data_files(task: Task, facts: TaskFacts, oracles: set[str]) -> list[Finding]:
    """Warnings for data files the test names that are not declared oracles (they may hold expected
    results a completion could read)."""
    entry = task.manifest.test_entry
    try:
        tree = ast.parse(task.read_text(entry))
    except (OSError, UnicodeDecodeError, ValueError, SyntaxError):
        return []
    skip = {MANIFEST, entry, *PAPER_FILES, *task.meta.context_file_paths}
    by_name: dict[str, str] = {}
    for rel in facts.files:
        if rel.endswith(".py") or rel in oracles or rel in skip:
            continue
        by_name.setdefault(rel, rel)
        by_name.setdefault(PurePosixPath(rel).name, rel)
    findings: list[Finding] = []
    seen: set[str] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        text = node.value.strip().removeprefix("./")
        rel = by_name.get(text)
        if rel is None or rel in seen:
            continue
        seen.add(rel)
        findings.append(
            Finding(
                "oracle",
                WARNING,
                f"the test reads {rel!r}, which is not a declared oracle: completions can read it too",
                file=entry,
                line=node.lineno,
                detail="if it holds expected results, declare it in task.yaml oracle_files",
            )
        )
    return findings


# ---------------------------------------------------------------------------- runs


def _output(verdict: Verdict) -> str:
    parts = [verdict.reason]
    if verdict.stdout_tail.strip():
        parts.append("--- stdout ---\n" + verdict.stdout_tail.rstrip())
    if verdict.stderr_tail.strip():
        parts.append("--- stderr ---\n" + verdict.stderr_tail.rstrip())
    return "\n".join(parts)


def _run_summary(verdict: Verdict) -> dict[str, Any]:
    return {
        "outcome": verdict.outcome,
        "category": verdict.category,
        "reason": _line(verdict.reason),
        "duration_s": round(verdict.duration_s, 4),
        "passed": verdict.passed,
    }


def reference_findings(runs: Sequence[Verdict], runner: Runner, task: Task) -> list[Finding]:
    """Reference, flaky, environment and sandbox findings of the repeated reference runs."""
    failing = [v for v in runs if not v.passed]
    findings: list[Finding] = []
    if failing and len(failing) < len(runs):
        first = failing[0]
        findings.append(
            Finding(
                "flaky",
                ERROR,
                f"flaky: the reference run passed {len(runs) - len(failing)} of {len(runs)} times; "
                f"a failing run: {first.reason}",
                detail=_output(first),
            )
        )
    elif failing:
        findings.append(
            Finding(
                "reference",
                ERROR,
                f"the reference run fails ({len(runs)} of {len(runs)} times): {failing[0].reason}",
                detail=_output(failing[0]),
            )
        )
    for verdict in {v.category: v for v in failing}.values():
        findings.extend(_run_problems(verdict, runner))
    passed = [v.duration_s for v in runs if v.passed]
    cap = runner.cap_s(task)
    if passed and TIMEOUT_FACTOR * max(passed) > cap:
        findings.append(
            Finding(
                "sandbox",
                WARNING,
                f"the reference run takes up to {max(passed):.2f} s: the {cap:g} s time limit leaves less "
                f"than a {TIMEOUT_FACTOR:g}x margin",
                file=MANIFEST,
                detail="raise timeout_s in task.yaml or make the test faster",
            )
        )
    return findings


def _run_problems(verdict: Verdict, runner: Runner) -> list[Finding]:
    output = verdict.stdout_tail + "\n" + verdict.stderr_tail + "\n" + verdict.reason
    detail = _output(verdict)
    if verdict.category == "missing_dependency":
        module = verdict.reason.rsplit(":", 1)[-1].strip()
        return [
            Finding(
                "environment",
                ERROR,
                f"missing dependency {module}: the reference run could not import it",
                detail=detail,
            )
        ]
    if verdict.outcome == "timeout":
        limit = f"{verdict.timeout_s:g} s" if verdict.timeout_s else "its limit"
        return [
            Finding("sandbox", ERROR, f"the reference run exceeded the time limit ({limit})", detail=detail)
        ]
    if verdict.outcome == "oom":
        return [
            Finding(
                "sandbox",
                ERROR,
                f"the reference run exceeded the memory limit ({runner.limits.memory_mb} MB)",
                detail=detail,
            )
        ]
    found = []
    if _NETWORK.search(output):
        found.append(
            Finding(
                "sandbox",
                ERROR,
                "the reference run tried to use the network (tests run without it)",
                detail=detail,
            )
        )
    if _OUTSIDE_WRITE.search(output):
        found.append(
            Finding(
                "sandbox",
                ERROR,
                "the reference run tried to write outside its task folder (only the task folder and /tmp are "
                "writable)",
                detail=detail,
            )
        )
    if verdict.tier == errors.INFRASTRUCTURE and not found:
        found.append(Finding("sandbox", ERROR, f"the sandbox failed: {verdict.reason}", detail=detail))
    return found


def task_timeout(runs: Sequence[Verdict], runner: Runner, task: Task) -> float | None:
    """The timeout the reference runs set: TIMEOUT_FACTOR x the slowest passing run, at least the
    runner's floor, at most the task's cap (None when no run passed)."""
    passed = [v.duration_s for v in runs if v.passed]
    if not passed:
        return None
    return round(min(max(TIMEOUT_FACTOR * max(passed), runner.timeout_floor_s), runner.cap_s(task)), 3)


@dataclass
class _SnippetState:
    snippet: Snippet
    fills: list[Fill]
    mutants: list[mutants.Mutant] = field(default_factory=list)
    results: dict[int, Verdict | str] = field(default_factory=dict)
    mutant_results: dict[int, Verdict | str] = field(default_factory=dict)
    #: the mutants left to draw from, in the seed's order (the confirmation draw takes the next ones)
    reserve: list[mutants.Mutant] = field(default_factory=list)
    confirmed: bool = False

    def confirmation(self) -> list[mutants.Mutant]:
        """More mutants when the fills all failed but the first draw looks weak (at most once)."""
        if self.confirmed or not self.reserve:
            return []
        self.confirmed = True
        if any(isinstance(r, Verdict) and r.passed for r in self.results.values()):
            return []
        judged = [r for r in self.mutant_results.values() if isinstance(r, Verdict)]
        killed = sum(1 for r in judged if not r.passed)
        if not judged or not weakly_checked(killed, len(judged)):
            return []
        extra, self.reserve = self.reserve[:MUTANTS_CONFIRM], self.reserve[MUTANTS_CONFIRM:]
        return extra

    @property
    def runnable(self) -> int:
        return sum(1 for f in self.fills if f.code is not None) + len(self.mutants)

    def record(self) -> dict[str, Any]:
        rows: list[dict[str, Any]] = []
        undecided = False
        passed = False
        for index, fill in enumerate(self.fills):
            row: dict[str, Any] = {"kind": fill.kind, "code": fill.code}
            if fill.code is None:
                row["skipped"] = fill.note
            else:
                result = self.results.get(index)
                if isinstance(result, Verdict):
                    row.update(_run_summary(result))
                    passed = passed or result.passed
                    undecided = undecided or result.tier == errors.INFRASTRUCTURE
                else:
                    row.update({"outcome": "not_run", "reason": result or "not run", "passed": False})
                    undecided = True
            rows.append(row)
        drawn: list[dict[str, Any]] = []
        killed = judged = 0
        for index, mutant in enumerate(self.mutants):
            row = {"kind": mutant.kind, "line": mutant.line, "change": mutant.change, "code": mutant.code}
            result = self.mutant_results.get(index)
            if isinstance(result, Verdict) and result.tier != errors.INFRASTRUCTURE:
                row.update(_run_summary(result))
                judged += 1
                killed += 0 if result.passed else 1
            else:
                reason = result.reason if isinstance(result, Verdict) else (result or "not run")
                row.update({"outcome": "not_run", "reason": _line(reason), "passed": False})
                undecided = True
            drawn.append(row)
        score = {"killed": killed, "total": judged} if judged else None
        weak = score is not None and weakly_checked(killed, judged)
        s = self.snippet
        return {
            "name": s.name,
            "file": s.file,
            "start_line": s.start_line,
            "end_line": s.end_line,
            "lines": s.lines,
            "fills": rows,
            "mutants": drawn,
            "mutation_score": score,
            "checked": False if passed or weak else (None if undecided else True),
        }


def _mutation_findings(record: dict[str, Any]) -> list[Finding]:
    passed = [row for row in record["fills"] if row.get("passed")]
    where = {"file": record["file"], "line": record["start_line"], "snippet": record["name"]}
    score = record.get("mutation_score")
    if not passed and score and weakly_checked(score["killed"], score["total"]):
        survivors = [row for row in record.get("mutants", ()) if row.get("passed")]
        detail = "\n\n".join(
            f"mutant ({row['kind']}, line {row['line']}: {row['change']}) passed the test:\n{row['code']}"
            for row in survivors
        )
        return [
            Finding(
                "mutation",
                ERROR,
                f"snippet {record['name']!r} is not checked by the test: only {score['killed']} of "
                f"{score['total']} mutants of its reference fail it (a test that rejects the fixed wrong "
                "fills but not real mistakes does not check the snippet)",
                detail=detail,
                **where,
            )
        ]
    if passed:
        kinds = ", ".join(repr(row["kind"]) for row in passed)
        detail = "\n\n".join(f"fill {row['kind']!r} passed the test:\n{row['code']}" for row in passed)
        return [
            Finding(
                "mutation",
                ERROR,
                f"snippet {record['name']!r} is not checked by the test: the test passes with the fill "
                f"{kinds} in its place",
                detail=detail,
                **where,
            )
        ]
    broken = [
        row
        for row in record["fills"]
        if "skipped" not in row and row.get("outcome") in ("infra_error", "not_run")
    ]
    if broken:
        row = broken[0]
        return [
            Finding(
                "sandbox",
                ERROR,
                f"snippet {record['name']!r}: the fill {row['kind']!r} could not be judged: {row['reason']}",
                detail=row.get("code") or "",
                **where,
            )
        ]
    return []


# ---------------------------------------------------------------------------- the battery


def validate_task(
    task: Task,
    *,
    runner: Runner,
    repeats: int = DEFAULT_REPEATS,
    progress: Callable[[str, dict[str, Any]], None] | None = None,
    seed: str | None = None,
    deadline: float | None = None,
) -> ValidationReport:
    """Run the battery on ``task`` (a folder on disk) with ``runner``; see the module docstring.

    ``progress(stage, data)`` is called from this thread as each part finishes: "annotations",
    "environment", "oracle" (data: ``findings``), "reference" (``runs``, ``timeout_s``, ``findings``),
    "variants" once per snippet (``variants``: ``variants_summary``, ``findings``), "mutation" once per
    snippet (``snippet``: its record, ``findings``), then "done" (``report``). A task that cannot run at all
    (not on disk, no test script) goes from "annotations" to "reference" to "done".
    ``seed`` draws the snippets' mutants (default: a fresh random one, which never reaches the sandbox).
    ``deadline`` (``time.monotonic()``) is the latest the battery may end; once the reference runs are in,
    it becomes the earlier of that and ``battery_budget_s`` from now. No run starts after it and none is
    given a timeout past it; fills and mutants left unrun, and variants left underived, make a ``timeout``
    error. The variants are derived before the mutation check, with ``runner`` (its store first).
    Never raises for a bad task: every problem is a finding.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    started = time.monotonic()
    stage = _Stages(progress)
    stage("annotations", annotation_findings(task))
    seed = seed or secrets.token_hex(16)
    states = []
    for snippet in task.snippets:
        fills = _fills_for(task, snippet)
        first, reserve = _mutants_for(snippet, fills, seed)
        states.append(_SnippetState(snippet, fills, first, reserve=reserve))
    runs: list[Verdict] = []
    timeout: float | None = None
    found: dict[str, variants.SnippetVariants] = {}
    blocker = _cannot_run(task)
    if blocker is not None:
        stage("reference", [blocker], runs=[], timeout_s=None)
    else:
        runs, timeout = _reference_stages(task, runner, repeats, stage)
        if timeout is not None and all(v.passed for v in runs):
            found = _budgeted_checks(task, states, runner, runs, timeout, stage, deadline=deadline)
        else:
            _skip_mutations(states, stage)
    environment = runner.environment_of(task).id
    findings = _one_finding_per_unchecked_snippet(stage.findings)
    report = ValidationReport(
        ok=not any(f.is_error for f in findings),
        findings=findings,
        reference_durations_s=[round(v.duration_s, 4) for v in runs],
        timeout_s=timeout,
        snippets=[s.record() for s in states],
        duration_s=round(time.monotonic() - started, 3),
        environment=environment,
        mutation_seed=seed,
        variants={name: item.to_dict() for name, item in found.items()},
        variants_environment=environment if found else "",
    )
    stage.emit("done", {"report": report.to_dict()})
    return report


def _one_finding_per_unchecked_snippet(findings: list[Finding]) -> list[Finding]:
    """The findings without the "variants" error of a snippet the mutation check already found unchecked: a
    snippet whose test passes a wrong fill has no impossible variant for the same reason, and one finding
    (and one override) per cause is enough. Progress already streamed keeps both."""
    unchecked = {f.snippet for f in findings if f.check == "mutation" and f.is_error}
    return [f for f in findings if not (f.check == "variants" and f.is_error and f.snippet in unchecked)]


class _Stages:
    """The battery's findings so far; calling it with a stage's name and new findings keeps them and tells
    ``progress`` (with the stage's other data)."""

    def __init__(self, progress: Callable[[str, dict[str, Any]], None] | None) -> None:
        self.findings: list[Finding] = []
        self.emit = progress or (lambda stage, data: None)

    def __call__(self, name: str, new: list[Finding], **data: Any) -> None:
        self.findings.extend(new)
        self.emit(name, {**data, "findings": [f.to_dict() for f in new]})


def _reference_stages(
    task: Task, runner: Runner, repeats: int, stage: _Stages
) -> tuple[list[Verdict], float | None]:
    """The stages before the mutation check: environment, oracle and ``repeats`` reference runs; returns the
    runs and the task timeout they set (None when the reference never passed)."""
    facts = runner.facts(task)
    stage(
        "environment",
        environment_findings(task, facts, runner.environment_of(task).python) + gpu_findings(task, facts),
    )
    stage("oracle", oracle_findings(task, facts))
    runs = runner.reference_runs(task, repeats)
    timeout = task_timeout(runs, runner, task)
    # The import check may already have named a missing package; say it once.
    known = {f.message.split(":", 1)[0] for f in stage.findings if f.check == "environment"}
    stage(
        "reference",
        [
            f
            for f in reference_findings(runs, runner, task)
            if f.check != "environment" or f.message.split(":", 1)[0] not in known
        ],
        runs=[_run_summary(v) for v in runs],
        timeout_s=timeout,
    )
    return runs, timeout


def _budgeted_checks(
    task: Task,
    states: list[_SnippetState],
    runner: Runner,
    runs: list[Verdict],
    timeout: float,
    stage: _Stages,
    *,
    deadline: float | None,
) -> dict[str, variants.SnippetVariants]:
    """The variants, then the mutation check, within the battery's budget (``battery_budget_s`` from now, or
    ``deadline`` when earlier); variants left underived and fills and mutants left unrun make a ``timeout``
    error. Returns the variants derived, by snippet name. The variants come first: a runner that confirms
    passes then finds them when a fill or mutant passes, rather than deriving them outside the deadline."""
    slowest = max(v.duration_s for v in runs)
    budget = battery_budget_s(
        snippets=len(task.snippets), slowest_reference_s=slowest, workers=runner.workers
    )
    end = time.monotonic() + budget
    if deadline is not None and deadline < end:
        end, budget = deadline, max(0.0, deadline - time.monotonic())
    found, underived = _derive_variants(task, runner, stage, deadline=end)
    skipped = _run_mutations(task, states, runner, timeout, stage, deadline=end)
    if skipped or underived:
        left = [f"{skipped} fills and mutants were not run"] if skipped else []
        if underived:
            left.append(f"the impossible variants of {underived} snippet(s) were not derived")
        stage(
            "timeout",
            [
                Finding(
                    "timeout",
                    ERROR,
                    f"validation timed out: {' and '.join(left)} within its "
                    f"limit of {budget:.0f} s (derived from the slowest reference run, "
                    f"{slowest:.1f} s, and {len(task.snippets)} snippets); make the test faster",
                )
            ],
        )
    return found


def _skip_mutations(states: list[_SnippetState], stage: _Stages) -> None:
    """No mutation check and no variants (the reference did not pass every time): every fill says why, no
    mutant is kept."""
    for state in states:
        for index, fill in enumerate(state.fills):
            if fill.code is not None:
                state.results[index] = "the reference run did not pass every time"
        state.mutants = []
    stage(
        "mutation",
        [Finding("mutation", WARNING, "mutation check not run: the reference must pass every time first")],
    )
    stage(
        "variants",
        [Finding("variants", WARNING, "variants not derived: the reference must pass every time first")],
    )


def variants_summary(found: variants.SnippetVariants, source: str = "") -> dict[str, Any]:
    """What a page or a progress line shows of a snippet's variants: ``snippet``, ``count``, each variant's
    ``describe()``, the ``tests`` that run the snippet's code, the ``note`` saying why there is none, the
    ``runs`` the derivation took and its ``source`` ("derived", "stored" or "")."""
    return {
        "snippet": found.snippet,
        "count": len(found.variants),
        "described": [v.describe() for v in found.variants],
        "tests": len(found.tests),
        "note": found.note,
        "runs": found.runs,
        "source": source,
    }


def _variants_findings(snippet: Snippet, found: variants.SnippetVariants) -> list[Finding]:
    """An error at the snippet's line when it has no impossible variant: no pass on it can be confirmed."""
    if found.variants:
        return []
    why = found.note or "no variant was found"
    return [
        Finding(
            "variants",
            ERROR,
            f"snippet {snippet.name!r} is not checked by the test: its test has no impossible variant "
            f"({why}), so no pass on it can be confirmed",
            file=snippet.file,
            line=snippet.start_line,
            snippet=snippet.name,
            detail=f"{why}.\nMake a test that runs this snippet's code compare what it computes with an "
            "expected value (a constant, a stored array or data file, or the result of the *_ref module) "
            "within a tolerance: a variant perturbs that value, and the reference must fail it.",
        )
    ]


def _derive_variants(
    task: Task, runner: Runner, stage: Callable[..., None], *, deadline: float
) -> tuple[dict[str, variants.SnippetVariants], int]:
    """Each snippet's impossible variants, derived with ``runner`` (or read from its store) by ``deadline``,
    one "variants" stage per snippet; returns them by name and how many snippets were left underived."""
    found: dict[str, variants.SnippetVariants] = {}
    underived = 0
    for snippet in task.snippets:
        try:
            item = runner.snippet_variants(task, snippet, deadline=deadline)
        except DerivationOutOfTime:
            underived += 1
            stage("variants", [], variants={"snippet": snippet.name, "count": None, "note": OUT_OF_TIME})
            continue
        found[snippet.name] = item
        source = runner.variant_sources.get((task.root, snippet.name), "")
        stage("variants", _variants_findings(snippet, item), variants=variants_summary(item, source))
    return found, underived


def _fills_for(task: Task, snippet: Snippet) -> list[Fill]:
    try:
        return mutation_fills(task.read_text(snippet.file), snippet)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return [Fill(kind, None, f"cannot read {snippet.file}: {exc}") for kind in FILL_KINDS]


def _mutants_for(
    snippet: Snippet, fills: list[Fill], seed: str
) -> tuple[list[mutants.Mutant], list[mutants.Mutant]]:
    """(``MUTANTS_PER_SNIPPET`` mutants of the snippet's reference drawn with ``seed``, the rest of the draw in
    its order): none is the reference itself or one of the fixed fills."""
    taken = [f.code for f in fills if f.code is not None] + [snippet.code or ""]
    count = MUTANTS_PER_SNIPPET + MUTANTS_CONFIRM
    drawn = mutants.draw(snippet.code or "", count * 2, f"{seed}:{snippet.name}")
    kept = [m for m in drawn if not any(_same_code(m.code, other) for other in taken)][:count]
    return kept[:MUTANTS_PER_SNIPPET], kept[MUTANTS_PER_SNIPPET:]


def _cannot_run(task: Task) -> Finding | None:
    """Why nothing of the task can run at all (no folder on disk, no test script), or None."""
    if task.contents is not None or not task.root or not os.path.isdir(task.root):
        return Finding("sandbox", ERROR, f"the task folder {task.root!r} is not on disk: nothing can run")
    if not os.path.isfile(os.path.join(task.root, *task.manifest.test_entry.split("/"))):
        return Finding(
            "reference",
            ERROR,
            f"the test entry point {task.manifest.test_entry!r} does not exist: nothing can run",
            file=task.manifest.test_entry,
        )
    return None


def _run_mutations(
    task: Task,
    states: list[_SnippetState],
    runner: Runner,
    timeout: float,
    stage: Callable[..., None],
    *,
    deadline: float,
) -> int:
    """Run every fill and drawn mutant; a snippet whose first draw lets too many mutants through gets up to
    ``MUTANTS_CONFIRM`` more drawn with the same seed before it is judged, so that equivalent mutants (a
    larger table whose extra cells stay unused) do not decide a validation by the luck of one draw.
    Nothing starts after ``deadline`` and no run's timeout reaches past it; returns how many were left
    unrun (their result is ``OUT_OF_TIME``)."""
    pending: dict[Future[Verdict | str], tuple[_SnippetState, int]] = {}
    left = {id(state): state.runnable for state in states}
    skipped = 0
    with ThreadPoolExecutor(max_workers=runner.workers, thread_name_prefix="rcb-validate") as executor:

        def submit(state: _SnippetState, code: str, index: int) -> None:
            run = executor.submit(_run_within, task, runner, state.snippet, code, timeout, deadline)
            pending[run] = (state, index)

        for state in states:
            for index, fill in enumerate(state.fills):
                if fill.code is not None:
                    submit(state, fill.code, index)
            for index, mutant in enumerate(state.mutants):
                submit(state, mutant.code, -1 - index)
        for state in states:
            if left[id(state)] == 0:
                _finish(state, stage)
        while pending:
            done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
            for future in done:
                state, index = pending.pop(future)
                if _keep_result(state, index, future) == OUT_OF_TIME:
                    skipped += 1
                left[id(state)] -= 1
                if left[id(state)] == 0:
                    left[id(state)] += _confirm_or_finish(state, submit, stage)
    return skipped


def _run_within(
    task: Task, runner: Runner, snippet: Snippet, code: str, timeout: float, deadline: float
) -> Verdict | str:
    """The verdict of one fill or mutant, or ``OUT_OF_TIME`` when ``deadline`` leaves no time to start it or
    its run was cut short by the deadline rather than by the task's ``timeout``."""
    remaining = deadline - time.monotonic()
    if remaining <= 0.5:
        return OUT_OF_TIME
    limits = replace(runner.limits, timeout_s=min(timeout, remaining))
    verdict = runner.evaluate(task, snippet, code, limits=limits)
    if verdict.outcome == "timeout" and limits.timeout_s < timeout:
        # Cut short by the battery's limit, not by its own: it says nothing about the test.
        return OUT_OF_TIME
    return verdict


def _keep_result(state: _SnippetState, index: int, future: Future[Verdict | str]) -> Verdict | str:
    """Store a finished run's result on the snippet's fill ``index`` (>= 0) or mutant ``-1 - index``."""
    target, key = (state.results, index) if index >= 0 else (state.mutant_results, -1 - index)
    try:
        target[key] = future.result()
    except (OSError, ValueError) as exc:
        target[key] = f"the fill could not be run: {exc}"
    return target[key]


def _confirm_or_finish(
    state: _SnippetState, submit: Callable[[_SnippetState, str, int], None], stage: Callable[..., None]
) -> int:
    """A snippet whose runs are all in: submit its confirmation draw when it looks weak (returns how many
    mutants), else report it (returns 0)."""
    extra = state.confirmation()
    if not extra:
        _finish(state, stage)
        return 0
    start = len(state.mutants)
    state.mutants.extend(extra)
    for offset, mutant in enumerate(extra):
        submit(state, mutant.code, -1 - (start + offset))
    return len(extra)


def _finish(state: _SnippetState, stage: Callable[..., None]) -> None:
    record = state.record()
    stage("mutation", _mutation_findings(record), snippet=record)


__all__ = [
    "CHECKS",
    "VARIANT_RUNS_PER_SNIPPET",
    "FILL_KINDS",
    "MUTANTS_PER_SNIPPET",
    "Fill",
    "Finding",
    "ValidationReport",
    "mutation_fills",
    "validate_task",
    "variants_summary",
]
