"""The static screen (``researchcodebench.screen``, docs/integrity.md) on its own: which line of the filled-in
file a finding names, which chains it sends to the sandbox's resolution step, and the ordinary constructs it
lets through. The tampering battery (test_tampering.py) runs the screen with every other layer."""

from __future__ import annotations

import textwrap
from pathlib import Path

from researchcodebench.pset import read_pset
from researchcodebench.screen import screen_completion, screen_source

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "pset"
#: The RMS over absolute values: a wrong answer for rmsnorm's "root mean square" snippet.
WRONG = "return x.abs().mean(dim=-1, keepdim=True)"


def _code(program: str, indent: int) -> str:
    return textwrap.indent(program, " " * indent)


def test_screen_names_the_line_of_the_filled_file():
    source = "import torch\n\n\ndef f(x):\n    y = x\n    setattr(torch, y, None)\n    return y\n"
    found = screen_source(source, first=5, last=6)
    assert [(f.line, f.construct) for f in found.findings] == [
        (6, "setattr() with a computed attribute name")
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
    code = (
        _code("y = 1", snippet.indent)
        + "\r"
        + _code("f = getattr(torch, 'a' + 'b')\n" + WRONG, snippet.indent)
    )
    found = screen_completion(
        original=task.read_text(snippet.file), snippet=snippet, code=code, test_entry="paper2code_test.py"
    )
    assert any("getattr" in f.construct for f in found.findings)


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
