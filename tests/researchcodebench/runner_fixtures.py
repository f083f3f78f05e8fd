"""Small original-format tasks for the runner tests (no torch: cold runs take ~0.1 s)."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from researchcodebench.environments import default_python
from researchcodebench.pset import Task, read_pset
from researchcodebench.runner import Runner
from researchcodebench.sandbox.base import SandboxUnavailable
from researchcodebench.sandbox.docker import (
    DEFAULT_IMAGE,
    DockerSandbox,
    ImageBuildError,
    ImageRecipe,
    ensure_default_image,
    image_present,
)
from researchcodebench.sandbox.local import LocalSandbox

TOY_CODE = '''\
"""A toy method: scale a list of values."""


def scale(values, factor):
    # <paper2code name="scale values">
    result = [v * factor for v in values]
    # </paper2code name="scale values">
    return result
'''

TOY_REF = """\
def scale(values, factor):
    return [v * factor for v in values]
"""

TOY_TEST = """\
import unittest

import toy
import toy_ref


class ScaleTest(unittest.TestCase):
    def test_matches_reference(self):
        self.assertEqual(toy.scale([1, 2, 3], 3), toy_ref.scale([1, 2, 3], 3))

    def test_zero_factor(self):
        self.assertEqual(toy.scale([4, 5], 0), [0, 0])


if __name__ == "__main__":
    unittest.main()
"""

# A plain script (no unittest) that ends with its own sys.exit: a legitimate way to finish.
SCRIPT_TEST = """\
import sys

import toy

ok = toy.scale([1, 2], 2) == [2, 4]
print("result ok" if ok else "result wrong")
sys.exit(0 if ok else 1)
"""

REGISTRY = """\
- id: {id}
  title: Toy {id}
  arxiv_abs: null
  arxiv_date: null
  arxiv_v1_date: null
  github_url: null
  first_commit_date: null
  last_commit_date: null
  venue: null
  annotated_file_paths: toy.py
  context_file_paths: null
"""


def make_pset(root: Path, *, script: bool = False, prelude: str = "", task_id: str = "toy") -> Path:
    """A one-task pset under ``root``; the task also holds a hidden oracle ``expected.json``."""
    task = root / task_id
    task.mkdir(parents=True)
    (task / "toy.py").write_text(TOY_CODE)
    (task / "toy_ref.py").write_text(TOY_REF)
    (task / "expected.json").write_text('{"scale": [3, 6, 9]}\n')
    (task / "paper2code_test.py").write_text(prelude + (SCRIPT_TEST if script else TOY_TEST))
    (task / "paper2code_paper.md").write_text("# Toy\n\nScale each value by the factor.\n")
    (task / "task.yaml").write_text("oracle_files:\n  - expected.json\ntimeout_s: 20\n")
    (root / "papers.yaml").write_text(REGISTRY.format(id=task_id))
    return root


def toy_task(root: Path, **kwargs: object) -> Task:
    return read_pset(make_pset(root, **kwargs)).tasks[0]


def body(code: str) -> str:
    """A completion for the toy snippet (indent 4) from dedented source."""
    return textwrap.indent(textwrap.dedent(code).strip("\n"), "    ")


def eval_python() -> str:
    return os.environ.get("RCB_EVAL_PYTHON") or default_python()


def checked_local_sandbox(scratch_root: Path) -> LocalSandbox:
    """A working local sandbox, or a test failure (never a skip: the suite must exercise the real sandbox)."""
    box = LocalSandbox(scratch_root=str(scratch_root))
    try:
        box.check()
    except SandboxUnavailable as exc:
        pytest.fail(f"the local sandbox must work here (make test installs bubblewrap): {exc}", pytrace=False)
    return box


_DOCKER: dict[str, tuple[bool, object]] = {}


def docker_sandbox() -> DockerSandbox:
    """A docker sandbox on a real engine holding the default evaluation image (built here once when the engine
    lacks it), or a skip naming why there is none. ``make test`` starts a private engine and makes the base
    image first (scripts/test.sh, scripts/docker-engine.sh); a failed image build is a test failure."""
    if "engine" not in _DOCKER:
        _DOCKER["engine"] = _bring_up_docker()
    ok, value = _DOCKER["engine"]
    if not ok:
        if isinstance(value, str) and value.startswith("FAIL "):
            pytest.fail(value[5:], pytrace=False)
        pytest.skip(str(value))
    assert isinstance(value, DockerSandbox)
    return value


def _bring_up_docker() -> tuple[bool, object]:
    try:
        import docker
    except ImportError:
        return False, "the docker SDK is not installed"
    why = os.environ.get("RCB_DOCKER_UNAVAILABLE")
    where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        client = docker.from_env(timeout=300)
        client.ping()
    except Exception as exc:  # any failure means: no usable engine here
        return False, why or f"no Docker engine answers at {where} ({exc}); make test starts a private one"
    recipe = ImageRecipe(base_image=os.environ.get("RCB_BASE_IMAGE") or None)
    base = recipe.base_for("3.11")
    if not image_present(client, base) and not image_present(client, DEFAULT_IMAGE):
        return (
            False,
            f"the engine at {where} has no base image {base!r} (scripts/docker-engine.sh base-image)",
        )
    try:
        ensure_default_image(client, recipe=recipe)
    except ImageBuildError as exc:
        return False, f"FAIL the default evaluation image does not build: {exc}\n{exc.log_tail}"
    return True, DockerSandbox(client, engine_timeout_s=120)


def docker_runner(**screening: bool) -> Runner:
    """A cold runner of the docker sandbox on the default environment (``screening``: ``static_screen``,
    ``audit_hook``), or a skip naming why there is no engine."""
    return Runner(
        sandbox=docker_sandbox(),
        environment=eval_python(),
        warm=False,
        calibrate=False,
        workers=1,
        **screening,
    )
