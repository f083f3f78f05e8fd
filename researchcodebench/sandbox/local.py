"""The local sandbox: bubblewrap namespaces + cgroups + rlimits (the default backend; works as root, no Docker).

Every run (or warm server) gets: all namespaces unshared (no network: only a private loopback, nothing of
the host is reachable), an unprivileged uid with no capabilities, ``--die-with-parent`` and
``--new-session``, a read-only root holding ``/usr`` and the evaluation interpreter's folders only, a
minimal ``/etc`` (loader cache and a two-line ``passwd``; never ``shadow``), a fresh ``/proc``, a minimal
``/dev`` (NVIDIA devices only for tasks that need a GPU), size-capped private ``/tmp`` and ``/dev/shm``,
a private, size-limited tmpfs at ``/task`` (the working directory) into which the prepared task folder is
copied from a read-only view of it at ``/run/rcb-src``, and an environment reduced to what the runner
passes. What a run writes into its task folder therefore lives in the sandbox's memory (charged to its
cgroup), never on the host's disk, and vanishes with the sandbox; a write past ``Limits.task_dir_mb`` fails
with ENOSPC. The only host files a sandbox writes are the two output files of a warm server, which the
host creates and binds one by one (the sandbox cannot create files next to them).

Limits: memory, process count and CPU bandwidth through a cgroup per run (v2 if the unified tree has the
controllers, else the v1 ``memory``, ``pids`` and ``cpu`` hierarchies; this machine has v1 controllers and
an empty v2 tree), CPU time, file size and open files through rlimits set by the harness. Without a usable
cgroup the memory limit falls back to ``RLIMIT_AS`` (noted in ``LocalSandbox.notes``) and the process
limit to ``RLIMIT_NPROC``, which counts every process of the uid and is therefore weaker; without a cpu
controller (v2 ``cpu.max`` or v1 ``cpu.cfs_quota_us``) the CPU quota is not enforced (also noted) and only
the CPU-time rlimit bounds a run. At the deadline the outer
bwrap is killed: the sandbox's init dies with it (``--die-with-parent``), the kernel then kills every
process of the pid namespace, and the cgroup is emptied and removed. Memory-limit kills are read from the
cgroup's OOM counter.
"""

from __future__ import annotations

import functools
import glob
import itertools
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import IO

from ..environments import resolve_environment
from .base import Limits, RunResult, RunSpec, SandboxUnavailable

#: Where the task folder appears inside the sandbox (also the working directory); as in the docker backend.
TASK_DIR = "/task"
#: Where a warm server's per-run output files live inside its sandbox.
IO_DIR = "/run/rcb-io"
#: The warm server's output files (created by the host in its io folder, bound one by one).
IO_FILES = ("stdout", "stderr")
#: Where the prepared task folder is visible read-only inside the sandbox (copied from here into /task).
SOURCE_DIR = "/run/rcb-src"
#: Exit status of the copy step when the task folder cannot be copied into /task (too big for the limit).
_TASK_COPY_FAILED = 112
#: CFS period of the CPU quota (the kernel's default): short enough that a throttled run stays responsive.
_CPU_PERIOD_US = 100_000
_SANDBOX_UID = 65534
#: Device nodes of a sandbox's /dev.
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
#: Run first inside a sandbox that bwrap set up as uid 0 of its namespace (the host runs as root): lift the
#: covers bwrap puts on parts of /proc (the harness mounts a /proc of its own for each run, which a covered
#: /proc forbids; uid 65534 cannot write what they cover), then become uid 65534 (host uid 65534) for good,
#: with no capability left.
DROP_PREFIX = [
    "/bin/sh",
    "-c",
    "umount -n /proc/irq 2>/dev/null; umount -n /proc/bus 2>/dev/null; "
    f'exec setpriv --reuid={65534} --regid={65534} --clear-groups --inh-caps=-all -- "$@"',
    "rcb-drop",
]
#: Seconds the host waits for bwrap to say which process to map.
_USERNS_TIMEOUT_S = 30.0
#: Size of a run's /dev/shm.
SHM_MB = 64
_CGROUP_JOIN_FAILED = 111
_counter = itertools.count()

# PR_SET_PDEATHSIG (what --die-with-parent uses) fires when the *thread* that forked bwrap exits. Warm
# servers outlive the worker threads of one batch, so they are always spawned from this one thread.
_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rcb-spawner")


def _read(path: str) -> str:
    with open(path) as handle:
        return handle.read()


def _write(path: str, value: str) -> None:
    with open(path, "w") as handle:
        handle.write(value)


def _own_cgroup(controller: str) -> str | None:
    """This process's cgroup path in the v1 hierarchy of ``controller`` ("" for v2), from /proc."""
    try:
        lines = _read("/proc/self/cgroup").splitlines()
    except OSError:
        return None
    for line in lines:
        _num, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return path
    return None


@dataclass(frozen=True)
class CgroupLayout:
    """Where run cgroups are created: ``mode`` "v2" or "v1"; ``parents`` maps controller -> folder
    ("unified" for v2); ``cpu`` whether the CPU bandwidth controller is usable (v1: a "cpu" parent)."""

    mode: str
    parents: dict[str, str]
    cpu: bool = False


