"""paper2code annotation tags: parsing, the snippet tree, the line count N and validation.

Exact rules (docs/task-format.md):

* A tag is a whole line: optional indentation, ``#``, optional spaces, the tag, then only whitespace.
* For every start tag on line i, its snippet ends at the first later end tag with the same name on line j;
  the snippet's ``code`` is lines i+1 .. j-1 verbatim (nested tags included).
* N counts the code lines that are not blank and whose stripped text does not start with ``#``.

Validation (an improvement over the original, which checked nothing) reports *every* problem at once,
each with ``file:line``, a message, a hint and a machine-readable ``code``. Problems that make a snippet
unusable are ``severity="error"``; suspicious but harmless patterns are ``severity="warning"``.

Lines are separated by ``"\\n"`` only, so line numbers agree with what an editor shows; a trailing
``"\\r"`` (CRLF files read in binary) is whitespace and so never stops a tag from matching. Indentation is
the count of leading whitespace characters: a tab counts as one, exactly like a space.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass
from typing import Any

START_TAG = re.compile(r'^\s*#\s*<paper2code\s+name="([^"]+)">\s*$')
END_TAG = re.compile(r'^\s*#\s*</paper2code\s+name="([^"]+)">\s*$')
#: Anything that looks like an attempt at a tag; lines matching this but not the exact regexes are reported.
_LOOSE_TAG = re.compile(r"<\s*/?\s*paper2code\b", re.IGNORECASE)
_DEF_LINE = re.compile(r"^\s*(async\s+def|def|class)\s+\w")
_DECORATOR_LINE = re.compile(r"^\s*@")

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True)
class AnnotationIssue:
    """One validation problem. ``file`` is relative to the task folder; ``line`` is 1-based (0 = whole file).

    Also used for task- and pset-level problems (``papers.yaml`` entries, missing files), so every problem
    the library reports has the same shape.
    """

    file: str
    line: int
    message: str
    hint: str = ""
    code: str = ""
    severity: str = ERROR

    @property
    def is_error(self) -> bool:
        return self.severity == ERROR

    def location(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file

    def __str__(self) -> str:
        text = f"{self.location()}: {self.severity}: {self.message}"
        return f"{text} (hint: {self.hint})" if self.hint else text

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "message": self.message,
            "hint": self.hint,
            "code": self.code,
            "severity": self.severity,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AnnotationIssue:
        return cls(
            file=str(data["file"]),
            line=int(data["line"]),
            message=str(data["message"]),
            hint=str(data.get("hint", "")),
            code=str(data.get("code", "")),
            severity=str(data.get("severity", ERROR)),
        )


@dataclass(frozen=True)
class Snippet:
    """One tag pair = one benchmark problem. See the module docstring for the exact extraction rule."""

    name: str
    file: str
    start_line: int
    end_line: int
    code: str
    lines: int
    indent: int
    depth: int
    parent: str | None
    children: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "file": self.file,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "code": self.code,
            "lines": self.lines,
            "indent": self.indent,
            "depth": self.depth,
            "parent": self.parent,
            "children": list(self.children),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Snippet:
        return cls(
            name=str(data["name"]),
            file=str(data["file"]),
            start_line=int(data["start_line"]),
            end_line=int(data["end_line"]),
            code=str(data["code"]),
            lines=int(data["lines"]),
            indent=int(data["indent"]),
            depth=int(data["depth"]),
            parent=data.get("parent"),
            children=tuple(data.get("children", ())),
        )


def split_lines(text: str) -> list[str]:
    """Split on ``"\\n"`` only (no other separators), the line model every function here uses."""
    return text.split("\n")


def leading_ws(line: str) -> int:
    """Count of leading whitespace characters (a tab counts as one)."""
    return len(line) - len(line.lstrip())


def line_count(code: str) -> int:
    """The line count N (docs/task-format.md): non-blank lines whose stripped text does not start with ``#``."""
    count = 0
    for line in split_lines(code):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            count += 1
    return count


def code_indent(code_lines: list[str], fallback: int) -> int:
    """Minimum leading-whitespace count over non-blank lines; ``fallback`` when all are blank."""
    widths = [leading_ws(line) for line in code_lines if line.strip()]
    return min(widths) if widths else fallback


