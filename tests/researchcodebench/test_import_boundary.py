"""The core package never imports Django or Celery (checked in a fresh interpreter per module)."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import researchcodebench

REPO = Path(__file__).resolve().parents[2]
FORBIDDEN = ("django", "celery", "kombu")


def _modules() -> list[str]:
    names = ["researchcodebench"]
    for info in pkgutil.walk_packages(researchcodebench.__path__, prefix="researchcodebench."):
        names.append(info.name)
    return names


def test_core_modules_are_discovered() -> None:
    found = _modules()
    for name in (
        "researchcodebench.pset",
        "researchcodebench.annotations",
        "researchcodebench.problems",
        "researchcodebench.scoring",
        "researchcodebench.cli",
        "researchcodebench.__main__",
    ):
        assert name in found


@pytest.mark.parametrize("module", _modules())
def test_importing_module_loads_no_django_or_celery(module: str) -> None:
    code = (
        "import importlib, json, sys\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"
        f"importlib.import_module({module!r})\n"
        "print(json.dumps(sorted(m for m in sys.modules)))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-I", "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    leaked = [m for m in loaded if m.split(".")[0] in FORBIDDEN]
    assert leaked == [], f"{module} imports {leaked}"
