"""A development-only backend that runs tests directly on the host, WITHOUT isolation.

Untrusted code run this way can read and write anything the user can, reach the network and outlive the
run. It exists for debugging the harness on machines without bubblewrap or Docker and is refused unless
created with ``allowed=True`` (the CLI and the portal turn ``RCB_ALLOW_UNSANDBOXED=1`` into that).
The harness still applies its rlimits (CPU, file size, open files and
``RLIMIT_AS`` for memory); the deadline kills the process group only.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time

from .base import Limits, RunResult, RunSpec, SandboxUnavailable, tail

ALLOW_VARIABLE = "RCB_ALLOW_UNSANDBOXED"


class UnsandboxedRunner:
    """Runs a ``RunSpec`` as a plain subprocess in ``spec.workdir`` (see the module docstring)."""

    name = "none"
    #: Runs share the host: their verdicts are never cached.
    slate = "unsandboxed"

    def __init__(self, *, allowed: bool = False) -> None:
        self.allowed = allowed

    def check(self) -> None:
        """Refuse unless the operator explicitly allowed running untrusted code without a sandbox."""
        if not self.allowed:
            raise SandboxUnavailable(
                "the unsandboxed runner executes untrusted code on the host without any isolation; it is for "
                f"development only and refused unless {ALLOW_VARIABLE}=1 is set"
            )

    def harness_limits(self, limits: Limits) -> dict[str, int]:
        """Without cgroups, memory falls back to RLIMIT_AS (processes are not limited)."""
        return {
            "cpu_s": limits.effective_cpu_s(),
            "file_size_bytes": limits.file_size_mb * 1024 * 1024,
            "open_files": limits.open_files,
            "address_space_bytes": limits.memory_mb * 1024 * 1024,
        }

    def run(self, spec: RunSpec) -> RunResult:
        """Run to the end or the deadline; the whole process group is killed at the deadline."""
        try:
            self.check()
        except SandboxUnavailable as exc:
            return RunResult(exit_code=None, duration_s=0.0, infra_error=str(exc))
        started = time.monotonic()
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            try:
                proc = subprocess.Popen(
                    list(spec.argv),
                    cwd=spec.workdir,
                    env=dict(spec.env),
                    stdin=subprocess.PIPE if spec.stdin is not None else subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    start_new_session=True,
                )
            except OSError as exc:
                return RunResult(exit_code=None, duration_s=0.0, infra_error=f"cannot start the test: {exc}")
            if spec.stdin is not None and proc.stdin is not None:
                try:
                    proc.stdin.write(spec.stdin)
                    proc.stdin.close()
                except OSError:
                    pass
            timed_out = False
            try:
                proc.wait(timeout=spec.limits.timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
            duration = time.monotonic() - started
            out.seek(0)
            err.seek(0)
            code = proc.returncode
            return RunResult(
                exit_code=code if code >= 0 else None,
                duration_s=duration,
                stdout=tail(out.read()),
                stderr=tail(err.read()),
                signal=-code if code < 0 else None,
                timed_out=timed_out,
            )
