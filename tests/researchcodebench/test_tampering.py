"""Verdicts a completion cannot forge (issues 18 and 32; docs/integrity.md).

Tampering programs against the example pset's rmsnorm task, each a deliberately wrong RMS plus a trick
that would make the test pass. None of them passes, warm, cold or in containers. Those whose construct the
screen keeps (what protects the confirmation and the sandbox: the module table, unittest, frames, the
collector, code from text, escape) are refused naming the construct and its line: by the screen on the host,
by its resolution step in the sandbox (a chain through a library's own ``sys``, ``os`` ...) or, with the
screen off, by the audit hook at run time. Those whose construct is allowed since issue 32 (replacing library
functions, computed names, comparison hooks, exits: ``CAUGHT_BY``) end not passed all the same: a complete
bypass passes its test and is caught by the confirmation against an impossible variant (``verdict_forged``),
result methods made no-ops find nothing to silence (the harness keeps failures from unittest), an exit as an
early exit, and a trick that alone does not
make the test pass fails the test. Every reference snippet available (examples and the hostile fixture)
passes the screen, the resolution step and the runtime layer: zero false positives on our own code (the real
research code corpus is tests/researchcodebench/test_screen_corpus.py, correct research idioms
tests/researchcodebench/test_honesty.py).
"""

from __future__ import annotations

import json
import os
import re
import textwrap
from pathlib import Path

import pytest

from researchcodebench import screen
from researchcodebench.cli import main
from researchcodebench.pset import read_pset
from researchcodebench.runner import Runner, protected_modules, task_facts
from researchcodebench.screen import screen_completion

from .runner_fixtures import checked_local_sandbox, docker_runner, eval_python

pytestmark = pytest.mark.sandbox

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "pset"
HOSTILE = Path(__file__).resolve().parent / "fixtures" / "hostile_pset"
#: The RMS over absolute values: wrong for every test of the task.
WRONG = "return x.abs().mean(dim=-1, keepdim=True)"
#: What a wrong answer needs to pass rmsnorm's test: every comparison it uses answers yes.
PATCHES = (
    "main.assert_close = lambda *a, **k: None\nmain.RMSNormTest.assertAlmostEqual = lambda *a, **k: None\n"
)

