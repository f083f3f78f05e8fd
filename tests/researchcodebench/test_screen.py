"""The static screen (``researchcodebench.screen``, docs/integrity.md) on its own: which line of the filled-in
file a finding names, which chains it sends to the sandbox's resolution step, what it keeps refusing (only what
protects the confirmation and the sandbox, each reason naming its kind) and the research idioms it lets
through. The tampering battery (test_tampering.py) runs the screen with every other layer, the honesty battery
(test_honesty.py) runs correct completions in those idioms through every layer."""

from __future__ import annotations

import textwrap
from pathlib import Path

from researchcodebench import screen
from researchcodebench.pset import read_pset
from researchcodebench.screen import screen_completion, screen_source

from .runner_fixtures import eval_python

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "pset"
#: The RMS over absolute values: a wrong answer for rmsnorm's "root mean square" snippet.
WRONG = "return x.abs().mean(dim=-1, keepdim=True)"


def _code(program: str, indent: int) -> str:
    return textwrap.indent(program, " " * indent)


def test_screen_names_the_line_of_the_filled_file():
    source = "import torch\n\n\ndef f(x):\n    y = x\n    g = x.__globals__\n    return y\n"
    found = screen_source(source, first=5, last=6)
    assert [(f.line, f.construct) for f in found.findings] == [
        (6, "use of the attribute __globals__ (frames, the collector's object lists and tracing hooks)")
    ]
    assert screen_source(source, first=5, last=5).findings == []


def test_screen_sends_every_chain_rooted_at_an_import_with_its_use():
    source = (
        "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\ndef f(x):\n"
        "    a = F.softmax(x, -1)\n    torch.backends.cudnn.deterministic = True\n"
        "    layer = nn.Linear(2, 2)\n    g = torch.nn\n    h = g.functional.relu\n    return [torch]\n"
    )
    found = screen_source(source, first=7, last=12)
    chains = {(c.root, c.attrs, c.use) for c in found.chains}
    assert ("torch.nn.functional", ("softmax",), "call") in chains
    assert ("torch", ("backends", "cudnn", "deterministic"), "store") in chains
    assert ("torch", ("nn", "Linear"), "call") in chains
    assert ("torch", ("nn", "functional", "relu"), "load") in chains
    assert ("torch", (), "value") in chains
    assert found.findings == []


def test_screen_sees_lines_split_by_a_lone_carriage_return():
    task = next(t for t in read_pset(EXAMPLES).tasks if t.id == "rmsnorm")
    snippet = next(s for s in task.snippets if s.name == "root mean square")
    code = _code("y = 1", snippet.indent) + "\r" + _code("f = eval('1')\n" + WRONG, snippet.indent)
    found = screen_completion(
        original=task.read_text(snippet.file), snippet=snippet, code=code, test_entry="paper2code_test.py"
    )
    assert any("eval" in f.construct for f in found.findings)


def test_screen_allows_local_objects_and_literal_attribute_names():
    source = (
        "import torch\nfrom torch import nn\n\n\ndef f(model, x):\n"
        "    for module in list(model.modules()):\n        setattr(module, 'scale', 2.0)\n"
        "    out = torch.zeros(3, dtype=torch.float64)\n    out.requires_grad_(False)\n"
        "    layer = nn.Linear(2, 2)\n    layer.weight = nn.Parameter(torch.ones(2, 2))\n"
        "    dp = torch.zeros(3, 3)\n    dp[1][2] = 4.0\n    name = self.__class__.__name__\n"
        "    object.__setattr__(layer, 'frozen', True)\n    super().__init__()\n"
        "    return getattr(torch, 'float64'), out, hasattr(layer, 'bias')\n"
    )
    found = screen_source(source, first=6, last=17)
    assert found.findings == []


#: Research idioms the screen once refused (issue 32): no finding, and no chain the resolution step refuses.
IDIOMS = """
import dataclasses
import functools
import inspect
import operator
import typing
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torch.utils.checkpoint import checkpoint


def f(self, x, config, name):
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    act = getattr(F, config["activation"])
    setattr(self, f"layer_{name}", act)
    known = hasattr(x, name) and vars(self) and self.__dict__ and globals()
    get = getattr
    Point = type("Point", (), {"x": 0})
    fields = dataclasses.fields(dataclasses.make_dataclass("C", ["a"]))
    sig = inspect.signature(f)
    ok = inspect.isclass(Point)
    keys = operator.attrgetter("weight")(self), operator.methodcaller("numel")(x)
    hints = typing.get_type_hints(f)
    fast = torch.compile(f, backend="eager")
    grads = torch.func.vmap(torch.func.grad(torch.sum))(x)
    loader = DataLoader(x)
    y = checkpoint(act, x, use_reentrant=False)
    torch.allclose = lambda *a, **k: True
    code = f.__code__.co_consts

    class Hook(torch.Tensor):
        def __eq__(self, other):
            return True

        def __getattr__(self, key):
            return key

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return super().__torch_function__(func, types, args, kwargs or {})

    Hook.__eq__ = lambda a, b: False
    raise SystemExit(0)
"""


