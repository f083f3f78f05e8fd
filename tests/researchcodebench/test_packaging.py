"""The core is its own distribution: ``pip install <checkout>`` into a fresh virtual environment gives the
``rcb`` command with the sandbox harness and no Django (pyproject.toml, docs/model-developers.md), on every
Python ``requires-python`` admits: the wheel is built and installed into a fresh environment of the oldest
supported Python, where ``rcb`` runs as a model developer runs it and the core's own tests that need no Django
pass against the installed wheel; the checkout itself installs into one of the portal's Python (the newest
the project runs on). The Pythons between them add nothing these two do not catch."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EVAL_PYTHON = REPO / ".venv-eval" / "bin" / "python"
#: The oldest Python the core supports (pyproject.toml's ``requires-python``).
OLDEST = re.search(r'^requires-python = ">=(\d+\.\d+)"$', (REPO / "pyproject.toml").read_text(), re.M).group(
    1
)
#: The core's tests that import neither Django nor the portal's test fixtures (tests/conftest.py does): run
#: under the oldest Python with ``--noconftest``, against the installed wheel. The command-line tests
#: (test_cli.py, test_evaluate_cli.py) judge examples in the sandbox for half a minute each and add nothing
#: the oldest Python could break that the ``rcb`` runs above and the compile of every module do not show.
CORE_TESTS = (
    "test_errors.py",
    "test_annotations.py",
    "test_marking.py",
    "test_pset.py",
    "test_pset_in_memory.py",
    "test_problems.py",
    "test_predictions.py",
    "test_scoring.py",
    "test_portal_tls.py",
)


def test_the_distribution_is_the_core_with_the_rcb_command():
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert project["project"]["name"] == "researchcodebench"
    assert project["project"]["requires-python"] == ">=3.10"
    assert project["project"]["scripts"] == {"rcb": "researchcodebench.cli:main"}
    assert project["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["researchcodebench"]
    assert not any(d.lower().startswith(("django", "celery")) for d in project["project"]["dependencies"])


def find_python(version: str) -> str | None:
    """An interpreter of ``version`` on this machine (PATH, pyenv's versions, uv's), or None."""
    candidates = [shutil.which(f"python{version}")]
    candidates += sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python{version}")))
    uv = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    if os.path.exists(uv):
        found = subprocess.run([uv, "python", "find", version], capture_output=True, text=True, check=False)
        candidates.append(found.stdout.strip() if found.returncode == 0 else None)
    for candidate in filter(None, candidates):
        probe = subprocess.run(
            [candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=False,
        )
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return candidate
    return None


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out), str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    (found,) = out.glob("researchcodebench-*.whl")
    return found


def _run(*argv: str | Path, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, cwd=cwd, env=env, timeout=900, check=False
    )


@pytest.mark.slow
def test_the_wheel_installs_on_the_oldest_supported_python_without_django_and_rcb_works_there(
    wheel, tmp_path
):
    python = find_python(OLDEST)
    if python is None:
        pytest.skip(f"no Python {OLDEST} on this machine (`uv python install {OLDEST}` or pyenv makes one)")
    venv = tmp_path / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    pip = _run(venv / "bin" / "pip", "install", "--quiet", wheel, "pytest", cwd=tmp_path)
    assert pip.returncode == 0, pip.stderr[-3000:]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RCB_EVAL_PYTHON", "DJANGO"))}
    env["RCB_CACHE_DIR"] = str(tmp_path / "cache")
    rcb = venv / "bin" / "rcb"

    probe = "import importlib.util, researchcodebench; print(researchcodebench.__file__, importlib.util.find_spec('django') is None)"
    where, no_django = _run(venv / "bin" / "python", "-c", probe, cwd=tmp_path).stdout.split()
    assert where.startswith(str(venv)) and no_django == "True"
    helped = _run(rcb, "evaluate", "--help", cwd=tmp_path, env=env)
    assert helped.returncode == 0 and "3  infrastructure" in helped.stdout

    # No flags, no interpreter with torch: it stops before judging, in one line, with the command to run.
    pset = REPO / "examples" / "pset"
    bare = _run(rcb, "evaluate", pset, "--tasks", "rmsnorm", "--oracle", cwd=tmp_path, env=env)
    assert bare.returncode == 3 and bare.stdout == "", bare.stderr
    (line,) = bare.stderr.splitlines()
    assert line.startswith("error: the evaluation interpreter ") and "pip install torch`" in line
    down = _run(rcb, "download", "nosuch", "--portal", "http://127.0.0.1:9", cwd=tmp_path, env=env)
    assert down.returncode == 3
    assert down.stderr == "error: cannot reach the portal at http://127.0.0.1:9: connection refused\n"

    if not EVAL_PYTHON.exists():
        pytest.skip(f"no evaluation interpreter at {EVAL_PYTHON} (scripts/bootstrap.sh makes it)")
    judged = _run(
        rcb,
        "evaluate",
        pset,
        "--tasks",
        "rmsnorm",
        "--oracle",
        "--python",
        EVAL_PYTHON,
        cwd=tmp_path,
        env=env,
    )
    assert judged.returncode == 0, judged.stderr
    assert "7/7 passed" in judged.stdout and f"evaluation interpreter: {EVAL_PYTHON}" in judged.stderr

    # Every module of the installed package compiles under the oldest Python (syntax newer than it fails).
    package = Path(where).parent
    compiled = _run(venv / "bin" / "python", "-m", "compileall", "-q", package, cwd=tmp_path)
    assert compiled.returncode == 0, compiled.stdout[-3000:]

    # The core's tests against the installed wheel: without tests/conftest.py (Django) and without the
    # checkout on sys.path (the venv's pytest script, importlib import mode, no pythonpath).
    tests = [REPO / "tests" / "researchcodebench" / name for name in CORE_TESTS]
    options = ["--noconftest", "-o", "addopts=", "-o", "pythonpath=", "--import-mode=importlib"]
    env["RCB_EVAL_PYTHON"] = str(EVAL_PYTHON)
    ran = _run(venv / "bin" / "pytest", *options, "-p", "no:cacheprovider", "-q", *tests, cwd=REPO, env=env)
    assert ran.returncode == 0, ran.stdout[-4000:]
    assert " passed" in ran.stdout.splitlines()[-1] and "failed" not in ran.stdout.splitlines()[-1]


@pytest.mark.slow
def test_pip_install_gives_a_working_rcb_without_django(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = subprocess.run(
        [venv / "bin" / "pip", "install", "--quiet", str(REPO)], capture_output=True, text=True, timeout=600
    )
    assert pip.returncode == 0, pip.stderr[-3000:]
    rcb = venv / "bin" / "rcb"
    help_text = subprocess.run([rcb, "--help"], capture_output=True, text=True, check=True, cwd=tmp_path)
    for command in ("inspect", "evaluate", "generate", "validate"):
        assert command in help_text.stdout
    inspected = subprocess.run(
        [rcb, "inspect", str(REPO / "examples" / "pset")], capture_output=True, text=True, cwd=tmp_path
    )
    assert inspected.returncode == 0, inspected.stderr
    assert "0 errors" in inspected.stdout.splitlines()[-1]
    probe = (
        "import importlib.util, pathlib, researchcodebench.warm as w; "
        "print(pathlib.Path(w.__file__).parent / 'sandbox' / '_harness.py'); "
        "print(importlib.util.find_spec('django') is None)"
    )
    out = subprocess.run([venv / "bin" / "python", "-c", probe], capture_output=True, text=True, cwd=tmp_path)
    harness, no_django = out.stdout.split()
    assert Path(harness).is_file() and str(venv) in harness and no_django == "True", out.stderr
