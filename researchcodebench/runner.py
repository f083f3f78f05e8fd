"""The test runner: completion -> filled-in task copy -> sandboxed test run -> structured ``Verdict``.

A completion passes only when the test script ran to its end and exited 0 (the in-sandbox harness writes
a nonce-bearing result line only then; ``sys.exit``/``os._exit`` from the completion end the run early
and fail it). Before anything runs, a completion that names one of the task's oracle files (``*_ref.py``
and the manifest's ``oracle_files``: imports and string literals) fails as ``oracle_access``; oracle
files that no other task file refers to are also hidden from the test.

Integrity (docs/integrity.md): a completion that the static screen (``screen.py``) refuses fails as
``harness_tampering`` without running; after a run, the harness's own checks (functions of the test
machinery or of the comparison libraries replaced, the result channel changed) and the runner's (a result
line the harness did not write, failed tests, a test count unlike the reference run's) fail it the same way.

Speed: ``Runner`` keeps warm interpreters per environment (backends that are a ``WarmCapableSandbox``,
the local one; ``warm.py``), calibrates
each task's timeout from its reference run (``max(TIMEOUT_FACTOR x reference, TIMEOUT_FLOOR_S)``, capped
by the manifest's ``timeout_s`` or the limits' default) and caches verdicts on disk (``VerdictCache``).
Warm and cold runs give identical verdicts (tests/researchcodebench/test_warm_vs_cold.py).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from . import errors, screen, variants
from .annotations import Snippet
from .environments import Environment, resolve_environment
from .envs import EnvironmentBuildError
from .problems import fill_in
from .pset import Task, content_hash, task_files
from .sandbox.base import (
    OUTPUT_TAIL_BYTES,
    Limits,
    RunResult,
    RunSpec,
    Sandbox,
    SandboxUnavailable,
    WarmCapableSandbox,
)
from .warm import HARNESS_SOURCE, ServerLost, WarmPool

START_MARK = "@@RCB-START@@"
RESULT_MARK = "@@RCB-RESULT@@"
#: A line the harness streams for every failing test, when unittest records it.
FAIL_MARK = "@@RCB-FAIL@@"
#: The harness's exit status when a run's namespaces or task folder could not be set up.
SETUP_FAILED = 113
#: Where a verdict's run took place: "fresh" namespaces or a new container (cacheable); anything else
#: (the unsandboxed development backend, a backend that does not say) is never cached.
CACHEABLE_SLATES = ("", "fresh", "container")
#: Findings named in a screen verdict's reason (the rest are counted).
REASON_FINDINGS = 5
#: Characters of each stream kept in a verdict.
VERDICT_TAIL_CHARS = 4000
TIMEOUT_FACTOR = 10.0
TIMEOUT_FLOOR_S = 10.0
#: The category of a pass that passed an impossible variant of its test (model tier).
FORGED_CATEGORY = "verdict_forged"
#: The category of a pass whose every confirmation run ended without a result.
UNCONFIRMABLE_CATEGORY = "pass_unconfirmable"
#: Variants a pass is run against at most (the next one only when a run ended without a result).
CONFIRMATION_TRIES = 2

#: The complete environment of a test process (nothing of the host's environment is passed on).
BASE_ENV: dict[str, str] = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/tmp",
    "TMPDIR": "/tmp",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
    "VECLIB_MAXIMUM_THREADS": "1",
    "MPLBACKEND": "Agg",
}
#: Host variables passed on to GPU tasks only.
GPU_ENV_PASSTHROUGH = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")


def sandbox_env(needs_gpu: bool) -> dict[str, str]:
    """The allow-listed environment of a test process."""
    env = dict(BASE_ENV)
    if needs_gpu:
        env.update({k: os.environ[k] for k in GPU_ENV_PASSTHROUGH if k in os.environ})
    return env


@dataclass(frozen=True)
class Verdict:
    """The structured result of one test run (see ``errors`` for categories and tiers)."""

    outcome: str
    category: str
    tier: str
    reason: str = ""
    exception_type: str | None = None
    exception_message: str | None = None
    exit_code: int | None = None
    signal: int | None = None
    duration_s: float = 0.0
    timeout_s: float | None = None
    stdout_tail: str = ""
    stderr_tail: str = ""
    tests_run: int | None = None
    tests_failed: int | None = None
    tests_skipped: int | None = None
    environment: str = ""
    cached: bool = False
    warm: bool = False
    #: "fresh" (own namespaces), "container" (a new container), "unsandboxed", or "" (nothing ran)
    slate: str = ""
    #: How each test method ended, as the harness saw it (None: the run left no such record).
    tests: dict[str, str] | None = None
    #: For a pass: "confirmed" (it failed an impossible variant of its test, as an honest answer does, or it
    #: is the reference itself), "unconfirmed" (its snippet has no variant), "forged" (it passed one: the
    #: verdict is then failed); "" for everything else (docs/integrity.md).
    confirmation: str = ""
    #: The variant the pass was confirmed against, and the slate of that run.
    variant: str = ""
    variant_slate: str = ""

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})

    def same_result(self, other: Verdict) -> bool:
        """Equal where it matters for scoring and error analysis (outcome, category, exception type)."""
        return (self.outcome, self.category, self.exception_type) == (
            other.outcome,
            other.category,
            other.exception_type,
        )


class DerivationOutOfTime(Exception):
    """A derivation of variants reached its ``deadline`` before its runs were done: nothing of it is kept
    (neither in the runner nor in its store), so a later call derives the snippet whole."""


@dataclass(frozen=True)
class EvalItem:
    """One completion to evaluate. ``code`` None means no code could be extracted (``no_code``)."""

    task: Task
    snippet: Snippet
    code: str | None
    completion_idx: int = 0
    template: str | None = None


# ---------------------------------------------------------------------------- static analysis


@dataclass(frozen=True)
class TaskFacts:
    """What the runner derives once per task folder."""

    content_hash: str
    files: tuple[str, ...]
    oracles: tuple[str, ...]
    hidden: tuple[str, ...]
    local_modules: frozenset[str]
    task_imports: frozenset[str]
    #: The files a variant may change (the test script and the oracle modules a run holds) as published.
    texts: dict[str, str] = field(default_factory=dict)

    @property
    def re_emitted(self) -> tuple[str, ...]:
        return tuple(self.texts)


def _module_names(relpath: str) -> set[str]:
    path = PurePosixPath(relpath)
    if path.suffix != ".py":
        return set()
    parts = list(path.with_suffix("").parts)
    return {parts[-1], ".".join(parts)}


def _imports_of(source: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".", 1)[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".", 1)[0])
    return names


#: Files that name oracles without using them (the task manifest lists them).
_MANIFEST_NAMES = ("task.yaml", "paper2code.yaml")


def task_facts(task: Task) -> TaskFacts:
    """Content hash, oracle files (and which of them to hide), local module names, imported packages."""
    root = Path(task.root)
    files = tuple(task_files(root))
    oracles = task.manifest.oracles(files)
    annotated = {s.file for s in task.snippets}
    texts: dict[str, str] = {}
    for rel in files:
        if rel.endswith((".py", ".yaml", ".yml", ".json", ".cfg", ".txt", ".sh", ".toml", ".ini")):
            try:
                texts[rel] = (root / rel).read_text(errors="replace")
            except OSError:
                continue
    hidden = []
    for oracle in oracles:
        words = {PurePosixPath(oracle).name} | _module_names(oracle)
        users = [
            rel
            for rel, text in texts.items()
            if rel != oracle
            and rel not in annotated
            and PurePosixPath(rel).name not in _MANIFEST_NAMES
            and any(re.search(rf"\b{re.escape(w)}\b", text) for w in words)
        ]
        if not users:
            hidden.append(oracle)
    local: set[str] = set()
    for entry in root.iterdir():
        if entry.is_dir():
            local.add(entry.name)
        elif entry.suffix in (".py", ".so", ".pyd"):
            local.add(entry.name.split(".", 1)[0])
    imports: set[str] = set()
    for rel, text in texts.items():
        if rel.endswith(".py"):
            imports |= _imports_of(text)
    # A file that holds snippets is written by the fill-in, never re-emitted (a variant never changes it).
    confirmable = [
        rel
        for rel in dict.fromkeys([task.manifest.test_entry, *oracles])
        if rel.endswith(".py") and rel not in hidden and rel not in annotated and rel in files
    ]
    public = {}
    for rel in confirmable:
        try:
            public[rel] = task.read_text(rel)
        except (OSError, UnicodeDecodeError):
            continue
    return TaskFacts(
        content_hash=content_hash(root),
        files=files,
        oracles=tuple(oracles),
        hidden=tuple(hidden),
        local_modules=frozenset(local),
        task_imports=frozenset(imports),
        texts=public,
    )


def oracle_access(task: Task, snippet: Snippet, code: str, oracles: Sequence[str]) -> str | None:
    """Why the completion reaches for an oracle file, or None. Static: the completion's lines of the
    filled-in file are searched for imports of oracle modules and string literals
    naming the modules or files."""
    if not oracles:
        return None
    modules, filenames = _oracle_names(oracles)
    try:
        filled = fill_in(task.read_text(snippet.file), snippet, code)
        tree = ast.parse(filled)
    except (SyntaxError, ValueError, OSError):
        for line in code.splitlines():
            stripped = line.strip()
            if stripped.startswith(("import ", "from ")) or "'" in stripped or '"' in stripped:
                found = _oracle_in_text(stripped, modules, filenames)
                if found:
                    return f"the completion refers to the oracle {found!r}"
        return None
    first = snippet.start_line + 1
    last = snippet.start_line + max(1, len(code.splitlines()))
    for node in ast.walk(tree):
        line = getattr(node, "lineno", None)
        if line is None or not first <= line <= last:
            continue
        found = _oracle_in_node(node, modules, filenames)
        if found:
            return f"the completion refers to the oracle {found!r}"
    return None


def _oracle_names(oracles: Sequence[str]) -> tuple[set[str], set[str]]:
    """(module names, file names) by which code can name ``oracles``."""
    modules: set[str] = set()
    filenames: set[str] = set()
    for oracle in oracles:
        path = PurePosixPath(oracle)
        filenames.add(oracle)
        if path.suffix == ".py":
            # A nested oracle (ref/model.py) is only reachable by its dotted path; its bare stem ("model")
            # would flag unrelated names.
            modules.add(".".join(path.with_suffix("").parts))
        if len(path.parts) == 1 or path.name.endswith("_ref.py"):
            filenames.add(path.name)
            if path.suffix == ".py":
                modules.add(path.stem)
    return modules, filenames


def _oracle_module(name: str, modules: set[str]) -> str | None:
    """The oracle module that the imported ``name`` is, lies inside or ends with, or None."""
    for candidate in modules:
        if name == candidate or name.startswith(candidate + ".") or name.endswith("." + candidate):
            return candidate
    return None


def _oracle_in_text(text: str, modules: set[str], filenames: set[str]) -> str | None:
    """The oracle file or module that ``text`` (a string literal or a line) names, or None."""
    for name in filenames:
        if name in text:
            return name
    for name in modules:
        if re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", text):
            return name
    return None


def _oracle_in_node(node: ast.AST, modules: set[str], filenames: set[str]) -> str | None:
    """The oracle an import or a string literal of the completion names, or None."""
    if isinstance(node, ast.Import):
        return next(
            (_oracle_module(a.name, modules) for a in node.names if _oracle_module(a.name, modules)), None
        )
    if isinstance(node, ast.ImportFrom):
        found = _oracle_module(node.module, modules) if node.module else None
        return found or next(
            (_oracle_module(a.name, modules) for a in node.names if _oracle_module(a.name, modules)), None
        )
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _oracle_in_text(node.value, modules, filenames)
    return None


def normalise_code(code: str) -> str:
    """Line endings unified, trailing whitespace and trailing blank lines dropped (the cache key's view)."""
    lines = [line.rstrip() for line in code.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


# ---------------------------------------------------------------------------- verdict cache


def default_cache_dir() -> str:
    """``~/.cache/researchcodebench`` (the CLI passes ``RCB_CACHE_DIR`` instead when it is set)."""
    return os.path.join(os.path.expanduser("~"), ".cache", "researchcodebench")


class VerdictCache:
    """Verdicts as JSON files under ``root/verdicts``, keyed by (task version, snippet, normalised code,
    environment, template). Infrastructure failures are never stored (they are not the completion's)."""

    def __init__(self, root: str | None = None) -> None:
        self.root = os.path.join(root or default_cache_dir(), "verdicts")

    @staticmethod
    def key(
        task_hash: str,
        snippet: str,
        code: str | None,
        environment: str,
        template: str | None,
        confirmed: bool = True,
    ) -> str:
        """``confirmed``: the runner confirms passes (a confirmed verdict is never served to a runner that
        does not confirm, nor the other way round)."""
        code_hash = "none" if code is None else hashlib.sha256(normalise_code(code).encode()).hexdigest()
        material = json.dumps(
            [task_hash, snippet, code_hash, environment, template or "", "confirmed" if confirmed else ""]
        )
        return hashlib.sha256(material.encode()).hexdigest()

    def _path(self, key: str) -> str:
        return os.path.join(self.root, key[:2], key + ".json")

    def get(self, key: str) -> Verdict | None:
        try:
            with open(self._path(key)) as handle:
                return replace(Verdict.from_dict(json.load(handle)), cached=True)
        except (OSError, ValueError, TypeError, KeyError):
            return None

    def put(self, key: str, verdict: Verdict) -> None:
        if verdict.tier == errors.INFRASTRUCTURE or verdict.slate not in CACHEABLE_SLATES:
            return
        path = self._path(key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "w") as handle:
            json.dump(replace(verdict, cached=False).to_dict(), handle)
        os.replace(tmp, path)


# ---------------------------------------------------------------------------- interpreting a run


def _tail_text(data: str, limit: int = VERDICT_TAIL_CHARS) -> str:
    return data if len(data) <= limit else data[-limit:]


def _signal_name(number: int | None) -> str | None:
    if number is None:
        return None
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def forged_results(result: RunResult) -> int:
    """How many result lines beyond the harness's one the run wrote (any of them is a forgery)."""
    lines = result.stderr.decode("utf-8", "replace").split("\n")
    count = sum(1 for line in lines if line.startswith(RESULT_MARK))
    return max(0, count - 1)


def parse_run(result: RunResult, nonce: str) -> tuple[dict | None, bool, str, str]:
    """(result record or None, start marker seen, stdout text, stderr text without the harness lines)."""
    stdout = result.stdout.decode("utf-8", "replace")
    stderr = result.stderr.decode("utf-8", "replace")
    started = f"{START_MARK} {nonce}" in stderr
    record = None
    kept: list[str] = []
    for line in stderr.split("\n"):
        if line.startswith(RESULT_MARK + " "):
            try:
                data = json.loads(line[len(RESULT_MARK) + 1 :])
            except ValueError:
                data = None
            if isinstance(data, dict) and data.get("nonce") == nonce:
                record = data
                continue
        if line == f"{START_MARK} {nonce}" or line == FAIL_MARK:
            continue
        kept.append(line)
    text = "\n".join(kept)
    # The harness surrounds its lines with newlines; drop the blank lines that leaves at either end.
    return record, started, stdout, text.strip("\n") + ("\n" if text.strip("\n") else "")


def streamed_failures(result: RunResult) -> int:
    """How many failing tests the harness streamed while the run went on (they cannot be taken back)."""
    lines = result.stderr.decode("utf-8", "replace").split("\n")
    return sum(1 for line in lines if line == FAIL_MARK)


def verdict_from_run(
    result: RunResult,
    nonce: str,
    *,
    facts: TaskFacts | None,
    environment: str,
    file: str | None = None,
) -> Verdict:
    """Turn what the sandbox observed into a ``Verdict`` (pure; used for warm and cold runs alike).
    ``file``: the completed file, named in the reasons of the screen's findings."""
    record, started, stdout, stderr = parse_run(result, nonce)
    streamed = streamed_failures(result)
    observed = _observed(result, record, stdout, stderr, streamed=streamed, environment=environment)
    c = _interrupted(result, record, stderr, started=started)
    if c is None:
        if record is None:
            c = _without_result(result, started, stderr)
        else:
            c = _integrity_breach(result, record, file=file)
            if c is None:
                output = stdout + "\n" + stderr
                c = _test_outcome(result, record, streamed, observed["tests_failed"], output, facts)
    return Verdict(outcome=c.outcome, category=c.category, tier=c.tier, reason=c.reason, **observed)


def _observed(
    result: RunResult, record: dict | None, stdout: str, stderr: str, *, streamed: int, environment: str
) -> dict[str, Any]:
    """The fields of a verdict that say what the run did, whatever its classification (a failure the harness
    streamed counts even when the result line reports fewer)."""
    exc = (record or {}).get("exception") or {}
    failed = (record or {}).get("tests_failed")
    return {
        "exit_code": result.exit_code,
        "signal": result.signal,
        "duration_s": round(result.duration_s, 4),
        "stdout_tail": _tail_text(stdout),
        "stderr_tail": _tail_text(stderr),
        "tests_run": (record or {}).get("tests_run"),
        "tests_failed": max(failed, streamed) if isinstance(failed, int) else (streamed or failed),
        "tests_skipped": (record or {}).get("tests_skipped"),
        "environment": environment,
        "exception_type": exc.get("type"),
        "exception_message": exc.get("message"),
        "slate": str((record or {}).get("slate") or ""),
        "tests": _tests_of(record),
    }


def _tests_of(record: dict | None) -> dict[str, str] | None:
    tests = (record or {}).get("tests")
    if not isinstance(tests, dict):
        return None
    return {str(k): str(v) for k, v in tests.items()}


def _interrupted(
    result: RunResult, record: dict | None, stderr: str, *, started: bool
) -> errors.Classification | None:
    """A run the sandbox could not set up or cut off (infrastructure, its deadline, its memory limit), or
    None. A deadline reached before the harness wrote its start mark (in an output too short to have pushed
    the mark out of the tail) is the sandbox's: no code of the completion had run yet."""
    if result.infra_error:
        return errors.classify("infra_error", infra_reason=result.infra_error)
    if result.exit_code == SETUP_FAILED and "rcb-isolation:" in stderr and record is None:
        reason = stderr[stderr.index("rcb-isolation:") :].strip()[:500]
        return errors.classify("infra_error", infra_reason="the run could not be set up: " + reason)
    if result.timed_out:
        if not started and len(result.stderr) < OUTPUT_TAIL_BYTES:
            reason = (
                f"the sandbox had not started the test when the {result.duration_s:.0f} s deadline came "
                "(the machine or the engine was too slow); nothing of the completion had run"
            )
            return errors.classify("infra_error", infra_reason=reason)
        return errors.classify("timeout")
    if result.oom:
        return errors.classify("oom")
    return None


def _without_result(result: RunResult, started: bool, stderr: str) -> errors.Classification:
    """A run that ended without the harness's result line: the test process never started, a limit's signal
    ended it, or it ended early."""
    if not started and len(result.stderr) < OUTPUT_TAIL_BYTES:
        reason = "the test process did not start: " + stderr.strip()[-300:]
        return errors.classify("infra_error", infra_reason=reason)
    if result.signal in (signal.SIGXCPU,):
        return errors.classify("timeout")
    if "MemoryError" in stderr and result.signal == signal.SIGKILL:
        return errors.classify("oom")
    if result.signal is not None:
        return errors.classify("failed", signal_name=_signal_name(result.signal))
    return errors.classify("failed", early_exit=True)


def _integrity_breach(result: RunResult, record: dict, *, file: str | None) -> errors.Classification | None:
    """What the harness's integrity layers found (the screen's resolution step, the audit hook, tests ended by
    unittest's stop signal or a skip the completion raised, a replaced result channel) or a result line the
    harness did not write, or None."""
    findings = record.get("screen")
    if isinstance(findings, list) and findings:
        shown = [
            screen.Finding(int(f.get("line", 0)), str(f.get("construct", "")))
            for f in findings
            if isinstance(f, dict)
        ]
        return tampering(screen_reason(shown, file or "the completion"))
    audit = record.get("audit")
    if isinstance(audit, dict):
        reason = str(audit.get("reason", audit.get("event", "")))
        if "the oracle" in reason or "the test script" in reason:
            return errors.Classification("failed", "oracle_access", errors.MODEL, reason[:500])
        return tampering(reason)
    breaches = record.get("breaches")
    if not isinstance(breaches, list):
        return tampering("the run's result lacks the harness's checks")
    if breaches:
        return tampering(", ".join(str(b) for b in breaches[:REASON_FINDINGS]))
    silenced = record.get("silenced")
    if isinstance(silenced, list) and silenced:
        tests = record.get("tests") if isinstance(record.get("tests"), dict) else {}
        shown = ", ".join(f"{t} ({tests.get(t, '?')})" for t in silenced[:REASON_FINDINGS])
        return tampering(
            f"a test ended by a signal unittest alone would count as a success or a skip: {shown}"
        )
    if forged_results(result):
        return tampering("the run wrote a result line of its own")
    return None


def _test_outcome(
    result: RunResult,
    record: dict,
    streamed: int,
    tests_failed: int | None,
    output: str,
    facts: TaskFacts | None,
) -> errors.Classification:
    """How a run the harness reported on ended: an early exit, failures streamed that its result denies,
    passed, or failed (categorised from its final exception and ``output``)."""
    if record.get("early_exit"):
        return errors.classify("failed", early_exit=True)
    if streamed and not record.get("tests_failed") and record.get("status") == 0:
        return tampering("tests failed during the run but its result reports none")
    if record.get("status") == 0 and result.exit_code == 0 and not tests_failed:
        return errors.classify("passed")
    exc = record.get("exception") or {}
    return errors.classify(
        "failed",
        exception_type=exc.get("type"),
        exception_message=exc.get("message"),
        builtin_base=exc.get("builtin_base"),
        module=exc.get("module"),
        output=output,
        local_modules=facts.local_modules if facts else (),
        task_imports=facts.task_imports if facts else None,
    )


def _probe_outcomes(verdict: Verdict) -> dict[str, str] | None:
    """How each test of a run ended (``variants.SCRIPT`` standing for a script without unittest), or None
    when the run ended without the harness's result (a timeout, a crash, the sandbox's failure)."""
    if verdict.tests is not None:
        return dict(verdict.tests)
    if verdict.tier == errors.INFRASTRUCTURE or verdict.outcome in ("timeout", "oom"):
        return None
    if verdict.passed:
        return {variants.SCRIPT: variants.PASSED}
    if verdict.exception_type is None:
        return None
    failed = verdict.exception_type == "AssertionError" or verdict.category == "logic"
    return {variants.SCRIPT: variants.FAILED if failed else "error"}


def tampering(reason: str) -> errors.Classification:
    """The classification of a run (or completion) that tampered with the harness."""
    return errors.Classification(
        "failed", screen.CATEGORY, errors.MODEL, ("harness tampering: " + reason)[:500]
    )


def screen_reason(findings: Sequence[screen.Finding], file: str) -> str:
    """The findings of the static screen as one reason line (the first few, then a count)."""
    shown = "; ".join(f.describe(file) for f in findings[:REASON_FINDINGS])
    more = len(findings) - REASON_FINDINGS
    return shown + (f" (and {more} more)" if more > 0 else "")


def environment_failure_verdict(error: EnvironmentBuildError) -> Verdict:
    """The verdict of every run of a task whose environment cannot be built: an infrastructure failure
    naming the package (never the model's; docs/environments.md)."""
    return Verdict(
        outcome="infra_error",
        category="missing_dependency",
        tier=errors.INFRASTRUCTURE,
        reason=str(error),
        exception_type="EnvironmentBuildError",
        exception_message=str(error)[:1000],
    )


def _verdict_without_run(outcome: str, environment: str, **kwargs: Any) -> Verdict:
    c = errors.classify(outcome, **kwargs)
    return Verdict(
        outcome=c.outcome, category=c.category, tier=c.tier, reason=c.reason, environment=environment
    )


def prepare_workdir(
    dest: str,
    task: Task,
    snippet: Snippet | None,
    code: str | None,
    hidden: Iterable[str],
    *,
    texts: Mapping[str, str] | None = None,
    overrides: Mapping[str, str] | None = None,
) -> None:
    """Copy the task folder into ``dest`` (existing, empty) without the hidden oracles and fill the
    completion in (``snippet`` None or ``code`` None: the reference, unchanged).

    ``texts``: the published text of every file a variant may change (``TaskFacts.texts``); each is written
    anew for this run (``variants.re_emitted``: the same meaning, bytes and a size of its own), from
    ``overrides`` where that holds a version of it (an impossible variant's), so that no run's files tell
    whether they are a variant's (docs/integrity.md)."""
    hidden_set = set(hidden)
    root = os.path.abspath(task.root)

    def ignore(folder: str, names: list[str]) -> set[str]:
        rel = os.path.relpath(folder, root)
        prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        return {n for n in names if prefix + n in hidden_set or n in ("__pycache__", ".git")}

    shutil.copytree(root, dest, symlinks=True, ignore=ignore, dirs_exist_ok=True)
    if snippet is not None and code is not None:
        target = os.path.join(dest, *snippet.file.split("/"))
        with open(target, "w", encoding="utf-8", newline="") as handle:
            handle.write(fill_in(task.read_text(snippet.file), snippet, code))
    for rel, public in (texts or {}).items():
        text = (overrides or {}).get(rel, public)
        target = os.path.join(dest, *rel.split("/"))
        if os.path.islink(target):
            os.unlink(target)
        with open(target, "w", encoding="utf-8", newline="") as handle:
            handle.write(variants.re_emitted(text, len(public.encode("utf-8"))))


def protected_modules(task: Task, facts: TaskFacts) -> set[str]:
    """Module names a completion may never reach: the test script's and every oracle's."""
    names = _module_names(task.manifest.test_entry)
    for oracle in facts.oracles:
        names |= _module_names(oracle)
    return names


def harness_limits(sandbox: Any, limits: Limits) -> dict[str, int]:
    """The rlimits the harness applies: the backend's choice when it has one."""
    method = getattr(sandbox, "harness_limits", None)
    if callable(method):
        return dict(method(limits))
    return {
        "cpu_s": limits.effective_cpu_s(),
        "file_size_bytes": limits.file_size_mb * 1024 * 1024,
        "open_files": limits.open_files,
    }


# ---------------------------------------------------------------------------- the runner


class Runner:
    """Evaluates completions with one sandbox backend; each task runs in the runner's environment unless
    ``assign_environment`` gave it its own (per-task environments, ``envs.py``). Thread-safe.

    ``warm`` uses warm interpreters where the backend supports them (``WarmCapableSandbox``); ``calibrate``
    derives each task's timeout from its reference run; ``cache`` is a ``VerdictCache`` or None;
    ``warm_memory_budget_mb`` bounds the warm servers of all environments together (``WarmPool``).
    Close it (or use it as a context manager) to stop the warm servers.
    """

    def __init__(
        self,
        *,
        sandbox: Sandbox,
        environment: Environment | str | None = None,
        limits: Limits | None = None,
        cache: VerdictCache | None = None,
        warm: bool = True,
        calibrate: bool = True,
        workers: int = 2,
        timeout_floor_s: float = TIMEOUT_FLOOR_S,
        static_screen: bool = True,
        audit_hook: bool = True,
        warm_memory_budget_mb: int | None = None,
        confirm: bool = True,
        variant_store: variants.VariantStore | None | str = "default",
    ) -> None:
        sandbox.check()
        # ``static_screen=False`` and ``audit_hook=False`` exist for the tests that prove the confirmation
        # alone catches forged verdicts and for the sandbox's own tests; every evaluation path of the portal
        # and the CLI keeps both (docs/integrity.md). ``confirm=False`` runs no pass against a variant (the
        # validation battery, whose completions are the task's own blanks and mutants) and lets a failing
        # run stop at its first failing test; the runs that derive variants (trusted probes, the coverage
        # run) never stop early and always hold the re-emitted files, whatever ``confirm`` says.
        self.static_screen = static_screen
        self.audit_hook = audit_hook
        self.confirm = confirm
        #: Where derived variants are kept ("default": the process's default store, ``variants.default_store``).
        self.variant_store = variants.default_store() if variant_store == "default" else variant_store
        self.timeout_floor_s = timeout_floor_s
        self.sandbox = sandbox
        self.environment = (
            environment if isinstance(environment, Environment) else resolve_environment(environment)
        )
        self.limits = limits or Limits()
        self.cache = cache
        self.calibrate = calibrate
        self.workers = max(1, workers)
        self.pool = (
            WarmPool(
                sandbox,
                sandbox_env,
                size=self.workers,
                task_dir_mb=self.limits.task_dir_mb,
                memory_budget_mb=warm_memory_budget_mb,
            )
            if warm and isinstance(sandbox, WarmCapableSandbox)
            else None
        )
        #: Warm servers for deriving variants when the runner's own runs are cold: a variant is a fact about
        #: the reference in the environment, the same warm or cold (test_warm_vs_cold.py).
        self._probe_pool: WarmPool | None = None
        self._facts: dict[str, TaskFacts] = {}
        self._timeouts: dict[str, float] = {}
        self._references: dict[str, Verdict] = {}
        self._coverage: dict[str, dict[str, Any]] = {}
        self._variants: dict[tuple[str, str], variants.SnippetVariants] = {}
        #: (task root, snippet) -> "derived" or "stored": where this runner's variants of it came from.
        self.variant_sources: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()
        self._task_locks: dict[str, threading.Lock] = {}
        self._assigned: dict[str, Environment | EnvironmentBuildError] = {}

    def assign_environment(self, task: Task, environment: Environment | EnvironmentBuildError) -> None:
        """Run ``task`` in ``environment`` from now on; an ``EnvironmentBuildError`` makes every run of the
        task an infrastructure verdict naming the package (``environment_failure_verdict``)."""
        with self._lock:
            self._assigned[task.root] = environment

    def environment_of(self, task: Task) -> Environment:
        """The task's environment; raises the ``EnvironmentBuildError`` assigned to it."""
        with self._lock:
            assigned = self._assigned.get(task.root, self.environment)
        if isinstance(assigned, EnvironmentBuildError):
            raise assigned
        return assigned

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for pool in (self.pool, self._probe_pool):
            if pool is not None:
                pool.close()

    def _pool_for(self, trusted: bool) -> WarmPool | None:
        """The warm pool a run uses: the runner's, or for a trusted probe of a cold runner its own."""
        if self.pool is not None or not trusted or not isinstance(self.sandbox, WarmCapableSandbox):
            return self.pool
        with self._lock:
            if self._probe_pool is None:
                self._probe_pool = WarmPool(
                    self.sandbox, sandbox_env, size=self.workers, task_dir_mb=self.limits.task_dir_mb
                )
            return self._probe_pool

    # -------------------------------------------------------------- per task

    def facts(self, task: Task) -> TaskFacts:
        with self._lock:
            lock = self._task_locks.setdefault(task.root, threading.Lock())
        with lock:
            if task.root not in self._facts:
                self._facts[task.root] = task_facts(task)
            return self._facts[task.root]

    def cap_s(self, task: Task) -> float:
        """The longest a run of this task may take: the manifest's timeout, else the limits' default."""
        return float(task.manifest.timeout_s) if task.manifest.timeout_s else self.limits.timeout_s

    def timeout_for(self, task: Task) -> float:
        """The calibrated timeout: max(TIMEOUT_FACTOR x reference run, TIMEOUT_FLOOR_S), at most the cap."""
        cap = self.cap_s(task)
        if not self.calibrate:
            return cap
        with self._lock:
            lock = self._task_locks.setdefault("timeout:" + task.root, threading.Lock())
        with lock:
            if task.root not in self._timeouts:
                reference = self.reference(task)
                if reference.outcome == "passed":
                    value = min(max(TIMEOUT_FACTOR * reference.duration_s, self.timeout_floor_s), cap)
                else:
                    value = cap
                self._timeouts[task.root] = value
            return self._timeouts[task.root]

    def reference(self, task: Task) -> Verdict:
        """The verdict of the task's unchanged reference, run once per task (at the cap's timeout)."""
        facts = self.facts(task)
        with self._lock:
            lock = self._task_locks.setdefault("reference:" + task.root, threading.Lock())
        with lock:
            if task.root not in self._references:
                limits = replace(self.limits, timeout_s=self.cap_s(task))
                self._references[task.root] = self._run(task, None, None, facts, limits)
            return self._references[task.root]

    def reference_runs(self, task: Task, count: int) -> list[Verdict]:
        """``count`` fresh, uncached runs of the unchanged reference at the cap's timeout, in parallel (the
        validation battery's repeat check). The first becomes the task's reference run when there is none
        yet, so calibration does not run the reference once more."""
        facts = self.facts(task)
        limits = replace(self.limits, timeout_s=self.cap_s(task))
        with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="rcb-ref") as executor:
            runs = list(executor.map(lambda _: self._run(task, None, None, facts, limits), range(count)))
        with self._lock:
            if runs:
                self._references.setdefault(task.root, runs[0])
        return runs

    def _charge_reference(self, task: Task, verdict: Verdict) -> Verdict:
        """A completion that fails where the task's own reference fails too (a package that does not load,
        a missing data file, a broken build of the environment) gets an infrastructure verdict naming the
        reference's error: the failure is the environment's, never the model's. Only with calibration on
        (the reference run is then made anyway)."""
        if verdict.passed or verdict.tier != errors.MODEL or not self.calibrate:
            return verdict
        reference = self.reference(task)
        if reference.passed:
            return verdict
        why = reference.reason or reference.outcome
        return replace(
            verdict,
            outcome="infra_error",
            category="reference_failed",
            tier=errors.INFRASTRUCTURE,
            reason=f"the task's reference fails in this environment too ({why[:300]}); not the model's failure",
        )

    def _check_tests(self, task: Task, verdict: Verdict, *, is_reference: bool) -> Verdict:
        """A passing run must have run as many tests (and skipped as many) as the reference run, and every test
        the reference passes must have passed, as the harness saw it: a test that vanished, was skipped or
        did not return normally did not test the completion."""
        if not verdict.passed or is_reference:
            return verdict
        reference = self.reference(task)
        if not reference.passed:
            return verdict
        reason = None
        if (verdict.tests_run, verdict.tests_skipped) != (reference.tests_run, reference.tests_skipped):
            reason = (
                f"the test ran {verdict.tests_run} tests ({verdict.tests_skipped} skipped) where the reference "
                f"run ran {reference.tests_run} ({reference.tests_skipped} skipped)"
            )
        else:
            mine = verdict.tests or {}
            missed = [
                f"{name} ({mine.get(name, 'not seen by the harness')})"
                for name, outcome in sorted((reference.tests or {}).items())
                if outcome == variants.PASSED and mine.get(name) != variants.PASSED
            ]
            if missed:
                shown = ", ".join(missed[:REASON_FINDINGS])
                reason = f"tests the reference passes did not pass: {shown}"
        if reason is None:
            return verdict
        c = tampering(reason)
        return replace(verdict, outcome=c.outcome, category=c.category, tier=c.tier, reason=c.reason)

    # -------------------------------------------------------------- impossible variants

    def coverage(self, task: Task) -> dict[str, Any]:
        """How each test ends in the reference run (``tests``) and which tests run a line of each snippet
        (``covering``: snippet name -> test ids), from one traced run of the reference (cached in the
        variant store). Empty ``tests`` when the reference does not pass."""
        facts = self.facts(task)
        try:
            env_id = self.environment_of(task).id
        except EnvironmentBuildError:
            return {"tests": {}, "covering": {}}
        with self._lock:
            lock = self._task_locks.setdefault("coverage:" + task.root, threading.Lock())
        with lock:
            if task.root in self._coverage:
                return self._coverage[task.root]
            found = self.variant_store.coverage(facts.content_hash, env_id) if self.variant_store else None
            if found is None:
                found = self._traced_reference(task, facts)
                if found["tests"] and self.variant_store is not None:
                    self.variant_store.put_coverage(facts.content_hash, env_id, found)
            self._coverage[task.root] = found
            return found

    def _traced_reference(self, task: Task, facts: TaskFacts) -> dict[str, Any]:
        regions = [{"file": s.file, "first": s.start_line + 1, "last": s.end_line - 1} for s in task.snippets]
        limits = replace(self.limits, timeout_s=self.cap_s(task))
        verdict, record = self._run_record(task, None, None, facts, limits, trace=regions)
        if not verdict.passed or record is None:
            return {"tests": {}, "covering": {}}
        found = record.get("coverage") if isinstance(record.get("coverage"), dict) else {}
        tests = _probe_outcomes(verdict) or {}
        covering = {
            s.name: sorted(
                variants.SCRIPT if t == variants.MODULE and not verdict.tests else t
                for t in found.get(str(i), ())
            )
            for i, s in enumerate(task.snippets)
        }
        return {"tests": tests, "covering": covering}

    def snippet_variants(
        self, task: Task, snippet: Snippet, *, deadline: float | None = None
    ) -> variants.SnippetVariants:
        """The impossible variants of ``snippet``: this runner's, else the store's, else derived now with this
        runner's sandbox, environment and workers (and stored). ``deadline`` (``time.monotonic()``) bounds a
        derivation: no run starts after it and none is given a timeout past it; one that reaches it raises
        ``DerivationOutOfTime``."""
        facts = self.facts(task)
        key = (task.root, snippet.name)
        with self._lock:
            lock = self._task_locks.setdefault(f"variants:{task.root}:{snippet.name}", threading.Lock())
        with lock:
            if key in self._variants:
                return self._variants[key]
            try:
                env_id = self.environment_of(task).id
            except EnvironmentBuildError as exc:
                return variants.SnippetVariants(snippet.name, (), (), f"no environment: {exc}")
            found = (
                self.variant_store.get(facts.content_hash, env_id, snippet.name)
                if self.variant_store
                else None
            )
            source = "stored"
            if found is None:
                found = self._derive(task, snippet, facts, deadline=deadline)
                source = "derived"
                if self.variant_store is not None and self.coverage(task)["tests"]:
                    self.variant_store.put(facts.content_hash, env_id, found)
            with self._lock:
                self._variants[key] = found
                self.variant_sources[key] = source
            return found

    def seed_variants(self, task: Task, found: Iterable[variants.SnippetVariants]) -> None:
        """Use ``found`` (variants stored elsewhere, e.g. with a task version) for ``task``'s snippets."""
        with self._lock:
            for item in found:
                self._variants[(task.root, item.snippet)] = item
                self.variant_sources[(task.root, item.snippet)] = "stored"

    def _derive(
        self, task: Task, snippet: Snippet, facts: TaskFacts, *, deadline: float | None
    ) -> variants.SnippetVariants:
        limits = replace(self.limits, timeout_s=self.cap_s(task))

        def within(limits: Limits) -> Limits:
            """``limits`` with a timeout that ends by ``deadline``; raises when too little time is left."""
            if deadline is None:
                return limits
            remaining = deadline - time.monotonic()
            if remaining <= 0.5:
                raise DerivationOutOfTime(f"{task.id} / {snippet.name}: the derivation reached its deadline")
            return replace(limits, timeout_s=min(limits.timeout_s, remaining))

        within(limits)
        covered = self.coverage(task)
        if not covered["tests"]:
            return variants.SnippetVariants(snippet.name, (), (), "the task's reference does not pass here")

        def probe(
            overrides: Mapping[str, str], *, snippet: Snippet | None = None, code: str | None = None
        ) -> dict[str, str] | None:
            bounded = within(limits)
            verdict = self._run(task, snippet, code, facts, bounded, overrides=overrides, trusted=True)
            if verdict.outcome == "timeout" and bounded.timeout_s < limits.timeout_s:
                # Cut short by the deadline, not by the task's own limit: it says nothing about the variant.
                raise DerivationOutOfTime(f"{task.id} / {snippet.name}: the derivation reached its deadline")
            return _probe_outcomes(verdict)

        def parallel(thunks: Sequence[Callable[[], Any]]) -> list[Any]:
            executor = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="rcb-variant")
            try:
                return list(executor.map(lambda thunk: thunk(), thunks))
            finally:
                # Never wait here for runs still going when an exception (a worker's stop) ends the caller:
                # a process told to stop must not sit out a run's whole timeout first.
                executor.shutdown(wait=False, cancel_futures=True)

        oracles = [o for o in facts.texts if o != task.manifest.test_entry]
        return variants.derive_snippet(
            snippet=snippet,
            texts=facts.texts,
            test_file=task.manifest.test_entry,
            oracle_files=oracles,
            annotated=task.read_text(snippet.file),
            covering=covered["covering"].get(snippet.name, ()),
            reference_tests=covered["tests"],
            probe=probe,
            parallel=parallel,
        )

    def _confirm(
        self,
        task: Task,
        snippet: Snippet,
        code: str,
        facts: TaskFacts,
        limits: Limits,
        screening: screen.Screening | None,
        verdict: Verdict,
    ) -> Verdict:
        """Run a pass once more against an impossible variant of its snippet's test, drawn at random where the
        run cannot know it (a reference mutant when the snippet has one: ``variants.confirmation_order``), and
        judge it per test (docs/integrity.md): a test the reference fails there that passes proves the
        verdict forged."""
        found = self.snippet_variants(task, snippet)
        if not found.variants:
            return replace(verdict, confirmation="unconfirmed")
        for variant in variants.confirmation_order(found.variants)[:CONFIRMATION_TRIES]:
            overrides = variants.variant_texts(facts.texts, variant.changes)
            run = self._run(task, snippet, code, facts, limits, screening, overrides=overrides)
            if run.tier == errors.INFRASTRUCTURE:
                return replace(
                    run,
                    reason=f"the confirmation run against an impossible variant failed: {run.reason}"[:500],
                    confirmation="",
                    variant=variant.id,
                    variant_slate=run.slate,
                )
            outcomes = _probe_outcomes(run)
            forged = sorted(t for t in variant.fails if (outcomes or {}).get(t) == variants.PASSED)
            if run.passed or forged:
                shown = ", ".join(forged[:REASON_FINDINGS]) or "the whole test"
                c = errors.Classification(
                    "failed",
                    FORGED_CATEGORY,
                    errors.MODEL,
                    f"verdict forged: passed an impossible variant of the test, which the reference fails "
                    f"(variant {variant.id}: {shown} passed)",
                )
                return replace(
                    verdict,
                    outcome=c.outcome,
                    category=c.category,
                    tier=c.tier,
                    reason=c.reason[:500],
                    confirmation="forged",
                    variant=variant.id,
                    variant_slate=run.slate,
                )
            if outcomes is not None:
                return replace(verdict, confirmation="confirmed", variant=variant.id, variant_slate=run.slate)
        c = errors.Classification(
            "failed",
            UNCONFIRMABLE_CATEGORY,
            errors.MODEL,
            "the pass could not be confirmed: its runs against impossible variants of the test ended without "
            "a result (a timeout or a crash), where the reference's end in failed assertions",
        )
        return replace(
            verdict,
            outcome=c.outcome,
            category=c.category,
            tier=c.tier,
            reason=c.reason,
            confirmation="forged",
        )

    # -------------------------------------------------------------- one run

    def run_spec(
        self,
        task: Task,
        snippet: Snippet | None,
        code: str | None,
        facts: TaskFacts,
        limits: Limits,
        environment: Environment,
        screening: screen.Screening | None,
        *,
        trace: list[dict[str, Any]] | None = None,
        trusted: bool = False,
    ) -> dict[str, Any]:
        """What the harness needs for one run (``sandbox/_harness.py``: ``run`` and the warm requests).
        ``trusted``: the code is the portal's own (a variant's probe), judged by no integrity layer;
        ``trace``: the snippet regions whose covering tests the run records."""
        entry = task.manifest.test_entry
        completed = [snippet.file] if snippet is not None else sorted({s.file for s in task.snippets})
        spec: dict[str, Any] = {
            "entry": entry,
            "completed": completed,
            "limits": harness_limits(self.sandbox, limits),
            # A cold run prepares like a warm server (every heavy library, warmed up, then the guard's
            # snapshot), so that both judge alike; a task whose code imports none of them skips that.
            "preload": list(environment.heavy_modules)
            if set(environment.heavy_modules) & facts.task_imports
            else [],
            "oracles": [o for o in facts.oracles if o not in set(facts.hidden)],
            "completion": None,
            "screen": None,
            "slate": getattr(self.sandbox, "slate", "unknown"),
            # A derivation run needs how every test ends: fail-fast would leave the later tests unseen.
            "failfast": not self.confirm and not trusted and trace is None,
            "trace": trace,
        }
        if snippet is not None and code is not None and self.audit_hook and not trusted:
            if screening is None:
                _filled, first, last = screen.completion_range(task.read_text(snippet.file), snippet, code)
            else:
                first, last = screening.first, screening.last
            spec["completion"] = {"file": snippet.file, "first": first, "last": last}
            if screening is not None and screening.chains:
                spec["screen"] = {
                    "chains": [c.to_dict() for c in screening.chains],
                    "policy": screen.policy(
                        local_modules=facts.local_modules, protected_modules=protected_modules(task, facts)
                    ),
                }
        return spec

    def _run(
        self,
        task: Task,
        snippet: Snippet | None,
        code: str | None,
        facts: TaskFacts,
        limits: Limits,
        screening: screen.Screening | None = None,
        *,
        overrides: Mapping[str, str] | None = None,
        trusted: bool = False,
    ) -> Verdict:
        return self._run_record(
            task, snippet, code, facts, limits, screening, overrides=overrides, trusted=trusted
        )[0]

    def _run_record(
        self,
        task: Task,
        snippet: Snippet | None,
        code: str | None,
        facts: TaskFacts,
        limits: Limits,
        screening: screen.Screening | None = None,
        *,
        overrides: Mapping[str, str] | None = None,
        trusted: bool = False,
        trace: list[dict[str, Any]] | None = None,
    ) -> tuple[Verdict, dict | None]:
        """One run: its verdict and the harness's record (None when it wrote none). ``overrides``: new texts
        of files a variant changes."""
        nonce = secrets.token_hex(16)
        try:
            environment = self.environment_of(task)
        except EnvironmentBuildError as exc:
            return environment_failure_verdict(exc), None
        spec = self.run_spec(
            task, snippet, code, facts, limits, environment, screening, trace=trace, trusted=trusted
        )
        # A runner that confirms writes every run's public files anew (so no run tells it is a confirmation);
        # a derivation run needs them too, since its ``overrides`` are versions of those files.
        texts = facts.texts if self.confirm or trusted or trace is not None else {}
        result: RunResult | None = None
        warm = False
        pool = self._pool_for(trusted or trace is not None)
        if pool is not None:
            server = None
            try:
                server = pool.acquire(environment, task.manifest.needs_gpu)
                result = server.run(
                    lambda slot: prepare_workdir(
                        slot, task, snippet, code, facts.hidden, texts=texts, overrides=overrides
                    ),
                    spec=spec,
                    limits=limits,
                    nonce=nonce,
                )
            except ServerLost:
                if server is not None:
                    pool.release(server, broken=True)
                    server = None
                # The item is re-run cold once (below): the server's failure says nothing about it. A
                # calibrated timeout measured warm does not cover a cold start, so the cap applies.
                limits = replace(limits, timeout_s=max(limits.timeout_s, self.cap_s(task)))
                spec = dict(spec, limits=harness_limits(self.sandbox, limits))
            else:
                pool.release(server)
                warm = True
        if result is None:
            result = self._run_cold(
                task, snippet, code, facts, limits, nonce, spec, environment, texts=texts, overrides=overrides
            )
        verdict = verdict_from_run(
            result,
            nonce,
            facts=facts,
            environment=environment.id,
            file=snippet.file if snippet is not None else None,
        )
        return replace(verdict, timeout_s=limits.timeout_s, warm=warm), parse_run(result, nonce)[0]

    def _run_cold(
        self,
        task: Task,
        snippet: Snippet | None,
        code: str | None,
        facts: TaskFacts,
        limits: Limits,
        nonce: str,
        spec: dict[str, Any],
        environment: Environment,
        *,
        texts: Mapping[str, str],
        overrides: Mapping[str, str] | None,
    ) -> RunResult:
        workdir = tempfile.mkdtemp(prefix="rcb-run-")
        try:
            prepare_workdir(workdir, task, snippet, code, facts.hidden, texts=texts, overrides=overrides)
            isolation = getattr(self.sandbox, "isolation", None)
            iso = isolation(limits) if callable(isolation) else None
            spec = dict(spec, isolation=iso)
            argv = (environment.python, "-I", "-B", "-c", HARNESS_SOURCE, "run", json.dumps(spec))
            run = RunSpec(
                workdir=workdir,
                argv=argv,
                env=sandbox_env(task.manifest.needs_gpu),
                limits=limits,
                needs_gpu=task.manifest.needs_gpu,
                python=environment.python,
                hidden_paths=facts.hidden,
                stdin=(nonce + "\n").encode(),
                copy_task=iso is None,
            )
            return self.sandbox.run(run)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def evaluate(
        self,
        task: Task,
        snippet: Snippet,
        code: str | None,
        *,
        template: str | None = None,
        limits: Limits | None = None,
    ) -> Verdict:
        """The verdict of one completion (``code`` None: no code extracted). See the module docstring."""
        try:
            env_id = self.environment_of(task).id
        except EnvironmentBuildError as exc:
            return environment_failure_verdict(exc)
        if code is None:
            return _verdict_without_run("no_code", env_id)
        facts = self.facts(task)
        key = None
        if self.cache is not None:
            key = VerdictCache.key(facts.content_hash, snippet.name, code, env_id, template, self.confirm)
            hit = self.cache.get(key)
            if hit is not None:
                return hit
        reason = oracle_access(task, snippet, code, facts.oracles) if self.static_screen else None
        original = task.read_text(snippet.file)
        screening = None
        if self.static_screen and reason is None:
            screening = screen.screen_completion(
                original=original,
                snippet=snippet,
                code=code,
                test_entry=task.manifest.test_entry,
                local_modules=facts.local_modules,
                protected_modules=protected_modules(task, facts),
            )
        if reason is not None:
            c = errors.Classification("failed", "oracle_access", errors.MODEL, reason)
            verdict = Verdict(
                outcome=c.outcome, category=c.category, tier=c.tier, reason=c.reason, environment=env_id
            )
        elif screening is not None and screening.findings:
            c = tampering(screen_reason(screening.findings, snippet.file))
            verdict = Verdict(
                outcome=c.outcome, category=c.category, tier=c.tier, reason=c.reason, environment=env_id
            )
        else:
            run_limits = limits or replace(self.limits, timeout_s=self.timeout_for(task))
            verdict = self._run(task, snippet, code, facts, run_limits, screening)
            is_reference = fill_in(original, snippet, code) == original
            verdict = self._check_tests(task, verdict, is_reference=is_reference)
            verdict = self._charge_reference(task, verdict)
            if verdict.passed and self.confirm:
                # The reference's own code fails every variant by construction (each was kept only so).
                verdict = (
                    replace(verdict, confirmation="confirmed")
                    if is_reference
                    else self._confirm(task, snippet, code, facts, run_limits, screening, verdict)
                )
        if self.cache is not None and key is not None:
            self.cache.put(key, verdict)
        return verdict

    def expected_duration_s(self, task: Task) -> float | None:
        """How long a run of ``task`` is expected to take: its measured reference run, None before that."""
        with self._lock:
            reference = self._references.get(task.root)
        return reference.duration_s if reference is not None else None

    def _needs_run(self, item: EvalItem) -> bool:
        """Whether ``item`` may reach the sandbox (it has code and no cached verdict)."""
        if item.code is None:
            return False
        if self.cache is None:
            return True
        try:
            env_id = self.environment_of(item.task).id
        except EnvironmentBuildError:
            return False
        key = VerdictCache.key(
            self.facts(item.task).content_hash,
            item.snippet.name,
            item.code,
            env_id,
            item.template,
            self.confirm,
        )
        return self.cache.get(key) is None

    def evaluate_batch(
        self,
        items: Sequence[EvalItem],
        *,
        workers: int | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> list[Verdict]:
        """Verdicts for ``items``, in order, with ``workers`` parallel runs.

        Runs are started longest expected first (``longest_first``), so that the batch does not end with
        one worker busy on a long task while the others idle. With calibration on, the reference run of
        every task that has something to run comes first (calibration needs it anyway) and measures each
        task's expected duration; without it, only references already measured order the batch.
        """
        results: list[Verdict | None] = [None] * len(items)
        done = 0
        done_lock = threading.Lock()
        count = max(1, workers or self.workers)
        if self.calibrate:
            tasks = {item.task.root: item.task for item in items if self._needs_run(item)}
            with ThreadPoolExecutor(max_workers=count, thread_name_prefix="rcb-ref") as executor:
                list(executor.map(self.reference, tasks.values()))
        order = longest_first([self.expected_duration_s(item.task) for item in items])

        def one(index: int) -> None:
            nonlocal done
            item = items[index]
            results[index] = self.evaluate(item.task, item.snippet, item.code, template=item.template)
            with done_lock:
                done += 1
                if progress is not None:
                    progress(done, len(items))

        # The executor starts submitted work in submission order, so submitting in ``order`` schedules it.
        with ThreadPoolExecutor(max_workers=count, thread_name_prefix="rcb-eval") as executor:
            list(executor.map(one, order))
        return [r for r in results if r is not None]


def longest_first(expected_s: Sequence[float | None]) -> list[int]:
    """Indices ordered longest expected duration first (the longest-processing-time rule of list
    scheduling: with exact durations its makespan is at most 4/3 of the optimum); unknown durations last, ties
    in input order."""
    return sorted(
        range(len(expected_s)),
        key=lambda i: (expected_s[i] is None, -(expected_s[i] or 0.0)),
    )


def evaluate(
    task: Task,
    snippet: Snippet,
    code: str | None,
    *,
    sandbox: Sandbox,
    limits: Limits | None = None,
    env: Environment | str | None = None,
    template: str | None = None,
) -> Verdict:
    """One cold, uncached evaluation (``env``: an ``Environment`` or an interpreter path)."""
    with Runner(sandbox=sandbox, environment=env, limits=limits, warm=False, calibrate=False) as runner:
        return runner.evaluate(task, snippet, code, template=template, limits=limits)


def evaluate_batch(
    items: Sequence[EvalItem],
    *,
    sandbox: Sandbox,
    workers: int = 2,
    env: Environment | str | None = None,
    limits: Limits | None = None,
    cache: VerdictCache | None = None,
    warm: bool = True,
    calibrate: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> list[Verdict]:
    """Evaluate many completions in parallel (warm interpreters, calibrated timeouts, optional cache)."""
    with Runner(
        sandbox=sandbox,
        environment=env,
        limits=limits,
        cache=cache,
        warm=warm,
        calibrate=calibrate,
        workers=workers,
    ) as runner:
        return runner.evaluate_batch(items, progress=progress)


def make_sandbox(name: str, *, docker_image: str | None = None, allow_unsandboxed: bool = False) -> Sandbox:
    """The backend called ``name`` ("local", "docker" or "none"); raises ``SandboxUnavailable``.

    ``docker_image`` is the docker backend's default image (None: ``DEFAULT_IMAGE``); ``allow_unsandboxed``
    must be true for "none" to run anything (the caller's explicit opt-in, e.g. ``RCB_ALLOW_UNSANDBOXED``).
    """
    if name == "local":
        from .sandbox.local import LocalSandbox

        return LocalSandbox()
    if name == "docker":
        from .sandbox import docker

        return docker.DockerSandbox(image=docker_image)
    if name == "none":
        from .sandbox.unsandboxed import UnsandboxedRunner

        return UnsandboxedRunner(allowed=allow_unsandboxed)
    raise SandboxUnavailable(f"unknown sandbox {name!r}; choose local, docker or none")


__all__ = [
    "DerivationOutOfTime",
    "EvalItem",
    "environment_failure_verdict",
    "Runner",
    "Verdict",
    "VerdictCache",
    "evaluate",
    "evaluate_batch",
    "longest_first",
    "make_sandbox",
]