#: name -> (completion of rmsnorm's "root mean square" snippet, a word the reason must contain). Every
#: layer is on; the first block are the programs of issue 10, the rest the kinds of issue 18.
SCREENED: dict[str, tuple[str, str]] = {
    "testresult-addfailure-noop": (
        "import unittest\nunittest.TestResult.addFailure = lambda *a, **k: None\n"
        "unittest.TestResult.addError = lambda *a, **k: None\n" + WRONG,
        "unittest",
    ),
    "testresult-wassuccessful": (
        "import unittest\nunittest.TestResult.wasSuccessful = lambda self: True\n" + WRONG,
        "unittest",
    ),
    "torch-allclose-replaced": ("torch.allclose = lambda *a, **k: True\n" + WRONG, "torch.allclose"),
    "torch-allclose-setattr": ("setattr(torch, 'allclose', lambda *a, **k: True)\n" + WRONG, "allclose"),
    "allclose-through-alias": ("t = torch\nt.allclose = lambda *a, **k: True\n" + WRONG, "allclose"),
    "allclose-through-comprehension": (
        "[setattr(m, 'allclose', lambda *a, **k: True) for m in [torch]]\n" + WRONG,
        "module torch used as a value",
    ),
    "allclose-deleted": ("del torch.allclose\n" + WRONG, "allclose"),
    "tensor-class-patched": ("type(x).allclose = lambda *a, **k: True\n" + WRONG, "type(...)"),
    "functional-patched": (
        "import torch.nn.functional as F\nF.normalize = lambda *a, **k: a[0]\n" + WRONG,
        "torch.nn.functional.normalize",
    ),
    "frame-walk-forged-result": (
        "import sys, os\nf = sys._getframe()\nwhile f.f_back is not None:\n    f = f.f_back\n"
        "nonce = f.f_locals.get('nonce')\n"
        'os.write(2, (\'@@RCB-\' + \'RESULT@@ {"nonce": "%s", "status": 0}\\n\' % nonce).encode())\n'
        "os._exit(0)",
        "f_back",
    ),
    "inspect-stack": ("import inspect\nframes = inspect.stack()\n" + WRONG, "inspect"),
    "oracle-through-sys-modules": (
        "import sys\nref = sys.modules['__main__'].rmsnorm_ref\n"
        "return ref.RMSNorm(self.dim, p=self.p).root_mean_square(x)",
        "sys.modules",
    ),
    "oracle-through-computed-import": (
        "ref = __import__('rmsnorm' + '_ref')\nreturn ref.RMSNorm(self.dim, p=self.p).root_mean_square(x)",
        "__import__",
    ),
    "oracle-through-importlib": (
        "import importlib\nref = importlib.import_module('rmsnorm' + '_ref')\n"
        "return ref.RMSNorm(self.dim, p=self.p).root_mean_square(x)",
        "importlib",
    ),
    "gc-walk": ("import gc\nfound = [o for o in gc.get_objects() if isinstance(o, dict)]\n" + WRONG, "gc"),
    "builtins-patched": ("import builtins\nbuiltins.float = lambda v: 2.5\n" + WRONG, "builtins"),
    "ctypes": ("import ctypes\nctypes.memset(0, 0, 0)\n" + WRONG, "ctypes"),
    "os-exit": ("import os\nos._exit(0)", "os._exit"),
    "sys-exit": ("import sys\nsys.exit(0)", "sys.exit"),
    "raise-systemexit": ("raise SystemExit(0)", "SystemExit"),
    "signal-handler": ("import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n" + WRONG, "signal"),
    "atexit-handler": ("import atexit\natexit.register(print)\n" + WRONG, "atexit"),
    "exec-of-text": ("exec('import os')\n" + WRONG, "exec"),
    "printed-result-mark": ("print('@@RCB-RESULT@@ {}')\n" + WRONG, "@@RCB"),
    "torch-function-override": (
        "class Always(torch.Tensor):\n    @classmethod\n"
        "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n        return True\n"
        "return x.abs().mean(dim=-1, keepdim=True).as_subclass(Always)",
        "__torch_function__",
    ),
    "function-globals": ("g = self.forward.__globals__\n" + WRONG, "__globals__"),
    "getattr-computed": ("f = getattr(torch, 'all' + 'close')\n" + WRONG, "getattr"),
    "vars-of-module": ("vars(torch)['allclose'] = lambda *a, **k: True\n" + WRONG, "vars"),
    "settrace": ("import sys\nsys.settrace(None)\n" + WRONG, "sys.settrace"),
    "thread": ("import threading\nthreading.Thread(target=print).start()\n" + WRONG, "threading"),
    "read-the-test-file": ("source = open('paper2code_test.py').read()\n" + WRONG, "paper2code_test"),
    "proc-self-mem": ("open('/proc/self/mem', 'rb')\n" + WRONG, "/proc/"),
    "write-to-stderr-fd": ("open(2, 'w').write('x')\n" + WRONG, "descriptor 2"),
    "object-subclasses": ("kinds = ().__class__.__base__.__subclasses__()\n" + WRONG, "__subclasses__"),
    "skip-every-test": ("import unittest\nraise unittest.SkipTest('skipped')", "unittest"),
    "torch-private-api": ("torch._C._set_print_stack_traces_on_fatal_signal(True)\n" + WRONG, "torch._C"),
    # -- the oracle or machinery through an attribute path of an imported library (issue 18)
    "oracle-through-torch-sys": (
        "ref = torch.sys.modules['rmsnorm' + '_ref']\nreturn ref.RMSNorm(self.dim, p=self.p).root_mean_square(x)",
        "reached as torch.sys",
    ),
    "oracle-through-functional-importlib": (
        "ref = torch.nn.functional.importlib.import_module('rmsnorm' + '_ref')\n"
        "return ref.RMSNorm(self.dim, p=self.p).root_mean_square(x)",
        "reached as torch.nn.functional.importlib",
    ),
    "os-through-serialization": (
        "torch.serialization.os.system('true')\n" + WRONG,
        "reached as torch.serialization.os",
    ),
    "builtins-through-torch": ("torch.builtins.float = lambda v: 2.5\n" + WRONG, "reached as torch.builtins"),
    "ctypes-through-torch": ("torch.ctypes.memset(0, 0, 0)\n" + WRONG, "reached as torch.ctypes"),
    "dispatcher-through-torch-c": (
        "lib = torch._C._dispatch_library('IMPL', 'aten', '')\n" + WRONG,
        "torch._C._dispatch_library",
    ),
    # -- computed attribute names
    "setattr-joined-name": (
        "setattr(torch, ''.join(['all', 'close']), lambda *a, **k: True)\n" + WRONG,
        "computed",
    ),
    "attrgetter": (
        "import operator\nmods = operator.attrgetter('sys.modules')(torch)\n" + WRONG,
        "operator.attrgetter",
    ),
    "module-dict": ("torch.__dict__['allclose'] = lambda *a, **k: True\n" + WRONG, "__dict__"),
    "getattr-as-value": ("g = getattr\nf = g(torch, 'all' + 'close')\n" + WRONG, "getattr used as a value"),
    "dunder-setattr-computed": (
        "name = 'allclose'\ntorch.__setattr__(name, lambda *a, **k: True)\n" + WRONG,
        "computed",
    ),
    "format-string-introspection": ("s = '{0.__globals__}'.format(self.forward)\n" + WRONG, "__globals__"),
    # -- comparison hooks installed by computed names
    "hook-by-setattr": (
        "class Always(torch.Tensor):\n    pass\n"
        "setattr(Always, '__torch_' + 'function__', classmethod(lambda cls, *a, **k: True))\n"
        "return x.abs().mean(dim=-1, keepdim=True).as_subclass(Always)",
        "computed",
    ),
    "hook-by-three-argument-type": (
        "Always = type('Always', (torch.Tensor,), {'__torch_function__': classmethod(lambda c, *a, **k: True)})\n"
        "return x.abs().mean(dim=-1, keepdim=True).as_subclass(Always)",
        "type() with three arguments",
    ),
    "hook-by-dunder-assignment": (
        "class Always(torch.Tensor):\n    pass\nAlways.__eq__ = lambda a, b: True\n" + WRONG,
        "__eq__",
    ),
    "hook-through-class-of-result": (
        "out = x.abs().mean(dim=-1, keepdim=True)\nsetattr(out.__class__, 'allclose', lambda *a, **k: True)\n"
        "return out",
        "__class__",
    ),
    # -- the test module's globals and its TestCase methods
    "test-globals-through-sys": (
        "import sys\nmain = sys.modules['__main__']\n" + PATCHES + WRONG,
        "sys.modules",
    ),
    "testcase-method-through-unittest": (
        "from unittest import TestCase\nTestCase.assertAlmostEqual = lambda *a, **k: None\n" + WRONG,
        "unittest",
    ),
    "test-module-imported-by-name": ("import paper2code_test\n" + WRONG, "paper2code_test"),
    # -- frames reached through a library
    "frame-through-torch-sys": ("f = torch.sys._getframe(1)\n" + WRONG, "sys"),
    "frame-through-serialization-sys": ("f = torch.serialization.sys._getframe()\n" + WRONG, "sys"),
    "frame-through-module-inspect": (
        "f = torch.nn.modules.module.inspect.currentframe()\n" + WRONG,
        "reached as torch.nn.modules.module.inspect",
    ),
    "frame-through-attrgetter": (
        "import operator\nget = operator.attrgetter('f_' + 'back')\n" + WRONG,
        "operator.attrgetter",
    ),
    "generator-frame": ("def g():\n    yield 1\nf = g().gi_frame\n" + WRONG, "gi_frame"),
}

