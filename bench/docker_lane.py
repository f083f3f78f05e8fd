"""The docker lane against the local sandbox, side by side in one run (issue 19):

1. **Verdicts.** Every example task's reference run, and for every snippet its reference body, its blank body
   and ``--mutants`` mutants of its reference (``mutants.draw`` with a fixed seed), judged by the local
   sandbox (cold runs) and by the docker sandbox (one container per run); every pair must agree on outcome,
   category and test counts. Prints the disagreements and exits 1 when there is one.
2. **Per-run overhead.** ``--repeats`` runs of a toy task (no heavy import: the sandbox's own cost) and of
   the rmsnorm example (torch), each through the local sandbox warm (forked from a warm server) and cold, and
   through the docker sandbox; medians side by side.

Needs a Docker engine with the default evaluation image: ``scripts/docker-engine.sh start``, then
``scripts/docker-engine.sh base-image`` and ``python -m researchcodebench images`` (``make bench-docker``
does all three). Usage: ``python bench/docker_lane.py [--tasks ID ...] [--mutants N] [--repeats N]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from researchcodebench import mutants  # noqa: E402
from researchcodebench.environments import default_python  # noqa: E402
from researchcodebench.problems import blank_body  # noqa: E402
from researchcodebench.pset import Snippet, Task, read_pset  # noqa: E402
from researchcodebench.runner import Runner, Verdict  # noqa: E402
from researchcodebench.sandbox.base import Sandbox  # noqa: E402
from researchcodebench.sandbox.docker import DockerSandbox  # noqa: E402
from researchcodebench.sandbox.local import LocalSandbox  # noqa: E402

EXAMPLES = REPO / "examples" / "pset"
SEED = "docker-lane"


def items(
    tasks: list[Task], mutants_per_snippet: int, *, references: bool = True
) -> list[tuple[Task, Snippet | None, str, str | None]]:
    """(task, snippet, label, code): the reference run of each task (snippet None), then per snippet its
    reference body (unless ``references`` is false: the reference run holds them all), blank body and
    mutants."""
    out: list[tuple[Task, Snippet | None, str, str | None]] = []
    for task in tasks:
        out.append((task, None, "reference run", None))
        for snippet in task.snippets:
            if references:
                out.append((task, snippet, "reference", snippet.code))
            out.append((task, snippet, "blank", blank_body(snippet)))
            for i, mutant in enumerate(
                mutants.draw(snippet.code, mutants_per_snippet, f"{SEED}:{snippet.name}")
            ):
                out.append(
                    (task, snippet, f"mutant {i + 1} ({mutant.kind}, line {mutant.line})", mutant.code)
                )
    return out


def key(verdict: Verdict) -> tuple[object, ...]:
    """What must agree between the two sandboxes."""
    return (verdict.outcome, verdict.category, verdict.tests_run, verdict.tests_failed, verdict.tests_skipped)


def judge(runner: Runner, task: Task, snippet: Snippet | None, code: str | None) -> Verdict:
    if snippet is None:
        return runner.reference(task)
    return runner.evaluate(task, snippet, code)


def compare(
    tasks: list[Task],
    *,
    local: Sandbox,
    docker: Sandbox,
    mutants_per_snippet: int,
    python: str,
    references: bool = True,
) -> tuple[int, list[str]]:
    """The number of items compared and a line per disagreement."""
    cases = items(tasks, mutants_per_snippet, references=references)

    def lane(runner: Runner) -> list[Verdict]:
        return [judge(runner, task, snippet, code) for task, snippet, _label, code in cases]

    # The two lanes judge the same items in the same order, each in a thread of its own: one run of each lane
    # at a time, as before, but the lanes overlap instead of taking turns (each run is a separate process or
    # container, so the verdicts do not depend on it; the timeouts are the tasks' caps, not calibrated).
    with (
        Runner(sandbox=local, environment=python, warm=False, calibrate=False, workers=1) as here,
        Runner(sandbox=docker, environment=python, warm=False, calibrate=False, workers=1) as there,
        ThreadPoolExecutor(max_workers=2, thread_name_prefix="rcb-lane") as lanes,
    ):
        local_verdicts, docker_verdicts = (
            f.result() for f in [lanes.submit(lane, here), lanes.submit(lane, there)]
        )
    disagreements = []
    for (task, snippet, label, _code), a, b in zip(cases, local_verdicts, docker_verdicts, strict=True):
        if key(a) != key(b):
            where = f"{task.id} / {snippet.name if snippet else '-'} / {label}"
            disagreements.append(
                f"{where}: local {key(a)} ({a.reason[:120]}) vs docker {key(b)} ({b.reason[:120]})"
            )
    return len(cases), disagreements


def overhead(
    tasks: dict[str, Task], *, repeats: int, docker: Sandbox, python: str
) -> list[tuple[str, str, float]]:
    """(task, lane, median seconds of one run's sandbox time) for every task and lane."""
    rows = []
    lanes = {
        "local warm": lambda: Runner(
            sandbox=LocalSandbox(), environment=python, warm=True, calibrate=False, workers=1
        ),
        "local cold": lambda: Runner(
            sandbox=LocalSandbox(), environment=python, warm=False, calibrate=False, workers=1
        ),
        "docker": lambda: Runner(sandbox=docker, environment=python, warm=False, calibrate=False, workers=1),
    }
    for task_id, task in tasks.items():
        snippet = task.snippets[0]
        for lane, make in lanes.items():
            with make() as runner:
                runner.evaluate(task, snippet, snippet.code + "\n" + " " * snippet.indent + "# warm-up")
                times = []
                for i in range(repeats):
                    # A distinct comment per run: the verdict cache must not answer.
                    started = time.monotonic()
                    runner.evaluate(task, snippet, snippet.code + "\n" + " " * snippet.indent + f"# run {i}")
                    times.append(time.monotonic() - started)
            rows.append((task_id, lane, statistics.median(times)))
    return rows


def toy(root: Path) -> Task:
    from tests.researchcodebench.runner_fixtures import toy_task

    return toy_task(root)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", metavar="ID", help="example task ids (default: all)")
    parser.add_argument("--mutants", type=int, default=3, help="mutants per snippet (default 3)")
    parser.add_argument("--repeats", type=int, default=7, help="runs per lane for the overhead (default 7)")
    parser.add_argument("--skip-verdicts", action="store_true", help="measure the overhead only")
    args = parser.parse_args(argv)
    python = default_python()
    docker = DockerSandbox(engine_timeout_s=300)
    docker.check()
    tasks = [t for t in read_pset(EXAMPLES).tasks if not args.tasks or t.id in args.tasks]
    if not args.skip_verdicts:
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="rcb-lane-") as scratch:
            count, disagreements = compare(
                tasks,
                local=LocalSandbox(scratch_root=scratch),
                docker=docker,
                mutants_per_snippet=args.mutants,
                python=python,
            )
        print(
            f"verdicts: {count} items of {len(tasks)} tasks judged by both sandboxes in {time.monotonic() - started:.0f} s; "
            f"{count - len(disagreements)} agree, {len(disagreements)} disagree"
        )
        for line in disagreements:
            print("  DISAGREE", line)
    with tempfile.TemporaryDirectory(prefix="rcb-lane-toy-") as root:
        chosen = {"toy (no heavy import)": toy(Path(root) / "pset")}
        chosen.update({f"{t.id} (torch)": t for t in read_pset(EXAMPLES).tasks if t.id == "rmsnorm"})
        rows = overhead(chosen, repeats=args.repeats, docker=docker, python=python)
    print(f"\nper-run wall time, median of {args.repeats} (one run at a time):")
    by_task: dict[str, dict[str, float]] = {}
    for task_id, lane, seconds in rows:
        by_task.setdefault(task_id, {})[lane] = seconds
    print(
        f"  {'task':<24} {'local warm':>11} {'local cold':>11} {'docker':>9} {'docker/cold':>12} {'docker-cold':>12}"
    )
    for task_id, lanes in by_task.items():
        print(
            f"  {task_id:<24} {lanes['local warm']:>10.3f}s {lanes['local cold']:>10.3f}s {lanes['docker']:>8.3f}s "
            f"{lanes['docker'] / lanes['local cold']:>11.2f}x {lanes['docker'] - lanes['local cold']:>+11.3f}s"
        )
    return 1 if not args.skip_verdicts and disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