def _string_lines(text: str) -> set[int]:
    """1-based numbers of lines that lie *inside* a multi-line string literal (not its first line).

    A tag-looking line there is text, not a comment, yet the original's regex would treat it as a tag.
    Files that do not tokenize (not Python, or broken) yield an empty set: nothing can be said.
    """
    inside: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            is_fstring = tok.type == getattr(tokenize, "FSTRING_START", -1)
            if (tok.type == tokenize.STRING or is_fstring) and tok.end[0] > tok.start[0]:
                inside.update(range(tok.start[0] + 1, tok.end[0] + 1))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return set()
    return inside


@dataclass
class _Tag:
    kind: str  # "start" | "end"
    name: str
    line: int  # 1-based
    indent: int


def _find_tags(lines: list[str], file: str, issues: list[AnnotationIssue]) -> list[_Tag]:
    tags: list[_Tag] = []
    for idx, line in enumerate(lines, start=1):
        start = START_TAG.match(line)
        end = END_TAG.match(line) if not start else None
        if start:
            tags.append(_Tag("start", start.group(1), idx, leading_ws(line)))
        elif end:
            tags.append(_Tag("end", end.group(1), idx, leading_ws(line)))
        elif _LOOSE_TAG.search(line):
            before = line.split("#", 1)[0] if "#" in line else line
            if before.strip():
                issues.append(
                    AnnotationIssue(
                        file,
                        idx,
                        "tag text that is not on a line of its own is ignored (inline or inside a string)",
                        "a tag must be a whole comment line: '# <paper2code name=\"...\">'; move it to its "
                        "own line if it is meant as a tag",
                        "inline_tag",
                        WARNING,
                    )
                )
            else:
                issues.append(
                    AnnotationIssue(
                        file,
                        idx,
                        "malformed tag is ignored: it does not match the exact tag syntax",
                        "write '# <paper2code name=\"NAME\">' to open and '# </paper2code name=\"NAME\">' to "
                        "close, with double quotes and nothing after '>'",
                        "malformed_tag",
                        WARNING,
                    )
                )
    return tags


def _pair_original(tags: list[_Tag]) -> list[tuple[_Tag, _Tag]]:
    """The original's pairing: each start tag ends at the first later end tag with the same name."""
    pairs: list[tuple[_Tag, _Tag]] = []
    for pos, tag in enumerate(tags):
        if tag.kind != "start":
            continue
        for later in tags[pos + 1 :]:
            if later.kind == "end" and later.name == tag.name:
                pairs.append((tag, later))
                break
    return pairs


def _validate_nesting(tags: list[_Tag], file: str, issues: list[AnnotationIssue]) -> None:
    """Stack-based check of the nesting rules; appends every violation found."""
    stack: list[_Tag] = []
    remaining_ends: dict[str, int] = {}
    for tag in tags:
        if tag.kind == "end":
            remaining_ends[tag.name] = remaining_ends.get(tag.name, 0) + 1
    for tag in tags:
        if tag.kind == "start":
            repeated = _repeated_open(tag, stack, remaining_ends, file)
            if repeated is not None:
                stack.pop()
                issues.append(repeated)
            else:
                stack.append(tag)
            continue
        remaining_ends[tag.name] -= 1
        issues.extend(_close(tag, stack, file))
    issues.extend(_unclosed(stack, file))


def _repeated_open(
    tag: _Tag, stack: list[_Tag], remaining_ends: dict[str, int], file: str
) -> AnnotationIssue | None:
    """The issue when start tag ``tag`` is really meant to close the snippet open on top of ``stack`` (same
    name, and too few end tags of that name remain to close both), else None."""
    open_same = [t for t in stack if t.name == tag.name]
    needed = len(open_same) + 1
    if not (open_same and stack[-1].name == tag.name and remaining_ends.get(tag.name, 0) < needed):
        return None
    opener = stack[-1]
    return AnnotationIssue(
        file,
        tag.line,
        f'snippet "{tag.name}" (opened on line {opener.line}) is closed with a repeated opening tag',
        f"change line {tag.line} to '# </paper2code name=\"{tag.name}\">' (note the '/'); "
        "a repeated opening tag opens a second snippet instead of closing the first",
        "repeated_open_as_close",
    )


