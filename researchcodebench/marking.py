"""Marking untagged code: write the paper2code tags for line ranges, and take them out again.

The portal lets an author upload code without tags and mark the snippets on it; this module turns those
marks into the exact tag lines the reader (``annotations.parse_file``) expects, so a stored file has the
same bytes a careful hand-tagged file has (docs/task-format.md, "Marking untagged code"):

* ``write_tags(text, marks)`` inserts a start tag above each mark's first line and an end tag below its last
  line. A tag is ``# <paper2code name="NAME">`` / ``# </paper2code name="NAME">``, indented like the least
  indented non-blank line of the mark (the indentation the masked problem's placeholder gets), with the same
  whitespace characters as that line, and ending like the file's lines (``"\\r\\n"`` files get ``"\\r"``).
  Where tags meet between two lines, end tags come first (innermost first), then start tags (outermost first).
* ``strip_tags(text)`` is the inverse: the text without its tag lines and the marks those tags made.
  ``write_tags(*strip_tags(text)) == text`` for every file whose tags are written as above.
* ``check_marks`` lists every reason a set of marks cannot be written; ``write_tags`` raises ``MarkError``
  with all of them and writes nothing. ``write_task_tags`` does the same for a whole task folder, names unique
  across its files, all files or none.

A mark's lines are 1-based, inclusive, and count the lines of the *untagged* text as an editor numbers them;
the empty remainder after a final newline is not a line. This ``strip_tags`` (text in, text and marks out) is
not ``annotations.strip_tags`` (lines in, lines out), which masking uses.
"""

from __future__ import annotations

import io
import tokenize
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from researchcodebench.annotations import END_TAG, START_TAG, leading_ws, line_count, parse_file, split_lines

#: Reader errors that leave no well-formed pair of tags to turn into a mark (``strip_tags`` refuses them).
STRUCTURAL_CODES = frozenset({"unclosed", "mismatched_end", "repeated_open_as_close", "tag_in_string"})


@dataclass(frozen=True)
class Mark:
    """One snippet to write: its name and its first and last line (1-based, inclusive) in the untagged text."""

    name: str
    first: int
    last: int


@dataclass(frozen=True)
class MarkProblem:
    """Why marks cannot be written (or tags cannot be read as marks), with the mark and lines it concerns.

    ``first``/``last`` are lines of the untagged text for ``write_tags`` and of the tagged text for
    ``strip_tags``; ``code`` is machine-readable (docs/task-format.md lists them).
    """

    code: str
    message: str
    file: str = ""
    name: str | None = None
    first: int | None = None
    last: int | None = None

    def location(self) -> str:
        if self.first is None:
            return self.file
        lines = str(self.first) if self.last in (None, self.first) else f"{self.first}-{self.last}"
        if self.file:
            return f"{self.file}:{lines}"
        return f"line {lines}" if "-" not in lines else f"lines {lines}"

    def __str__(self) -> str:
        where = self.location()
        return f"{where}: {self.message}" if where else self.message


class MarkError(ValueError):
    """Marks that cannot be written, or tags that cannot be read as marks; ``problems`` lists every reason."""

    def __init__(self, problems: Iterable[MarkProblem]) -> None:
        self.problems: tuple[MarkProblem, ...] = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


def start_tag(name: str, indent: str = "") -> str:
    """The start tag line the writer emits for ``name`` (no line ending)."""
    return f'{indent}# <paper2code name="{name}">'


def end_tag(name: str, indent: str = "") -> str:
    """The end tag line the writer emits for ``name`` (no line ending)."""
    return f'{indent}# </paper2code name="{name}">'