def _try_dir(parent: str) -> bool:
    probe = os.path.join(parent, f"rcb-probe-{os.getpid()}-{next(_counter)}")
    try:
        os.mkdir(probe)
        os.rmdir(probe)
        return True
    except OSError:
        return False


def detect_cgroups(root: str = "/sys/fs/cgroup") -> CgroupLayout | None:
    """The cgroup layout that works here for memory + pids limits, or None."""
    for unified in (root, os.path.join(root, "unified")):
        controllers_file = os.path.join(unified, "cgroup.controllers")
        if not os.path.exists(controllers_file):
            continue
        own = _own_cgroup("") or "/"
        parent = os.path.join(unified, own.lstrip("/"))
        try:
            available = _read(os.path.join(parent, "cgroup.subtree_control")).split()
        except OSError:
            continue
        if {"memory", "pids"} <= set(available) and _try_dir(parent):
            return CgroupLayout("v2", {"unified": parent}, cpu="cpu" in available)
    parents: dict[str, str] = {}
    for controller in ("memory", "pids", "cpu"):
        parent = _v1_parent(root, controller)
        if parent is None:
            if controller == "cpu":
                break
            return None
        parents[controller] = parent
    return CgroupLayout("v1", parents, cpu="cpu" in parents)


def _v1_parent(root: str, controller: str) -> str | None:
    """This process's folder in the v1 hierarchy of ``controller`` if run cgroups can be made there.

    ``root/cpu`` is usually a symlink to the combined ``cpu,cpuacct`` mount, which ``_own_cgroup`` finds
    through the controller list of /proc/self/cgroup."""
    mount = os.path.join(root, controller)
    own = _own_cgroup(controller)
    if own is None or not os.path.isdir(mount):
        return None
    parent = os.path.join(mount, own.lstrip("/"))
    if controller == "cpu" and not os.path.exists(os.path.join(parent, "cpu.cfs_quota_us")):
        return None
    if not os.path.exists(os.path.join(parent, "cgroup.procs")) or not _try_dir(parent):
        return None
    return parent


class RunCgroup:
    """One cgroup (one folder per controller) holding every process of one sandbox."""

    def __init__(self, layout: CgroupLayout, memory_bytes: int, pids: int, cpu_quota: float | None = None):
        self.layout = layout
        name = f"rcb-{os.getpid()}-{next(_counter)}"
        self.dirs = {key: os.path.join(parent, name) for key, parent in layout.parents.items()}
        for folder in self.dirs.values():
            os.mkdir(folder)
        try:
            if layout.mode == "v2":
                folder = self.dirs["unified"]
                _write(os.path.join(folder, "memory.max"), str(memory_bytes))
                if os.path.exists(os.path.join(folder, "memory.swap.max")):
                    _write(os.path.join(folder, "memory.swap.max"), "0")
                _write(os.path.join(folder, "pids.max"), str(pids))
            else:
                self.set_memory(memory_bytes)
                _write(os.path.join(self.dirs["pids"], "pids.max"), str(pids))
            if cpu_quota is not None and layout.cpu:
                self.set_cpu_quota(cpu_quota)
        except OSError:
            self.remove()
            raise

    def set_cpu_quota(self, cores: float) -> None:
        """Allow the cgroup's processes together ``cores`` CPUs' worth of time per CFS period."""
        quota = max(1000, int(cores * _CPU_PERIOD_US))
        if self.layout.mode == "v2":
            _write(os.path.join(self.dirs["unified"], "cpu.max"), f"{quota} {_CPU_PERIOD_US}")
            return
        folder = self.dirs["cpu"]
        _write(os.path.join(folder, "cpu.cfs_period_us"), str(_CPU_PERIOD_US))
        _write(os.path.join(folder, "cpu.cfs_quota_us"), str(quota))

    def cpu_throttled(self) -> int:
        """How many CFS periods the cgroup was held back by its CPU quota (0 without a cpu controller)."""
        folder = self.dirs.get("unified") or self.dirs.get("cpu")
        if folder is None:
            return 0
        try:
            for line in _read(os.path.join(folder, "cpu.stat")).splitlines():
                name, _, value = line.partition(" ")
                if name == "nr_throttled":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def set_memory(self, memory_bytes: int) -> None:
        """Change the memory limit (memory+swap too where the kernel accounts swap: no swapping out)."""
        if self.layout.mode == "v2":
            _write(os.path.join(self.dirs["unified"], "memory.max"), str(memory_bytes))
            return
        folder = self.dirs["memory"]
        limit = os.path.join(folder, "memory.limit_in_bytes")
        memsw = os.path.join(folder, "memory.memsw.limit_in_bytes")
        if os.path.exists(memsw):
            # memsw must stay >= limit: raise memsw first when growing, lower it last when shrinking.
            current = int(_read(limit).strip())
            if memory_bytes >= current:
                _write(memsw, str(memory_bytes))
                _write(limit, str(memory_bytes))
            else:
                _write(limit, str(memory_bytes))
                _write(memsw, str(memory_bytes))
        else:
            _write(limit, str(memory_bytes))

    def usage(self) -> int:
        """Current memory use in bytes."""
        if self.layout.mode == "v2":
            return int(_read(os.path.join(self.dirs["unified"], "memory.current")))
        return int(_read(os.path.join(self.dirs["memory"], "memory.usage_in_bytes")))

    def procs_files(self) -> list[str]:
        return [os.path.join(folder, "cgroup.procs") for folder in self.dirs.values()]

    def oom_kills(self) -> int:
        """How many processes the kernel killed in this cgroup for exceeding its memory limit."""
        if self.layout.mode == "v2":
            path, key = os.path.join(self.dirs["unified"], "memory.events"), "oom_kill"
        else:
            path, key = os.path.join(self.dirs["memory"], "memory.oom_control"), "oom_kill"
        try:
            for line in _read(path).splitlines():
                name, _, value = line.partition(" ")
                if name == key:
                    return int(value)
        except OSError:
            pass
        return 0

    def pids(self) -> list[int]:
        found: set[int] = set()
        for path in self.procs_files():
            try:
                found.update(int(x) for x in _read(path).split())
            except OSError:
                pass
        return sorted(found)

    def kill_all(self, wait_s: float = 5.0) -> bool:
        """SIGKILL every process in the cgroup until it is empty; True when empty."""
        if self.layout.mode == "v2" and os.path.exists(os.path.join(self.dirs["unified"], "cgroup.kill")):
            try:
                _write(os.path.join(self.dirs["unified"], "cgroup.kill"), "1")
            except OSError:
                pass
        deadline = time.monotonic() + wait_s
        while True:
            pids = self.pids()
            if not pids:
                return True
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)

    def remove(self) -> None:
        """Remove the cgroup folders (they must be empty of processes)."""
        for folder in self.dirs.values():
            for _ in range(100):
                try:
                    os.rmdir(folder)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)


