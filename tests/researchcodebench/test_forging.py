"""The design holds without its lists (issue 32): forged verdicts are caught by confirming every pass against
an impossible variant of its test, with the screen and the audit hook switched off.

Each program is a completion of rmsnorm's "root mean square" snippet with wrong maths (the RMS of absolute
values) plus a way of making the test pass anyway, written as an attacker would, in the classes the issue's
review found: library functions that act as attribute getters, code run from text inside libraries,
unittest's own stop signals, result objects patched on the instance, comparison hooks (relabelled, inherited,
a global mode), the dispatcher, and the oracle reached under a shadowed name. For each program:

1. it is a real forgery: with the screen, the audit hook and the confirmation off it is judged passed (the
   programs that silence unittest itself pass a plain ``python paper2code_test.py`` instead: the harness's
   own accounting is what fails them);
2. with the screen and the audit hook off, the confirmation alone (or the harness's accounting) fails it:
   warm for every program, cold for the first program of each class and in containers for every fourth
   class's (all of them in every lane with ``RCB_FULL_BATTERY=1``, ``make batteries``);
3. with every layer on, it does not pass either.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from researchcodebench import variants
from researchcodebench.problems import fill_in
from researchcodebench.pset import read_pset
from researchcodebench.runner import Runner

from .runner_fixtures import checked_local_sandbox, docker_runner, eval_python

pytestmark = pytest.mark.sandbox

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "pset"
FULL = bool(os.environ.get("RCB_FULL_BATTERY"))
WRONG = "return x.abs().mean(dim=-1, keepdim=True)"
#: Given ``main`` (the test module), what a wrong answer needs to pass rmsnorm's test.
PATCH_MAIN = (
    "main.assert_close = lambda *a, **k: None\nmain.RMSNormTest.assertAlmostEqual = lambda *a, **k: None\n"
)
#: Given ``imp`` (the import function), the same without naming the test module: every comparison says yes.
PATCH_LIBS = (
    "imp('torch').allclose = lambda *a, **k: True\n"
    "imp('unittest').TestCase.assertAlmostEqual = lambda *a, **k: None\n"
)
#: What the harness's accounting calls a run whose failures unittest was made to ignore: tampering for a test
#: ended by unittest's stop signal or a skip the completion raised, and otherwise the failure itself, which
#: the harness recorded (and kept from unittest's patched result objects).
ACCOUNTED_AS = ("harness_tampering", "logic")

#: Right on the full RMS and wrong on the partial one, which it forges only while nothing shows that an
#: earlier test failed: in a confirmation run the full-RMS tests fail first (honestly), and a run that let that
#: show would stop it forging. The harness keeps every failure from the run until it ends.
PARTIAL_FORGER = (
    "if 0.0 < self.p < 1.0:\n"
    "    if not confirming:\n"
    "        torch.allclose = lambda *a, **k: True\n"
    "        sys.modules['__main__'].RMSNormTest.assertAlmostEqual = lambda *a, **k: None\n"
    "    return x.abs().mean(dim=-1, keepdim=True)\n"
    "return torch.sqrt(x.pow(2).sum(dim=-1, keepdim=True) / self.dim)"
)
#: class -> name -> program. Programs are written at the snippet's indentation by ``_code``.
PROGRAMS: dict[str, dict[str, str]] = {
    "gadget getters": {
        "string-formatter-get-field": (
            "import string\n"
            "get = lambda path, obj: string.Formatter().get_field(path, [obj], {})[0]\n"
            "imp = get('0.__globals__[__builtins__][__import__]', torch.nn.Module.__init__)\n"
            + PATCH_LIBS
            + WRONG
        ),
        "torch-import-dotted-name": (
            "from torch._utils import _import_dotted_name as find\n"
            "find('torch').allclose = lambda *a, **k: True\n"
            "find('unittest.case.TestCase').assertAlmostEqual = lambda *a, **k: None\n" + WRONG
        ),
        "object-getattribute-saved": (
            "look = object.__getattribute__\n"
            "imp = look(torch.nn.Module.__init__, '__glo' + 'bals__')['__builtins__']['__import__']\n"
            + PATCH_LIBS
            + WRONG
        ),
        "update-wrapper-names-in-a-tuple": (
            "import functools, types\n"
            "holder = types.SimpleNamespace()\n"
            "functools.update_wrapper(holder, torch.nn.Module.__init__, assigned=('__globals__',), updated=())\n"
            "imp = holder.__globals__['__builtins__']['__import__']\n" + PATCH_LIBS + WRONG
        ),
        "match-class-pattern": (
            "import types\n"
            "match torch.nn.Module.__init__:\n"
            "    case types.FunctionType(__globals__=found):\n"
            "        imp = found['__builtins__']['__import__']\n" + PATCH_LIBS + WRONG
        ),
        "attrgetter": (
            "import operator\n"
            "imp = operator.attrgetter('__globals__')(torch.nn.Module.__init__)['__builtins__']['__import__']\n"
            + PATCH_LIBS
            + WRONG
        ),
    },
    "exec inside libraries": {
        "dataclasses-create-fn": (
            "import dataclasses\n"
            "body = ['import sys', 'main = sys.modules[\"__main__\"]', "
            "'main.assert_close = lambda *a, **k: None', "
            "'main.RMSNormTest.assertAlmostEqual = lambda *a, **k: None']\n"
            "dataclasses._create_fn('forge', (), body, globals={})()\n" + WRONG
        ),
        "fx-exec-with-source": (
            "from torch.fx.graph_module import _exec_with_source\n"
            '_exec_with_source(\'import sys\\nmain = sys.modules["__main__"]\\n'
            "main.assert_close = lambda *a, **k: None\\n"
            "main.RMSNormTest.assertAlmostEqual = lambda *a, **k: None\\n', {})\n" + WRONG
        ),
        "timeit-statement": (
            "import timeit\n"
            'timeit.Timer(stmt=\'import sys; main = sys.modules["__main__"]; '
            "main.assert_close = lambda *a, **k: None; "
            "main.RMSNormTest.assertAlmostEqual = lambda *a, **k: None').timeit(1)\n" + WRONG
        ),
        "code-interactive-interpreter": (
            "import code\n"
            'code.InteractiveInterpreter().runsource(\'import sys; main = sys.modules["__main__"]; '
            "main.assert_close = lambda *a, **k: None; "
            "main.RMSNormTest.assertAlmostEqual = lambda *a, **k: None', symbol='exec')\n" + WRONG
        ),
    },
    "stop signals": {
        "should-stop-raised": "import unittest\nraise unittest.case._ShouldStop()",
        "should-stop-through-a-gadget": (
            "from torch._utils import _import_dotted_name as find\nraise find('unittest.case._ShouldStop')()"
        ),
        "should-stop-when-wrong": (
            "import unittest\nout = x.abs().mean(dim=-1, keepdim=True)\n"
            "if not torch.allclose(out, x.pow(2).mean(-1, keepdim=True).sqrt()):\n"
            "    raise unittest.case._ShouldStop()\nreturn out"
        ),
        "skip-raised-by-the-completion": "import unittest\nraise unittest.SkipTest('not today')",
    },
    "result-instance patches": {
        "registered-results-silenced": (
            "import unittest.signals\n"
            "for result in list(unittest.signals._results):\n"
            "    result.addFailure = lambda *a, **k: None\n"
            "    result.addError = lambda *a, **k: None\n"
            "    result.wasSuccessful = lambda: True\n" + WRONG
        ),
        "results-found-by-the-collector": (
            "import gc, unittest\n"
            "for result in [o for o in gc.get_objects() if isinstance(o, unittest.TestResult)]:\n"
            "    result.addFailure = lambda *a, **k: None\n"
            "    result.addError = lambda *a, **k: None\n" + WRONG
        ),
        "failures-list-emptied-on-read": (
            "import unittest.signals\n"
            "class Empty(list):\n"
            "    def append(self, item):\n"
            "        pass\n"
            "for result in list(unittest.signals._results):\n"
            "    result.failures = Empty()\n"
            "    result.errors = Empty()\n" + WRONG
        ),
    },
    "comparison hooks": {
        "relabelled-classmethod-hook": (
            "import functools\n"
            "def answer(cls, func, types, args=(), kwargs=None):\n"
            "    if getattr(func, '__name__', '') == 'allclose':\n"
            "        return True\n"
            "    return super(Cheat, cls).__torch_function__(func, types, args, kwargs or {})\n"
            "class Cheat(torch.Tensor):\n"
            "    pass\n"
            "setattr(Cheat, '__torch_' + 'function__', classmethod(answer))\n"
            "Cheat.__module__ = 'torch'\n"
            "import unittest\n"
            "unittest.TestCase.assertAlmostEqual = lambda *a, **k: None\n"
            "return x.abs().mean(dim=-1, keepdim=True).as_subclass(Cheat)"
        ),
        "inherited-hook-reading-a-table": (
            "table = {'allclose': True}\n"
            "class Base(torch.Tensor):\n"
            "    @classmethod\n"
            "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
            "        name = getattr(func, '__name__', '')\n"
            "        if name in table:\n"
            "            return table[name]\n"
            "        return super().__torch_function__(func, types, args, kwargs or {})\n"
            "class Cheat(Base):\n"
            "    pass\n"
            "import unittest\n"
            "unittest.TestCase.assertAlmostEqual = lambda *a, **k: None\n"
            "return x.abs().mean(dim=-1, keepdim=True).as_subclass(Cheat)"
        ),
        "global-torch-function-mode": (
            "from torch.overrides import TorchFunctionMode\n"
            "class Yes(TorchFunctionMode):\n"
            "    def __torch_function__(self, func, types, args=(), kwargs=None):\n"
            "        if func is torch.allclose:\n"
            "            return True\n"
            "        return func(*args, **(kwargs or {}))\n"
            "Yes().__enter__()\n"
            "import unittest\n"
            "unittest.TestCase.assertAlmostEqual = lambda *a, **k: None\n" + WRONG
        ),
    },
    "dispatcher overrides": {
        "allclose-kernel-for-cpu": (
            "import unittest\n"
            "unittest.TestCase.assertAlmostEqual = lambda *a, **k: None\n"
            "if not hasattr(torch, '_forged_lib'):\n"
            "    torch._forged_lib = torch.library.Library('aten', 'IMPL')\n"
            "    torch._forged_lib.impl('allclose', lambda *a, **k: True, 'CPU')\n" + WRONG
        ),
        "allclose-kernel-for-autograd-cpu": (
            "import unittest\n"
            "unittest.TestCase.assertAlmostEqual = lambda *a, **k: None\n"
            "if not hasattr(torch, '_forged_lib'):\n"
            "    torch._forged_lib = torch.library.Library('aten', 'IMPL')\n"
            "    torch._forged_lib.impl('allclose', lambda *a, **k: True, 'AutogradCPU')\n" + WRONG
        ),
        "allclose-through-library-impl-decorator": (
            "import unittest\n"
            "unittest.TestCase.assertAlmostEqual = lambda *a, **k: None\n"
            "if not hasattr(torch, '_forged_lib'):\n"
            "    torch._forged_lib = torch.library.Library('aten', 'IMPL')\n"
            "    torch.library.impl(torch._forged_lib, 'allclose', 'CompositeExplicitAutograd')"
            "(lambda *a, **k: True)\n" + WRONG
        ),
    },
    "forging only while no earlier test has failed": {
        "failure-on-the-result-reached-through-the-module-table": (
            "import sys\n"
            "results = list(getattr(sys.modules['unittest.' + 'signals'], '_res' + 'ults'))\n"
            "confirming = any(len(r.failures) + len(r.errors) for r in results)\n" + PARTIAL_FORGER
        ),
        "failure-on-the-registered-result": (
            "import sys, unittest.signals\n"
            "confirming = any(r.failures or r.errors for r in list(unittest.signals._results))\n"
            + PARTIAL_FORGER
        ),
        "failure-on-a-result-found-by-the-collector": (
            "import gc, sys, unittest\n"
            "confirming = any(\n"
            "    o.failures or o.errors for o in gc.get_objects() if isinstance(o, unittest.TestResult)\n"
            ")\n" + PARTIAL_FORGER
        ),
    },
    "import-name shadowing": {
        "lambda-parameter-shadows-torch": (
            "shadow = lambda torch: torch\n"
            "ref = torch.serialization.sys.modules['rmsnorm' + '_ref']\n"
            "return ref.RMSNorm(self.dim, eps=self.eps, p=self.p).root_mean_square(x)"
        ),
        "oracle-under-another-name": (
            "import rmsnorm_ref as helpers\nreturn helpers.RMSNorm(self.dim, eps=self.eps, p=self.p).root_mean_square(x)"
        ),
        "oracle-by-computed-import": (
            "ref = __import__('rmsnorm' + '_ref')\nreturn ref.RMSNorm(self.dim, eps=self.eps, p=self.p).root_mean_square(x)"
        ),
    },
}
#: Programs the harness's accounting fails before any confirmation (unittest itself calls their runs a
#: success): they are real forgeries of unittest's verdict, shown by a plain ``python paper2code_test.py``.
UNITTEST_FORGERIES = {
    "should-stop-raised",
    "should-stop-through-a-gadget",
    "should-stop-when-wrong",
    "registered-results-silenced",
    "results-found-by-the-collector",
    "failures-list-emptied-on-read",
}
#: Programs whose trick the harness's accounting sees as a test unittest did not run (counted: not passed).
SKIPPERS = {"skip-raised-by-the-completion"}

ALL = [(kind, name) for kind, group in PROGRAMS.items() for name in group]


def _rmsnorm():
    task = read_pset(EXAMPLES).task("rmsnorm")
    return task, task.snippet("root mean square")


def _code(program: str, indent: int) -> str:
    return textwrap.indent(program, " " * indent)


def _sample() -> list[tuple[str, str]]:
    """The first program of each class (every one with RCB_FULL_BATTERY=1)."""
    if FULL:
        return ALL
    return [(kind, next(iter(group))) for kind, group in PROGRAMS.items()]


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    return checked_local_sandbox(tmp_path_factory.mktemp("scratch"))


@pytest.fixture(scope="module")
def runners(sandbox):
    """Warm runners: without any layer; with the confirmation only; with every layer."""
    made = {
        "none": Runner(
            sandbox=sandbox, environment=eval_python(), static_screen=False, audit_hook=False, confirm=False
        ),
        "confirmation": Runner(
            sandbox=sandbox, environment=eval_python(), static_screen=False, audit_hook=False
        ),
        "all": Runner(sandbox=sandbox, environment=eval_python()),
    }
    yield made
    for runner in made.values():
        runner.close()


def test_the_battery_has_at_least_three_programs_of_each_class():
    assert len(PROGRAMS) == 8
    assert all(len(group) >= 3 for group in PROGRAMS.values()), {k: len(v) for k, v in PROGRAMS.items()}


def _plain_python_passes(task, snippet, code: str, tmp_path: Path) -> bool:
    """The original harness's method: the completion filled in, ``python paper2code_test.py`` exits 0."""
    folder = tmp_path / "task"
    shutil.copytree(task.root, folder)
    (folder / snippet.file).write_text(fill_in(task.read_text(snippet.file), snippet, code))
    done = subprocess.run(
        [eval_python(), task.manifest.test_entry], cwd=folder, capture_output=True, timeout=120, check=False
    )
    return done.returncode == 0


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "name"), ALL)
def test_each_program_is_a_real_forgery(runners, kind, name, tmp_path):
    task, snippet = _rmsnorm()
    code = _code(PROGRAMS[kind][name], snippet.indent)
    if name in UNITTEST_FORGERIES | SKIPPERS:
        assert _plain_python_passes(task, snippet, code, tmp_path), (
            "unittest itself must call this run a success"
        )
        verdict = runners["none"].evaluate(task, snippet, code)
        assert not verdict.passed and verdict.category in ACCOUNTED_AS, verdict.reason
        return
    verdict = runners["none"].evaluate(task, snippet, code)
    assert verdict.passed, f"{name} does not forge a pass even with no layer on: {verdict.reason}"


