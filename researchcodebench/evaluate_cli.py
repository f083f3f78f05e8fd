"""``python -m researchcodebench evaluate``: run completions through the sandboxed runner and score them.

    evaluate PSET [--tasks ID ...] (--predictions FILE.jsonl | --oracle | --blank)
             [--template rcb-2025|rcb-v2] [--workers N] [--sandbox local|docker|none]
             [--python PATH | --env auto] [--no-cache] [--json]

Predictions: one JSON object per line, ``{"task", "snippet", "completion_idx", "code"}`` (code re-indented
to the snippet) or ``{"task", "snippet", "completion_idx", "response"}`` (a raw model reply, extracted with
``--template``).

The evaluation interpreter is the first of: ``--python PATH``, ``RCB_EVAL_PYTHON``, else the first that can
import every third-party module the selected tasks' own files import (``torch``, ``numpy``...) among the
repository's ``.venv-eval`` (in a checkout) and rcb's own interpreter, either of Python 3.11 or newer (the
sandbox's harness needs it; rcb itself runs on 3.10); ``--env auto`` builds one per task
instead. The command says which it uses. An interpreter named by ``--python`` or ``RCB_EVAL_PYTHON`` that
lacks a module, or none found, stops the command before anything is judged, naming what is missing and the
``pip install`` that adds it. (``--sandbox docker`` runs the image's interpreter: no such check.)

Exit status (``EXIT_STATUS``): 0 every item was judged (whatever the verdicts); 2 bad input (usage, the pset,
the predictions file, naming ``file:line``); 3 infrastructure: the evaluation interpreter lacks the tasks'
packages or does not start, the sandbox is unusable, or some verdicts are infrastructure errors (missing
dependency, sandbox failure, lost worker, a reference failing in its environment: left out of the scores);
4 nothing was judged (no item to evaluate, or every verdict an infrastructure error).

Every pass is confirmed against an impossible variant of its test (docs/integrity.md): the variants of a task
are derived on its first pass and kept under the cache folder (``variants/``, by the task's content hash and
environment, ``--no-cache`` or not); the command says per task whether they were derived now or read from
there, and its scores count confirmed, unconfirmed (a snippet with no variant) and forged passes.

Environment (read here, at the command line: the library itself takes these as arguments):
``RCB_EVAL_PYTHON`` (the default of ``--python``), ``RCB_CACHE_DIR`` (the verdict cache and the variants,
default ``~/.cache/researchcodebench``), ``RCB_DOCKER_IMAGE`` (the docker sandbox's image) and
``RCB_ALLOW_UNSANDBOXED=1`` (required by ``--sandbox none``). With ``--env auto`` each task runs in its own
environment (docs/environments.md), built or reused under ``RCB_ENV_DIR`` (default: ``envs`` in the verdict
cache folder) from the package sources ``RCB_ENV_INDEX_URL`` (replaces PyPI), ``RCB_ENV_EXTRA_INDEX_URLS``
and ``RCB_ENV_FIND_LINKS`` (space- or comma-separated), else the index, extra indexes, find-links and CA
bundle of pip's own configuration on this host (it prints which); uv gets the host's CA and proxy variables
and nothing else of the caller's environment. A task whose environment cannot be built gets an
infrastructure verdict naming the package.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, TextIO

from .environments import (
    MIN_EVAL_PYTHON,
    Environment,
    EvalEnvironmentError,
    missing_modules,
    repo_root,
    resolve_environment,
    version_tuple,
)
from .envs import (
    IMPORT_TO_DISTRIBUTION,
    EnvironmentBuildError,
    RequirementsError,
    Sources,
    default_sources,
    task_environment,
    task_requirements,
    third_party_imports,
)
from .errors import (
    EXIT_INFRASTRUCTURE,
    EXIT_NOTHING_JUDGED,
    EXIT_USAGE,
    INFRASTRUCTURE,
    CliError,
    label,
)
from .predictions import (
    PredictionError,
    PredictionLimits,
    answer_code,
    format_errors,
    parse_predictions,
    shown,
)
from .problems import DEFAULT_TEMPLATE, TEMPLATES, blank_body
from .pset import Pset, PsetError, Task, read_pset
from .runner import EvalItem, Runner, Verdict, VerdictCache, default_cache_dir, make_sandbox
from .sandbox.base import SandboxUnavailable
from .sandbox.unsandboxed import ALLOW_VARIABLE
from .scoring import SnippetResult, line_rates, per_paper, task_rates
from .variants import VariantStore


class EvaluateInputError(ValueError):
    """Bad user input (a message naming the file, line and field)."""


#: What ``rcb evaluate`` exits with (the module docstring says when), shown by ``rcb evaluate --help``.
EXIT_STATUS = f"""exit status:
  0  every item was judged (whatever the verdicts)
  {EXIT_USAGE}  bad input: usage, the pset, the predictions file (naming file:line)
  {EXIT_INFRASTRUCTURE}  infrastructure: the evaluation interpreter lacks the tasks' packages or does not start,
     the sandbox is unusable, or some verdicts are infrastructure errors (left out of the scores)
  {EXIT_NOTHING_JUDGED}  nothing was judged: no item to evaluate, or every verdict an infrastructure error"""


def _cli_error(message: str, *, status: int = EXIT_USAGE) -> Exception:
    return CliError(message, status=status)


def register(subparsers: Any) -> None:
    """Add the ``evaluate`` subcommand (handler returns the exit status)."""
    p = subparsers.add_parser(
        "evaluate",
        help="run completions (or the reference / blank bodies) through the sandboxed tests and score them",
        description=__doc__.split("\n\n")[0],
        epilog=EXIT_STATUS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("pset", metavar="PSET", help="pset folder (papers.yaml + task folders)")
    p.add_argument("--tasks", nargs="+", metavar="ID", help="only these task ids")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--predictions", metavar="FILE.jsonl", help="completions to evaluate")
    source.add_argument("--oracle", action="store_true", help="use each snippet's reference code")
    source.add_argument("--blank", action="store_true", help="use an empty body (the placeholder only)")
    p.add_argument("--template", choices=TEMPLATES, default=DEFAULT_TEMPLATE, help="answer extraction rules")
    p.add_argument("--workers", type=int, default=2, help="parallel runs (default 2)")
    p.add_argument("--sandbox", choices=("local", "docker", "none"), default="local", help="sandbox backend")
    interpreter = p.add_mutually_exclusive_group()
    interpreter.add_argument(
        "--python",
        metavar="PATH",
        help="evaluation interpreter (default: RCB_EVAL_PYTHON, else the repository's .venv-eval or rcb's "
        "own interpreter, whichever has the tasks' packages)",
    )
    interpreter.add_argument(
        "--env",
        choices=("auto",),
        help="auto: run each task in its own environment, built (uv) or reused from RCB_ENV_DIR",
    )
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="ignore and do not fill the verdict cache (the impossible variants stay cached)",
    )
    p.add_argument("--json", action="store_true", help="print verdicts and scores as JSON")
    p.set_defaults(handler=run_evaluate)


def read_predictions(
    path: str, tasks: dict[str, Task], *, template: str, wanted: set[str] | None
) -> list[EvalItem]:
    """Parse a predictions JSONL file into items (``researchcodebench.predictions``, default limits).

    Raises ``EvaluateInputError`` listing every problem as ``path:line: message``: the format's own, and a
    task the pset lacks or a snippet its task lacks. Lines for tasks outside ``wanted`` are skipped.
    """
    limits = PredictionLimits()
    try:
        size_error = limits.size_error(os.path.getsize(path))
        if size_error:
            raise EvaluateInputError(f"{path}: {size_error}")
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise EvaluateInputError(f"{path}: cannot read predictions: {exc.strerror}") from exc
    parsed = parse_predictions(data, limits=limits)
    errors = list(parsed.errors)
    items: list[EvalItem] = []
    for p in parsed.predictions:
        if wanted is not None and p.task not in wanted:
            continue
        task = tasks.get(p.task)
        if task is None:
            errors.append(PredictionError(p.line, f"unknown task {shown(p.task)} (not in the pset)"))
            continue
        try:
            snippet = task.snippet(p.snippet)
        except KeyError:
            errors.append(PredictionError(p.line, f"task {shown(p.task)} has no snippet {shown(p.snippet)}"))
            continue
        code = answer_code(p, template=template, indent=snippet.indent)
        items.append(EvalItem(task, snippet, code, completion_idx=p.completion_idx, template=template))
    if errors:
        raise EvaluateInputError("\n".join(format_errors(errors, limit=limits.max_errors, source=path)))
    return items


def _progress(stream: TextIO) -> Any:
    def show(done: int, total: int) -> None:
        width = 30
        filled = int(width * done / total) if total else width
        stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        if done == total:
            stream.write("\n")
        stream.flush()

    return show


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 4)


def summarise(items: list[EvalItem], verdicts: list[Verdict]) -> dict[str, Any]:
    """Scores over the evaluated items. Infrastructure failures are not the model's: they are left out of
    the rates and counted (``coverage`` < 1 says the rates do not cover every snippet)."""
    scored = [
        SnippetResult(i.task.id, i.snippet.name, i.snippet.lines, i.completion_idx, v.passed)
        for i, v in zip(items, verdicts, strict=True)
        if v.tier != "infrastructure"
    ]
    lr, tr = line_rates(scored), task_rates(scored)
    papers = {task: _finite(rates.mean) for task, rates in sorted(per_paper(scored).items())}
    return {
        "line_rate": {
            "mean": _finite(lr.mean),
            "std": _finite(lr.std),
            "rates": [_finite(r) for r in lr.rates],
        },
        "task_rate": {
            "mean": _finite(tr.mean),
            "std": _finite(tr.std),
            "rates": [_finite(r) for r in tr.rates],
        },
        "evaluated": len(verdicts),
        "scored": len(scored),
        "coverage": round(len(scored) / len(verdicts), 4) if verdicts else None,
        "passed": sum(v.passed for v in verdicts),
        "outcomes": dict(sorted(Counter(v.outcome for v in verdicts).items())),
        "categories": dict(sorted(Counter(v.category for v in verdicts).items())),
        "per_paper": papers,
        "confirmations": confirmation_counts(verdicts),
    }


def confirmation_counts(verdicts: list[Verdict]) -> dict[str, int]:
    """Passes confirmed against an impossible variant of their test, passes left unconfirmed (their snippet
    has no variant), and passes found forged (they passed a variant, or every confirmation run ended
    without a result: failed)."""
    return {
        "confirmed": sum(1 for v in verdicts if v.passed and v.confirmation == "confirmed"),
        "unconfirmed": sum(1 for v in verdicts if v.passed and v.confirmation == "unconfirmed"),
        "forged": sum(1 for v in verdicts if v.confirmation == "forged"),
    }


def variant_sources(runner: Runner, tasks: list[Task]) -> dict[str, dict[str, list[str]]]:
    """Per task id, the snippets whose variants the run ``derived`` now and those it read from the
    ``cache`` (tasks whose passes needed none are left out)."""
    by_root: dict[str, dict[str, list[str]]] = {}
    for (root, snippet), source in sorted(runner.variant_sources.items()):
        kind = "derived" if source == "derived" else "cached"
        by_root.setdefault(root, {"derived": [], "cached": []})[kind].append(snippet)
    return {t.id: by_root[t.root] for t in tasks if t.root in by_root}


def _print_variant_sources(sources: dict[str, dict[str, list[str]]], cache_root: str, stream: TextIO) -> None:
    for task_id, found in sources.items():
        parts = []
        if found["derived"]:
            parts.append(f"derived now for {len(found['derived'])} snippet(s)")
        if found["cached"]:
            parts.append(f"read from the cache for {len(found['cached'])} snippet(s)")
        stream.write(f"impossible variants of {task_id}: {', '.join(parts)} ({cache_root})\n")


def _verdict_row(item: EvalItem, verdict: Verdict) -> dict[str, Any]:
    row: dict[str, Any] = {
        "task": item.task.id,
        "snippet": item.snippet.name,
        "completion_idx": item.completion_idx,
        "lines": item.snippet.lines,
    }
    data = verdict.to_dict()
    for key in ("stdout_tail", "stderr_tail"):
        data.pop(key)
    row.update(data)
    return row


def _split(value: str | None) -> tuple[str, ...]:
    return tuple(part for part in (value or "").replace(",", " ").split() if part)


def env_sources_from_environ() -> Sources:
    """The package sources of ``--env auto`` (see the module docstring): ``RCB_ENV_*`` when any is set,
    else pip's own configuration."""
    return default_sources(
        find_links=_split(os.environ.get("RCB_ENV_FIND_LINKS")),
        index_url=os.environ.get("RCB_ENV_INDEX_URL") or None,
        extra_index_urls=_split(os.environ.get("RCB_ENV_EXTRA_INDEX_URLS")),
    )