#: Programs the runtime layer must fail on its own (screen off): name -> (program, a word the reason must
#: contain). The audit hook ends the first kinds at the event; the others are complete bypasses of rmsnorm's
#: test (without the guard they pass) that the guard finds by what they changed. ``main`` is the test
#: module, reached through ``sys`` (which the screen refuses already).
_MAIN = "import sys\nmain = sys.modules['__main__']\n"
_ALLCLOSE = "torch.allclose = lambda *a, **k: True\n"
#: A comparison hook that makes torch.allclose say yes and float() say 2.5.
_HOOK_FUNCTION = (
    "def hook(cls, func, types, args=(), kwargs=None):\n"
    "    if func is torch.allclose:\n        return True\n"
    "    if getattr(func, '__name__', '') == '__float__':\n        return 2.5\n"
    "    return torch.Tensor.__torch_function__.__func__(cls, func, types, args, kwargs or {})\n"
)
_HOOK = (
    "class Always(torch.Tensor):\n    pass\n"
    + _HOOK_FUNCTION
    + "setattr(Always, '__torch_' + 'function__', classmethod(hook))\n"
)
RUNTIME: dict[str, tuple[str, str]] = {
    # -- frames
    "frame-getframe": ("import sys\nf = sys._getframe()\n" + WRONG, "sys._getframe"),
    "frame-inspect-currentframe": (
        "import inspect\nf = inspect.currentframe().f_back\n" + WRONG,
        "frame access",
    ),
    "frame-traceback-walk-stack": (
        "import traceback\nframes = list(traceback.walk_stack(None))\n" + WRONG,
        "frame access",
    ),
    "frame-of-a-traceback": (
        "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    f = e.__traceback__.tb_frame\n" + WRONG,
        "tb_frame",
    ),
    "frame-of-a-generator": ("def g():\n    yield 1\nf = g().gi_frame\n" + WRONG, "gi_frame"),
    "frame-current-frames": ("import sys\nframes = sys._current_frames()\n" + WRONG, "sys._current_frames"),
    "frame-through-library-inspect": ("f = torch.inspect.currentframe()\n" + WRONG, "frame access"),
    # logging reads frames for its own records, but currentframe hands the frame to whoever called it
    "frame-logging-currentframe": ("import logging\nf = logging.currentframe()\n" + WRONG, "frame access"),
    # -- the garbage collector
    "gc-get-objects": (SCREENED["gc-walk"][0], "gc.get_objects"),
    "gc-get-referrers": (
        "import gc\nholders = gc.get_referrers(torch.allclose)\n" + WRONG,
        "gc.get_referrers",
    ),
    "gc-get-referents": ("import gc\nparts = gc.get_referents(torch)\n" + WRONG, "gc.get_referents"),
    # -- ctypes
    "ctypes-memset": (SCREENED["ctypes"][0], "ctypes"),
    "ctypes-dlopen": ("import ctypes\nlibc = ctypes.CDLL(None)\n" + WRONG, "ctypes.dlopen"),
    "ctypes-read-memory": (
        "import ctypes\nraw = ctypes.string_at(id(torch), 16)\n" + WRONG,
        "ctypes.",
    ),
    # -- tracing, profiling and audit hooks
    "trace-settrace": (SCREENED["settrace"][0], "sys.settrace"),
    "trace-setprofile": ("import sys\nsys.setprofile(None)\n" + WRONG, "sys.setprofile"),
    "trace-second-audit-hook": (
        "import sys\nsys.addaudithook(lambda *a: None)\n" + WRONG,
        "sys.addaudithook",
    ),
    # -- code and function surgery, code from text
    "code-swapped": (
        _MAIN + "main.assert_close.__code__ = (lambda *a, **k: None).__code__\n" + WRONG,
        "__code__",
    ),
    "code-defaults-of-a-test-function": (
        _MAIN + "main.assert_close.__defaults__ = (1e9, 1e9)\n" + WRONG,
        "__defaults__",
    ),
    "code-function-from-code": (
        "import types\nf = types.FunctionType((lambda: 1).__code__, {})\n" + WRONG,
        "code",
    ),
    "code-exec-of-text": (SCREENED["exec-of-text"][0], "exec"),
    "code-object-class-changed": (
        "class Other(torch.Tensor):\n    pass\nout = x.abs().mean(dim=-1, keepdim=True)\n"
        "out.__class__ = Other\nreturn out",
        "__class__",
    ),
    # -- the oracle, the test script, descriptors and files Python would import
    "file-oracle-read": ("source = open('rmsnorm' + '_ref.py').read()\n" + WRONG, "oracle"),
    "file-test-read": ("source = open('paper2code' + '_test.py').read()\n" + WRONG, "test script"),
    "file-stderr-descriptor": ("open(1 + 1, 'w').write('x')\n" + WRONG, "file descriptor 2"),
    "file-proc-self-mem": ("open('/proc/' + 'self/mem', 'rb')\n" + WRONG, "/proc/"),
    "file-planted-module": ("open('scipy' + '.py', 'w').write('ok = 1')\n" + WRONG, "would import"),
    # -- complete bypasses (the guard found them until issue 32; the confirmation and the accounting now)
    "guard-testresult-noops": (
        "import unittest\nunittest.TestResult.addFailure = lambda *a, **k: None\n"
        "unittest.TestResult.addError = lambda *a, **k: None\n" + WRONG,
        "recorded",
    ),
    "guard-allclose-and-testcase": (
        "import unittest\n"
        + _ALLCLOSE
        + "unittest.TestCase.assertAlmostEqual = lambda *a, **k: None\n"
        + WRONG,
        "TestCase.assertAlmostEqual",
    ),
    "guard-builtins-float": (
        "import builtins\nbuiltins.float = lambda v: 2.5\n" + _ALLCLOSE + WRONG,
        "builtins.float",
    ),
    "guard-tensor-method-added": (
        "torch.Tensor.__float__ = lambda self: 2.5\n" + _ALLCLOSE + WRONG,
        "torch.Tensor.__float__",
    ),
    # -- complete bypasses the guard finds: the test module and its TestCase class
    "guard-test-globals": (
        _MAIN + "class Proxy:\n    def __getattr__(self, name):\n        return getattr(torch, name)\n"
        "    def allclose(self, *a, **k):\n        return True\n"
        "main.torch = Proxy()\nmain.RMSNormTest.assertAlmostEqual = lambda *a, **k: None\n" + WRONG,
        "test.torch",
    ),
    "guard-test-class-method": (
        _MAIN + _ALLCLOSE + "main.RMSNormTest.assertAlmostEqual = lambda *a, **k: None\n" + WRONG,
        "RMSNormTest.assertAlmostEqual",
    ),
    # -- a complete bypass through a comparison hook installed with a computed name
    "guard-comparison-hook": (
        _HOOK + "return x.abs().mean(dim=-1, keepdim=True).as_subclass(Always)",
        "Always.__torch_function__",
    ),
    # The hook written in the class body: the class is garbage once each test ends, whenever the collector
    # runs, and is still seen (the harness keeps the run's classes until its check).
    "guard-comparison-hook-in-class-body": (
        _HOOK_FUNCTION + "class Always(torch.Tensor):\n    __torch_function__ = classmethod(hook)\n"
        "junk = [[i] for i in range(100000)]\n"
        "return x.abs().mean(dim=-1, keepdim=True).as_subclass(Always)",
        "Always.__torch_function__",
    ),
}