def _close(tag: _Tag, stack: list[_Tag], file: str) -> list[AnnotationIssue]:
    """Close the snippet of end tag ``tag`` on ``stack`` (popping what it closes over) and return the issues:
    no matching open tag, inner snippets still open, or an indentation unlike its opening tag's."""
    if not stack or all(t.name != tag.name for t in stack):
        return [
            AnnotationIssue(
                file,
                tag.line,
                f'end tag for "{tag.name}" has no matching open tag',
                "add the opening tag above the code, or remove this end tag (check the name's spelling)",
                "mismatched_end",
            )
        ]
    issues: list[AnnotationIssue] = []
    while stack[-1].name != tag.name:
        inner = stack.pop()
        issues.append(
            AnnotationIssue(
                file,
                tag.line,
                f'end tag for "{tag.name}" closes it while "{inner.name}" (opened on line {inner.line}) '
                "is still open",
                f'close "{inner.name}" before line {tag.line}: tags must nest like brackets',
                "mismatched_end",
            )
        )
    opener = stack.pop()
    if opener.indent != tag.indent:
        issues.append(
            AnnotationIssue(
                file,
                tag.line,
                f'end tag for "{tag.name}" is indented {tag.indent} character(s) but its opening tag '
                f"on line {opener.line} is indented {opener.indent}",
                "indent the end tag exactly like its opening tag (a tab counts as one character)",
                "indent_mismatch",
            )
        )
    return issues


def _unclosed(stack: list[_Tag], file: str) -> list[AnnotationIssue]:
    """One issue per start tag left open at the end of the file."""
    return [
        AnnotationIssue(
            file,
            opener.line,
            f'snippet "{opener.name}" is never closed',
            f"add '# </paper2code name=\"{opener.name}\">' after the snippet's last line, at the same "
            "indentation as the opening tag",
            "unclosed",
        )
        for opener in stack
    ]


def _whole_function(code_lines: list[str]) -> int | None:
    """Offset of a ``def``/``class`` line if the snippet is exactly one whole definition, else None."""
    meaningful = [
        (off, line)
        for off, line in enumerate(code_lines)
        if line.strip() and not line.strip().startswith("#")
    ]
    if not meaningful:
        return None
    pos = 0
    while pos < len(meaningful) and _DECORATOR_LINE.match(meaningful[pos][1]):
        pos += 1
    if pos >= len(meaningful) or not _DEF_LINE.match(meaningful[pos][1]):
        return None
    def_offset, def_line = meaningful[pos]
    def_indent = leading_ws(def_line)
    if leading_ws(meaningful[0][1]) != def_indent:
        return None
    body = meaningful[pos + 1 :]
    if all(leading_ws(line) > def_indent for _, line in body):
        return def_offset
    return None


def parse_file(text: str, file: str) -> tuple[list[Snippet], list[AnnotationIssue]]:
    """Parse one annotated file into its snippets (document order of start tags) and every issue found.

    Snippets follow the original's exact extraction rule even when the file has errors, so a file that
    the original accepted yields the same snippets here. ``parent``/``depth`` come from containment: the
    parent is the smallest other snippet whose tag lines enclose this one's.
    """
    lines = split_lines(text)
    issues: list[AnnotationIssue] = []
    tags = _find_tags(lines, file, issues)
    _validate_nesting(tags, file, issues)
    issues.extend(_tags_in_strings(text, tags, file))
    repeated_lines = {i.line for i in issues if i.code == "repeated_open_as_close"}
    issues.extend(_duplicate_names(tags, repeated_lines, file))
    spans: list[_Span] = []
    for start, end in _pair_original(tags):
        span = _Span(start, end, lines[start.line : end.line - 1])
        spans.append(span)
        issues.extend(_body_issues(span, repeated_lines, file))
    issues.sort(key=lambda i: (i.line, i.code))
    return _snippet_tree(spans, file), issues


def _tags_in_strings(text: str, tags: list[_Tag], file: str) -> list[AnnotationIssue]:
    """Tags that lie inside a multi-line string literal (read as tags all the same)."""
    string_lines = _string_lines(text) if tags else set()
    return [
        AnnotationIssue(
            file,
            tag.line,
            f'tag "{tag.name}" lies inside a multi-line string, yet it is read as a tag',
            "move the tag out of the string literal, or change the text so it no longer looks like a tag",
            "tag_in_string",
        )
        for tag in tags
        if tag.line in string_lines
    ]