def assign_task_environments(runner: Runner, tasks: list[Task], *, stream: TextIO) -> dict[str, Any]:
    """Build or reuse each task's environment and assign it to the runner; a task whose environment cannot
    be built is assigned the error (its runs become infrastructure verdicts). Returns, per task id, the
    lock hash, whether it was built and the seconds locking and building took, or the error."""
    cache_root = os.environ.get("RCB_ENV_DIR") or os.path.join(
        os.environ.get("RCB_CACHE_DIR") or default_cache_dir(), "envs"
    )
    sources = env_sources_from_environ()
    stream.write(sources.describe() + "\n")
    report: dict[str, Any] = {}
    for task in tasks:
        started = time.monotonic()
        try:
            for note in task_requirements(task.root, manifest_requirements=task.manifest.requirements).notes:
                stream.write(f"environment of {task.id}: {note}\n")
            lock, built = task_environment(
                task.root,
                cache_root=cache_root,
                sources=sources,
                manifest_requirements=task.manifest.requirements,
            )
            runner.assign_environment(task, resolve_environment(built.python))
        except (EnvironmentBuildError, RequirementsError, EvalEnvironmentError) as exc:
            error = (
                exc
                if isinstance(exc, EnvironmentBuildError)
                else EnvironmentBuildError(package=None, reason=str(exc))
            )
            runner.assign_environment(task, error)
            report[task.id] = {"error": str(error), "package": error.package}
            stream.write(f"environment of {task.id}: {error}\n")
            continue
        seconds = time.monotonic() - started
        report[task.id] = {"hash": lock.hash, "built": built.built, "seconds": round(seconds, 2)}
        stream.write(
            f"environment of {task.id}: {lock.hash[:12]} {'built' if built.built else 'reused'}; "
            f"locked and ready in {seconds:.2f}s\n"
        )
    return report