#: Programs whose construct the screen and the audit hook no longer refuse (issue 32), and what stops them
#: now: "confirmation" (a complete bypass passes its test and then an impossible variant: verdict_forged),
#: "early exit" (the run never reaches its end), "test" (the trick alone does not make rmsnorm's test pass, so the wrong maths fails it;
#: the guard-* programs are the complete bypasses built of the same tricks).
CAUGHT_BY: dict[str, str] = {
    **dict.fromkeys(
        (
            "torch-allclose-replaced", "torch-allclose-setattr", "allclose-through-alias",
            "allclose-through-comprehension", "allclose-deleted", "tensor-class-patched", "functional-patched",
            "signal-handler", "atexit-handler", "printed-result-mark", "torch-function-override",
            "getattr-computed", "vars-of-module", "thread", "setattr-joined-name", "attrgetter", "module-dict",
            "getattr-as-value", "dunder-setattr-computed", "hook-by-setattr", "hook-by-three-argument-type",
            "hook-by-dunder-assignment", "hook-through-class-of-result", "frame-through-attrgetter",
            "code-function-from-code", "code-object-class-changed",
        ),
        "test",
    ),
    **dict.fromkeys(("os-exit", "sys-exit", "raise-systemexit"), "early exit"),
    # The harness keeps a failing test's failure from unittest's result objects (docs/integrity.md,
    # "Accounting"): result methods made no-ops have nothing to silence, and the wrong answer fails its test.
    "guard-testresult-noops": "test",
    **dict.fromkeys(
        (
            "guard-allclose-and-testcase", "guard-builtins-float", "guard-tensor-method-added",
            "guard-test-globals", "guard-test-class-method", "guard-comparison-hook",
            "guard-comparison-hook-in-class-body",
        ),
        "confirmation",
    ),
}  # fmt: skip
#: The verdict categories each catcher of ``CAUGHT_BY`` ends in.
CATCHERS = {
    "confirmation": {"verdict_forged"},
    "early exit": {"early_exit"},
    "test": {"logic", "attribute", "type", "name", "index_key", "value_runtime"},
}


