"""Property tests of researchcodebench.marking: any marks the writer accepts strip back to the same text and
marks and read back as snippets of exactly their lines; on Python code, the tags never change the program."""

from __future__ import annotations

import ast

from hypothesis import given, settings
from hypothesis import strategies as st

from researchcodebench.annotations import END_TAG, START_TAG, parse_file, split_lines
from researchcodebench.marking import Mark, MarkError, check_marks, code_lines, strip_tags, write_tags

CODE_LINE = st.builds(
    lambda indent, body: indent + body,
    st.sampled_from(["", "  ", "    ", "\t", "        "]),
    st.sampled_from(["x = 1", "return y", "call(a, b)  # note", "'''doc'''", "if z:", ")"]),
)
LINE = st.one_of(CODE_LINE, st.sampled_from(["", "   ", "# comment", "    # indented comment"]))


def _laminar(candidates: list[tuple[int, int]], lines: list[str]) -> list[Mark]:
    """The candidates kept in order while they nest with those kept so far and hold a line of code."""
    kept: list[Mark] = []
    for first, last in candidates:
        lo, hi = min(first, last), max(first, last)
        if hi > len(lines):
            continue
        crossing = any(m.first < lo <= m.last < hi or lo < m.first <= hi < m.last for m in kept)
        if crossing or check_marks("\n".join(lines), [Mark("probe", lo, hi)]):
            continue
        kept.append(Mark(f"snippet {len(kept)}", lo, hi))
    return kept


@st.composite
def texts_and_marks(draw):
    lines = draw(st.lists(LINE, min_size=1, max_size=25))
    final_newline = draw(st.booleans())
    text = "\n".join(lines) + ("\n" if final_newline else "")
    bound = len(lines)
    candidates = draw(st.lists(st.tuples(st.integers(1, bound), st.integers(1, bound)), max_size=8))
    return text, _laminar(candidates, lines)


def _document_order(marks: list[Mark]) -> list[Mark]:
    return [m for _, m in sorted(enumerate(marks), key=lambda im: (im[1].first, -im[1].last, im[0]))]


@settings(max_examples=300, deadline=None)
@given(texts_and_marks())
def test_written_marks_strip_back_and_read_back_as_their_own_lines(case):
    text, marks = case

    written = write_tags(text, marks)

    assert strip_tags(written) == (text, _document_order(marks))
    assert write_tags(*strip_tags(written)) == written
    snippets, issues = parse_file(written, "f.py")
    assert [i for i in issues if i.is_error] == []
    lines = code_lines(text)
    by_name = {m.name: m for m in marks}
    assert sorted(s.name for s in snippets) == sorted(by_name)
    for snippet in snippets:
        mark = by_name[snippet.name]
        body = [
            line for line in split_lines(snippet.code) if not (START_TAG.match(line) or END_TAG.match(line))
        ]
        assert body == lines[mark.first - 1 : mark.last]


STATEMENTS = [
    ["x = 1"],
    ["s = '''first", "second", "'''"],
    ['t = f"""{x}', "more", '"""'],
    ["y = 1 + \\", "    2"],
    ["z = max(", "    1,", "    2,", ")"],
    ["if x:", "    x = 2", "else:", "    x = 3"],
    ["# comment"],
    [""],
]


@st.composite
def programs_and_marks(draw):
    blocks = draw(st.lists(st.sampled_from(STATEMENTS), min_size=1, max_size=10))
    lines = [line for block in blocks for line in block]
    first = draw(st.integers(1, len(lines)))
    last = draw(st.integers(first, len(lines)))
    return "\n".join(lines) + "\n", Mark("region", first, last)


@settings(max_examples=300, deadline=None)
@given(programs_and_marks())
def test_tags_never_change_the_program_and_marks_that_would_are_refused(case):
    text, mark = case
    try:
        written = write_tags(text, [mark])
    except MarkError as err:
        assert {p.code for p in err.problems} <= {
            "tag_in_string",
            "line_continuation",
            "blank_range",
            "no_code",
        }
        return
    assert ast.dump(ast.parse(written)) == ast.dump(ast.parse(text))
    assert strip_tags(written) == (text, [mark])