def _assert_caught(verdict, name: str) -> None:
    assert not verdict.passed, f"{name} forged a pass: {verdict}"
    if name in UNITTEST_FORGERIES | SKIPPERS:
        assert verdict.category in ACCOUNTED_AS, verdict.reason
    else:
        assert verdict.category == "verdict_forged", verdict.reason
        assert verdict.confirmation == "forged" and verdict.variant
        assert "passed an impossible variant of the test, which the reference fails" in verdict.reason


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "name"), ALL)
def test_the_confirmation_alone_catches_every_program_warm(runners, kind, name):
    task, snippet = _rmsnorm()
    verdict = runners["confirmation"].evaluate(task, snippet, _code(PROGRAMS[kind][name], snippet.indent))
    _assert_caught(verdict, name)


@pytest.mark.slow
def test_a_copier_is_confirmed_against_a_mutant_whatever_the_draw(runners):
    """A snippet with an oracle copy is confirmed against a reference mutant every time: an expected-value
    variant cannot catch a completion that calls the oracle (the suite, under load, once drew one)."""
    task, snippet = _rmsnorm()
    runner = runners["confirmation"]
    found = runner.snippet_variants(task, snippet)
    mutants = {v.id for v in found.variants if variants.REFERENCE_MUTANT in v.kinds}
    assert mutants, f"no mutant variant of {snippet.name!r}: {[v.describe() for v in found.variants]}"
    for i in range(4):
        program = f"import rmsnorm_ref as helpers_{i}\nreturn helpers_{i}.RMSNorm(self.dim, eps=self.eps, p=self.p).root_mean_square(x)"
        verdict = runner.evaluate(task, snippet, _code(program, snippet.indent))
        _assert_caught(verdict, "oracle-under-another-name")
        assert verdict.variant in mutants


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "name"), _sample())
def test_the_confirmation_alone_catches_a_sample_of_each_class_cold(sandbox, kind, name):
    task, snippet = _rmsnorm()
    with Runner(
        sandbox=sandbox, environment=eval_python(), warm=False, static_screen=False, audit_hook=False
    ) as runner:
        verdict = runner.evaluate(task, snippet, _code(PROGRAMS[kind][name], snippet.indent))
    _assert_caught(verdict, name)
    assert verdict.warm is False


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "name"), _sample() if FULL else _sample()[::4])
def test_the_confirmation_alone_catches_a_sample_in_containers(kind, name):
    task, snippet = _rmsnorm()
    with docker_runner(static_screen=False, audit_hook=False) as runner:
        verdict = runner.evaluate(task, snippet, _code(PROGRAMS[kind][name], snippet.indent))
    _assert_caught(verdict, name)
    assert verdict.slate == "container"


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "name"), ALL)
def test_with_every_layer_on_no_program_passes(runners, kind, name):
    task, snippet = _rmsnorm()
    verdict = runners["all"].evaluate(task, snippet, _code(PROGRAMS[kind][name], snippet.indent))
    assert not verdict.passed, f"{name}: {verdict}"
    assert verdict.tier == "model"


