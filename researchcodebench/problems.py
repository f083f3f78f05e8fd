"""Building the problem shown to a model and filling its answer in (docs/task-format.md).

Reading the answer (extraction, re-indentation) belongs to the predictions format:
``researchcodebench.predictions``. Two prompt templates:

* ``rcb-2025``: the original harness's structure (in our own wording), kept for reproducing published
  numbers, *including* its documented defect: every context file's lines are joined without newlines.
* ``rcb-v2``: the portal default. Context files keep their newlines, every file (the masked one too) gets
  a ``## path`` header and a code fence, and answer extraction tolerates common fence variants.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from researchcodebench.annotations import Snippet, split_lines, strip_tags

if TYPE_CHECKING:
    from researchcodebench.pset import Task

TEMPLATES = ("rcb-2025", "rcb-v2")
DEFAULT_TEMPLATE = "rcb-v2"


@dataclass(frozen=True)
class Prompt:
    """The exact text sent as the single user message; ``hash`` is the sha256 hex digest of ``text``."""

    template: str
    text: str
    hash: str

    @classmethod
    def of(cls, template: str, text: str) -> Prompt:
        return cls(template=template, text=text, hash=hashlib.sha256(text.encode("utf-8")).hexdigest())

    def to_dict(self) -> dict[str, Any]:
        return {"template": self.template, "text": self.text, "hash": self.hash}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Prompt:
        return cls(template=str(data["template"]), text=str(data["text"]), hash=str(data["hash"]))


def _check_lines(lines: list[str], snippet: Snippet) -> None:
    """Refuse to mask/fill a file that does not hold this snippet's tags where the snippet says."""
    ok = (
        1 <= snippet.start_line < snippet.end_line <= len(lines)
        and f'name="{snippet.name}"' in lines[snippet.start_line - 1]
        and f'name="{snippet.name}"' in lines[snippet.end_line - 1]
    )
    if not ok:
        raise ValueError(
            f"{snippet.file}: lines {snippet.start_line}-{snippet.end_line} do not hold the tags of snippet "
            f'"{snippet.name}" (was the file changed after parsing?)'
        )


def placeholder_lines(snippet: Snippet) -> list[str]:
    """The masked block, exact: two placeholder lines, each followed by an empty line (an original artefact)."""
    pad = " " * snippet.indent
    return [
        f'{pad}# TODO: Implement block "{snippet.name}"',
        "",
        f"{pad}# Approximately {snippet.lines} line(s) of code.",
        "",
    ]


def mask_file(text: str, snippet: Snippet) -> str:
    """Masking (docs/task-format.md): replace the tag lines and everything between them with the placeholder block, then
    drop every remaining tag line. ``text`` is the annotated file as parsed (``"\\n"`` line separators)."""
    lines = split_lines(text)
    _check_lines(lines, snippet)
    before = strip_tags(lines[: snippet.start_line - 1])
    after = strip_tags(lines[snippet.end_line :])
    return "\n".join(before + placeholder_lines(snippet) + after)


def _answer_lines(code: str) -> list[str]:
    # A single trailing newline ends the answer's last line rather than adding an empty line.
    if code == "":
        return []
    return split_lines(code[:-1] if code.endswith("\n") else code)


def fill_in(text: str, snippet: Snippet, code: str) -> str:
    """Filling in (docs/task-format.md): the original file with the lines strictly between the snippet's tags replaced by
    ``code``'s lines. All tags and all other snippets' reference code stay."""
    lines = split_lines(text)
    _check_lines(lines, snippet)
    return "\n".join(lines[: snippet.start_line] + _answer_lines(code) + lines[snippet.end_line - 1 :])


def blank_body(snippet: Snippet) -> str:
    """A do-nothing body at the snippet's indentation: a test that passes with it cannot detect errors."""
    return " " * snippet.indent + "pass"


_GUIDELINES = (
    "Guidelines:\n"
    "1. Reply with only the code that replaces the TODO block, nothing from the lines around it.\n"
    "2. Indent your code exactly as the TODO comment is indented.\n"
    "3. Do not repeat the enclosing function, class or method definition.\n"
    "4. Give complete, working code: no placeholders and no unfinished parts.\n"
    "5. Follow the paper's method: it is the reference for what the code must do.\n"
    "6. Put your answer inside a ```python code fence, always.\n"
)

_EXAMPLE = (
    "For instance, given this block to complete:\n"
    "class Accumulator:\n"
    "    def push(self, values):\n"
    "        for value in values:\n"
    '            # TODO: Implement block "add value"\n'
    "            # Approximately 2 line(s) of code.\n"
    "        return self.total\n"
    "\n"
    "a good reply is:\n"
    "```python\n"
    "            self.count += 1\n"
    "            self.total += value\n"
    "```\n"
)


def _fenced(text: str) -> str:
    """Wrap text in a code fence longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"{fence}python\n{body}{fence}\n"


def render_prompt(
    *,
    template: str,
    masked_file: str,
    masked_path: str,
    context: list[tuple[str, str]],
    paper: str | None,
) -> Prompt:
    """Assemble a prompt from its parts. ``paper=None`` gives the without-paper ablation."""
    if template not in TEMPLATES:
        raise ValueError(f"unknown template {template!r}; choose one of {', '.join(TEMPLATES)}")
    parts: list[str] = []
    if paper is not None:
        parts.append(
            "You are an expert in turning research papers into working code: you reproduce the code "
            "a paper describes.\n\nHere is the paper:\n\n" + paper.rstrip("\n") + "\n"
        )
    else:
        parts.append("You are an expert in completing research code.\n")
    parts.append("Here is the code that you need to complete:\n")
    if template == "rcb-2025":
        for path, text in context:
            # Documented defect of the original, kept for exact reproduction: lines joined with no separator.
            parts.append(f"## {path}\n" + "".join(text.splitlines()) + "\n")
        parts.append(masked_file.rstrip("\n") + "\n")
    else:
        for path, text in context:
            parts.append(f"## {path}\n" + _fenced(text))
        parts.append(f"## {masked_path}\n" + _fenced(masked_file))
    parts.append(_GUIDELINES)
    parts.append(_EXAMPLE)
    return Prompt.of(template, "\n".join(parts))


def build_prompt(
    task: Task, snippet: Snippet, *, template: str = DEFAULT_TEMPLATE, with_paper: bool = True
) -> Prompt:
    """The full prompt for one snippet of a task (paper text, context files, the masked file, guidelines)."""
    masked = mask_file(task.read_text(snippet.file), snippet)
    context = [(path, task.read_text(path)) for path in task.meta.context_file_paths]
    paper = task.read_text(task.paper_file) if with_paper and task.paper_file else None
    if with_paper and paper is None:
        raise ValueError(f"task {task.id!r} has no paper file (paper2code_paper.tex or .md)")
    return render_prompt(
        template=template, masked_file=masked, masked_path=snippet.file, context=context, paper=paper
    )
