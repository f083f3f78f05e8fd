"""Evaluation speed: the original method against our runner, on every snippet's reference completion.

(a) original: for each snippet, a fresh copy of the task folder with the completion filled in, then a cold
    ``python paper2code_test.py`` (sequential, 60 s timeout); passed = exit 0 and none of the substrings
    ``Error:``, ``Exception:``, ``Traceback``, ``failed`` in stdout/stderr (docs/sandbox.md);
(b) ours: ``Runner`` with the local sandbox, warm interpreters, calibrated timeouts, ``--workers``
    parallel runs (2 by default) and no verdict cache. Its time includes starting the warm servers and
    the calibration (reference) runs.

Prints both wall times, the speed-up and the verdict agreement. Works on any pset folder and interpreter:

    .venv/bin/python bench/eval_speed.py [--pset examples/pset] [--python .venv-eval/bin/python] [--json]
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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from researchcodebench.environments import default_python, resolve_environment  # noqa: E402
from researchcodebench.problems import fill_in  # noqa: E402
from researchcodebench.pset import read_pset  # noqa: E402
from researchcodebench.runner import EvalItem, Runner  # noqa: E402
from researchcodebench.sandbox.local import LocalSandbox  # noqa: E402

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pset", default=str(Path(__file__).resolve().parent.parent / "examples" / "pset"))
    parser.add_argument(
        "--python", default=None, help="evaluation interpreter (default: .venv-eval/bin/python)"
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args(argv)
    python = args.python or default_python()
    environment = resolve_environment(python)
    pset = read_pset(args.pset)
    items = [EvalItem(task, snippet, snippet.code) for task in pset.tasks for snippet in task.snippets]
    if not items:
        print(f"{args.pset}: no snippets", file=sys.stderr)
        return 2

    started = time.monotonic()
    original = [original_verdict(i.task, i.snippet, i.code or "", python)[0] for i in items]
    original_s = time.monotonic() - started

    started = time.monotonic()
    with Runner(
        sandbox=LocalSandbox(), environment=environment, warm=True, calibrate=True, workers=args.workers
    ) as r:
        ours = r.evaluate_batch(items)
    ours_s = time.monotonic() - started

    agree = [a == v.passed for a, v in zip(original, ours, strict=True)]
    report = {
        "pset": args.pset,
        "environment": environment.id,
        "snippets": len(items),
        "original_s": round(original_s, 2),
        "ours_s": round(ours_s, 2),
        "speedup": round(original_s / ours_s, 2) if ours_s else None,
        "agreement": round(sum(agree) / len(agree), 4),
        "original_passed": sum(original),
        "ours_passed": sum(v.passed for v in ours),
        "disagreements": [
            {
                "task": i.task.id,
                "snippet": i.snippet.name,
                "original": a,
                "ours": v.outcome,
                "reason": v.reason,
            }
            for i, a, v in zip(items, original, ours, strict=True)
            if a != v.passed
        ],
    }
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(f"pset {args.pset}: {len(items)} snippets, reference completions, environment {environment.id}")
        print(
            f"(a) original method (cold, sequential): {original_s:8.2f} s  ({report['original_passed']} passed)"
        )
        print(
            f"(b) our runner ({args.workers} workers, warm):   {ours_s:8.2f} s  ({report['ours_passed']} passed)"
        )
        print(f"speed-up {report['speedup']}x; verdict agreement {100 * report['agreement']:.1f}%")
        for row in report["disagreements"]:
            print(
                f"  disagree: {row['task']} / {row['snippet']}: original passed={row['original']}, ours {row['ours']}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
