"""Evaluation environments: which interpreter runs task tests, and a stable id for it.

An environment is an interpreter (normally a venv) plus the set of distributions installed in it. Its id
(``py3.11.7-<12 hex>``) hashes the Python version and the sorted ``name==version`` list, so two identical
venvs share verdict-cache entries and any package change gives a new id. The interpreter is the one the
caller names (the CLI's ``--python``, default ``RCB_EVAL_PYTHON``; the portal's ``settings.RCB_EVAL_PYTHON``),
else ``.venv-eval/bin/python`` in the repository, else the running interpreter.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

#: The oldest Python the sandbox's harness (``sandbox/_harness.py``) runs under: an evaluation interpreter
#: must be this or newer, while the core itself installs on 3.10 (pyproject.toml).
MIN_EVAL_PYTHON = (3, 11)

#: Libraries a warm interpreter imports once, when the environment has them (heaviest first).
HEAVY_MODULES = ("torch", "numpy", "scipy")

_PROBE = r"""
import importlib.metadata as md, importlib.util as iu, json, platform, sys
packages = set()
for dist in md.distributions():
    name = dist.metadata["Name"]
    if name:
        packages.add(name.lower().replace("_", "-") + "==" + str(dist.version))
heavy = [m for m in HEAVY if iu.find_spec(m) is not None]
print(json.dumps({"version": platform.python_version(), "prefix": sys.prefix, "base_prefix": sys.base_prefix,
                  "exec_prefix": sys.exec_prefix, "executable": sys.executable, "path": sys.path,
                  "packages": sorted(packages), "heavy": heavy}))
"""


class EvalEnvironmentError(RuntimeError):
    """The interpreter cannot be used as an evaluation environment (message says why and what to do)."""


@dataclass(frozen=True)
class Environment:
    """One evaluation environment. ``python`` is the path as configured (a venv's ``bin/python``);
    ``bind_paths`` are the host folders a sandbox must show read-only for it to start."""

    id: str
    python: str
    executable: str
    version: str
    packages: tuple[str, ...]
    requirements_hash: str
    heavy_modules: tuple[str, ...]
    bind_paths: tuple[str, ...]
    #: ``sys.prefix`` and ``sys.base_prefix`` (different for a venv); "" when unknown (an image's).
    prefix: str = ""
    base_prefix: str = ""

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Environment:
        values = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        for key in ("packages", "heavy_modules", "bind_paths"):
            values[key] = tuple(values[key])
        return cls(**values)


def repo_root() -> Path:
    """The repository root (the folder holding the ``researchcodebench`` package)."""
    return Path(__file__).resolve().parent.parent


def default_python() -> str:
    """The repository's ``.venv-eval/bin/python`` if present, else this interpreter."""
    candidate = repo_root() / ".venv-eval" / "bin" / "python"
    if candidate.exists():
        return str(candidate)
    return sys.executable


def requirements_hash(packages: tuple[str, ...] | list[str]) -> str:
    """sha256 hex of the sorted ``name==version`` lines."""
    return hashlib.sha256("\n".join(sorted(packages)).encode()).hexdigest()


def _bind_paths(info: dict, python: str) -> tuple[str, ...]:
    """Folders holding the interpreter, its standard library and its site-packages (real paths; the
    configured path too when it differs, so symlinked venvs resolve inside the sandbox)."""
    system = ("/usr", "/lib", "/lib64", "/bin", "/sbin")
    wanted: list[str] = []
    for raw in (info["prefix"], info["base_prefix"], info["exec_prefix"], *info["path"]):
        if not raw or not os.path.exists(raw):
            continue
        for path in {os.path.abspath(raw), os.path.realpath(raw)}:
            if path.endswith(".zip"):
                path = os.path.dirname(path)
            wanted.append(path)
    for path in (os.path.abspath(python), os.path.realpath(python)):
        wanted.append(os.path.dirname(os.path.dirname(path)))
    chosen: list[str] = []
    for path in sorted(set(wanted), key=len):
        if path == "/" or any(path == s or path.startswith(s + "/") for s in system):
            continue
        if any(path == c or path.startswith(c + "/") for c in chosen):
            continue
        chosen.append(path)
    return tuple(chosen)


def _last_line(text: str) -> str:
    """The last non-blank line of ``text`` (an error's own words, without the traceback above it)."""
    return next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")[:300]


_CACHE: dict[str, Environment] = {}
_LOCK = threading.Lock()


def resolve_environment(python: str | None = None) -> Environment:
    """Probe the interpreter once (cached per path) and describe it; raises ``EvalEnvironmentError``."""
    path = python or default_python()
    with _LOCK:
        if path in _CACHE:
            return _CACHE[path]
    if not os.path.exists(path):
        raise EvalEnvironmentError(
            f"evaluation interpreter {path!r} does not exist; pass --python PATH or set RCB_EVAL_PYTHON"
        )
    code = f"HEAVY = {HEAVY_MODULES!r}\n{_PROBE}"
    info = _probe(path, code)
    packages = tuple(info["packages"])
    req = requirements_hash(packages)
    env = Environment(
        id=f"py{info['version']}-{req[:12]}",
        python=path,
        executable=os.path.realpath(path),
        version=info["version"],
        packages=packages,
        requirements_hash=req,
        heavy_modules=tuple(info["heavy"]),
        bind_paths=_bind_paths(info, path),
        prefix=os.path.realpath(info["prefix"]),
        base_prefix=os.path.realpath(info["base_prefix"]),
    )
    with _LOCK:
        _CACHE[path] = env
    return env


_FIND = "import importlib.util as u, json, sys; print(json.dumps([n for n in sys.argv[1:] if u.find_spec(n) is None]))"


def missing_modules(python: str, names: set[str] | list[str] | tuple[str, ...]) -> list[str]:
    """The top-level modules of ``names`` that ``python`` cannot import (sorted), found without importing
    them; raises ``EvalEnvironmentError`` when the interpreter does not run."""
    wanted = sorted(set(names))
    if not wanted:
        return []
    return sorted(_probe(python, _FIND, *wanted))


def _probe(python: str, code: str, *args: str) -> Any:
    """The JSON that ``code`` prints last when ``python`` runs it isolated (``-I``, a bare PATH); raises
    ``EvalEnvironmentError`` when the interpreter does not run or exits non-zero."""
    try:
        done = subprocess.run(
            [python, "-I", "-c", code, *args],
            capture_output=True,
            text=True,
            timeout=120,
            env={"PATH": "/usr/bin:/bin"},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EvalEnvironmentError(f"cannot run evaluation interpreter {python!r}: {exc}") from exc
    if done.returncode != 0:
        raise EvalEnvironmentError(
            f"evaluation interpreter {python!r} failed to start (exit {done.returncode}): {_last_line(done.stderr)}"
        )
    return json.loads(done.stdout.strip().splitlines()[-1])


def version_tuple(version: str) -> tuple[int, int]:
    """``(major, minor)`` of a ``platform.python_version()`` string such as ``3.11.7``."""
    major, minor = version.split(".")[:2]
    return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)