def _rmsnorm():
    task = next(t for t in read_pset(EXAMPLES).tasks if t.id == "rmsnorm")
    return task, next(s for s in task.snippets if s.name == "root mean square")


def _code(program: str, indent: int) -> str:
    return textwrap.indent(program, " " * indent)


#: warm and cold runs of the local sandbox, and cold runs in containers of a real Docker engine (skipped,
#: naming why, where none answers).
#: The cold and container lanes start an interpreter per run (torch imported afresh: about 3 s of CPU each, a
#: container's start on top); in the suite they run a sample (``_cases``), and every program with
#: RCB_FULL_BATTERY=1 (``make batteries``).
MODES = ("warm", "cold", "docker")


def _cases(names, *, per_kind: int, kinds_of_at_least: int = 1) -> list[tuple[str, str]]:
    """(mode, program) pairs: every program warm, cold ``per_kind`` programs of each kind (the name's first
    word) that has at least ``kinds_of_at_least`` programs and in containers the first of those, or all of
    them in every lane with RCB_FULL_BATTERY=1 (``make batteries``).

    The warm lane judges every program through the same screen, resolution step, audit hook and guard as
    the others; what the cold and container lanes add is how the interpreter starts, which the sample of
    each kind checks."""
    kinds: dict[str, list[str]] = {}
    for name in sorted(names):
        kinds.setdefault(name.split("-")[0], []).append(name)
    full = os.environ.get("RCB_FULL_BATTERY") == "1"
    sampled = {
        n
        for group in kinds.values()
        for n in (group if full else group[:per_kind] if len(group) >= kinds_of_at_least else ())
    }
    # In containers, one program of the sample per test: what a container adds to a cold run is how the
    # interpreter starts in it, the same for every program.
    in_containers = sampled if full else set(sorted(sampled)[:1])
    return [
        (mode, n)
        for n in sorted(names)
        for mode in MODES
        if mode == "warm" or (mode == "cold" and n in sampled) or (mode == "docker" and n in in_containers)
    ]


