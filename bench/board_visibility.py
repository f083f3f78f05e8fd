"""How long a recorded verdict takes to show on the board under load (issue 21's 10 s), for
``bench/mixed_load.py``. Not part of the test suite.

What is observed: the worker records the verdicts of the bench's generated runs one by one, and the read
API's leaderboard of their release, unfinished runs included (``BOARD_QUERY``), shows each run's row with
``snippets``, the snippets that have a result counting for the model (infrastructure-tier results never
count). With one completion per snippet, every result of record that is not infrastructure-tier adds one.

- ``BoardPoller`` (a thread of the bench's process, its own keep-alive connection) asks for that table every
  ``interval`` seconds during the load and for a grace period after it, and notes when each answer came
  back and every row's ``snippets``.
- ``latencies`` then reads, from the database, when each counted result was recorded (``TestResult.
  created_at``, stamped by the worker inside the transaction that records it, before it commits) and
  takes, for the k-th counted result of a run, the first answer received after it whose row of that run
  shows at least k snippets: record -> visible, an upper bound (the answer's arrival, not its rendering).

A run's row leaves the board when the bench starts the model's next run (the board shows the latest run of
a model per setting): a result not yet seen by then is *superseded* (counted apart, not measured). A
result never seen on a board that still showed its run is *not seen* (a failure). Only results recorded
after the first answer and before the load's end are measured.
"""

from __future__ import annotations

import http.client
import json
import math
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlencode

#: the acceptance: a result is on the board within this many seconds of being recorded
VISIBLE_WITHIN_S = 10.0
#: issue 37: the 95th percentile of record -> visible at most this (the board's staleness bound under load)
VISIBLE_P95_S = 1.0


def board_path(release: str) -> str:
    """The read API's leaderboard of ``release``, unfinished runs included, both paper settings."""
    return "/api/v1/leaderboard/?" + urlencode(
        {"release": release, "include_unfinished": "true", "paper": "any"}
    )


@dataclass
class Poll:
    """One answer: when it came back (``time.time()``) and ``snippets`` per run id on the board."""

    received: float
    snippets: dict[int, int]


class BoardPoller:
    """Polls ``path`` on 127.0.0.1:``port`` every ``interval`` s, in a thread of its own, from ``start()``
    until ``stop_at`` (``time.time()``). ``latencies_ms``/``statuses``/``failures`` keep every request for
    the load's table (an answer that is not 200 or not JSON is a failure, its poll ignored)."""

    def __init__(self, *, port: int, path: str, stop_at: float, interval: float = 0.5) -> None:
        self.port, self.path, self.stop_at, self.interval = port, path, stop_at, interval
        self.polls: list[Poll] = []
        self.latencies_ms: list[float] = []
        self.statuses: list[int] = []
        self.failures: list[str] = []
        self._thread = threading.Thread(target=self._loop, name="board poller", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self) -> None:
        """Wait for the last poll (at most ``stop_at`` plus one request)."""
        self._thread.join()

    def _loop(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        while time.time() < self.stop_at:
            started = time.perf_counter()
            self._poll(conn)
            time.sleep(max(0.0, self.interval - (time.perf_counter() - started)))
        conn.close()

    def _poll(self, conn: http.client.HTTPConnection) -> None:
        started = time.perf_counter()
        try:
            conn.request("GET", self.path)
            response = conn.getresponse()
            status, body = response.status, response.read()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            status, body = -1, f"{type(exc).__name__}: {exc}".encode()
        received = time.time()
        self.latencies_ms.append((time.perf_counter() - started) * 1000)
        self.statuses.append(status)
        try:
            rows = json.loads(body)["results"] if status == 200 else None
        except (ValueError, KeyError, TypeError):
            rows = None
        if rows is None:
            self.failures.append(f"HTTP {status}: {body[:300].decode(errors='replace')}")
            return
        self.polls.append(Poll(received, {r["run_id"]: r["snippets"] for r in rows}))


def recorded_at(run_ids: list[int]) -> dict[int, list[float]]:
    """Per run, when each result of record that counts on the board (not infrastructure-tier) was
    recorded, in order (``time.time()`` seconds)."""
    from evaluation.models import TestResult

    out: dict[int, list[float]] = {pk: [] for pk in run_ids}
    rows = (
        TestResult.objects.filter(completion__run_id__in=run_ids)
        .exclude(tier=TestResult.Tier.INFRASTRUCTURE)
        .order_by("created_at", "pk")
        .values_list("completion__run_id", "created_at")
    )
    for run_id, created in rows:
        out[run_id].append(created.timestamp())
    return out


def _first_seen(
    polls: list[Poll], run_id: int, k: int, recorded: float, later: set[int]
) -> tuple[str, float | None]:
    """("seen", seconds) at the first answer after ``recorded`` whose row of ``run_id`` shows at least
    ``k`` snippets; ("superseded", None) when the run left the board for one of ``later`` (the same
    model's next runs) first; ("not seen", None) when the answers ran out."""
    for poll in polls:
        if poll.received < recorded:
            continue
        shown = poll.snippets.get(run_id)
        if shown is not None and shown >= k:
            return "seen", poll.received - recorded
        if shown is None and not later.isdisjoint(poll.snippets):
            return "superseded", None
    return "not seen", None


def latencies(polls: list[Poll], run_ids: list[int], until: float) -> dict:
    """Record -> visible for every counted result of ``run_ids`` (one model's runs, each started when the
    one before was final) recorded between the first answer and ``until``: seconds of those seen, how many were superseded or not seen, the PASS verdict (at least
    one seen, none not seen, the slowest within ``VISIBLE_WITHIN_S`` and the 95th percentile within
    ``VISIBLE_P95_S``) and, per run on the board, its count
    on the last answer that showed it against the results recorded by then (a check of what is observed:
    equal, or a result behind). ``evidence``: per run, the recorded times and every answer's count (null:
    not on the board), what the verdicts were read from."""
    if not polls:
        return {"seen_s": [], "superseded": 0, "not_seen": 0, "pass": False, "runs": {}}
    start = polls[0].received
    seen: list[float] = []
    outcome = {"superseded": 0, "not seen": 0}
    runs = {}
    stamped = recorded_at(run_ids)
    for run_id, stamps in stamped.items():
        later = {pk for pk in run_ids if pk > run_id}
        for k, recorded in enumerate(stamps, start=1):
            if not start <= recorded <= until:
                continue
            state, seconds = _first_seen(polls, run_id, k, recorded, later)
            if seconds is not None:
                seen.append(seconds)
            else:
                outcome[state] += 1
        last = next((p for p in reversed(polls) if run_id in p.snippets), None)
        if last is not None:
            recorded_then = sum(stamp <= last.received for stamp in stamps)
            runs[run_id] = {"recorded": recorded_then, "board_last": last.snippets[run_id]}
    ok = (
        bool(seen)
        and not outcome["not seen"]
        and max(seen) <= VISIBLE_WITHIN_S
        and sorted(seen)[max(0, math.ceil(0.95 * len(seen)) - 1)] <= VISIBLE_P95_S
    )
    return {
        "seen_s": sorted(seen),
        "superseded": outcome["superseded"],
        "not_seen": outcome["not seen"],
        "pass": ok,
        "runs": runs,
        "window": [start, until],
        "evidence": {
            run_id: {
                "recorded": stamps,
                "shown": [(p.received, p.snippets.get(run_id)) for p in polls],
            }
            for run_id, stamps in stamped.items()
        },
    }
