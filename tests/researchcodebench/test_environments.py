"""Evaluation environments (``researchcodebench.environments``): what identifies an interpreter the runner
evaluates in."""

from __future__ import annotations

import os

from researchcodebench.environments import resolve_environment

from .runner_fixtures import eval_python


def test_evaluation_environment_id_hashes_version_and_packages():
    env = resolve_environment(eval_python())
    assert env.id.startswith("py" + env.version + "-")
    assert len(env.requirements_hash) == 64
    assert all(os.path.isabs(p) for p in env.bind_paths)