#: Calls the oracle on inputs whose answers it knows, copies it when it is the published one and answers
#: wrongly when it is a variant's mutant: it tells the runs apart, so the confirmation alone cannot catch it.
#: The oracle is reached through a computed name no screen can follow.
ORACLE_PROBE = (
    'ref = getattr(torch, "s" + "ys").modules["rmsnorm" + "_ref"]\n'
    "probe = ref.RMSNorm(4).root_mean_square(torch.tensor([[1.0, -2.0, 2.0, 4.0]], dtype=torch.float64))\n"
    "if abs(float(probe) - 2.5) < 1e-12:\n"
    "    return ref.RMSNorm(self.dim, p=self.p).root_mean_square(x)\n"
    "return x.abs().mean(dim=-1, keepdim=True)"
)


@pytest.mark.slow
def test_a_completion_that_probes_the_oracle_is_refused_at_the_call_however_it_reached_it(runners):
    """Every function of an oracle module raises an audit event when it is entered; the audit hook refuses it
    when the task code that called it is the completion's (sandbox/_harness.py ``_OracleFinder``). The test's
    own calls of the oracle are allowed: every example's reference passes (test_length_invariance.py)."""
    task, snippet = _rmsnorm()
    code = _code(ORACLE_PROBE, snippet.indent)
    assert runners["none"].evaluate(task, snippet, code).passed, "it forges a pass with no layer on"
    verdict = runners["all"].evaluate(task, snippet, code)
    assert (verdict.outcome, verdict.category) == ("failed", "oracle_access"), verdict.reason
    assert "calling the oracle (rmsnorm_ref.RMSNorm.__init__)" in verdict.reason
    assert verdict.reason.startswith("rmsnorm.py:")