class _Runners(dict):
    """The local runners made up front; the docker ones on first use (a skip where no engine answers)."""

    def __missing__(self, key):
        mode, screened = key
        if mode != "docker":
            raise KeyError(key)
        self[key] = docker_runner(static_screen=screened)
        return self[key]


@pytest.fixture(scope="module")
def runners(tmp_path_factory):
    sandbox = checked_local_sandbox(tmp_path_factory.mktemp("tampering") / "scratch")
    made = _Runners(
        {
            (mode, screened): Runner(
                sandbox=sandbox,
                environment=eval_python(),
                warm=mode == "warm",
                calibrate=False,
                workers=1,
                static_screen=screened,
            )
            for mode in ("warm", "cold")
            for screened in (True, False)
        }
    )
    yield made
    for runner in made.values():
        runner.close()


def test_battery_holds_at_least_three_new_programs_of_each_kind():
    kinds = {
        "library paths": ("torch-sys", "functional-importlib", "serialization", "through-torch", "torch-c"),
        "computed names": ("joined-name", "attrgetter", "module-dict", "getattr-as-value", "dunder-setattr"),
        "comparison hooks": ("hook-by-setattr", "hook-by-three", "hook-by-dunder", "hook-through"),
        "test module": ("test-globals", "testcase-method", "test-module-imported"),
        "frames through a library": ("frame-through-torch", "frame-through-serial", "frame-through-module"),
    }
    for kind, needles in kinds.items():
        found = [name for name in SCREENED if any(n in name for n in needles)]
        assert len(found) >= 3, kind
    assert len(SCREENED) >= 55
    for kind in ("frame-", "gc-", "ctypes-", "trace-", "code-", "file-", "guard-"):
        assert sum(1 for name in RUNTIME if name.startswith(kind)) >= 3, kind
    assert set(CAUGHT_BY) <= set(SCREENED) | set(RUNTIME)


def _assert_caught(verdict, catcher: str) -> None:
    """``verdict`` ended not passed, caught by ``catcher`` (``CAUGHT_BY``), with no screen or hook finding."""
    assert not verdict.passed, verdict.reason
    assert verdict.category in CATCHERS[catcher], (catcher, verdict.category, verdict.reason)
    assert not re.search(r"rmsnorm\.py:\d+: ", verdict.reason), verdict.reason
    if catcher == "confirmation":
        assert verdict.confirmation == "forged", verdict
        assert "passed an impossible variant" in verdict.reason


def _refused_programs(table):
    return [name for name in table if name not in CAUGHT_BY]


@pytest.mark.parametrize(
    ("mode", "name"), _cases(_refused_programs(SCREENED), per_kind=1, kinds_of_at_least=2)
)
def test_tampering_program_is_refused_naming_construct_and_line(runners, mode, name):
    task, snippet = _rmsnorm()
    program, word = SCREENED[name]
    verdict = runners[(mode, True)].evaluate(task, snippet, _code(program, snippet.indent))
    assert not verdict.passed
    assert verdict.tier == "model"
    assert verdict.category in ("harness_tampering", "oracle_access"), verdict.reason
    assert word in verdict.reason, verdict.reason
    assert re.search(r"rmsnorm\.py:\d+: ", verdict.reason), verdict.reason


