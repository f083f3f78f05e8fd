"""Warm interpreters: one long-lived sandbox per worker that imports the heavy libraries once and forks
a fresh child per run (see ``sandbox/_harness.py`` for the in-sandbox side).

Each ``WarmServer`` is one bubblewrap sandbox (its own cgroup, pid namespace and private ``/tmp``) with a
fixed *work slot*: a host folder bound read-write at ``/task``. Per run the host empties the slot, copies
the prepared task folder into it and sends one request; the server forks, the child runs the test exactly
as the cold harness does, the server enforces the deadline, then kills every other process of its
namespace and wipes ``/tmp``. Children never share module state: each is a fresh fork of a server that
never imports task code. The memory limit of the sandbox is the server's own footprint plus the run's
``memory_mb``; the kernel's OOM killer prefers the child (``oom_score_adj`` 1000).

A server that dies, stops answering or cannot be cleaned is discarded (``ServerLost``); the runner then
re-runs that item cold once.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import shutil
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path

from .environments import Environment
from .sandbox.base import Limits, RunResult
from .sandbox.local import IO_DIR, IO_FILES, TASK_DIR, LocalSandbox, SandboxedProcess, grant_read, read_tail

HARNESS_SOURCE = (Path(__file__).parent / "sandbox" / "_harness.py").read_text()
#: Seconds a server may take to import the heavy libraries before it counts as broken.
START_TIMEOUT_S = 180.0
#: Seconds past a run's deadline the host waits for the server's answer before discarding it (more than the
#: harness's ``KILL_WAIT_S``: the server answers only after the run's leftover processes are gone).
ANSWER_GRACE_S = 30.0
#: Memory allowed to a server while it imports the heavy libraries (before its footprint is known).
_START_MEMORY_MB = 4096
#: What a server is assumed to hold when its footprint cannot be measured (no cgroup): torch imported.
SERVER_ESTIMATE_MB = 400


class ServerLost(RuntimeError):
    """The warm server died, hung or could not clean up; the run's result is unknown."""


def empty_folder(folder: str) -> None:
    """Delete everything inside ``folder`` but keep the folder itself (it is a bind-mount source)."""
    for entry in os.scandir(folder):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            try:
                os.unlink(entry.path)
            except FileNotFoundError:
                pass


