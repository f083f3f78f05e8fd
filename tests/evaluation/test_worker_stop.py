"""Clean stops (issue 19 item 5): TERM to a busy worker's main process, TERM to its whole process group
(what systemd sends) and Ctrl-C each stop it and everything it started within 15 s; the task it was running
goes back to the queue. Real processes: a Celery worker validating a task whose test sleeps."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from contributions.models import Proposal, ProposalRevision
from tests.conftest import wait_for
from tests.evaluation.test_validation_job import sleepy_task, submit, zipped
from tests.factories import EXAMPLE_MANIFEST

pytestmark = pytest.mark.slow
STOP_BUDGET_S = 15


def _descendants(root: int) -> set[int]:
    """Pids of every process below ``root`` (by parent pid), sandboxes in their own pid namespaces included:
    the host still sees them."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = set(), {root}
    while frontier:
        children = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= children
        frontier = children
    return found


def _alive(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.add(pid)
    return alive


@pytest.mark.parametrize("how", ["TERM to the main process", "TERM to the process group", "Ctrl-C"])
def test_a_busy_worker_stops_with_everything_it_started_within_15_s(start_worker, settings, tmp_path, how):
    settings.RCB_VALIDATION_LIMIT_S = 600
    worker = start_worker(
        "eval-cpu",
        concurrency=1,
        extra_env={"RCB_VERDICT_CACHE": "0", "RCB_VALIDATION_LIMIT_S": "600"},
    )
    proposal = submit("stop-me", zipped(sleepy_task(tmp_path / "sleepy", sleep_s=600)), EXAMPLE_MANIFEST)
    revision = proposal.revisions.get()

    def sleeping_in_a_mutant() -> bool:
        revision.refresh_from_db()
        stages = [entry["stage"] for entry in revision.validation_progress]
        return (
            revision.validation_status == ProposalRevision.ValidationStatus.RUNNING and "reference" in stages
        )

    wait_for(sleeping_in_a_mutant, timeout=120, what="the validation to reach its sleeping mutants")
    started_by_worker = _descendants(worker.proc.pid)
    # The pool process, and below it a warm server's bwrap and the sandboxed interpreters.
    assert len(started_by_worker) >= 3, started_by_worker
    time.sleep(1)
    started = time.monotonic()
    if how == "TERM to the main process":
        os.kill(worker.proc.pid, signal.SIGTERM)
    elif how == "TERM to the process group":
        os.killpg(worker.proc.pid, signal.SIGTERM)
    else:
        os.kill(worker.proc.pid, signal.SIGINT)
    try:
        worker.proc.wait(timeout=STOP_BUDGET_S + 15)
    except Exception:
        worker.kill()
        raise AssertionError(f"the worker did not stop ({how}):\n{worker.log()[-3000:]}") from None
    stopped = time.monotonic() - started
    wait_for(
        lambda: not _alive(started_by_worker), timeout=3, what="everything the worker started to be gone"
    )
    assert stopped <= STOP_BUDGET_S, f"{how}: stopped after {stopped:.1f} s"
    print(f"{how}: the busy worker stopped in {stopped:.1f} s")
    # The validation was not lost: its message is back in the queue for the next worker (or the watchdog
    # fails it at its deadline), never silently finished.
    proposal.refresh_from_db()
    assert proposal.state in (Proposal.State.VALIDATING, Proposal.State.SUBMITTED)