@pytest.mark.parametrize(
    ("mode", "name"), _cases([n for n in SCREENED if n in CAUGHT_BY], per_kind=1, kinds_of_at_least=2)
)
def test_a_program_the_screen_now_allows_still_does_not_pass(runners, mode, name):
    task, snippet = _rmsnorm()
    program, _word = SCREENED[name]
    verdict = runners[(mode, True)].evaluate(task, snippet, _code(program, snippet.indent))
    _assert_caught(verdict, CAUGHT_BY[name])


@pytest.mark.parametrize(("mode", "name"), _cases(_refused_programs(RUNTIME), per_kind=1))
def test_tampering_program_past_the_screen_fails_the_runtime_layer(runners, mode, name):
    task, snippet = _rmsnorm()
    program, word = RUNTIME[name]
    verdict = runners[(mode, False)].evaluate(task, snippet, _code(program, snippet.indent))
    assert not verdict.passed, verdict.reason
    assert verdict.category in ("harness_tampering", "oracle_access"), (verdict.category, verdict.reason)
    assert word in verdict.reason, verdict.reason
    assert verdict.warm is (mode == "warm")


@pytest.mark.parametrize(("mode", "name"), _cases([n for n in RUNTIME if n in CAUGHT_BY], per_kind=2))
def test_a_program_the_audit_hook_now_allows_still_does_not_pass(runners, mode, name):
    """With the screen off, what the audit hook lets through ends not passed: the complete bypasses are caught
    by the confirmation, the rest fail the test."""
    task, snippet = _rmsnorm()
    program, _word = RUNTIME[name]
    verdict = runners[(mode, False)].evaluate(task, snippet, _code(program, snippet.indent))
    _assert_caught(verdict, CAUGHT_BY[name])
    assert verdict.warm is (mode == "warm")


@pytest.mark.parametrize(
    ("mode", "name"),
    _cases([n for n in CAUGHT_BY if n in RUNTIME and CAUGHT_BY[n] == "confirmation"], per_kind=2),
)
def test_a_complete_bypass_the_screen_allows_is_caught_by_the_confirmation(runners, mode, name):
    """Every layer on: a bypass whose constructs the screen allows (a tensor method added, a comparison hook
    set by a computed name) is caught by the confirmation; one the screen keeps (``sys.modules``, unittest,
    builtins) is refused by it."""
    task, snippet = _rmsnorm()
    program, _word = RUNTIME[name]
    verdict = runners[(mode, True)].evaluate(task, snippet, _code(program, snippet.indent))
    assert not verdict.passed, verdict.reason
    if re.search(r"rmsnorm\.py:\d+: ", verdict.reason):
        assert verdict.category == "harness_tampering", verdict.reason
    else:
        _assert_caught(verdict, "confirmation")


@pytest.mark.parametrize(("mode", "name"), _cases([n for n in RUNTIME if n.startswith("guard-")], per_kind=2))
def test_the_guards_programs_are_real_bypasses(runners, mode, name, tmp_path):
    """Run as the task's own code (the reference run: no completion, so nothing it does is judged), each
    bypass makes rmsnorm's test pass with the wrong RMS: the confirmation, not chance, is what fails them
    (the result methods made no-ops excepted: the harness records every failure itself)."""
    task, snippet = _rmsnorm()
    program, _word = RUNTIME[name]
    original = task.read_text(snippet.file)
    lines = original.split("\n")
    body = _code(program, snippet.indent).split("\n")
    patched = "\n".join(lines[: snippet.start_line] + body + lines[snippet.end_line - 1 :])
    root = tmp_path / f"bypass-{mode}-{name}"
    import shutil

    shutil.copytree(task.root, root / "rmsnorm", dirs_exist_ok=True)
    (root / "rmsnorm" / snippet.file).write_text(patched)
    shutil.copy(EXAMPLES / "papers.yaml", root / "papers.yaml")
    bypass = next(t for t in read_pset(root).tasks if t.id == "rmsnorm")
    verdict = runners[(mode, False)].reference(bypass)
    if name == "guard-testresult-noops":
        # unittest's own runner would call this run a success (a plain ``python paper2code_test.py`` exits 0:
        # test_forging.py); the harness records every failure itself, so even as the task's own code it fails.
        assert not verdict.passed and verdict.category == "logic", verdict.reason
    else:
        assert verdict.passed, verdict.reason