class WarmServer:
    """One warm sandbox with one work slot (not thread-safe: one run at a time)."""

    def __init__(
        self,
        sandbox: LocalSandbox,
        env: Environment,
        sandbox_env: dict[str, str],
        *,
        needs_gpu: bool,
        task_dir_mb: int = Limits.task_dir_mb,
    ):
        self.sandbox = sandbox
        self.environment = env
        self.needs_gpu = needs_gpu
        # The size of the server's /task tmpfs, fixed when the sandbox is made.
        self.task_dir_mb = task_dir_mb
        self.base = tempfile.mkdtemp(prefix=f"warm-{os.getpid()}-", dir=_scratch_root(sandbox))
        self.slot = os.path.join(self.base, "task")
        self.io = os.path.join(self.base, "io")
        os.mkdir(self.slot)
        os.mkdir(self.io)
        for folder in (self.base, self.slot):
            os.chmod(folder, 0o755)
        self._log = open(os.path.join(self.base, "server.log"), "wb")  # noqa: SIM115 - closed in close()
        self._buffer = b""
        self._next_id = 0
        self.baseline = 0
        self.preloaded: list[str] = []
        argv = [env.python, "-I", "-B", "-c", HARNESS_SOURCE, "serve", json.dumps(list(env.heavy_modules))]
        try:
            self.box: SandboxedProcess = sandbox.spawn(
                argv,
                python=env.python,
                workdir=self.slot,
                env=sandbox_env,
                limits=Limits(memory_mb=_START_MEMORY_MB, task_dir_mb=task_dir_mb),
                needs_gpu=needs_gpu,
                io_dir=self.io,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._log,
                extra_pids=16,
                copy_task=False,
            )
        except BaseException:
            self._log.close()
            shutil.rmtree(self.base, ignore_errors=True)
            raise
        try:
            ready = self._read_line(time.monotonic() + START_TIMEOUT_S)
            if not ready.get("ready"):
                raise ServerLost(f"the warm server refused to serve: {ready.get('refused')}")
            self.preloaded = list(ready.get("preloaded", []))
            if self.box.cgroup is not None:
                self.baseline = self.box.cgroup.usage()
        except BaseException:
            self.close()
            raise

    def alive(self) -> bool:
        return self.box.popen.poll() is None

    def _read_line(self, deadline: float) -> dict:
        stdout = self.box.popen.stdout
        assert stdout is not None
        fd = stdout.fileno()
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ServerLost("the warm server did not answer in time")
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                raise ServerLost("the warm server exited: " + self.log_tail())
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            return json.loads(line)
        except ValueError as exc:
            raise ServerLost(f"the warm server sent garbage: {line[:200]!r}") from exc

    def log_tail(self) -> str:
        return read_tail(os.path.join(self.base, "server.log"), 2000).decode(errors="replace")

    def run(
        self,
        prepare: Callable[[str], None],
        *,
        spec: dict,
        limits: Limits,
        nonce: str,
    ) -> RunResult:
        """Run one test: ``prepare(slot)`` fills the emptied slot with the task folder, then the server forks a
        child that runs ``spec`` (``Runner.run_spec``) in fresh namespaces of its own.

        Raises ``ServerLost`` when the server cannot give a trustworthy result, or cannot prove that the run
        left nothing behind (the server is then retired).
        """
        if not self.alive():
            raise ServerLost("the warm server is not running: " + self.log_tail())
        if limits.task_dir_mb != self.task_dir_mb:
            raise ServerLost(
                f"the warm server's task folder holds {self.task_dir_mb} MB, not {limits.task_dir_mb}"
            )
        self._reset_slot(prepare)
        oom_before = self._set_run_limits(limits)
        answer = self._exchange(self._request(spec, limits, nonce), limits.timeout_s)
        if not answer.get("clean", False):
            unclean = "; ".join(str(u) for u in answer.get("unclean") or ["unknown"])
            raise ServerLost(f"the warm server could not prove a clean slate after the run: {unclean}")
        oom = self.box.cgroup is not None and self.box.cgroup.oom_kills() > oom_before
        return RunResult(
            exit_code=answer.get("exit_code"),
            duration_s=float(answer.get("duration_s", 0.0)),
            stdout=read_tail(os.path.join(self.io, "stdout")),
            stderr=read_tail(os.path.join(self.io, "stderr")),
            signal=answer.get("signal"),
            timed_out=bool(answer.get("timed_out")),
            oom=oom,
        )

    def _reset_slot(self, prepare: Callable[[str], None]) -> None:
        """Empty the work slot and the output files, then let ``prepare`` fill the slot for the next run."""
        empty_folder(self.slot)
        for name in IO_FILES:
            # Truncated in place: the sandbox sees these very files (bound one by one), not the folder.
            open(os.path.join(self.io, name), "wb").close()
        prepare(self.slot)
        grant_read(self.slot)

    def _set_run_limits(self, limits: Limits) -> int:
        """Set the server's cgroup to the run's memory (on top of the server's own footprint) and CPU quota;
        returns the cgroup's OOM kill count before the run (0 without a cgroup)."""
        if self.box.cgroup is None:
            return 0
        self.box.cgroup.set_memory(self.baseline + limits.memory_mb * 1024 * 1024)
        if self.box.cgroup.layout.cpu:
            self.box.cgroup.set_cpu_quota(limits.cpu_quota)
        return self.box.cgroup.oom_kills()

    def _request(self, spec: dict, limits: Limits, nonce: str) -> dict:
        """The next ``run`` request for the server (a new id), with where the child works and writes."""
        self._next_id += 1
        return {
            **spec,
            "op": "run",
            "id": self._next_id,
            "workdir": TASK_DIR,
            "stdout": f"{IO_DIR}/stdout",
            "stderr": f"{IO_DIR}/stderr",
            "nonce": nonce,
            "timeout_s": limits.timeout_s,
            "isolation": self.sandbox.isolation(limits, read_only=[f"{IO_DIR}/{n}" for n in IO_FILES]),
        }

    def _exchange(self, request: dict, timeout_s: float) -> dict:
        """Send ``request`` and wait for the server's answer to it (answers to older requests are skipped),
        for at most the run's ``timeout_s`` plus ``ANSWER_GRACE_S``."""
        stdin = self.box.popen.stdin
        assert stdin is not None
        try:
            stdin.write((json.dumps(request) + "\n").encode())
            stdin.flush()
        except OSError as exc:
            raise ServerLost(f"cannot reach the warm server: {exc}") from exc
        deadline = time.monotonic() + timeout_s + ANSWER_GRACE_S
        while True:
            answer = self._read_line(deadline)
            if answer.get("id") == request["id"]:
                return answer

    def close(self) -> None:
        """Stop the server and remove everything it used."""
        try:
            if self.alive() and self.box.popen.stdin is not None:
                self.box.popen.stdin.write(b'{"op": "exit"}\n')
                self.box.popen.stdin.flush()
                self.box.popen.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired, ValueError):
            pass
        self.box.close()
        self._log.close()
        shutil.rmtree(self.base, ignore_errors=True)


