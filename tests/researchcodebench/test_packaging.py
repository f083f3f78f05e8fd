"""The core is its own distribution: ``pip install <checkout>`` into a fresh virtual environment gives the
``rcb`` command with the sandbox harness and no Django (pyproject.toml, docs/model-developers.md)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_the_distribution_is_the_core_with_the_rcb_command():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert project["project"]["name"] == "researchcodebench"
    assert project["project"]["scripts"] == {"rcb": "researchcodebench.cli:main"}
    assert project["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["researchcodebench"]
    assert not any(d.lower().startswith(("django", "celery")) for d in project["project"]["dependencies"])


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