def _duplicate_names(tags: list[_Tag], repeated_lines: set[int], file: str) -> list[AnnotationIssue]:
    """Start tags reusing a name already opened earlier in the file (a repeated opening tag that is meant to
    close, on one of ``repeated_lines``, is already reported as such)."""
    issues: list[AnnotationIssue] = []
    seen: dict[str, int] = {}
    for tag in tags:
        if tag.kind != "start" or tag.line in repeated_lines:
            continue
        if tag.name in seen:
            issues.append(
                AnnotationIssue(
                    file,
                    tag.line,
                    f'duplicate snippet name "{tag.name}" (first used on line {seen[tag.name]})',
                    "names identify results: give each snippet a unique name within the task",
                    "duplicate_name",
                )
            )
        else:
            seen[tag.name] = tag.line
    return issues


@dataclass(frozen=True)
class _Span:
    """One snippet as the original extracts it: its tag pair and the lines between them."""

    start: _Tag
    end: _Tag
    code_lines: list[str]

    @property
    def code(self) -> str:
        return "\n".join(self.code_lines)

    @property
    def lines(self) -> int:
        """The snippet's line count N."""
        return line_count(self.code)


def _body_issues(span: _Span, repeated_lines: set[int], file: str) -> list[AnnotationIssue]:
    """What is wrong with a snippet's body: empty (unless its opening tag is a repeated one, reported
    already), or a whole definition whose signature the model would not see."""
    start = span.start
    issues: list[AnnotationIssue] = []
    if span.lines == 0 and start.line not in repeated_lines:
        issues.append(
            AnnotationIssue(
                file,
                start.line,
                f'snippet "{start.name}" is empty: it has no code line to implement',
                "put at least one line of code between the tags, or remove the tags",
                "empty_snippet",
            )
        )
    def_offset = _whole_function(span.code_lines)
    if def_offset is not None:
        issues.append(
            AnnotationIssue(
                file,
                start.line + 1 + def_offset,
                f'snippet "{start.name}" contains a whole definition, signature included',
                "keep the 'def'/'class' line outside the tags and tag only the body, so the model "
                "sees the interface it must implement",
                "signature_inside",
                WARNING,
            )
        )
    return issues


def _snippet_tree(spans: list[_Span], file: str) -> list[Snippet]:
    """The ``Snippet`` of each span with its place in the tree: the parent is the smallest other span whose
    tag lines enclose it (the latest-starting one), the depth its count of ancestors."""
    parents: list[int | None] = []
    for idx, item in enumerate(spans):
        best: int | None = None
        for jdx, other in enumerate(spans):
            if jdx == idx:
                continue
            if other.start.line < item.start.line and item.end.line < other.end.line:
                if best is None or other.start.line > spans[best].start.line:
                    best = jdx
        parents.append(best)

    def depth_of(idx: int) -> int:
        depth = 0
        cur = parents[idx]
        while cur is not None and depth <= len(spans):
            depth += 1
            cur = parents[cur]
        return depth

    return [
        Snippet(
            name=item.start.name,
            file=file,
            start_line=item.start.line,
            end_line=item.end.line,
            code=item.code,
            lines=item.lines,
            indent=code_indent(item.code_lines, item.start.indent),
            depth=depth_of(idx),
            parent=spans[parents[idx]].start.name if parents[idx] is not None else None,
            children=tuple(spans[c].start.name for c in range(len(spans)) if parents[c] == idx),
        )
        for idx, item in enumerate(spans)
    ]


def duplicate_names_across(snippets: list[Snippet]) -> list[AnnotationIssue]:
    """Duplicate names between *different* files of one task (within a file ``parse_file`` reports them)."""
    first: dict[str, Snippet] = {}
    issues: list[AnnotationIssue] = []
    for snip in snippets:
        prev = first.get(snip.name)
        if prev is None:
            first[snip.name] = snip
        elif prev.file != snip.file:
            issues.append(
                AnnotationIssue(
                    snip.file,
                    snip.start_line,
                    f'duplicate snippet name "{snip.name}" (also used in {prev.file}:{prev.start_line})',
                    "names identify results: give each snippet a unique name within the task",
                    "duplicate_name",
                )
            )
    return issues


def strip_tags(lines: list[str]) -> list[str]:
    """Drop every exact tag line (start or end), keep all other lines unchanged."""
    return [line for line in lines if not (START_TAG.match(line) or END_TAG.match(line))]