def _scratch_root(sandbox: LocalSandbox) -> str:
    os.makedirs(sandbox.scratch_root, exist_ok=True)
    return sandbox.scratch_root


_LIVE_POOLS: weakref.WeakSet[WarmPool] = weakref.WeakSet()


@atexit.register
def _close_live_pools() -> None:
    # A runner that was never closed must not leave cgroups and scratch folders behind at exit.
    for pool in list(_LIVE_POOLS):
        pool.close()


class WarmPool:
    """Idle warm servers per (environment, needs_gpu); at most ``size`` per key exist at once.

    With per-task environments a worker may warm many environments; ``memory_budget_mb`` bounds what the
    servers hold together (their measured footprint, else ``SERVER_ESTIMATE_MB`` each): when a new server
    takes the total over it, idle servers of the least recently used other environments are closed.
    """

    def __init__(
        self,
        sandbox: LocalSandbox,
        sandbox_env: Callable[[bool], dict[str, str]],
        size: int = 2,
        *,
        task_dir_mb: int = Limits.task_dir_mb,
        memory_budget_mb: int | None = None,
    ):
        self.sandbox = sandbox
        self.task_dir_mb = task_dir_mb
        self.memory_budget_mb = memory_budget_mb
        self._live: dict[tuple[str, bool], list[WarmServer]] = {}
        self._last_used: dict[tuple[str, bool], float] = {}
        self.sandbox_env = sandbox_env
        self.size = max(1, size)
        self._idle: dict[tuple[str, bool], list[WarmServer]] = {}
        self._count: dict[tuple[str, bool], int] = {}
        self._lock = threading.Condition()
        self._closed = False
        _LIVE_POOLS.add(self)

    def acquire(self, env: Environment, needs_gpu: bool) -> WarmServer:
        """An idle server for the key, a new one if fewer than ``size`` exist, else wait for one."""
        key = (env.id, needs_gpu)
        with self._lock:
            while True:
                if self._closed:
                    raise ServerLost("the warm pool is closed")
                self._last_used[key] = time.monotonic()
                idle = self._idle.setdefault(key, [])
                if idle:
                    return idle.pop()
                if self._count.get(key, 0) < self.size:
                    self._count[key] = self._count.get(key, 0) + 1
                    break
                self._lock.wait()
        try:
            server = WarmServer(
                self.sandbox,
                env,
                self.sandbox_env(needs_gpu),
                needs_gpu=needs_gpu,
                task_dir_mb=self.task_dir_mb,
            )
        except BaseException:
            with self._lock:
                self._count[key] -= 1
                self._lock.notify()
            raise
        with self._lock:
            self._live.setdefault(key, []).append(server)
        self._keep_budget(key)
        return server

    @staticmethod
    def _footprint_mb(server: WarmServer) -> float:
        return server.baseline / (1024 * 1024) if server.baseline else SERVER_ESTIMATE_MB

    def memory_mb(self) -> float:
        """What the live servers hold together (see the class docstring)."""
        with self._lock:
            return sum(self._footprint_mb(s) for group in self._live.values() for s in group)

    def _keep_budget(self, current: tuple[str, bool]) -> None:
        """Close idle servers of the least recently used other keys while the total is over the budget."""
        if self.memory_budget_mb is None:
            return
        doomed: list[WarmServer] = []
        with self._lock:
            total = sum(self._footprint_mb(s) for group in self._live.values() for s in group)
            for key in sorted(self._idle, key=lambda k: self._last_used.get(k, 0.0)):
                if key == current:
                    continue
                while total > self.memory_budget_mb and self._idle[key]:
                    server = self._idle[key].pop()
                    self._forget(key, server)
                    total -= self._footprint_mb(server)
                    doomed.append(server)
            self._lock.notify_all()
        for server in doomed:
            server.close()

    def _forget(self, key: tuple[str, bool], server: WarmServer) -> None:
        # Precondition: self._lock is held.
        self._count[key] -= 1
        live = self._live.get(key, [])
        if server in live:
            live.remove(server)

    def release(self, server: WarmServer, *, broken: bool = False) -> None:
        """Give a server back; a broken (or dead) one is closed and its place freed."""
        key = (server.environment.id, server.needs_gpu)
        if broken or not server.alive() or self._closed:
            server.close()
            with self._lock:
                self._forget(key, server)
                self._lock.notify()
            return
        with self._lock:
            self._idle.setdefault(key, []).append(server)
            self._lock.notify()

    def close(self) -> None:
        """Stop every idle server (servers in use are closed when released)."""
        with self._lock:
            self._closed = True
            servers = [s for group in self._idle.values() for s in group]
            self._idle.clear()
            self._lock.notify_all()
        for server in servers:
            server.close()
