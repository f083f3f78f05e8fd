"""Masking, filling in and prompts (docs/task-format.md), with golden texts written by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from researchcodebench.annotations import parse_file
from researchcodebench.problems import blank_body, build_prompt, fill_in, mask_file
from researchcodebench.pset import read_pset

SOURCE = """\
import torch


class Norm:
    def forward(self, x):
        # <paper2code name="forward pass">
        # <paper2code name="rms">
        rms = x.pow(2).mean(-1, keepdim=True).sqrt()
        # </paper2code name="rms">

        y = x / rms  # divide
        # </paper2code name="forward pass">
        return y
"""

HOSTILE = Path(__file__).parent / "fixtures" / "hostile_pset"


def _snippets() -> dict:
    snippets, issues = parse_file(SOURCE, "norm.py")
    assert issues == []
    return {s.name: s for s in snippets}


def test_masks_outer_snippet_with_placeholder_block_and_blank_lines() -> None:
    expected = """\
import torch


class Norm:
    def forward(self, x):
        # TODO: Implement block "forward pass"

        # Approximately 2 line(s) of code.

        return y
"""
    assert mask_file(SOURCE, _snippets()["forward pass"]) == expected


def test_masks_inner_snippet_and_strips_all_other_tags() -> None:
    expected = """\
import torch


class Norm:
    def forward(self, x):
        # TODO: Implement block "rms"

        # Approximately 1 line(s) of code.


        y = x / rms  # divide
        return y
"""
    assert mask_file(SOURCE, _snippets()["rms"]) == expected


def test_fill_in_replaces_only_lines_between_tags_and_keeps_tags() -> None:
    answer = "        rms = x.abs().max()\n"
    expected = """\
import torch


class Norm:
    def forward(self, x):
        # <paper2code name="forward pass">
        # <paper2code name="rms">
        rms = x.abs().max()
        # </paper2code name="rms">

        y = x / rms  # divide
        # </paper2code name="forward pass">
        return y
"""
    assert fill_in(SOURCE, _snippets()["rms"], answer) == expected


def test_fill_in_with_multiline_answer_and_reference_code_intact() -> None:
    filled = fill_in(SOURCE, _snippets()["forward pass"], "        a = 1\n        y = a")
    lines = filled.split("\n")
    assert lines[5:9] == [
        '        # <paper2code name="forward pass">',
        "        a = 1",
        "        y = a",
        '        # </paper2code name="forward pass">',
    ]


def test_mask_refuses_a_snippet_from_another_text() -> None:
    snip = _snippets()["rms"]
    with pytest.raises(ValueError, match="do not hold the tags"):
        mask_file("x = 1\n" * 20, snip)


def test_masks_tab_indented_snippet_with_spaces_like_the_original() -> None:
    text = 'def f(x):\n\t# <paper2code name="a">\n\treturn x\n\t# </paper2code name="a">\n'
    snippet = parse_file(text, "t.py")[0][0]
    assert mask_file(text, snippet) == (
        'def f(x):\n # TODO: Implement block "a"\n\n # Approximately 1 line(s) of code.\n\n'
    )


def test_blank_body_is_pass_at_snippet_indent() -> None:
    assert blank_body(_snippets()["rms"]) == "        pass"


def test_rcb_2025_prompt_joins_context_lines_without_newlines_and_has_no_masked_header() -> None:
    task = read_pset(HOSTILE).task("crlf tabs")
    prompt = build_prompt(task, task.snippet("hinge"), template="rcb-2025")
    assert "## helpers/util.py\nEPS = 1e-8def safe(x):    return x + EPS\n" in prompt.text
    assert "## loss.py" not in prompt.text
    assert 'TODO: Implement block "hinge"' in prompt.text
    assert "Here is the paper" in prompt.text and "\\section{Loss}" in prompt.text
    assert prompt.text.count("```python") == 2  # guideline 6 and the worked example


def test_rcb_v2_prompt_keeps_newlines_and_names_the_masked_file() -> None:
    task = read_pset(HOSTILE).task("crlf tabs")
    prompt = build_prompt(task, task.snippet("clip high"), template="rcb-v2")
    assert "## helpers/util.py\n```python\nEPS = 1e-8\n\n\ndef safe(x):\n" in prompt.text
    assert "## lib/tabbed.py\n```python\ndef clip(x, lo, hi):\n" in prompt.text
    assert '\t\treturn lo\n # TODO: Implement block "clip high"\n' in prompt.text


def test_prompt_without_paper_and_hash_identifies_text() -> None:
    task = read_pset(HOSTILE).task("md_task")
    snippet = task.snippet("scale")
    with_paper = build_prompt(task, snippet)
    without = build_prompt(task, snippet, with_paper=False)
    assert "Here is the paper" not in without.text and "Normalise" not in without.text
    assert with_paper.hash != without.hash and len(with_paper.hash) == 64
    assert build_prompt(task, snippet).hash == with_paper.hash
