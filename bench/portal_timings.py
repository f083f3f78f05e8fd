"""The portal's speed goals that the test suite no longer asserts (tests assert behaviour, never speed: the
suite must pass on a busy machine). Not part of the test suite.

Runs the two tests that do the timed work, on the configured database and broker (the README's defaults when
``DATABASE_URL`` and ``CELERY_BROKER_URL`` are unset), and reads the durations they print:

- **published import**: the shipped fixture of the paper's results (32 models x 212 snippets) imported with
  every score verified and the board aggregated (``tests/evaluation/test_published.py``); goal 30 s;
- **two-worker generated run**: a run of a fake LLM's answers to every example snippet, generated and tested by
  two real Celery workers, each pass confirmed against an impossible variant (``tests/evaluation/
  test_workers.py``); goal 45 s.

Usage: ``.venv/bin/python bench/portal_timings.py [--repeat 3]``; exit 1 when a median misses its goal.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: name -> (pytest node id, pattern of the line the test prints, goal in seconds)
GOALS = {
    "published import": (
        "tests/evaluation/test_published.py::test_shipped_fixture_reproduces_the_papers_headline_scores",
        r"published import of the shipped fixture: ([0-9.]+) s",
        30.0,
    ),
    "two-worker generated run": (
        "tests/evaluation/test_workers.py::"
        "test_generated_run_on_the_example_pset_with_two_workers_scores_like_the_core_library",
        r"run of \d+ completions with 2 workers: ([0-9.]+) s",
        45.0,
    ),
}


def measure(node: str, pattern: str) -> float:
    env = dict(os.environ)
    env.setdefault("DJANGO_SECRET_KEY", "bench-only-key-9fQ2mX7vLk4Tz8Rw3Nc6Hb1Yd5Gs0Pj-not-for-production")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", node],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    found = re.search(pattern, done.stdout)
    if done.returncode != 0 or found is None:
        raise SystemExit(
            f"{node} failed (exit {done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-2000:]}"
        )
    return float(found.group(1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    missed = 0
    print(
        f"database: {os.environ.get('DATABASE_URL', 'sqlite (default)')}, "
        f"broker: {os.environ.get('CELERY_BROKER_URL', 'filesystem:// (default)')}"
    )
    for name, (node, pattern, goal) in GOALS.items():
        times = [measure(node, pattern) for _ in range(args.repeat)]
        median = statistics.median(times)
        verdict = "ok" if median <= goal else "MISSED"
        missed += median > goal
        shown = ", ".join(f"{t:.1f}" for t in times)
        print(f"{name:26} median {median:6.1f} s (runs: {shown}; goal {goal:.0f} s): {verdict}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
