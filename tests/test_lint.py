"""House style is enforced by the suite: ruff lint and format are clean over the whole repository."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RUFF = Path(sys.executable).with_name("ruff")


def test_ruff_lint_is_clean():
    result = subprocess.run([str(RUFF), "check", "."], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_clean():
    result = subprocess.run(
        [str(RUFF), "format", "--check", "."], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