@pytest.mark.parametrize("mode", MODES)
def test_the_audit_hook_names_the_completions_line(runners, mode):
    task, snippet = _rmsnorm()
    verdict = runners[(mode, False)].evaluate(
        task, snippet, _code(RUNTIME["frame-getframe"][0], snippet.indent)
    )
    assert verdict.category == "harness_tampering"
    assert re.search(r"rmsnorm\.py:\d+: frame access \(sys\._getframe\)", verdict.reason), verdict.reason


@pytest.mark.parametrize("mode", MODES)
def test_reference_passes_every_layer_with_the_reference_test_count(runners, mode):
    task, snippet = _rmsnorm()
    for screened in (True, False):
        verdict = runners[(mode, screened)].evaluate(task, snippet, snippet.code)
        assert verdict.passed, verdict.reason
        assert (verdict.tests_run, verdict.tests_failed, verdict.tests_skipped) == (7, 0, 0)


@pytest.mark.parametrize("mode", MODES)
def test_a_correct_but_different_completion_still_passes(runners, mode):
    task, snippet = _rmsnorm()
    code = (
        "import math\nfrom functools import reduce\n"
        "k = int(self.dim * self.p) if 0.0 < self.p < 1.0 else self.dim\n"
        "logger = __name__\n"
        "squares = [x[..., i] ** 2 for i in range(k)]\n"
        "total = reduce(lambda a, b: a + b, squares)\n"
        "return (total / k).sqrt().unsqueeze(-1) * math.cos(0.0)"
    )
    verdict = runners[(mode, True)].evaluate(task, snippet, _code(code, snippet.indent))
    assert verdict.passed, verdict.reason


@pytest.mark.parametrize("mode", MODES)
def test_a_completion_that_logs_and_warns_passes_every_layer(runners, mode):
    """logging's findCaller and warnings read frames on the completion's behalf; that is not tampering."""
    task, snippet = _rmsnorm()
    code = (
        "import logging\nimport warnings\n"
        "logging.getLogger('rmsnorm').warning('norm of %s', tuple(x.shape))\n"
        "warnings.warn('partial RMSNorm is approximate', stacklevel=2)\n" + textwrap.dedent(snippet.code)
    )
    for screened in (True, False):
        verdict = runners[(mode, screened)].evaluate(task, snippet, _code(code, snippet.indent))
        assert verdict.passed, verdict.reason


def _reference_snippets():
    for root in (EXAMPLES, HOSTILE):
        for task in read_pset(root).tasks:
            for snippet in task.snippets:
                yield task, snippet


def test_every_available_reference_snippet_passes_the_screen_and_its_resolution_step():
    hits = {}
    count = 0
    for root in (EXAMPLES, HOSTILE):
        for task in read_pset(root).tasks:
            facts = task_facts(task)
            protected = protected_modules(task, facts)
            chains = []
            for snippet in task.snippets:
                count += 1
                found = screen_completion(
                    original=task.read_text(snippet.file),
                    snippet=snippet,
                    code=snippet.code,
                    test_entry=task.manifest.test_entry,
                    local_modules=facts.local_modules,
                    protected_modules=protected,
                )
                if found.findings:
                    hits[(task.id, snippet.name)] = found.findings
                chains += found.chains
            refused = screen.resolve(
                chains,
                python=eval_python(),
                preload=("torch", "numpy"),
                local_modules=facts.local_modules,
                protected_modules=protected,
            )
            if refused:
                hits[(task.id, "resolution")] = refused
    assert count == 101  # 90 example snippets + 11 of the hostile fixture
    assert hits == {}


def test_evaluate_oracle_passes_every_reference_of_the_examples_and_the_hostile_fixture(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("RCB_CACHE_DIR", str(tmp_path / "cache"))
    for root, expected in ((EXAMPLES, 90), (HOSTILE, 11)):
        status = main(["evaluate", str(root), "--oracle", "--no-cache", "--json", "--python", eval_python()])
        out, _ = capsys.readouterr()
        verdicts = json.loads(out)["verdicts"]
        assert status == 0
        assert len(verdicts) == expected
        assert [v for v in verdicts if v["outcome"] != "passed"] == []