def code_lines(text: str) -> list[str]:
    """The lines a mark may cover, numbered from 1 as an editor shows them (no line after a final newline)."""
    if text == "":
        return []
    lines = split_lines(text)
    return lines[:-1] if text.endswith("\n") else lines


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot be a snippet name, or None when it can."""
    if not isinstance(name, str) or not name.strip():
        return "a snippet needs a name: it is shown to the model and identifies the snippet's results"
    if '"' in name:
        return 'a name cannot hold a double quote: the tag writes it as name="..."'
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        return "a name cannot hold a line break, tab or other control character: a tag is one line"
    if name != name.strip():
        return (
            "a name cannot start or end with whitespace: names are compared exactly, so it would "
            "differ invisibly from the same name without it"
        )
    return None


def _label(mark: Mark) -> str:
    name = mark.name if isinstance(mark.name, str) else str(mark.name)
    shown = repr(name) if any(ord(ch) < 32 for ch in name) else f'"{name}"'
    return f"mark {shown} (lines {mark.first}-{mark.last})"


def _gaps(text: str) -> tuple[set[int], set[int]] | None:
    """Where a comment line may go: the lines that end a physical line cleanly (a NEWLINE or NL token: the
    statement ends, or continues inside brackets) and the lines that lie inside a multi-line string (not its
    first line). None when the text does not tokenize as Python: nothing can be said then."""
    clean: set[int] = set()
    inside: set[int] = set()
    fstring_start = getattr(tokenize, "FSTRING_START", -1)
    fstring_end = getattr(tokenize, "FSTRING_END", -1)
    open_fstrings: list[int] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.NEWLINE, tokenize.NL):
                clean.add(tok.start[0])
            elif tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                inside.update(range(tok.start[0] + 1, tok.end[0] + 1))
            elif tok.type == fstring_start:
                open_fstrings.append(tok.start[0])
            elif tok.type == fstring_end and open_fstrings:
                inside.update(range(open_fstrings.pop() + 1, tok.end[0] + 1))
    except (tokenize.TokenError, SyntaxError):
        return None
    return clean, inside


def _boundary_problems(
    mark: Mark, lines: list[str], gaps: tuple[set[int], set[int]], file: str
) -> list[MarkProblem]:
    """A tag line must not change the program: none inside a multi-line string, none after a line that a
    backslash continues. A gap ``g`` lies between lines ``g`` and ``g + 1``."""
    clean, inside = gaps
    problems: list[MarkProblem] = []
    for which, gap in (("start", mark.first - 1), ("end", mark.last)):
        if gap in (0, len(lines)) or gap in clean:
            continue
        where = f"its {which} tag would go between lines {gap} and {gap + 1}"
        if gap + 1 in inside:
            message = (
                f"{_label(mark)}: {where}, inside a multi-line string, where it would become part of the "
                "string; start and end the mark outside the string"
            )
            problems.append(MarkProblem("tag_in_string", message, file, mark.name, mark.first, mark.last))
        else:
            message = (
                f"{_label(mark)}: {where}, but line {gap} is continued on the next line (a backslash at "
                "its end), so a comment line there would break the statement; "
                f"{'start' if which == 'start' else 'end'} the mark at a line where a statement begins or ends"
            )
            problems.append(MarkProblem("line_continuation", message, file, mark.name, mark.first, mark.last))
    return problems


def _mark_problems(
    mark: Mark, lines: list[str], gaps: tuple[set[int], set[int]] | None, file: str
) -> list[MarkProblem]:
    """What is wrong with one mark on its own: its name, its range, its content, where its tags would go."""
    problems: list[MarkProblem] = []
    reason = name_problem(mark.name)
    if reason is not None:
        name = mark.name if isinstance(mark.name, str) else None
        problems.append(
            MarkProblem("bad_name", f"{_label(mark)}: {reason}", file, name, mark.first, mark.last)
        )
    first, last = mark.first, mark.last
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in (first, last)):
        message = f"{_label(mark)}: line numbers must be whole numbers"
        return [*problems, MarkProblem("bad_range", message, file, mark.name)]
    if first > last:
        message = f"{_label(mark)}: its first line {first} comes after its last line {last}"
        return [*problems, MarkProblem("bad_range", message, file, mark.name, first, last)]
    if first < 1 or last > len(lines):
        size = f"has {len(lines)} line(s)" if lines else "is empty"
        message = f"{_label(mark)} lies outside the file, which {size}"
        return [*problems, MarkProblem("bad_range", message, file, mark.name, first, last)]
    body = lines[first - 1 : last]
    if not any(line.strip() for line in body):
        message = f"{_label(mark)} holds only blank lines: there is nothing to implement"
        problems.append(MarkProblem("blank_range", message, file, mark.name, first, last))
    elif line_count("\n".join(body)) == 0:
        message = (
            f"{_label(mark)} holds only comments and blank lines: its line count N is 0, so there is "
            "nothing to implement"
        )
        problems.append(MarkProblem("no_code", message, file, mark.name, first, last))
    if gaps is not None:
        problems.extend(_boundary_problems(mark, lines, gaps, file))
    return problems


def _in_range(mark: Mark, lines: list[str]) -> bool:
    return all(
        isinstance(n, int) and not isinstance(n, bool) for n in (mark.first, mark.last)
    ) and 1 <= mark.first <= mark.last <= len(lines)


def _overlap_problems(marks: Sequence[Mark], file: str) -> list[MarkProblem]:
    """Pairs of marks that share lines without one containing the other (tags nest like brackets)."""
    problems: list[MarkProblem] = []
    for idx, one in enumerate(marks):
        for other in marks[idx + 1 :]:
            a, b = (one, other) if (one.first, -one.last) <= (other.first, -other.last) else (other, one)
            if a.first < b.first <= a.last < b.last:
                message = (
                    f'marks "{a.name}" (lines {a.first}-{a.last}) and "{b.name}" (lines {b.first}-{b.last}) '
                    f"overlap on lines {b.first}-{a.last} without one containing the other: tags nest like "
                    "brackets, so a mark must lie wholly inside another or share no line with it"
                )
                problems.append(MarkProblem("partial_overlap", message, file, b.name, b.first, a.last))
    return problems


def _duplicate_problems(
    marks: Sequence[Mark], file: str, seen: dict[str, tuple[str, Mark]] | None = None
) -> list[MarkProblem]:
    """Marks reusing a name already used in this file or, through ``seen`` (updated), another file."""
    seen = {} if seen is None else seen
    problems: list[MarkProblem] = []
    for mark in marks:
        if name_problem(mark.name) is not None:
            continue
        prev = seen.get(mark.name)
        if prev is None:
            seen[mark.name] = (file, mark)
            continue
        prev_file, prev_mark = prev
        where = f"lines {prev_mark.first}-{prev_mark.last}"
        where = where if prev_file == file else f"{prev_file} ({where})"
        message = (
            f"{_label(mark)}: the name is already used by the mark on {where}; names identify results, "
            "so each snippet of a task needs its own"
        )
        problems.append(MarkProblem("duplicate_name", message, file, mark.name, mark.first, mark.last))
    return problems


def _tagged_lines(lines: list[str], file: str) -> list[MarkProblem]:
    return [
        MarkProblem(
            "already_tagged",
            f"line {idx} already holds a paper2code tag: marks are written on untagged code, so strip the "
            "file's tags first (strip_tags) and mark the lines of the untagged text",
            file,
            None,
            idx,
            idx,
        )
        for idx, line in enumerate(lines, start=1)
        if START_TAG.match(line) or END_TAG.match(line)
    ]


def check_marks(text: str, marks: Sequence[Mark], file: str = "") -> list[MarkProblem]:
    """Every reason ``marks`` cannot be written into the untagged ``text`` (empty when they can): a bad name,
    a range outside the file or of blank lines or comments only, a partial overlap, a name used twice, a tag
    that would land inside a string or after a continued line, or tags already in the text."""
    lines = code_lines(text)
    gaps = _gaps(text)
    problems = _tagged_lines(lines, file)
    for mark in marks:
        problems.extend(_mark_problems(mark, lines, gaps, file))
    problems.extend(_overlap_problems([m for m in marks if _in_range(m, lines)], file))
    problems.extend(_duplicate_problems(marks, file))
    return problems


def _indent_of(mark: Mark, lines: list[str]) -> str:
    """The leading whitespace of the least indented non-blank line of the mark (the first such line)."""
    body = [line for line in lines[mark.first - 1 : mark.last] if line.strip()]
    widest = min(body, key=leading_ws)
    return widest[: leading_ws(widest)]


def _render(text: str, marks: Sequence[Mark]) -> str:
    lines = code_lines(text)
    eol = "\r" if "\n" in text and text.count("\n") == text.count("\r\n") else ""
    # Document order of start tags: outer before inner; equal ranges keep the order they were given in.
    order = sorted(range(len(marks)), key=lambda i: (marks[i].first, -marks[i].last, i))
    starts: dict[int, list[str]] = {}
    ends: dict[int, list[str]] = {}
    for idx in order:
        mark = marks[idx]
        indent = _indent_of(mark, lines)
        starts.setdefault(mark.first - 1, []).append(start_tag(mark.name, indent) + eol)
        ends.setdefault(mark.last, []).insert(0, end_tag(mark.name, indent) + eol)
    out: list[str] = []
    for gap in range(len(lines) + 1):
        out.extend(ends.get(gap, ()))
        out.extend(starts.get(gap, ()))
        if gap < len(lines):
            out.append(lines[gap])
    if text.endswith("\n"):
        out.append("")
    return "\n".join(out)


def write_tags(text: str, marks: Sequence[Mark], file: str = "") -> str:
    """``text`` (untagged) with the start and end tag lines of every mark inserted; raises ``MarkError``
    listing every problem ``check_marks`` finds, and then writes nothing. ``file`` only labels problems."""
    marks = list(marks)
    problems = check_marks(text, marks, file)
    if problems:
        raise MarkError(problems)
    return _render(text, marks)


def strip_tags(text: str, file: str = "") -> tuple[str, list[Mark]]:
    """The inverse of ``write_tags``: ``text`` without its tag lines, and the mark of every tag pair the reader
    finds (in the order of their start tags), its lines counted in the untagged text.

    Raises ``MarkError`` when the tags do not pair up (the reader's unclosed, mismatched, repeated-opening or
    in-string tags, lines of the tagged text) or a pair holds no line at all. Other problems, such as a name
    used twice or a snippet of blank lines, come back as marks, which ``write_tags`` then refuses.
    """
    snippets, issues = parse_file(text, file or "<text>")
    problems = [
        MarkProblem(i.code, f"line {i.line}: {i.message}", file, None, i.line, i.line)
        for i in issues
        if i.is_error and i.code in STRUCTURAL_CODES
    ]
    lines = split_lines(text)
    is_tag = [bool(START_TAG.match(line) or END_TAG.match(line)) for line in lines]
    before = [0]
    for flag in is_tag:
        before.append(before[-1] + (0 if flag else 1))
    marks: list[Mark] = []
    for snip in snippets:
        first, last = before[snip.start_line - 1] + 1, before[snip.end_line - 1]
        if last < first:
            message = (
                f'line {snip.start_line}: snippet "{snip.name}" (tags on lines {snip.start_line} and '
                f"{snip.end_line}) holds no line of code, so it has no range to mark"
            )
            problems.append(
                MarkProblem("empty_range", message, file, snip.name, snip.start_line, snip.end_line)
            )
        marks.append(Mark(snip.name, first, last))
    if problems:
        raise MarkError(sorted(problems, key=lambda p: (p.first or 0, p.code)))
    return "\n".join(line for line, flag in zip(lines, is_tag, strict=True) if not flag), marks


def write_task_tags(files: Mapping[str, str], marks: Mapping[str, Sequence[Mark]]) -> dict[str, str]:
    """A task folder's files (relative path -> untagged text) with the tags of ``marks`` (relative path -> the
    marks of that file) written in; files without marks come back unchanged.

    ``marks`` is every snippet of the task: names must be unique across all its files. Raises ``MarkError``
    with every problem of every file (a mark for a file the task lacks, and all that ``check_marks`` finds),
    and then returns nothing: a save writes all files or none.
    """
    problems: list[MarkProblem] = []
    seen: dict[str, tuple[str, Mark]] = {}
    for path in sorted(marks):
        file_marks = list(marks[path])
        if path not in files:
            message = f'there are marks for "{path}", which is not a file of the task'
            problems.append(MarkProblem("unknown_file", message, path))
            continue
        found = check_marks(files[path], file_marks, path)
        problems.extend(p for p in found if p.code != "duplicate_name")
        problems.extend(_duplicate_problems(file_marks, path, seen))
    if problems:
        raise MarkError(problems)
    out = dict(files)
    for path, file_marks in marks.items():
        out[path] = _render(files[path], list(file_marks))
    return out


def strip_task_tags(
    files: Mapping[str, str], annotated: Iterable[str]
) -> tuple[dict[str, str], dict[str, list[Mark]]]:
    """The inverse of ``write_task_tags`` for the task's ``annotated`` files (``annotated_file_paths``): all
    files with those untagged, and the marks of each annotated file. Raises ``MarkError`` with the problems of
    every file (an annotated file the task lacks, and those of ``strip_tags``)."""
    out = dict(files)
    marks: dict[str, list[Mark]] = {}
    problems: list[MarkProblem] = []
    for path in annotated:
        if path not in files:
            problems.append(MarkProblem("unknown_file", f'"{path}" is not a file of the task', path))
            continue
        try:
            out[path], marks[path] = strip_tags(files[path], path)
        except MarkError as err:
            problems.extend(err.problems)
    if problems:
        raise MarkError(problems)
    return out, marks


def mark_from_selection(name: str, start: tuple[str, int], end: tuple[str, int]) -> tuple[str, Mark]:
    """The file and mark of a selection from line ``start`` to line ``end``, each ``(path, line)``, in either
    order (a selection may be made upwards). A snippet lies in one file: a selection across files raises
    ``MarkError``."""
    (start_file, start_line), (end_file, end_line) = start, end
    if start_file != end_file:
        message = (
            f'the selection for "{name}" starts in {start_file} (line {start_line}) and ends in {end_file} '
            f"(line {end_line}): a snippet lies in one file, so select lines of one file"
        )
        raise MarkError([MarkProblem("across_files", message, start_file, name, start_line, start_line)])
    first, last = sorted((start_line, end_line))
    return start_file, Mark(name, first, last)
