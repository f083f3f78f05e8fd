"""Verdicts a completion cannot forge (issue 10 item 1; docs/integrity.md).

Tampering programs against the example pset's rmsnorm task, each a deliberately wrong RMS plus a trick
that used to make the test pass. With the static screen on (as every evaluation runs) each is refused as
``harness_tampering`` naming the construct and line; with the screen off, the harness's runtime checks
still fail the ones that leave a trace in the process. Every reference snippet available (examples and the
hostile fixture) passes the screen: zero false positives.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from researchcodebench import errors
from researchcodebench.cli import main
from researchcodebench.pset import read_pset
from researchcodebench.runner import RESULT_MARK, START_MARK, Runner, verdict_from_run
from researchcodebench.sandbox.base import RunResult
from researchcodebench.screen import screen_completion, screen_source

from .runner_fixtures import checked_local_sandbox, eval_python

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "pset"
HOSTILE = Path(__file__).resolve().parent / "fixtures" / "hostile_pset"
#: The RMS over absolute values: wrong for every test of the task.
WRONG = "return x.abs().mean(dim=-1, keepdim=True)"

#: name -> (completion of rmsnorm's "root mean square" snippet, a word the screen's reason must contain).
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
    "torch-allclose-replaced": ("torch.allclose = lambda *a, **k: True\n" + WRONG, "torch (allclose)"),
    "torch-allclose-setattr": ("setattr(torch, 'allclose', lambda *a, **k: True)\n" + WRONG, "allclose"),
    "allclose-through-alias": ("t = torch\nt.allclose = lambda *a, **k: True\n" + WRONG, "allclose"),
    "allclose-through-comprehension": (
        "[setattr(m, 'allclose', lambda *a, **k: True) for m in [torch]]\n" + WRONG,
        "allclose",
    ),
    "allclose-deleted": ("del torch.allclose\n" + WRONG, "allclose"),
    "tensor-class-patched": ("type(x).allclose = lambda *a, **k: True\n" + WRONG, "computed object"),
    "functional-patched": (
        "import torch.nn.functional as F\nF.normalize = lambda *a, **k: a[0]\n" + WRONG,
        "torch.nn.functional",
    ),
    "frame-walk-forged-result": (
        "import sys, os\nf = sys._getframe()\nwhile f.f_back is not None:\n    f = f.f_back\n"
        "nonce = f.f_locals.get('nonce')\n"
        'os.write(2, (\'@@RCB-\' + \'RESULT@@ {"nonce": "%s", "status": 0}\\n\' % nonce).encode())\n'
        "os._exit(0)",
        "sys._getframe",
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
    "torch-private-api": ("torch._C._set_grad_enabled(True)\n" + WRONG, "torch._C"),
}

#: Programs the runtime layer must fail on its own (screen off): what they replace survives in the process.
RUNTIME: dict[str, str] = {
    "testresult-addfailure-noop": SCREENED["testresult-addfailure-noop"][0],
    "testresult-wassuccessful": SCREENED["testresult-wassuccessful"][0],
    "torch-allclose-replaced": SCREENED["torch-allclose-replaced"][0],
    "builtins-patched": SCREENED["builtins-patched"][0],
    "skip-every-test": SCREENED["skip-every-test"][0],
    "textrunner-replaced": (
        "import unittest\nunittest.TextTestRunner.run = lambda self, test: unittest.TestResult()\n" + WRONG
    ),
}


def _rmsnorm():
    task = next(t for t in read_pset(EXAMPLES).tasks if t.id == "rmsnorm")
    return task, next(s for s in task.snippets if s.name == "root mean square")


def _code(program: str, indent: int) -> str:
    return textwrap.indent(program, " " * indent)


@pytest.fixture(scope="module")
def runners(tmp_path_factory):
    sandbox = checked_local_sandbox(tmp_path_factory.mktemp("tampering") / "scratch")
    made = {
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
    yield made
    for runner in made.values():
        runner.close()


def test_battery_holds_at_least_fifteen_programs():
    assert len(SCREENED) >= 15 and len(RUNTIME) >= 5


@pytest.mark.parametrize("mode", ["warm", "cold"])
@pytest.mark.parametrize("name", sorted(SCREENED))
def test_tampering_program_is_refused_by_the_screen_naming_construct_and_line(runners, mode, name):
    task, snippet = _rmsnorm()
    program, word = SCREENED[name]
    verdict = runners[(mode, True)].evaluate(task, snippet, _code(program, snippet.indent))
    assert not verdict.passed
    assert (verdict.category, verdict.tier) == ("harness_tampering", "model")
    assert word in verdict.reason
    assert re.search(r"rmsnorm\.py:\d+: ", verdict.reason), verdict.reason


@pytest.mark.parametrize("mode", ["warm", "cold"])
@pytest.mark.parametrize("name", sorted(RUNTIME))
def test_tampering_program_past_the_screen_fails_the_runtime_checks(runners, mode, name):
    task, snippet = _rmsnorm()
    verdict = runners[(mode, False)].evaluate(task, snippet, _code(RUNTIME[name], snippet.indent))
    assert not verdict.passed
    assert verdict.category == "harness_tampering", verdict.reason
    assert verdict.warm is (mode == "warm")


@pytest.mark.parametrize("mode", ["warm", "cold"])
def test_reference_passes_the_runtime_checks_with_the_reference_test_count(runners, mode):
    task, snippet = _rmsnorm()
    verdict = runners[(mode, True)].evaluate(task, snippet, snippet.code)
    assert verdict.passed, verdict.reason
    assert (verdict.tests_run, verdict.tests_failed, verdict.tests_skipped) == (7, 0, 0)


@pytest.mark.parametrize("mode", ["warm", "cold"])
def test_a_correct_but_different_completion_still_passes(runners, mode):
    task, snippet = _rmsnorm()
    code = (
        "k = int(self.dim * self.p) if 0.0 < self.p < 1.0 else self.dim\n"
        "return x[..., :k].pow(2).mean(dim=-1, keepdim=True).sqrt()"
    )
    verdict = runners[(mode, True)].evaluate(task, snippet, _code(code, snippet.indent))
    assert verdict.passed, verdict.reason


def _reference_snippets():
    for root in (EXAMPLES, HOSTILE):
        for task in read_pset(root).tasks:
            for snippet in task.snippets:
                yield task, snippet


def test_every_available_reference_snippet_passes_the_screen():
    hits = {}
    count = 0
    for task, snippet in _reference_snippets():
        count += 1
        findings = screen_completion(
            original=task.read_text(snippet.file),
            snippet=snippet,
            code=snippet.code,
            test_entry=task.manifest.test_entry,
        )
        if findings:
            hits[(task.id, snippet.name)] = findings
    assert count == 85  # 74 example snippets + 11 of the hostile fixture
    assert hits == {}


def test_screen_names_the_line_of_the_filled_file():
    source = "import torch\n\n\ndef f(x):\n    y = x\n    torch.allclose = None\n    return y\n"
    findings = screen_source(source, first=5, last=6)
    assert [(f.line, f.construct) for f in findings] == [
        (6, "assignment to an attribute of imported torch (allclose)")
    ]
    assert screen_source(source, first=5, last=5) == []


def test_screen_sees_lines_split_by_a_lone_carriage_return():
    task, snippet = _rmsnorm()
    code = _code("y = 1", snippet.indent) + "\r" + _code("torch.allclose = None\n" + WRONG, snippet.indent)
    findings = screen_completion(
        original=task.read_text(snippet.file), snippet=snippet, code=code, test_entry="paper2code_test.py"
    )
    assert any("allclose" in f.construct for f in findings)


def test_screen_allows_local_objects_and_literal_attribute_names():
    source = (
        "import torch\nfrom torch import nn\n\n\ndef f(model, x):\n"
        "    for module in list(model.modules()):\n        setattr(module, 'scale', 2.0)\n"
        "    out = torch.zeros(3, dtype=torch.float64)\n    out.requires_grad_(False)\n"
        "    layer = nn.Linear(2, 2)\n    layer.weight = nn.Parameter(torch.ones(2, 2))\n"
        "    return getattr(torch, 'float64'), out\n"
    )
    assert screen_source(source, first=6, last=12) == []


def test_evaluate_oracle_passes_every_reference_of_the_examples_and_the_hostile_fixture(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("RCB_CACHE_DIR", str(tmp_path / "cache"))
    for root, expected in ((EXAMPLES, 74), (HOSTILE, 11)):
        status = main(["evaluate", str(root), "--oracle", "--no-cache", "--json", "--python", eval_python()])
        out, _ = capsys.readouterr()
        verdicts = json.loads(out)["verdicts"]
        assert status == 0
        assert len(verdicts) == expected
        assert [v for v in verdicts if v["outcome"] != "passed"] == []


def _result(*records: dict, exit_code: int = 0) -> RunResult:
    lines = [f"{START_MARK} n1"] + [f"{RESULT_MARK} {json.dumps(r)}" for r in records]
    return RunResult(exit_code=exit_code, duration_s=0.1, stderr=("\n".join(lines) + "\n").encode())


CLEAN = {"nonce": "n1", "early_exit": False, "status": 0, "exception": None, "tampered": []}


def test_harness_tampering_is_a_model_tier_category():
    assert errors.tier_of("harness_tampering") == "model"
    assert errors.LABELS["harness_tampering"] == "Harness tampering"


def test_a_run_reporting_replaced_functions_is_tampering_whatever_its_status():
    verdict = verdict_from_run(
        _result({**CLEAN, "tampered": ["torch.allclose"]}), "n1", facts=None, environment="e"
    )
    assert (verdict.outcome, verdict.category) == ("failed", "harness_tampering")
    assert "torch.allclose" in verdict.reason


def test_a_result_without_the_tampering_field_or_with_a_second_line_is_tampering():
    missing = {k: v for k, v in CLEAN.items() if k != "tampered"}
    assert (
        verdict_from_run(_result(missing), "n1", facts=None, environment="e").category == "harness_tampering"
    )
    twice = verdict_from_run(_result(CLEAN, CLEAN), "n1", facts=None, environment="e")
    assert twice.category == "harness_tampering"
    assert verdict_from_run(_result(CLEAN), "n1", facts=None, environment="e").passed


def test_failed_tests_with_exit_status_zero_do_not_pass():
    record = {**CLEAN, "unittest": True, "tests_run": 7, "tests_failed": 6, "tests_skipped": 0}
    record["exception"] = {"type": "AssertionError", "message": "x", "module": None, "builtin_base": None}
    verdict = verdict_from_run(_result(record), "n1", facts=None, environment="e")
    assert (verdict.outcome, verdict.category, verdict.tests_failed) == ("failed", "logic", 6)
