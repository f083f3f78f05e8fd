"""Deterministic error categories (docs/scoring.md): structured outcome + final exception -> category.

Pure functions, no I/O: the runner uses them for fresh verdicts and the portal for imported results (where
only an exit code and the output text are known). Categories are stable slugs; ``LABELS`` gives the names
shown in charts. Two tiers: ``model`` failures count against the model; ``infrastructure`` failures (the
sandbox broke, the environment lacks a package the task needs, the worker was lost) never do and are
retried or reported to operators instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass

MODEL = "model"
INFRASTRUCTURE = "infrastructure"
NONE = "none"

OUTCOMES = ("passed", "failed", "timeout", "oom", "no_code", "infra_error")

#: slug -> (label, tier). Labels follow the original paper's names; "Logic Errors" is plotted there as
#: "Functional Errors".
CATEGORIES: dict[str, tuple[str, str]] = {
    "passed": ("Passed", NONE),
    "syntax": ("Syntax Errors", MODEL),
    "name": ("Name Errors", MODEL),
    "type": ("Type Errors", MODEL),
    "attribute": ("Attribute Errors", MODEL),
    "index_key": ("Index/Key Errors", MODEL),
    "import": ("Import Errors", MODEL),
    "value_runtime": ("Value/Runtime Errors", MODEL),
    "logic": ("Logic Errors", MODEL),
    "timeout": ("Timeout", MODEL),
    "oom": ("Out of memory", MODEL),
    "no_code": ("No code extracted", MODEL),
    "oracle_access": ("Oracle access", MODEL),
    # The completion reached for the test's or the process's machinery (docs/integrity.md).
    "harness_tampering": ("Harness tampering", MODEL),
    # The pass also passed an impossible variant of its test, which the reference fails: it was forged.
    "verdict_forged": ("Verdict forged", MODEL),
    # Every run of the pass against an impossible variant ended without a result (a timeout or a crash).
    "pass_unconfirmable": ("Pass not confirmable", MODEL),
    "early_exit": ("Early exit", MODEL),
    "crash": ("Crash (killed by a signal)", MODEL),
    "other": ("Other", MODEL),
    # A failure recorded without any test output (the paper's published results hold only exit codes).
    "unclassified": ("Unclassified (no test output)", MODEL),
    "sandbox_failure": ("Sandbox failure", INFRASTRUCTURE),
    "missing_dependency": ("Missing dependency", INFRASTRUCTURE),
    "worker_lost": ("Worker lost", INFRASTRUCTURE),
    # The task's own reference fails in the environment the completion ran in: the run says nothing about
    # the model (docs/environments.md).
    "reference_failed": ("Reference fails in its environment", INFRASTRUCTURE),
}
LABELS: dict[str, str] = {slug: label for slug, (label, _tier) in CATEGORIES.items()}

# Exception class name -> category. Subclasses are handled through ``builtin_base`` (the first builtin
# class in the exception's MRO, recorded by the harness), e.g. torch's _LinAlgError -> RuntimeError.
_BY_EXCEPTION: dict[str, str] = {
    "SyntaxError": "syntax",
    "IndentationError": "syntax",
    "TabError": "syntax",
    "NameError": "name",
    "UnboundLocalError": "name",
    "TypeError": "type",
    "AttributeError": "attribute",
    "IndexError": "index_key",
    "KeyError": "index_key",
    "LookupError": "index_key",
    "ImportError": "import",
    "ModuleNotFoundError": "import",
    "AssertionError": "logic",
    "MemoryError": "oom",
    "ValueError": "value_runtime",
    "RuntimeError": "value_runtime",
    "NotImplementedError": "value_runtime",
    "RecursionError": "value_runtime",
    "ArithmeticError": "value_runtime",
    "ZeroDivisionError": "value_runtime",
    "OverflowError": "value_runtime",
    "FloatingPointError": "value_runtime",
    "UnicodeError": "value_runtime",
    "UnicodeDecodeError": "value_runtime",
    "UnicodeEncodeError": "value_runtime",
    "LinAlgError": "value_runtime",
    "_LinAlgError": "value_runtime",
}

_TRACEBACK_HEAD = "Traceback (most recent call last):"
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*)(?::[ \t]?(.*))?$")
_NO_MODULE = re.compile(r"""No module named ['"]([\w.]+)['"]""")


@dataclass(frozen=True)
class Classification:
    """The verdict-level result of classifying a run: possibly a changed outcome (a missing dependency
    turns a failure into ``infra_error``), the category slug, its tier and a one-line human reason."""

    outcome: str
    category: str
    tier: str
    reason: str

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Classification:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__})


def tier_of(category: str) -> str:
    """The tier of a category slug (``KeyError`` for an unknown slug)."""
    return CATEGORIES[category][1]


def category_for_exception(exception_type: str | None, builtin_base: str | None = None) -> str:
    """The category of a final exception given its (possibly dotted) class name.

    ``builtin_base`` is the nearest builtin ancestor class when known; it decides for classes this table
    does not name. No exception (the script failed without raising, e.g. printed a mismatch and exited 1)
    is a logic error; an unknown class is ``other``.
    """
    if not exception_type:
        return "logic"
    short = exception_type.rsplit(".", 1)[-1]
    if short in _BY_EXCEPTION:
        return _BY_EXCEPTION[short]
    if builtin_base and builtin_base in _BY_EXCEPTION:
        return _BY_EXCEPTION[builtin_base]
    return "other"