def run_evaluate(args: argparse.Namespace) -> int:
    """Handler of ``evaluate`` (see the module docstring); returns the exit status."""
    pset, wanted = _pset_and_wanted(args)
    selected = [t for t in pset.tasks if wanted is None or t.id in wanted]
    items = _evaluation_items(args, pset, selected, wanted)
    runner, environment = _make_runner(args, selected)
    environments = assign_task_environments(runner, selected, stream=sys.stderr) if args.env else None
    progress = _progress(sys.stderr) if sys.stderr.isatty() else None
    with runner:
        verdicts = runner.evaluate_batch(items, progress=progress)
    tasks = list({item.task.root: item.task for item in items}.values())
    sources = variant_sources(runner, tasks)
    _print_variant_sources(sources, _cache_root(), sys.stderr)
    scores = summarise(items, verdicts)
    scores["variants"] = sources
    scores["environment"] = "auto" if environments is not None else environment.id
    if environments is not None:
        scores["environments"] = environments
        scores["environment_sources"] = env_sources_from_environ().describe()
    scores["template"] = args.template
    if args.json:
        rows = [_verdict_row(i, v) for i, v in zip(items, verdicts, strict=True)]
        json.dump({"verdicts": rows, "scores": scores}, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        _print_report(items, verdicts, scores, environments)
    status, problem = exit_status(verdicts)
    if problem:
        sys.stderr.write(f"error: {problem}\n")
    return status


def exit_status(verdicts: list[Verdict]) -> tuple[int, str]:
    """The exit status of an evaluation that ran (module docstring) and, unless 0, one line saying why."""
    infrastructure = [v for v in verdicts if v.tier == INFRASTRUCTURE]
    if not verdicts:
        return EXIT_NOTHING_JUDGED, "nothing was judged: no item to evaluate for the selected tasks"
    counts = Counter(label(v.category) for v in infrastructure)
    kinds = ", ".join(f"{name} {n}" for name, n in counts.most_common())
    if len(infrastructure) == len(verdicts):
        return EXIT_NOTHING_JUDGED, (
            f"nothing was judged: every verdict is an infrastructure error ({kinds}), not the model's"
        )
    if infrastructure:
        return EXIT_INFRASTRUCTURE, (
            f"{len(infrastructure)} of {len(verdicts)} verdicts are infrastructure errors ({kinds}): "
            "the scores leave them out"
        )
    return 0, ""


def _pset_and_wanted(args: argparse.Namespace) -> tuple[Pset, set[str] | None]:
    """The pset and the task ids ``--tasks`` names (None: all); a CLI error for an unreadable pset, an
    unknown task id or fewer than one worker."""
    try:
        pset = read_pset(args.pset)
    except PsetError as exc:
        raise _cli_error(str(exc)) from exc
    known = {t.id for t in pset.tasks}
    wanted = set(args.tasks) if args.tasks else None
    if wanted:
        unknown = sorted(wanted - known)
        if unknown:
            raise _cli_error(
                f"--tasks: unknown task id(s) {', '.join(unknown)}; the pset has {', '.join(sorted(known))}"
            )
    if args.workers < 1:
        raise _cli_error("--workers must be at least 1")
    return pset, wanted


def _evaluation_items(
    args: argparse.Namespace, pset: Pset, selected: list[Task], wanted: set[str] | None
) -> list[EvalItem]:
    """What to evaluate: the lines of ``--predictions``, or every snippet of ``selected`` with its reference
    (``--oracle``) or a blank body (``--blank``)."""
    try:
        if args.predictions:
            tasks = {t.id: t for t in pset.tasks}
            return read_predictions(args.predictions, tasks, template=args.template, wanted=wanted)
        return [
            EvalItem(t, s, s.code if args.oracle else blank_body(s), template=args.template)
            for t in selected
            for s in t.snippets
        ]
    except EvaluateInputError as exc:
        raise _cli_error(str(exc)) from exc


def _cache_root() -> str:
    """The cache folder: ``RCB_CACHE_DIR``, else ``~/.cache/researchcodebench``."""
    return os.environ.get("RCB_CACHE_DIR") or default_cache_dir()


@dataclass(frozen=True)
class Candidate:
    """An interpreter ``evaluate`` may run the tests in; ``source`` says in words where it came from and
    ``named`` whether the user named it (then it is the only one, and it must do)."""

    python: str
    source: str
    named: bool


def interpreter_candidates(args: argparse.Namespace) -> list[Candidate]:
    """``--python``, else ``RCB_EVAL_PYTHON``, else the repository's ``.venv-eval`` (in a checkout) and rcb's
    own interpreter, in that order."""
    if args.python:
        return [Candidate(args.python, "--python", True)]
    named = os.environ.get("RCB_EVAL_PYTHON")
    if named:
        return [Candidate(named, "RCB_EVAL_PYTHON", True)]
    found = []
    checkout = repo_root() / ".venv-eval" / "bin" / "python"
    if checkout.exists():
        found.append(Candidate(str(checkout), "the repository's .venv-eval", False))
    found.append(Candidate(sys.executable, "rcb's own interpreter", False))
    return found


def _distributions(modules: set[str] | list[str]) -> list[str]:
    return sorted({IMPORT_TO_DISTRIBUTION.get(m, m) for m in modules})


def _install_command(python: str, modules: list[str]) -> str:
    return f"{python} -m pip install {' '.join(_distributions(modules))}"


def choose_interpreter(candidates: list[Candidate], tasks: list[Task]) -> tuple[Environment, Candidate]:
    """The first candidate that starts and can import every third-party module the tasks' own files import.
    None: a ``CliError`` (exit 3, nothing judged yet) naming what the last candidate lacks and the command
    that installs it."""
    needs = {t.id: third_party_imports(t.root) for t in tasks}
    wanted = set().union(*needs.values()) if needs else set()
    problem = ""
    for candidate in candidates:
        try:
            environment = resolve_environment(candidate.python)
            missing = missing_modules(candidate.python, wanted)
        except EvalEnvironmentError as exc:
            problem = str(exc)
            continue
        if version_tuple(environment.version) < MIN_EVAL_PYTHON:
            oldest = ".".join(map(str, MIN_EVAL_PYTHON))
            make = f"python{oldest} -m venv rcb-eval"
            if wanted:
                make += f" && rcb-eval/bin/pip install {' '.join(_distributions(wanted))}"
            problem = (
                f"the evaluation interpreter {candidate.python} ({candidate.source}) is Python "
                f"{environment.version}, and the sandbox's harness needs {oldest} or newer; make one with "
                f"`{make}` and pass --python rcb-eval/bin/python"
            )
            continue
        if not missing:
            return environment, candidate
        users = sorted(task for task, modules in needs.items() if modules & set(missing))
        problem = (
            f"the evaluation interpreter {candidate.python} ({candidate.source}) cannot import "
            f"{', '.join(missing)}, which {', '.join(users)} import{'s' if len(users) == 1 else ''}; "
            f"install {'it' if len(missing) == 1 else 'them'} with `{_install_command(candidate.python, missing)}`"
        )
    others = (
        "or name another interpreter with --python PATH or RCB_EVAL_PYTHON, "
        "or build one per task with --env auto"
    )
    raise _cli_error(
        f"{problem}{'; ' if problem else ''}{others} (nothing was judged)", status=EXIT_INFRASTRUCTURE
    )


def _make_runner(args: argparse.Namespace, tasks: list[Task]) -> tuple[Runner, Environment]:
    """The runner of ``--sandbox``, the interpreter (``choose_interpreter``; with ``--env auto`` only the
    default for tasks given none), ``--workers``, the verdict cache and the store of impossible variants,
    with its default environment. Says on stderr which interpreter it uses. A CLI error (exit 3) when the
    sandbox or interpreter is unusable."""
    try:
        sandbox = make_sandbox(
            args.sandbox,
            docker_image=os.environ.get("RCB_DOCKER_IMAGE") or None,
            allow_unsandboxed=os.environ.get(ALLOW_VARIABLE) == "1",
        )
    except SandboxUnavailable as exc:
        raise _cli_error(str(exc), status=EXIT_INFRASTRUCTURE) from exc
    candidates = interpreter_candidates(args)
    try:
        if args.env or args.sandbox == "docker":
            environment = resolve_environment(candidates[0].python)
            chosen = candidates[0]
        else:
            environment, chosen = choose_interpreter(candidates, tasks)
    except EvalEnvironmentError as exc:
        raise _cli_error(str(exc), status=EXIT_INFRASTRUCTURE) from exc
    if args.env:
        sys.stderr.write("evaluation environments: one per task (--env auto)\n")
    else:
        sys.stderr.write(
            f"evaluation interpreter: {chosen.python} (Python {environment.version}, {chosen.source}; "
            f"environment {environment.id})\n"
        )
    try:
        runner = Runner(
            sandbox=sandbox,
            environment=environment,
            cache=None if args.no_cache else VerdictCache(_cache_root()),
            workers=args.workers,
            variant_store=VariantStore(_cache_root()),
        )
    except (SandboxUnavailable, EvalEnvironmentError) as exc:
        raise _cli_error(str(exc), status=EXIT_INFRASTRUCTURE) from exc
    return runner, environment


def _shown(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.2f}"


def _print_report(
    items: list[EvalItem],
    verdicts: list[Verdict],
    scores: dict[str, Any],
    environments: dict[str, Any] | None,
) -> None:
    """The human-readable output: one line per verdict, then the scores (and environments built)."""
    for item, verdict in zip(items, verdicts, strict=True):
        mark = "PASS" if verdict.passed else verdict.outcome.upper()
        detail = (
            ""
            if verdict.passed
            else f"  [{label(verdict.category)}] {verdict.reason.splitlines()[0] if verdict.reason else ''}"
        )
        print(
            f"{mark:<11} {item.task.id} / {item.snippet.name} #{item.completion_idx} ({verdict.duration_s:.2f}s){detail}"
        )
    lr, tr = scores["line_rate"]["mean"], scores["task_rate"]["mean"]
    print(
        f"\n{scores['passed']}/{scores['evaluated']} passed; line rate {lr}, task rate {tr}; "
        f"coverage {scores['coverage']}; environment {scores['environment']}"
    )
    print(f"Scaled Pass@1 {_shown(lr)}, Pass@1 {_shown(tr)}")
    counts = scores["confirmations"]
    print(
        f"passes: {counts['confirmed']} confirmed against an impossible variant of the test, "
        f"{counts['unconfirmed']} unconfirmed (no variant), {counts['forged']} forged (judged failed)"
    )
    for paper, rate in scores["per_paper"].items():
        print(f"  {paper}: Scaled Pass@1 {_shown(rate)}")
    failed = {c: n for c, n in scores["categories"].items() if c != "passed"}
    if failed:
        print(
            "error categories: "
            + ", ".join(f"{label(c)} {n}" for c, n in sorted(failed.items(), key=lambda x: -x[1]))
        )
    if environments is not None:
        built = sum(1 for e in environments.values() if e.get("built"))
        failed = sum(1 for e in environments.values() if "error" in e)
        print(f"environments: {built} built, {len(environments) - built - failed} reused, {failed} failed")