def _owner_pid(name: str) -> int | None:
    """The host pid in a ``rcb-<pid>-<n>`` cgroup or ``box-<pid>-...``/``warm-<pid>-...`` folder name."""
    parts = name.split("-")
    if len(parts) >= 3 and parts[0] in ("rcb", "box", "warm") and parts[1].isdigit():
        return int(parts[1])
    return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _ints(path: str) -> list[int]:
    try:
        return [int(x) for x in _read(path).split()]
    except (OSError, ValueError):
        return []


class SandboxedProcess:
    """A running bwrap sandbox: the Popen of the outer bwrap, its cgroup and its temporary files."""

    def __init__(self, popen: subprocess.Popen, cgroup: RunCgroup | None, scratch: str) -> None:
        self.popen = popen
        self.cgroup = cgroup
        self.scratch = scratch

    def kill(self) -> bool:
        """Kill the whole sandbox (bwrap, its pid namespace, the cgroup); True when nothing is left."""
        if self.popen.poll() is None:
            try:
                self.popen.kill()
            except ProcessLookupError:
                pass
        try:
            self.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        empty = True
        if self.cgroup is not None:
            empty = self.cgroup.kill_all()
        return empty and self.popen.poll() is not None

    def close(self) -> None:
        """Kill what is left and remove the cgroup and scratch files."""
        self.kill()
        for stream in (self.popen.stdin, self.popen.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        if self.cgroup is not None:
            self.cgroup.remove()
        shutil.rmtree(self.scratch, ignore_errors=True)


#: Where the evaluation interpreter appears inside a sandbox (a venv, and the Python it is made from), so
#: that no host path of either is visible there: not in sys.executable, module paths or /proc.
ENV_VIEW = "/opt/rcb/env"
PYTHON_VIEW = "/opt/rcb/python"


@dataclass(frozen=True)
class EnvironmentView:
    """How a sandbox shows an evaluation environment: read-only ``binds`` (host folder or file -> path
    inside), ``symlinks`` (target, path inside), the interpreter's path inside (``python``) and the
    variables it needs (``env``)."""

    python: str
    binds: tuple[tuple[str, str], ...]
    symlinks: tuple[tuple[str, str], ...] = ()
    env: tuple[tuple[str, str], ...] = ()

    def translate(self, argv: Sequence[str], host_pythons: Sequence[str]) -> list[str]:
        """``argv`` with the host interpreter in first place replaced by its path inside."""
        argv = list(argv)
        if argv and argv[0] in host_pythons:
            argv[0] = self.python
        return argv


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def environment_view(environment, scratch: str) -> EnvironmentView:
    """The view of ``environment`` at ``ENV_VIEW``/``PYTHON_VIEW`` (a Python under /usr stays where it is);
    an environment whose layout is unknown is shown at its host paths."""
    prefix, base, exe = environment.prefix, environment.base_prefix, environment.executable
    at_host = EnvironmentView(python=environment.python, binds=tuple((p, p) for p in environment.bind_paths))
    if not prefix or not base or not _under(exe, base) and not _under(exe, prefix):
        return at_host
    system = _under(base, "/usr")
    base_inside = base if system else PYTHON_VIEW
    binds: list[tuple[str, str]] = [] if system else [(base, PYTHON_VIEW)]
    symlinks: list[tuple[str, str]] = []
    exe_inside = base_inside + exe[len(base) :] if _under(exe, base) else None
    if prefix != base:
        config = os.path.join(prefix, "pyvenv.cfg")
        try:
            lines = _read(config).splitlines()
        except OSError:
            return at_host
        home = os.path.dirname(exe_inside) if exe_inside else base_inside + "/bin"
        kept = [
            line for line in lines if line.split("=", 1)[0].strip() not in ("home", "executable", "command")
        ]
        _write(os.path.join(scratch, "pyvenv.cfg"), "\n".join([f"home = {home}", *kept]) + "\n")
        os.chmod(os.path.join(scratch, "pyvenv.cfg"), 0o644)
        binds += [(os.path.join(scratch, "pyvenv.cfg"), f"{ENV_VIEW}/pyvenv.cfg")]
        binds += [(os.path.join(prefix, "lib"), f"{ENV_VIEW}/lib"), (exe, f"{ENV_VIEW}/bin/python")]
        if os.path.lexists(os.path.join(prefix, "lib64")):
            symlinks.append(("lib", f"{ENV_VIEW}/lib64"))
        python = f"{ENV_VIEW}/bin/python"
    elif exe_inside is not None:
        python = exe_inside
    else:
        return at_host
    covered = [base, prefix]
    for path in environment.bind_paths:
        if not any(_under(path, c) or _under(os.path.realpath(path), c) for c in covered):
            binds.append((path, path))
    env = (
        ()
        if system or not os.path.isdir(os.path.join(base, "lib"))
        else (("LD_LIBRARY_PATH", base_inside + "/lib"),)
    )
    return EnvironmentView(python=python, binds=tuple(binds), symlinks=tuple(symlinks), env=env)


class LocalSandbox:
    """Bubblewrap backend (see the module docstring). Thread-safe: runs share no mutable state."""

    name = "local"

    def __init__(
        self, *, bwrap: str | None = None, use_cgroups: bool = True, scratch_root: str | None = None
    ):
        self.bwrap = bwrap or shutil.which("bwrap") or "/usr/bin/bwrap"
        self.scratch_root = scratch_root or os.path.join(tempfile.gettempdir(), "rcb-sandbox")
        self.cgroups = detect_cgroups() if use_cgroups else None
        self.notes: list[str] = []
        if self.cgroups is None:
            self.notes.append(
                "no usable cgroup (v2 with memory+pids, or v1 memory and pids): memory is limited with "
                "RLIMIT_AS and processes with RLIMIT_NPROC (per uid, weaker)"
            )
        if self.cgroups is None or not self.cgroups.cpu:
            self.notes.append(
                "no usable cpu controller (v2 cpu.max or v1 cpu.cfs_quota_us): the CPU quota is not "
                "enforced, only the CPU-time rlimit bounds a run"
            )
        self._checked = False
        self._check_lock = threading.Lock()
        self.cleanup_stale()

    def cleanup_stale(self) -> int:
        """Remove cgroups and scratch folders left by runner processes that no longer exist (a host
        process killed mid-run cannot clean up after itself); returns how many were removed."""
        removed = 0
        parents = list(self.cgroups.parents.values()) if self.cgroups is not None else []
        for folder in [*parents, self.scratch_root]:
            try:
                names = os.listdir(folder)
            except OSError:
                continue
            for name in names:
                owner = _owner_pid(name)
                if owner is None or _pid_alive(owner):
                    continue
                path = os.path.join(folder, name)
                if folder == self.scratch_root:
                    shutil.rmtree(path, ignore_errors=True)
                    removed += 1
                    continue
                for pid in _ints(os.path.join(path, "cgroup.procs")):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                try:
                    os.rmdir(path)
                    removed += 1
                except OSError:
                    pass
        return removed

    # ------------------------------------------------------------------ availability

    def check(self) -> None:
        """Raise ``SandboxUnavailable`` unless bubblewrap can create a sandbox here."""
        with self._check_lock:
            if self._checked:
                return
            if not os.path.exists(self.bwrap):
                raise SandboxUnavailable(
                    "bubblewrap (bwrap) is not installed: the local sandbox needs it. Install it with "
                    "`apt-get install bubblewrap` (or choose --sandbox docker)"
                )
            probe = [self.bwrap, "--unshare-all", "--unshare-user", "--ro-bind", "/usr", "/usr",
                     *self._system_links(), "/bin/true"]  # fmt: skip
            try:
                done = subprocess.run(probe, capture_output=True, timeout=30)
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise SandboxUnavailable(f"bubblewrap failed to start: {exc}") from exc
            if done.returncode != 0:
                raise SandboxUnavailable(
                    "bubblewrap cannot create namespaces here: "
                    + done.stderr.decode(errors="replace").strip()
                    + " (user namespaces may be disabled: sysctl kernel.unprivileged_userns_clone=1)"
                )
            self._checked = True

    # ------------------------------------------------------------------ command line

    @staticmethod
    def _system_links() -> list[str]:
        args: list[str] = []
        for top in ("/lib", "/lib64", "/bin", "/sbin", "/lib32", "/libx32"):
            if os.path.islink(top):
                args += ["--symlink", os.readlink(top), top]
            elif os.path.isdir(top):
                args += ["--ro-bind", top, top]
        return args

    def _etc(self, scratch: str) -> list[str]:
        """A minimal /etc: the loader's files, the time zone and a passwd/group naming only the sandbox user."""
        etc = os.path.join(scratch, "etc")
        os.makedirs(etc, exist_ok=True)
        _write(
            os.path.join(etc, "passwd"), f"sandbox:x:{_SANDBOX_UID}:{_SANDBOX_UID}:sandbox:/tmp:/bin/false\n"
        )
        _write(os.path.join(etc, "group"), f"sandbox:x:{_SANDBOX_UID}:\n")
        _write(os.path.join(etc, "hostname"), "rcb-sandbox\n")
        args = ["--dir", "/etc"]
        for name in ("passwd", "group", "hostname"):
            args += ["--ro-bind", os.path.join(etc, name), f"/etc/{name}"]
        for name in ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime"):
            path = os.path.join("/etc", name)
            if os.path.exists(path):
                args += ["--ro-bind", path, path]
        return args

    @staticmethod
    def _gpu_devices() -> list[str]:
        args: list[str] = []
        for path in sorted(glob.glob("/dev/nvidia*")) + sorted(glob.glob("/dev/dri")):
            args += ["--dev-bind", path, path]
        if args and os.path.isdir("/sys"):
            args += ["--ro-bind", "/sys", "/sys"]
        return args

    def command(
        self,
        *,
        scratch: str,
        workdir: str,
        bind_paths: Sequence[str],
        env: dict[str, str],
        limits: Limits,
        needs_gpu: bool = False,
        hidden_paths: Sequence[str] = (),
        io_dir: str | None = None,
        userns_fds: tuple[int, int] | None = None,
        view: EnvironmentView | None = None,
    ) -> list[str]:
        """The bwrap argv (without the command to run inside) for one sandbox.

        ``userns_fds`` (block fd, info fd): the host writes the user namespace's maps itself (``spawn``, when
        it runs as root), so that the sandbox's uid is the unprivileged host uid 65534, not root; the
        command is then started through ``DROP_PREFIX``."""
        args = [self.bwrap, *self._identity(userns_fds)]
        args += [
            "--hostname", "rcb-sandbox",
            "--die-with-parent",
            "--new-session",
            "--ro-bind", "/usr", "/usr",
            *self._system_links(),
        ]  # fmt: skip
        args += self._etc(scratch)
        args += ["--proc", "/proc", *self._dev()]
        args += self._scratch_space(limits)
        # After the private /tmp: an interpreter that lives under /tmp (a checkout there) must stay visible.
        args += self._read_only_binds(list(view.binds) if view is not None else [(p, p) for p in bind_paths])
        for link, target in view.symlinks if view is not None else ():
            args += ["--symlink", link, target]
        if needs_gpu:
            args += self._gpu_devices()
        args += self._task_folder(workdir, scratch, hidden_paths, limits)
        if io_dir is not None:
            args += self._output_files(io_dir)
        args += ["--remount-ro", "/", "--chdir", TASK_DIR, "--clearenv"]
        for key, value in sorted({**env, **dict(view.env if view is not None else ())}.items()):
            args += ["--setenv", key, value]
        return args

    @staticmethod
    def _identity(userns_fds: tuple[int, int] | None) -> list[str]:
        """Every namespace unshared, and who the sandbox runs as: uid 65534 with no capability, or (with
        ``userns_fds``) uid 0 of a namespace whose maps the host writes, holding only what ``DROP_PREFIX``
        needs to become 65534."""
        args = ["--unshare-all", "--unshare-user"]
        if userns_fds is not None:
            # bwrap sets up the sandbox as uid 0 of a namespace whose maps the host writes (0 -> 0 for the
            # set-up, 65534 -> 65534); DROP_PREFIX then becomes 65534 for good, dropping every capability.
            args += ["--userns-block-fd", str(userns_fds[0]), "--info-fd", str(userns_fds[1])]
            args += ["--uid", "0", "--gid", "0", "--cap-drop", "ALL"]
            args += ["--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        else:
            args += ["--uid", str(_SANDBOX_UID), "--gid", str(_SANDBOX_UID), "--cap-drop", "ALL"]
        return args

    def _scratch_space(self, limits: Limits) -> list[str]:
        """A private, size-capped ``/tmp`` and ``/dev/shm``."""
        tmp_bytes = self.tmp_mb(limits) * 1024 * 1024
        args = ["--perms", "1777", "--size", str(tmp_bytes), "--tmpfs", "/tmp"]
        args += ["--perms", "1777", "--size", str(SHM_MB * 1024 * 1024), "--tmpfs", "/dev/shm"]
        return args

    @staticmethod
    def _read_only_binds(binds: list[tuple[str, str]]) -> list[str]:
        """Each (host path, path inside) bound read-only, with the folders on the way made passable."""
        args: list[str] = []
        made: set[str] = {"/", "/usr", "/tmp", "/etc", "/proc", "/dev"}
        for source, target in binds:
            # Folders bwrap makes on the way to a bind are private to root; the sandbox's uid must pass.
            parts = target.strip("/").split("/")[:-1]
            for depth in range(1, len(parts) + 1):
                parent = "/" + "/".join(parts[:depth])
                if parent not in made and not any(
                    parent == t or parent.startswith(t + "/") for _, t in binds
                ):
                    made.add(parent)
                    args += ["--perms", "0755", "--dir", parent]
            args += ["--ro-bind", source, target]
        return args

    @staticmethod
    def _task_folder(workdir: str, scratch: str, hidden_paths: Sequence[str], limits: Limits) -> list[str]:
        """``/task``, a tmpfs of its own size, and the read-only view of ``workdir`` it is filled from, with
        ``hidden_paths`` masked in that view."""
        # The task folder is a tmpfs of its own size (never the host's disk), filled from a read-only view
        # of the prepared folder; hidden oracles are masked in that view, so they are never copied in.
        args = ["--perms", "0777", "--size", str(limits.task_dir_mb * 1024 * 1024), "--tmpfs", TASK_DIR]
        args += ["--perms", "0755", "--dir", os.path.dirname(SOURCE_DIR)]
        args += ["--ro-bind", workdir, SOURCE_DIR]
        for rel in hidden_paths:
            target = os.path.join(workdir, rel)
            inside = f"{SOURCE_DIR}/{rel.strip('/')}"
            if os.path.isdir(target):
                args += ["--tmpfs", inside]
            elif os.path.exists(target):
                # An empty read-only file: a bound /dev/null would be unopenable (device nodes are nodev here).
                empty = os.path.join(scratch, "empty")
                if not os.path.exists(empty):
                    open(empty, "wb").close()
                    os.chmod(empty, 0o644)
                args += ["--ro-bind", empty, inside]
        return args

    @staticmethod
    def _output_files(io_dir: str) -> list[str]:
        """A warm server's output files, the only host files a sandbox writes, bound one by one."""
        # File by file, not the folder: the sandbox can write its output, never add files on the host.
        args = ["--perms", "0755", "--dir", IO_DIR]
        for name in IO_FILES:
            path = os.path.join(io_dir, name)
            if not os.path.exists(path):
                open(path, "wb").close()
            _give_to_sandbox(path)
            args += ["--bind", path, f"{IO_DIR}/{name}"]
        return args

    @staticmethod
    def _dev() -> list[str]:
        """A minimal /dev of the standard nodes. bwrap's own ``--dev`` mounts devpts through a second user
        namespace, which would stop the harness from giving each run a /proc of its own."""
        args = ["--perms", "0755", "--tmpfs", "/dev"]
        for name in DEVICES:
            if os.path.exists(f"/dev/{name}"):
                args += ["--dev-bind", f"/dev/{name}", f"/dev/{name}"]
        for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                             ("stderr", "/proc/self/fd/2"), ("core", "/proc/kcore")):  # fmt: skip
            args += ["--symlink", target, f"/dev/{name}"]
        return args

    #: Runs here get namespaces of their own from the harness (``isolation``); see docs/sandbox.md.
    slate = "fresh"

    @staticmethod
    def tmp_mb(limits: Limits) -> int:
        """The size of a run's /tmp: its memory limit, between 64 MB and 2 GB."""
        return max(64, min(limits.memory_mb, 2048))

    def isolation(self, limits: Limits, *, read_only: Sequence[str] = ()) -> dict:
        """What the harness mounts for one run in its fresh namespaces (``_harness._isolate``)."""
        return {
            "source": SOURCE_DIR,
            "workdir": TASK_DIR,
            "tmp_mb": self.tmp_mb(limits),
            "shm_mb": SHM_MB,
            "task_dir_mb": limits.task_dir_mb,
            "read_only": list(read_only),
        }

    def _rlimit_fallback(self, limits: Limits) -> dict[str, int]:
        """Extra rlimits the harness applies when no cgroup limits memory and processes."""
        if self.cgroups is not None:
            return {}
        return {"address_space_bytes": limits.memory_mb * 1024 * 1024, "nproc": limits.max_procs}

    def harness_limits(self, limits: Limits) -> dict[str, int]:
        """The rlimits the in-sandbox harness sets for a run under ``limits``."""
        return {
            "cpu_s": limits.effective_cpu_s(),
            "file_size_bytes": limits.file_size_mb * 1024 * 1024,
            "open_files": limits.open_files,
            **self._rlimit_fallback(limits),
        }

    # ------------------------------------------------------------------ processes

    def spawn(
        self,
        argv: Sequence[str],
        *,
        python: str,
        workdir: str,
        env: dict[str, str],
        limits: Limits,
        needs_gpu: bool = False,
        hidden_paths: Sequence[str] = (),
        io_dir: str | None = None,
        stdin: int | IO[bytes] | None = subprocess.PIPE,
        stdout: int | IO[bytes] | None = subprocess.PIPE,
        stderr: int | IO[bytes] | None = None,
        extra_pids: int = 0,
        copy_task: bool = True,
    ) -> SandboxedProcess:
        """Start ``argv`` inside a new sandbox (in its own cgroup); the caller owns the result.

        ``copy_task`` copies ``workdir`` into the sandbox's ``/task`` before ``argv`` starts; a warm server
        passes False and copies the current slot contents itself for each run."""
        self.check()
        environment = resolve_environment(python)
        grant_read(workdir)
        os.makedirs(self.scratch_root, exist_ok=True)
        scratch = tempfile.mkdtemp(prefix=f"box-{os.getpid()}-", dir=self.scratch_root)
        cgroup = None
        try:
            cgroup = self._run_cgroup(limits, extra_pids)
            view = environment_view(environment, scratch)
            inside = view.translate(argv, (python, environment.python, environment.executable))
            if copy_task:
                inside = [*_copy_task_argv(limits), *inside]
            bwrap_argv = functools.partial(
                self.command,
                scratch=scratch,
                workdir=workdir,
                bind_paths=environment.bind_paths,
                view=view,
                env=env,
                limits=limits,
                needs_gpu=needs_gpu,
                hidden_paths=hidden_paths,
                io_dir=io_dir,
            )
            popen = _start_bwrap(bwrap_argv, inside, cgroup, stdin=stdin, stdout=stdout, stderr=stderr)
        except BaseException:
            if cgroup is not None:
                cgroup.remove()
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        return SandboxedProcess(popen, cgroup, scratch)

    def _run_cgroup(self, limits: Limits, extra_pids: int) -> RunCgroup | None:
        """A new cgroup for one sandbox: its memory, process count (``extra_pids`` beyond the run's, for a
        warm server's own) and CPU quota; None without usable cgroups (the harness's rlimits stand in)."""
        if self.cgroups is None:
            return None
        return RunCgroup(
            self.cgroups,
            limits.memory_mb * 1024 * 1024,
            limits.max_procs + extra_pids,
            cpu_quota=limits.cpu_quota,
        )

    def run(self, spec: RunSpec) -> RunResult:
        """Run one process to its end or deadline (see ``Sandbox.run``)."""
        started = time.monotonic()
        python = spec.python or spec.argv[0]
        try:
            self.check()
        except SandboxUnavailable as exc:
            return RunResult(exit_code=None, duration_s=0.0, infra_error=str(exc))
        out = tempfile.TemporaryFile()
        err = tempfile.TemporaryFile()
        box: SandboxedProcess | None = None
        try:
            try:
                box = self.spawn(
                    spec.argv,
                    python=python,
                    workdir=spec.workdir,
                    env=spec.env,
                    limits=spec.limits,
                    needs_gpu=spec.needs_gpu,
                    hidden_paths=spec.hidden_paths,
                    stdin=subprocess.PIPE if spec.stdin is not None else subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    copy_task=spec.copy_task,
                )
            except (OSError, RuntimeError) as exc:
                return RunResult(exit_code=None, duration_s=time.monotonic() - started, infra_error=str(exc))
            if spec.stdin is not None:
                _feed_stdin(box, spec.stdin)
            timed_out = False
            try:
                box.popen.wait(timeout=spec.limits.timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
            duration = time.monotonic() - started
            contained = box.kill()
            oom = box.cgroup.oom_kills() > 0 if box.cgroup is not None else False
            code = box.popen.returncode
            stdout, stderr = _tail_of(out), _tail_of(err)
            return RunResult(
                exit_code=code if code is not None and code >= 0 else None,
                duration_s=duration,
                stdout=stdout,
                stderr=stderr,
                signal=-code if code is not None and code < 0 else None,
                timed_out=timed_out,
                oom=oom,
                infra_error=_sandbox_failure(contained, code, stderr),
            )
        finally:
            if box is not None:
                box.close()
            out.close()
            err.close()


class _UserNamespaceMaps:
    """The host's side of bwrap's user-namespace handshake when the host runs as root: two pipes whose
    child ends bwrap gets (``--userns-block-fd``, ``--info-fd``); once bwrap has started, ``hand_over``
    writes the maps (``_write_user_maps``) and lets it go on. ``close`` closes whatever is still open."""

    def __init__(self) -> None:
        block_r, block_w = os.pipe()
        info_r, info_w = os.pipe()
        self.fds: tuple[int, ...] = (block_r, block_w, info_r, info_w)

    @property
    def child_fds(self) -> tuple[int, int]:
        """(block fd, info fd): the ends bwrap reads and writes."""
        return (self.fds[0], self.fds[3])

    def hand_over(self) -> None:
        """Close bwrap's ends here, map its namespace and let it go on (this closes the host's ends)."""
        for fd in self.child_fds:
            os.close(fd)
        _write_user_maps(self.fds[2], self.fds[1])
        self.fds = ()

    def close(self) -> None:
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass


def _join_cgroup_argv(cgroup: RunCgroup, argv: list[str]) -> list[str]:
    """``argv`` behind a shell that first moves itself into ``cgroup``: joined before bwrap is exec'd, every
    process of the sandbox is inside it."""
    join = (
        'for f in $1; do echo $$ > "$f" || { echo "rcb-cgroup: cannot join $f" >&2; '
        f'exit {_CGROUP_JOIN_FAILED}; }}; done; shift; exec "$@"'
    )
    return ["/bin/sh", "-c", join, "rcb-join", " ".join(cgroup.procs_files()), *argv]


def _start_bwrap(
    bwrap_argv: Callable[..., list[str]],
    inside: list[str],
    cgroup: RunCgroup | None,
    *,
    stdin: int | IO[bytes] | None,
    stdout: int | IO[bytes] | None,
    stderr: int | IO[bytes] | None,
) -> subprocess.Popen:
    """Start a sandbox: ``bwrap_argv(userns_fds=...)`` (``LocalSandbox.command``) running ``inside``, in
    ``cgroup``, with an empty environment, from the one ``_SPAWNER`` thread. A host that runs as root maps
    the sandbox's user namespace itself (``_UserNamespaceMaps``), and ``inside`` starts through
    ``DROP_PREFIX``."""
    userns = _UserNamespaceMaps() if os.geteuid() == 0 else None
    try:
        if userns is not None:
            full = [*bwrap_argv(userns_fds=userns.child_fds), *DROP_PREFIX, *inside]
        else:
            full = [*bwrap_argv(userns_fds=None), *inside]
        if cgroup is not None:
            full = _join_cgroup_argv(cgroup, full)
        popen = _SPAWNER.submit(
            subprocess.Popen,
            full,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            close_fds=True,
            pass_fds=userns.child_fds if userns is not None else (),
            env={},
        ).result()
        if userns is not None:
            userns.hand_over()
        return popen
    finally:
        if userns is not None:
            userns.close()


def _feed_stdin(box: SandboxedProcess, data: bytes) -> None:
    """Write a run's input and close its stdin (a process that exits without reading it is no error)."""
    if box.popen.stdin is None:
        return
    try:
        box.popen.stdin.write(data)
        box.popen.stdin.close()
    except OSError:
        pass


def _sandbox_failure(contained: bool, code: int | None, stderr: bytes) -> str | None:
    """Why the sandbox itself failed the run (it could not be emptied, the cgroup could not be joined, the
    task folder not copied in, bwrap refused), or None."""
    if not contained:
        return "the sandbox could not be emptied at the end of the run"
    if code == _CGROUP_JOIN_FAILED and stderr.startswith(b"rcb-cgroup:"):
        return stderr.decode(errors="replace").strip()
    if code == _TASK_COPY_FAILED and b"rcb-task:" in stderr:
        return stderr.decode(errors="replace").strip()[-500:]
    if code not in (0, None) and stderr.startswith(b"bwrap: "):
        return stderr.decode(errors="replace").strip()[:500]
    return None


def grant_read(folder: str) -> None:
    """Let the sandbox's unprivileged uid read a prepared task folder (it copies it into its own /task):
    folders a+rx, files a+r. Only needed when the host runs as root (otherwise the sandbox's uid is the
    host's own)."""
    if os.geteuid() != 0:
        return
    os.chmod(folder, os.stat(folder).st_mode | 0o755)
    for parent, dirs, files in os.walk(folder):
        for name in dirs:
            path = os.path.join(parent, name)
            if not os.path.islink(path):
                os.chmod(path, os.stat(path).st_mode | 0o755)
        for name in files:
            path = os.path.join(parent, name)
            if not os.path.islink(path):
                os.chmod(path, os.stat(path).st_mode | 0o644)


def _give_to_sandbox(path: str) -> None:
    """Let the sandbox's uid write a file the host made (its output files)."""
    if os.geteuid() == 0:
        os.chown(path, _SANDBOX_UID, _SANDBOX_UID)


def _write_user_maps(info_fd: int, block_fd: int) -> None:
    """Map the new user namespace of the bwrap child named on ``info_fd`` (0 -> 0 for bwrap's set-up,
    65534 -> 65534 for the sandbox), then let it go on. A bwrap that died before naming its child has its
    error on stderr; nothing is mapped then."""
    try:
        buffer = b""
        deadline = time.monotonic() + _USERNS_TIMEOUT_S
        info = None
        while info is None and time.monotonic() < deadline:
            ready, _, _ = select.select([info_fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            chunk = os.read(info_fd, 4096)
            if not chunk:
                break
            buffer += chunk
            try:
                info = json.loads(buffer)
            except ValueError:
                continue
        if info is not None:
            pid = int(info["child-pid"])
            maps = f"0 0 1\n{_SANDBOX_UID} {_SANDBOX_UID} 1\n"
            for name in ("uid_map", "gid_map"):
                _write(f"/proc/{pid}/{name}", maps)
            os.write(block_fd, b"1")
    except (OSError, ValueError, KeyError, TypeError):
        pass
    finally:
        os.close(info_fd)
        os.close(block_fd)


def _copy_task_argv(limits: Limits) -> list[str]:
    """A prefix that copies the read-only task view into the sandbox's /task, then execs the rest.

    The copy runs inside the sandbox (its uid, cgroup and tmpfs size), so even a task folder larger than
    ``task_dir_mb`` cannot spill onto the host; it then fails with a message naming the limit."""
    # Entry by entry: /task itself belongs to the sandbox's root, so its own times cannot be copied.
    script = (
        f"for f in {SOURCE_DIR}/* {SOURCE_DIR}/.[!.]* {SOURCE_DIR}/..?*; do "
        '{ [ -e "$f" ] || [ -L "$f" ]; } || continue; '
        f'cp -R --preserve=mode,timestamps "$f" {TASK_DIR}/ || {{ echo "rcb-task: cannot copy '
        f'the task folder into {TASK_DIR} (task folder limit {limits.task_dir_mb} MB)" >&2; '
        f'exit {_TASK_COPY_FAILED}; }}; done; exec "$@"'
    )
    return ["/bin/sh", "-c", script, "rcb-task"]


def _tail_of(handle: IO[bytes], limit: int | None = None) -> bytes:
    from .base import OUTPUT_TAIL_BYTES

    limit = limit or OUTPUT_TAIL_BYTES
    handle.seek(0, os.SEEK_END)
    size = handle.tell()
    handle.seek(max(0, size - limit))
    return handle.read()


def read_tail(path: str, limit: int | None = None) -> bytes:
    """The last bytes of a file (``OUTPUT_TAIL_BYTES`` by default); empty when it does not exist."""
    try:
        with open(path, "rb") as handle:
            return _tail_of(handle, limit)
    except OSError:
        return b""
