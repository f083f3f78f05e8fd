"""The ``rcb`` command line (also ``python -m researchcodebench``): inspect, mask, problem, score, validate
(+ registered commands: evaluate, images, generate, download, submit).

Extending it: a module adds a subcommand with a function ``register(subparsers)`` that calls
``subparsers.add_parser(name, help=...)`` and ``parser.set_defaults(handler=fn)``, where ``fn(args) -> int``
returns the exit status. A handler signals bad user input by raising ``CliError`` (exit 2, message on
stderr, no traceback). The registrars are listed in ``REGISTRARS``; ``build_parser`` calls each in order.

Exit status: 0 success, 1 ``inspect`` found annotation errors or ``validate`` found a task not ok, 2 bad
input; ``evaluate`` adds 3 (infrastructure) and 4 (nothing judged), see ``evaluate_cli``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from researchcodebench import evaluate_cli, generate_cli, images_cli, portal_cli
from researchcodebench.environments import EvalEnvironmentError, resolve_environment
from researchcodebench.errors import CliError
from researchcodebench.problems import TEMPLATES, build_prompt, mask_file
from researchcodebench.pset import (
    REGISTRY,
    Pset,
    PsetError,
    Task,
    normalise_date,
    read_pset,
    read_registry_entries,
)
from researchcodebench.runner import Runner, make_sandbox
from researchcodebench.sandbox.base import SandboxUnavailable
from researchcodebench.sandbox.unsandboxed import ALLOW_VARIABLE
from researchcodebench.scoring import (
    ResultsFormatError,
    load_published,
    score_published,
)
from researchcodebench.validation import ValidationReport, validate_task


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors through ``CliError`` semantics (exit 2, one clear line)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


def _load_pset(path: str) -> Pset:
    try:
        return read_pset(path)
    except PsetError as exc:
        raise CliError(str(exc)) from exc


def _get_task(pset: Pset, task_id: str) -> Task:
    try:
        return pset.task(task_id)
    except KeyError as exc:
        raise CliError(exc.args[0]) from exc


def _issue_json(issue: Any, task: str | None = None) -> dict[str, Any]:
    data = {"file": issue.file, "line": issue.line, "message": issue.message, "hint": issue.hint}
    data["code"] = issue.code
    if task is not None:
        data["task"] = task
    return data


def inspect_report(pset: Pset) -> dict[str, Any]:
    """The ``inspect --json`` document: tasks with snippets and errors, totals, all errors and warnings."""
    tasks = []
    for task in pset.tasks:
        tasks.append(
            {
                "id": task.id,
                "snippets": [
                    {
                        "name": s.name,
                        "file": s.file,
                        "start_line": s.start_line,
                        "end_line": s.end_line,
                        "lines": s.lines,
                        "depth": s.depth,
                        "parent": s.parent,
                    }
                    for s in task.snippets
                ],
                "errors": [_issue_json(i) for i in task.issues if i.is_error],
                "warnings": [_issue_json(i) for i in task.issues if not i.is_error],
            }
        )
    every = pset.all_issues()
    return {
        "tasks": tasks,
        "totals": {
            "tasks": len(pset.tasks),
            "snippets": sum(len(t.snippets) for t in pset.tasks),
            "lines": sum(s.lines for t in pset.tasks for s in t.snippets),
        },
        "errors": [_issue_json(i, t) for t, i in every if i.is_error],
        "warnings": [_issue_json(i, t) for t, i in every if not i.is_error],
    }


def _cmd_inspect(args: argparse.Namespace) -> int:
    pset = _load_pset(args.pset)
    report = inspect_report(pset)
    out: TextIO = sys.stdout
    if args.json:
        json.dump(report, out, indent=2, ensure_ascii=False)
        out.write("\n")
    else:
        for task, data in zip(pset.tasks, report["tasks"], strict=True):
            lines = sum(s["lines"] for s in data["snippets"])
            out.write(f"{task.id}: {len(data['snippets'])} snippets, {lines} lines\n")
            for snip in task.snippets:
                out.write(
                    f"  {'  ' * snip.depth}{snip.name} ({snip.file}:{snip.start_line}-{snip.end_line}, "
                    f"N={snip.lines})\n"
                )
        for task_id, issue in pset.all_issues():
            prefix = f"{task_id}/" if task_id is not None and issue.file != "papers.yaml" else ""
            out.write(f"{prefix}{issue}\n")
        totals = report["totals"]
        out.write(
            f"total: {totals['tasks']} tasks, {totals['snippets']} snippets, {totals['lines']} lines, "
            f"{len(report['errors'])} errors, {len(report['warnings'])} warnings\n"
        )
    return 1 if report["errors"] else 0


def _snippet_of(args: argparse.Namespace) -> tuple[Task, Any]:
    task = _get_task(_load_pset(args.pset), args.task)
    try:
        snippet = task.snippet(args.snippet)
    except KeyError as exc:
        raise CliError(exc.args[0]) from exc
    return task, snippet


def _cmd_mask(args: argparse.Namespace) -> int:
    task, snippet = _snippet_of(args)
    sys.stdout.write(mask_file(task.read_text(snippet.file), snippet))
    return 0


def _cmd_problem(args: argparse.Namespace) -> int:
    task, snippet = _snippet_of(args)
    try:
        prompt = build_prompt(task, snippet, template=args.template, with_paper=not args.no_paper)
    except (ValueError, OSError) as exc:
        raise CliError(str(exc)) from exc
    sys.stdout.write(prompt.text)
    return 0


def _registry_dates(path: str | None) -> dict[str, Any] | None:
    if path is None:
        return None
    try:
        entries = read_registry_entries(path)
    except PsetError as exc:
        raise CliError(str(exc)) from exc
    dates: dict[str, Any] = {}
    for paper_id, entry in entries.items():
        try:
            dates[paper_id] = normalise_date(entry.get("first_commit_date"))
        except ValueError as exc:
            raise CliError(f"{path}: entry {paper_id!r}: first_commit_date: {exc}") from exc
    return dates


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value


def _fmt(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:6.2f}"


def _cmd_score(args: argparse.Namespace) -> int:
    try:
        published = load_published(args.results)
    except ResultsFormatError as exc:
        raise CliError(str(exc)) from exc
    try:
        scores = score_published(
            published,
            contamination=args.contamination,
            registry_dates=_registry_dates(args.papers),
            global_rule=args.global_rule,
        )
    except ValueError as exc:
        raise CliError(str(exc)) from exc
    expected = published.snippet_lines()
    dates = published.paper_dates(_registry_dates(args.papers))
    papers = []
    for paper in published.papers:
        keys = [k for k in expected if k[0] == paper]
        papers.append(
            {
                "id": paper,
                "first_commit_date": dates.get(paper),
                "snippets": len(keys),
                "lines": sum(expected[k] for k in keys),
                "scores": {s.key: _finite(s.per_paper[paper].mean) for s in scores if paper in s.per_paper},
            }
        )
    if args.json:
        doc = {"models": [s.to_dict() for s in scores], "papers": papers}
        json.dump(doc, sys.stdout, indent=2, ensure_ascii=False, default=str, allow_nan=False)
        sys.stdout.write("\n")
        return 0
    out = sys.stdout
    out.write(f"{'#':>3} {'model':<34} {'Scaled':>7} {'Pass@1':>7} {'95% CI':>15} {'snip':>5} {'cov':>5}\n")
    for rank, s in enumerate(scores, start=1):
        ci = f"[{_fmt(s.ci95[0]).strip()}, {_fmt(s.ci95[1]).strip()}]"
        incomplete = "" if s.coverage >= 1 else "  (incomplete coverage: not comparable)"
        out.write(
            f"{rank:>3} {s.name[:34]:<34} {_fmt(s.line.mean):>7} {_fmt(s.task.mean):>7} {ci:>15} "
            f"{s.snippets:>5} {s.coverage:>5.0%}{incomplete}\n"
        )
    return 0


def _register_core(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "inspect",
        help="list a pset's tasks, snippets and validation errors",
        description="Read a pset folder and report its snippets and every validation problem "
        "(exit 1 if there are errors).",
    )
    p.add_argument("pset", help="pset folder holding papers.yaml")
    p.add_argument("--json", action="store_true", help="print a JSON report")
    p.set_defaults(handler=_cmd_inspect)

    p = subparsers.add_parser(
        "mask",
        help="print an annotated file with one snippet masked",
        description="Print the annotated file with SNIPPET masked exactly as the rcb-2025 prompt shows it.",
    )
    p.add_argument("pset", help="pset folder holding papers.yaml")
    p.add_argument("task", help="task id")
    p.add_argument("snippet", help="snippet name (quote names with spaces)")
    p.set_defaults(handler=_cmd_mask)

    p = subparsers.add_parser("problem", help="print the full prompt for one snippet")
    p.add_argument("pset", help="pset folder holding papers.yaml")
    p.add_argument("task", help="task id")
    p.add_argument("snippet", help="snippet name (quote names with spaces)")
    p.add_argument("--template", choices=TEMPLATES, default="rcb-v2", help="prompt template (default rcb-v2)")
    p.add_argument("--no-paper", action="store_true", help="the without-paper ablation")
    p.set_defaults(handler=_cmd_problem)

    p = subparsers.add_parser(
        "score",
        help="score a published results file (overall_stats.json format)",
        description="Recompute Scaled Pass@1 and Pass@1 per model from per-snippet records.",
    )
    p.add_argument("results", help="results JSON in the original's overall_stats.json format")
    p.add_argument(
        "--contamination",
        choices=("none", "global", "per-model"),
        default="none",
        help="none: all papers; global: the original's one-cutoff rule; per-model: papers after each "
        "model's own cutoff",
    )
    p.add_argument(
        "--global-rule",
        choices=("original", "fixed"),
        default="original",
        help="for --contamination global: compare cutoffs as text like the original, or as dates",
    )
    p.add_argument("--papers", help="papers.yaml whose first_commit_date values the contamination rules use")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(handler=_cmd_score)


def _validation_tasks(path: str, wanted: Sequence[str] | None) -> list[Task]:
    """The tasks ``validate PATH`` means: a pset folder's (all or ``wanted``), or one task folder's inside
    a pset (its registry is the parent's ``papers.yaml``)."""
    folder = os.path.abspath(path)
    if os.path.isfile(os.path.join(folder, REGISTRY)):
        pset = _load_pset(folder)
        return [_get_task(pset, task_id) for task_id in wanted] if wanted else list(pset.tasks)
    parent = os.path.dirname(folder)
    if os.path.isdir(folder) and os.path.isfile(os.path.join(parent, REGISTRY)):
        if wanted:
            raise CliError("--tasks applies to a pset folder, not to one task folder")
        return [_get_task(_load_pset(parent), os.path.basename(folder))]
    raise CliError(f"{path}: neither a pset folder (holding {REGISTRY}) nor a task folder inside one")


def _print_validation(task: Task, report: ValidationReport, out: TextIO) -> None:
    checked = sum(1 for s in report.snippets if s["checked"] is True)
    with_variants = sum(1 for found in report.variants.values() if found.get("variants"))
    timeout = "-" if report.timeout_s is None else f"{report.timeout_s:g} s"
    verdict = "OK" if report.ok else "NOT OK"
    out.write(
        f"{task.id}: {verdict} in {report.duration_s:.1f} s; {checked}/{len(report.snippets)} snippets "
        f"checked by the test, {with_variants}/{len(report.snippets)} with impossible variants; "
        f"reference runs {report.reference_durations_s}; timeout {timeout}\n"
    )
    for finding in report.findings:
        where = f" {finding.location()}" if finding.location() else ""
        out.write(f"  {finding.severity} [{finding.check}]{where}: {finding.message}\n")


def _cmd_validate(args: argparse.Namespace) -> int:
    tasks = _validation_tasks(args.path, args.tasks)
    if args.repeats < 1:
        raise CliError("--repeats must be at least 1")
    if args.workers < 1:
        raise CliError("--workers must be at least 1")
    python = args.python or os.environ.get("RCB_EVAL_PYTHON") or None
    try:
        sandbox = make_sandbox(
            args.sandbox,
            docker_image=os.environ.get("RCB_DOCKER_IMAGE") or None,
            allow_unsandboxed=os.environ.get(ALLOW_VARIABLE) == "1",
        )
        environment = resolve_environment(os.path.abspath(python) if python else None)
        # No verdict cache: a validation proves the task as it runs now.
        runner = Runner(sandbox=sandbox, environment=environment, workers=args.workers)
    except (SandboxUnavailable, EvalEnvironmentError) as exc:
        raise CliError(str(exc)) from exc
    reports = []
    with runner:
        for task in tasks:
            report = validate_task(task, runner=runner, repeats=args.repeats)
            reports.append((task, report))
            if not args.json:
                _print_validation(task, report, sys.stdout)
    ok = all(report.ok for _task, report in reports)
    if args.json:
        doc = {"ok": ok, "tasks": [{"id": task.id, **report.to_dict()} for task, report in reports]}
        json.dump(doc, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    return 0 if ok else 1


def _register_validate(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "validate",
        help="run the validation battery: repeated reference runs, per-snippet impossible variants and "
        "mutation check, oracle, environment and sandbox checks (docs/validation.md)",
        description="Validate tasks through the sandboxed runner; exit 1 when any task is not ok.",
    )
    p.add_argument(
        "path", metavar="PATH", help="a pset folder (papers.yaml + task folders) or one task folder"
    )
    p.add_argument("--tasks", nargs="+", metavar="ID", help="only these task ids of a pset folder")
    p.add_argument("--repeats", type=int, default=5, help="reference runs that must all pass (default 5)")
    p.add_argument("--workers", type=int, default=2, help="parallel runs (default 2)")
    p.add_argument("--sandbox", choices=("local", "docker", "none"), default="local", help="sandbox backend")
    p.add_argument(
        "--python", metavar="PATH", help="evaluation interpreter (default: RCB_EVAL_PYTHON / .venv-eval)"
    )
    p.add_argument("--json", action="store_true", help="print the reports as JSON")
    p.set_defaults(handler=_cmd_validate)


#: Every subcommand registrar, in help order. Another module joins the CLI by being listed here.
REGISTRARS: tuple[Callable[[Any], None], ...] = (
    _register_core,
    evaluate_cli.register,
    _register_validate,
    images_cli.register,
    generate_cli.register,
    portal_cli.register,
)


def build_parser() -> argparse.ArgumentParser:
    """The full parser, with every registrar's subcommands."""
    prog = "rcb" if os.path.basename(sys.argv[0]) == "rcb" else "python -m researchcodebench"
    parser = _Parser(prog=prog, description="ResearchCodeBench core tools.")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    subparsers.required = True
    for register in REGISTRARS:
        register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (0 ok, 1 validation errors found, 2 bad input, 3 and 4 see
    ``evaluate_cli``)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except CliError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return exc.status
    except BrokenPipeError:
        # `... | head` closed the pipe: not an error of ours; silence the interpreter's flush at exit.
        sys.stderr.close()
        return 0