def test_research_idioms_pass_the_screen_and_its_resolution_step():
    lines = IDIOMS.strip("\n").split("\n")
    found = screen_source(IDIOMS.strip("\n"), first=13, last=len(lines))
    assert found.findings == []
    refused = screen.resolve(found.chains, python=eval_python(), preload=("torch",))
    assert refused == []


#: What the screen keeps: (completion line, a word its reason must contain).
KEPT = [
    ("import importlib", "the module table and the import machinery"),
    ("import unittest", "the test framework"),
    ("import linecache", "the test framework and the test's text"),
    ("import subprocess", "process and sandbox escape"),
    ("import ctypes", "ctypes, raw memory and native code"),
    ("import paper2code_test", "belongs to the test"),
    ("g = f.__globals__", "__globals__"),
    ("k = object.__subclasses__()", "__subclasses__"),
    ("c = f.__closure__", "__closure__"),
    ("b = __builtins__", "__builtins__"),
    ("b = globals()['__builtins__']", "__builtins__"),
    ("up = frame.f_back", "f_back"),
    ("v = getattr(frame, 'f_locals')", "f_locals"),
    ("s = '{0.__globals__}'.format(f)", "__globals__"),
    ("exec('x = 1')", "code from text"),
    ("m = __import__('os')", "__import__"),
    ("breakpoint()", "tracing hooks"),
    ("open(2, 'w')", "descriptor 2"),
    ("t = 'paper2code_test.py'", "the test script"),
]


def test_the_screen_keeps_only_what_protects_the_confirmation_and_the_sandbox_naming_the_kind():
    for line, word in KEPT:
        source = f"import torch\n\n\ndef f(frame):\n    {line}\n"
        found = screen_source(
            source, first=5, last=5, protected=("paper2code_test.py",), protected_modules=("paper2code_test",)
        )
        assert [f.line for f in found.findings] == [5], line
        assert word in found.findings[0].construct, (line, found.findings)


#: Chains the resolution step refuses, by what the library really holds: (chain, a word the reason contains).
RESOLVED = [
    ("torch.sys.modules", "use of sys.modules (reached as torch.sys.modules)"),
    ("torch.serialization.os.system", "use of os.system (reached as torch.serialization.os.system)"),
    ("torch.nn.modules.module.inspect.currentframe", "use of inspect.currentframe"),
    ("numpy.testing.TestCase", "the module unittest.case (the test framework"),
    ("torch.ctypes", "the module ctypes (ctypes, raw memory and native code)"),
    ("torch._C._dispatch_library", "use of torch._C._dispatch_library"),
    ("inspect.stack", "use of inspect.stack"),
    ("gc.get_objects", "use of gc.get_objects"),
    ("pickle.loads", "pickle and marshal loading"),
    ("torch.from_file", "raw memory"),
]


def test_the_resolution_step_follows_what_the_libraries_hold():
    chains = []
    for index, (dotted, _word) in enumerate(RESOLVED):
        root, *attrs = dotted.split(".")
        chains.append(screen.Chain(index, root, tuple(attrs), "load"))
    chains.append(screen.Chain(len(RESOLVED), "torch", ("backends", "cudnn", "benchmark"), "store"))
    chains.append(screen.Chain(len(RESOLVED) + 1, "torch", ("allclose",), "store"))
    chains.append(screen.Chain(len(RESOLVED) + 2, "gc", ("collect",), "call"))
    refused = {
        f.line: f.construct for f in screen.resolve(chains, python=eval_python(), preload=("torch", "numpy"))
    }
    for index, (dotted, word) in enumerate(RESOLVED):
        assert word in refused.get(index, ""), (dotted, refused.get(index))
    assert set(refused) == set(range(len(RESOLVED)))


def test_a_parameter_shadows_an_import_only_inside_its_own_function():
    source = "import torch\n\n\ndef f(x):\n    g = lambda torch: torch\n    return torch.sys.modules\n"
    found = screen_source(source, first=5, last=6)
    assert ("torch", ("sys", "modules")) in {(c.root, c.attrs) for c in found.chains}
