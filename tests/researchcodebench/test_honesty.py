"""The honesty battery (issue 32): correct completions in common research idioms pass every layer.

Each program of ``honesty_programs.PROGRAMS`` replaces a snippet of an example task with correct code written
as a research engineer would, in idioms the screen and the audit hook used to refuse: ``@dataclass``,
cudnn flags, ``torch.compile``, ``torch.utils.checkpoint``, ``torch.func.grad`` and ``vmap``, ``DataLoader``,
``inspect.signature``, ``getattr(F, name)`` and ``setattr(self, f"...")`` with computed names, einops,
``autograd.Function``, ``torch.jit.script``, typed configs, functools, itertools, registries keyed by name and
dunder methods on helper classes. Every one must be judged passed, its pass confirmed against an impossible
variant of its test, by a runner with every layer on (the screen, its resolution step, the audit hook, the
confirmation): warm all of them; cold and in containers a sample (every program with RCB_FULL_BATTERY=1,
``make batteries``).
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from researchcodebench.pset import read_pset
from researchcodebench.runner import Runner

from .honesty_programs import PROGRAMS
from .runner_fixtures import checked_local_sandbox, docker_runner, eval_python

pytestmark = pytest.mark.sandbox

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "pset"
#: The example tasks the battery covers (each has several programs).
NINE_TASKS = (
    "rmsnorm", "dpo", "glu-variants", "focal-loss", "lion", "roformer", "lora", "label-smoothing", "soft-dtw",
)  # fmt: skip
#: The idioms of issue 32 that were refused, each of which some program must use (by its idiom tags).
REQUIRED_IDIOMS = (
    "@dataclass",
    "torch.backends.cudnn.benchmark = False",
    "torch.compile",
    "torch.utils.checkpoint",
    "torch.func.grad",
    "torch.func.vmap",
    "DataLoader",
    "inspect.signature",
    "getattr(F, name) with a name from a config",
    'setattr(self, f"',
    "einops",
    "torch.autograd.Function",
    "torch.jit.script",
    "functional API",
    "NamedTuple",
    "TypedDict",
    "Enum",
    "functools.lru_cache",
    "functools.partial",
    "functools.reduce",
    "itertools",
    "registry keyed by name",
    "__eq__ and __repr__ on a helper class",
)
#: The programs judged cold and in containers in the suite: those that start machinery lazily (torch's
#: compiler for checkpoint, torch imported by a numpy task for torch.func, a DataLoader's profiler), where an
#: interpreter started afresh differs from the warm one, and the first program; every program in every lane
#: with RCB_FULL_BATTERY=1 (``make batteries``). A cold run costs about 14 s and a container's about 22 s of
#: the suite (an interpreter, torch and the confirmation's run each time): the warm lane judges every program
#: through the same layers.
SAMPLE = (next(iter(PROGRAMS)), "rmsnorm-checkpoint", "focal-func-grad-vmap", "soft-dtw-dataloader")
#: Packages of the evaluation environment (requirements-bench.txt) that the default container image (the
#: base lock, researchcodebench/envs.py) does not hold: their programs are judged locally only.
NOT_IN_IMAGE = ("einops",)
MODES = ("warm", "cold", "docker")


def _cases() -> list[tuple[str, str]]:
    full = os.environ.get("RCB_FULL_BATTERY") == "1"
    cases = []
    for name in PROGRAMS:
        for mode in MODES:
            if mode != "warm" and not (full or name in SAMPLE):
                continue
            if mode == "docker" and any(package in PROGRAMS[name][3] for package in NOT_IN_IMAGE):
                continue
            cases.append((mode, name))
    return cases


class _Runners(dict):
    """The local runners made up front; the docker one on first use (a skip where no engine answers)."""

    def __missing__(self, mode):
        if mode != "docker":
            raise KeyError(mode)
        self[mode] = docker_runner()
        return self[mode]


@pytest.fixture(scope="module")
def runners(tmp_path_factory):
    sandbox = checked_local_sandbox(tmp_path_factory.mktemp("honesty") / "scratch")
    made = _Runners(
        {
            mode: Runner(
                sandbox=sandbox, environment=eval_python(), warm=mode == "warm", calibrate=False, workers=1
            )
            for mode in ("warm", "cold")
        }
    )
    yield made
    for runner in made.values():
        runner.close()


@pytest.fixture(scope="module")
def tasks():
    return {task.id: task for task in read_pset(EXAMPLES).tasks}


def test_the_battery_holds_25_correct_programs_in_every_idiom_of_issue_32(tasks):
    assert len(PROGRAMS) >= 25
    idioms = [idiom for _task, _snippet, tags, _code in PROGRAMS.values() for idiom in tags]
    for required in REQUIRED_IDIOMS:
        assert any(required in idiom for idiom in idioms), required
    covered = {task for task, _snippet, _tags, _code in PROGRAMS.values()}
    assert covered <= set(tasks)
    assert covered >= set(NINE_TASKS)
    for name, (task, snippet, _tags, code) in PROGRAMS.items():
        reference = next(s for s in tasks[task].snippets if s.name == snippet)
        assert textwrap.dedent(reference.code).strip() != code.strip(), name
    assert set(SAMPLE) <= set(PROGRAMS)


@pytest.mark.parametrize(("mode", "name"), _cases())
def test_a_correct_completion_in_a_research_idiom_passes_every_layer(runners, tasks, mode, name):
    task_id, snippet_name, _idioms, code = PROGRAMS[name]
    task = tasks[task_id]
    snippet = next(s for s in task.snippets if s.name == snippet_name)
    verdict = runners[mode].evaluate(task, snippet, textwrap.indent(code.strip("\n"), " " * snippet.indent))
    assert verdict.passed, (verdict.category, verdict.reason, verdict.stderr_tail[-2000:])
    assert verdict.confirmation == "confirmed", verdict
    assert verdict.tests_failed == 0
    assert verdict.warm is (mode == "warm")