def parse_final_exception(text: str) -> tuple[str, str] | None:
    """``(type, message)`` of the last traceback in ``text`` (Python's standard format), or None.

    The exception line is the first non-indented line after the last ``Traceback (most recent call
    last):`` header; the message keeps its first line only.
    """
    start = text.rfind(_TRACEBACK_HEAD)
    if start < 0:
        return None
    for line in text[start + len(_TRACEBACK_HEAD) :].splitlines():
        if not line.strip() or line[:1] in (" ", "\t"):
            continue
        match = _EXCEPTION_LINE.match(line.rstrip())
        if match is None:
            return None
        return match.group(1), (match.group(2) or "").strip()
    return None


def missing_module_name(
    exception_type: str | None, message: str | None, module: str | None = None
) -> str | None:
    """The module a ``ModuleNotFoundError`` could not find (its ``name``, else parsed from the message)."""
    if not exception_type or exception_type.rsplit(".", 1)[-1] != "ModuleNotFoundError":
        return None
    if module:
        return module
    match = _NO_MODULE.search(message or "")
    return match.group(1) if match else None


def is_missing_dependency(
    module: str, *, local_modules: Iterable[str] = (), task_imports: Iterable[str] | None = None
) -> bool:
    """Whether a missing module is the environment's fault rather than the model's.

    A module that belongs to the task folder (``local_modules``: top-level names of its modules and
    packages) is never a missing dependency. When ``task_imports`` (top-level names the task's own,
    unmodified files import) is given, only those count: a package that only the completion imports is
    the model's import error. Without it, every module outside the task folder counts.
    """
    top = module.split(".", 1)[0]
    if top in set(local_modules):
        return False
    if task_imports is not None:
        return top in set(task_imports)
    return True


def classify(
    outcome: str,
    *,
    exception_type: str | None = None,
    exception_message: str | None = None,
    builtin_base: str | None = None,
    module: str | None = None,
    output: str = "",
    local_modules: Iterable[str] = (),
    task_imports: Iterable[str] | None = None,
    signal_name: str | None = None,
    early_exit: bool = False,
    infra_reason: str | None = None,
) -> Classification:
    """Classify one run. ``outcome`` is the structured outcome observed (one of ``OUTCOMES``).

    For ``failed`` runs the final exception decides; when ``exception_type`` is not given it is parsed
    from ``output`` (the run's stdout + stderr text), which is all an imported result has. A
    ``ModuleNotFoundError`` for a task dependency becomes ``infra_error`` / ``missing_dependency``; a
    ``MemoryError`` becomes ``oom``.
    """
    if outcome not in OUTCOMES:
        raise ValueError(f"unknown outcome {outcome!r}; expected one of {', '.join(OUTCOMES)}")
    if outcome == "passed":
        return Classification("passed", "passed", NONE, "passed")
    if outcome == "timeout":
        return Classification("timeout", "timeout", MODEL, "timed out")
    if outcome == "oom":
        return Classification("oom", "oom", MODEL, "exceeded the memory limit")
    if outcome == "no_code":
        return Classification("no_code", "no_code", MODEL, "no code extracted from the response")
    if outcome == "infra_error":
        return Classification(
            "infra_error", "sandbox_failure", INFRASTRUCTURE, infra_reason or "sandbox failure"
        )
    if early_exit:
        return Classification("failed", "early_exit", MODEL, "the test script did not run to its end")
    if exception_type is None and output:
        parsed = parse_final_exception(output)
        if parsed is not None:
            exception_type, exception_message = parsed
    missing = missing_module_name(exception_type, exception_message, module)
    if missing and is_missing_dependency(missing, local_modules=local_modules, task_imports=task_imports):
        top = missing.split(".", 1)[0]
        return Classification(
            "infra_error", "missing_dependency", INFRASTRUCTURE, f"missing dependency: {top}"
        )
    if signal_name and not exception_type:
        return Classification("failed", "crash", MODEL, f"killed by {signal_name}")
    category = category_for_exception(exception_type, builtin_base)
    if category == "oom":
        return Classification("oom", "oom", MODEL, "MemoryError: exceeded the memory limit")
    if exception_type:
        reason = f"{exception_type}: {exception_message}" if exception_message else exception_type
    else:
        reason = "the test failed without an exception"
    return Classification("failed", category, MODEL, reason[:300])


def classify_imported(
    *, passed: bool, exit_code: int | None, output: str = "", timed_out: bool | None = None
) -> Classification:
    """Classify a result of the original harness (exit code + output text only).

    The original recorded no timeout flag: an exit code of None (or ``timed_out``) means the run was killed
    at its 60 s deadline.
    """
    if passed:
        return classify("passed")
    if timed_out or exit_code is None:
        return classify("timeout")
    return classify("failed", output=output)


#: Exit status of ``rcb`` for bad input (usage, an unreadable file, a refused request).
EXIT_USAGE = 2
#: Exit status of ``rcb evaluate`` when the machinery failed, not the model: the evaluation interpreter lacks
#: the tasks' packages or cannot start, the sandbox is unusable, or a verdict is of the infrastructure tier.
EXIT_INFRASTRUCTURE = 3
#: Exit status of ``rcb evaluate`` when nothing was judged: no item to evaluate, or no verdict of the model's.
EXIT_NOTHING_JUDGED = 4


def label(category: str) -> str:
    """The words the site shows for a category slug (the slug itself for one this table lacks)."""
    return LABELS.get(category, category)


class CliError(Exception):
    """A command that cannot go on: printed as one line ``error: <message>`` (``cli.main``), no traceback.
    ``status`` is the exit status: ``EXIT_USAGE`` (bad input) unless the cause is the machine's."""

    def __init__(self, message: str, *, status: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.status = status
