"""Evaluation speed: the original method against our runner, on every snippet's reference completion and on
AST mutants of it (researchcodebench/mutants.py: operator swap, constant change, comparison flip).

(a) original: for each completion, a fresh copy of the task folder with the completion filled in, then a
    cold ``python paper2code_test.py`` (sequential, 60 s timeout); passed = exit 0 and none of the
    substrings ``Error:``, ``Exception:``, ``Traceback``, ``failed`` in stdout/stderr (docs/sandbox.md);
(b) ours: ``Runner`` with the local sandbox, warm interpreters, calibrated timeouts, every pass confirmed
    against an impossible variant of its test (and so every test of every run run: no fail-fast), runs
    scheduled longest expected first, ``--workers`` parallel runs (2 by default) and no verdict cache. Its
    time includes starting the warm servers and the calibration (reference) runs. The variants are derived
    before, as validation stores them with a task version before any model is evaluated; their derivation
    time is reported apart.

Prints both wall times, the speed-up, the compute floor (the sum of our runs' own durations, the reference
runs' included, divided by the workers: what perfect scheduling with no overhead would take) and the verdict
agreement. A disagreement is judged again by the original method, so that its flakiness shows as such.
Works on any pset folder and interpreter:

    .venv/bin/python bench/eval_speed.py [--pset examples/pset] [--python .venv-eval/bin/python]
        [--mutants-per-kind 1] [--workers 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from researchcodebench.environments import default_python, resolve_environment  # noqa: E402
from researchcodebench.mutants import KINDS, ast_mutants  # noqa: E402
from researchcodebench.problems import fill_in  # noqa: E402
from researchcodebench.pset import read_pset  # noqa: E402
from researchcodebench.runner import EvalItem, Runner  # noqa: E402
from researchcodebench.sandbox.local import LocalSandbox  # noqa: E402
from researchcodebench.variants import VariantStore  # noqa: E402

ORIGINAL_TIMEOUT_S = 60
FAILURE_SUBSTRINGS = ("Error:", "Exception:", "Traceback", "failed")


def original_verdict(task, snippet, code: str, python: str) -> tuple[bool, float]:
    """The original harness's verdict for one completion, and its wall time."""
    started = time.monotonic()
    workdir = tempfile.mkdtemp(prefix="rcb-orig-")
    try:
        folder = os.path.join(workdir, task.id)
        shutil.copytree(task.root, folder, symlinks=True)
        with open(os.path.join(folder, *snippet.file.split("/")), "w", encoding="utf-8") as handle:
            handle.write(fill_in(task.read_text(snippet.file), snippet, code))
        try:
            done = subprocess.run(
                [python, task.manifest.test_entry],
                cwd=folder,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=ORIGINAL_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            return False, time.monotonic() - started
        output = done.stdout + done.stderr
        passed = done.returncode == 0 and not any(s in output for s in FAILURE_SUBSTRINGS)
        return passed, time.monotonic() - started
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def bench_items(pset, per_kind: int) -> tuple[list[EvalItem], list[str]]:
    """Every snippet's reference (kind "reference") and up to ``per_kind`` mutants of each kind."""
    items: list[EvalItem] = []
    kinds: list[str] = []
    for task in pset.tasks:
        for snippet in task.snippets:
            items.append(EvalItem(task, snippet, snippet.code, completion_idx=0))
            kinds.append("reference")
            if per_kind <= 0:
                continue
            for index, mutant in enumerate(ast_mutants(snippet.code or "", per_kind=per_kind), start=1):
                items.append(EvalItem(task, snippet, mutant.code, completion_idx=index))
                kinds.append(mutant.kind)
    return items, kinds


def start_servers(runner: Runner, environment, workers: int) -> float:
    """Start the runner's warm servers (one per worker, in parallel) and return the seconds it took. A
    worker keeps its servers for many batches; the bench starts them once, inside its timed run, and shows
    this fixed cost apart from the batch."""
    if runner.pool is None:
        return 0.0
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=workers) as executor:
        servers = list(executor.map(lambda _: runner.pool.acquire(environment, False), range(workers)))
    for server in servers:
        runner.pool.release(server)
    return time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pset", default=str(Path(__file__).resolve().parent.parent / "examples" / "pset"))
    parser.add_argument(
        "--python", default=None, help="evaluation interpreter (default: .venv-eval/bin/python)"
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--mutants-per-kind",
        type=int,
        default=1,
        help="mutants of each kind (operator, constant, comparison) per snippet; 0: references only",
    )
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args(argv)
    python = args.python or default_python()
    environment = resolve_environment(python)
    pset = read_pset(args.pset)
    items, kinds = bench_items(pset, args.mutants_per_kind)
    if not items:
        print(f"{args.pset}: no snippets", file=sys.stderr)
        return 2

    started = time.monotonic()
    original = [original_verdict(i.task, i.snippet, i.code or "", python)[0] for i in items]
    original_s = time.monotonic() - started

    store_root = tempfile.mkdtemp(prefix="rcb-variants-")
    started = time.monotonic()
    with Runner(
        sandbox=LocalSandbox(),
        environment=environment,
        workers=args.workers,
        variant_store=VariantStore(store_root),
    ) as deriving:
        derived = [
            deriving.snippet_variants(task, snippet) for task in pset.tasks for snippet in task.snippets
        ]
    variants_s = time.monotonic() - started

    started = time.monotonic()
    with Runner(
        sandbox=LocalSandbox(),
        environment=environment,
        warm=True,
        calibrate=True,
        workers=args.workers,
        variant_store=VariantStore(store_root),
    ) as r:
        startup_s = start_servers(r, environment, args.workers)
        batch_started = time.monotonic()
        ours = r.evaluate_batch(items)
        batch_s = time.monotonic() - batch_started
        ours_s = time.monotonic() - started
        references = [
            r.expected_duration_s(task) or 0.0 for task in {i.task.root: i.task for i in items}.values()
        ]
    shutil.rmtree(store_root, ignore_errors=True)
    run_s = sum(v.duration_s for v in ours if not v.cached) + sum(references)
    floor_s = run_s / max(1, args.workers)

    agree = [a == v.passed for a, v in zip(original, ours, strict=True)]
    disagreements = []
    for item, kind, a, v in zip(items, kinds, original, ours, strict=True):
        if a == v.passed:
            continue
        again = original_verdict(item.task, item.snippet, item.code or "", python)[0]
        disagreements.append(
            {
                "task": item.task.id,
                "snippet": item.snippet.name,
                "kind": kind,
                "original": a,
                "original_again": again,
                "ours": v.outcome,
                "reason": v.reason,
            }
        )
    by_kind = {
        kind: {
            "items": kinds.count(kind),
            "agree": sum(1 for k, ok in zip(kinds, agree, strict=True) if k == kind and ok),
            "ours_passed": sum(1 for k, v in zip(kinds, ours, strict=True) if k == kind and v.passed),
        }
        for kind in ("reference", *KINDS)
    }
    report = {
        "pset": args.pset,
        "environment": environment.id,
        "workers": args.workers,
        "items": len(items),
        "snippets": kinds.count("reference"),
        "mutants": len(items) - kinds.count("reference"),
        "original_s": round(original_s, 2),
        "ours_s": round(ours_s, 2),
        "startup_s": round(startup_s, 2),
        "batch_s": round(batch_s, 2),
        "floor_s": round(floor_s, 2),
        "speedup": round(original_s / ours_s, 2) if ours_s else None,
        "variants_s": round(variants_s, 2),
        "snippets_with_variants": sum(1 for found in derived if found.variants),
        "confirmations": dict(Counter(v.confirmation for v in ours if v.confirmation)),
        "over_floor": round(ours_s / floor_s, 2) if floor_s else None,
        "batch_over_floor": round(batch_s / floor_s, 2) if floor_s else None,
        "agreement": round(sum(agree) / len(agree), 4),
        "original_passed": sum(original),
        "ours_passed": sum(v.passed for v in ours),
        "ours_outcomes": dict(Counter(v.category for v in ours)),
        "by_kind": by_kind,
        "disagreements": disagreements,
    }
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(
            f"pset {args.pset}: {len(items)} completions ({report['snippets']} references, "
            f"{report['mutants']} AST mutants), environment {environment.id}"
        )
        print(
            f"(a) original method (cold, sequential): {original_s:8.2f} s  ({report['original_passed']} passed)"
        )
        print(
            f"(b) our runner ({args.workers} workers, warm):   {ours_s:8.2f} s  ({report['ours_passed']} passed)"
        )
        print(f"    of which starting the warm servers:  {startup_s:8.2f} s, the batch {batch_s:.2f} s")
        print(f"    compute floor (run time / workers):  {floor_s:8.2f} s")
        print(
            f"    variants derived before (not in (b)): {variants_s:8.2f} s, "
            f"{report['snippets_with_variants']} of {report['snippets']} snippets have some; "
            f"passes: {report['confirmations']}"
        )
        print(
            f"speed-up {report['speedup']}x; {report['over_floor']}x the floor "
            f"(the batch after start-up {report['batch_over_floor']}x); "
            f"verdict agreement {100 * report['agreement']:.1f}%"
        )
        for kind, row in by_kind.items():
            print(
                f"  {kind:10} {row['items']:4} completions, {row['ours_passed']:4} passed, {row['agree']:4} agree"
            )
        print(
            "  our categories: " + ", ".join(f"{k} {n}" for k, n in sorted(report["ours_outcomes"].items()))
        )
        for row in disagreements:
            print(
                f"  disagree: {row['task']} / {row['snippet']} ({row['kind']}): original passed={row['original']}"
                f" (again: {row['original_again']}), ours {row['ours']}: {row['reason']}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
