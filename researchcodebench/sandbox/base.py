"""The sandbox protocol: how the runner asks a backend to execute one test process.

A backend receives a fully prepared, private working directory (a fresh copy of the task folder with the
completion filled in) and an argv to execute inside it. It must enforce every limit in ``Limits``, kill the
whole process tree at the deadline, deny network access, and leave nothing behind. It reports what happened
as a ``RunResult``; turning that into a verdict (passed/failed/timeout/oom/...) is the runner's job.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

#: Output kept per stream, from the end: enough for a traceback, bounded so a flood cannot fill memory.
OUTPUT_TAIL_BYTES = 16 * 1024


@dataclass(frozen=True)
class Limits:
    """Resource limits for one run. ``timeout_s`` is wall-clock; ``cpu_s`` defaults to a multiple of it.

    ``task_dir_mb`` caps everything the run can write into its task folder (the backend gives it a private,
    size-limited copy, so a run can never fill the host's disk); ``cpu_quota`` is the CPU bandwidth of the
    whole run in cores (1.5 = one and a half cores however many processes it starts), so a busy loop or a
    fork bomb cannot starve the host.
    """

    timeout_s: float = 60.0
    memory_mb: int = 4096
    max_procs: int = 64
    cpu_s: int | None = None
    file_size_mb: int = 256
    open_files: int = 256
    task_dir_mb: int = 1024
    cpu_quota: float = 1.0

    def __post_init__(self) -> None:
        if not self.task_dir_mb > 0:
            raise ValueError(f"Limits.task_dir_mb must be > 0, got {self.task_dir_mb!r}")
        if not self.cpu_quota > 0:
            raise ValueError(f"Limits.cpu_quota must be > 0 (cores), got {self.cpu_quota!r}")

    def effective_cpu_s(self) -> int:
        return self.cpu_s if self.cpu_s is not None else int(self.timeout_s * 2) + 5

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Limits:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


@dataclass(frozen=True)
class RunSpec:
    """One process to run. ``workdir`` is a host path the backend may mount read-write as the task folder.

    ``env`` is the complete environment of the process (already reduced to an allow-list by the runner).
    ``hidden_paths`` are paths relative to ``workdir`` that must not be visible inside the sandbox
    (oracle files the task marks as hidden). ``python`` is the evaluation interpreter for local backends;
    ``image`` the container image for the docker backend.
    """

    workdir: str
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    needs_gpu: bool = False
    python: str | None = None
    image: str | None = None
    hidden_paths: tuple[str, ...] = ()
    stdin: bytes | None = None
    #: False when the process copies the task folder into ``/task`` itself (the harness does, in the fresh
    #: namespaces it makes for a run); backends that always start a fresh container may ignore it.
    copy_task: bool = True


@dataclass(frozen=True)
class RunResult:
    """What a backend observed. Exactly one of the terminal conditions explains a non-zero end.

    ``exit_code`` is the process's exit status (None if it was killed by a signal); ``signal`` the killing
    signal; ``timed_out`` means the backend killed it at the deadline; ``oom`` that the memory limit was hit
    (kernel OOM kill or cgroup event); ``infra_error`` that the sandbox itself failed (the test never ran
    properly), with a human-readable reason.
    """

    exit_code: int | None
    duration_s: float
    stdout: bytes = b""
    stderr: bytes = b""
    signal: int | None = None
    timed_out: bool = False
    oom: bool = False
    infra_error: str | None = None


@runtime_checkable
class Sandbox(Protocol):
    """A backend that executes a ``RunSpec`` in isolation."""

    name: str

    def check(self) -> None:
        """Raise ``SandboxUnavailable`` with a clear, actionable message if this backend cannot run here."""

    def run(self, spec: RunSpec) -> RunResult:
        """Run the process to completion or to its deadline; never raise for a misbehaving child."""


@runtime_checkable
class WarmCapableSandbox(Sandbox, Protocol):
    """A backend that can also host warm interpreters (``researchcodebench.warm``): long-lived sandboxed
    processes, each with a private folder under ``scratch_root``, that serve many runs by forking.

    The runner keeps warm pools only for backends with this capability (checked structurally, so a wrapper
    or a new backend qualifies by providing it); every other backend runs each test cold.
    """

    scratch_root: str
    #: "fresh": every run gets namespaces of its own from the harness (``isolation``).
    slate: str

    def isolation(self, limits: Limits, *, read_only: Sequence[str] = ()) -> dict:
        """What the harness mounts for one run in its fresh namespaces (see ``LocalSandbox.isolation``)."""

    def spawn(
        self,
        argv: Sequence[str],
        *,
        python: str,
        workdir: str,
        env: dict[str, str],
        limits: Limits,
        **options: Any,
    ) -> Any:
        """Start one sandboxed process and return its handle (see ``LocalSandbox.spawn`` for the options)."""


class SandboxUnavailable(RuntimeError):
    """The backend cannot work on this machine (missing bubblewrap, no Docker engine, ...)."""


def tail(data: bytes, limit: int = OUTPUT_TAIL_BYTES) -> bytes:
    """The last ``limit`` bytes of ``data`` (what is kept of a stream)."""
    return data if len(data) <= limit else data[-limit:]
