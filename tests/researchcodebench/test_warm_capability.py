"""Warm interpreters are a capability a backend offers (``WarmCapableSandbox``), not a concrete class the
runner knows: a backend that provides it gets warm runs, one that does not runs cold, whatever its name."""

from __future__ import annotations

from typing import Any

import pytest

from researchcodebench.runner import Runner
from researchcodebench.sandbox.base import RunResult, RunSpec, Sandbox, WarmCapableSandbox
from researchcodebench.sandbox.local import LocalSandbox
from researchcodebench.sandbox.unsandboxed import UnsandboxedRunner

from .runner_fixtures import checked_local_sandbox, eval_python, toy_task


class DelegatingSandbox:
    """Not a ``LocalSandbox``: a wrapper (as a deployment might add for auditing) that offers the warm
    capability by delegating runs, spawns and the scratch folder to one."""

    name = "delegating"

    def __init__(self, inner: LocalSandbox) -> None:
        self.inner = inner
        self.scratch_root = inner.scratch_root
        self.spawned = 0

    def check(self) -> None:
        self.inner.check()

    def run(self, spec: RunSpec) -> RunResult:
        return self.inner.run(spec)

    def spawn(self, argv: Any, **options: Any) -> Any:
        self.spawned += 1
        return self.inner.spawn(argv, **options)

    slate = "fresh"

    def isolation(self, limits: Any, **options: Any) -> dict:
        return self.inner.isolation(limits, **options)


class ColdOnlySandbox:
    """Calls itself "local" and wraps the real one, but offers no way to host a warm interpreter."""

    name = "local"

    def __init__(self, inner: LocalSandbox) -> None:
        self.inner = inner

    def check(self) -> None:
        self.inner.check()

    def run(self, spec: RunSpec) -> RunResult:
        return self.inner.run(spec)


@pytest.fixture(scope="module")
def local(tmp_path_factory) -> LocalSandbox:
    return checked_local_sandbox(tmp_path_factory.mktemp("scratch"))


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    return toy_task(tmp_path_factory.mktemp("pset"))


def test_the_capability_is_structural_and_only_the_local_backend_has_it_built_in(local):
    assert isinstance(local, WarmCapableSandbox)
    assert isinstance(DelegatingSandbox(local), WarmCapableSandbox)
    assert isinstance(ColdOnlySandbox(local), Sandbox)
    assert not isinstance(ColdOnlySandbox(local), WarmCapableSandbox)
    assert not isinstance(UnsandboxedRunner(), WarmCapableSandbox)


def test_a_backend_with_the_capability_gets_warm_runs_whatever_its_class(local, task):
    box = DelegatingSandbox(local)
    snippet = task.snippets[0]
    with Runner(sandbox=box, environment=eval_python(), calibrate=False, workers=1) as runner:
        assert runner.pool is not None
        verdict = runner.evaluate(task, snippet, snippet.code)
    assert verdict.passed and verdict.warm
    assert box.spawned >= 1


def test_a_backend_without_the_capability_runs_cold_even_when_warm_runs_are_asked_for(local, task):
    snippet = task.snippets[0]
    with Runner(
        sandbox=ColdOnlySandbox(local), environment=eval_python(), warm=True, calibrate=False
    ) as runner:
        assert runner.pool is None
        verdict = runner.evaluate(task, snippet, snippet.code)
    assert verdict.passed and not verdict.warm
