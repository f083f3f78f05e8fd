"""Marking untagged code (researchcodebench.marking, docs/task-format.md "Marking untagged code"): every
example task, stripped of its tags and re-marked, is written back byte for byte and read back to the same
snippets; every refusal names the mark and its lines, and writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from researchcodebench.annotations import END_TAG, START_TAG, parse_file, split_lines
from researchcodebench.marking import (
    Mark,
    MarkError,
    check_marks,
    code_lines,
    mark_from_selection,
    strip_tags,
    strip_task_tags,
    write_tags,
    write_task_tags,
)
from researchcodebench.pset import read_pset, task_files, task_from_files

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = read_pset(REPO / "examples" / "pset")
TASKS = EXAMPLES.tasks
TAGGED = [(task, path) for task in TASKS for path in task.meta.annotated_file_paths]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _bytes(root: str) -> dict[str, bytes]:
    return {rel: (Path(root) / rel).read_bytes() for rel in task_files(root)}


def _text(data: bytes) -> str:
    """The file's text without newline translation, so writing it back gives the same bytes."""
    return data.decode("utf-8")


def _problem(err: pytest.ExceptionInfo[MarkError], code: str):
    found = [p for p in err.value.problems if p.code == code]
    assert found, f"no {code} among {[p.code for p in err.value.problems]}"
    return found[0]


def test_the_examples_hold_ten_tasks_and_eleven_tagged_files():
    assert len(TASKS) == 10
    assert len(TAGGED) == 11


@pytest.mark.parametrize(("task", "path"), TAGGED, ids=[f"{t.id}/{p}" for t, p in TAGGED])
def test_an_example_file_stripped_and_re_marked_is_the_same_bytes_and_the_same_snippets(task, path):
    original = (Path(task.root) / path).read_bytes()
    untagged, marks = strip_tags(_text(original), path)

    written = write_tags(untagged, marks, path)

    assert written.encode("utf-8") == original
    assert not any(START_TAG.match(line) or END_TAG.match(line) for line in split_lines(untagged))
    before, _ = parse_file(_text(original), path)
    after, issues = parse_file(written, path)
    assert [i for i in issues if i.is_error] == []
    assert [(s.name, s.code, s.lines, s.parent) for s in after] == [
        (s.name, s.code, s.lines, s.parent) for s in before
    ]
    # The marks are the snippets' own lines: each one's code, its nested tags left out.
    lines = code_lines(untagged)
    for mark, snippet in zip(marks, before, strict=True):
        body = [
            line for line in split_lines(snippet.code) if not (START_TAG.match(line) or END_TAG.match(line))
        ]
        assert mark.name == snippet.name
        assert lines[mark.first - 1 : mark.last] == body


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_an_example_task_stripped_and_re_marked_is_the_same_folder_and_reads_back_the_same(task):
    files = _bytes(task.root)
    texts = {rel: _text(data) for rel, data in files.items()}
    untagged, marks = strip_task_tags(texts, task.meta.annotated_file_paths)
    assert set(marks) == set(task.meta.annotated_file_paths)
    assert sum(len(m) for m in marks.values()) == len(task.snippets)

    written = write_task_tags(untagged, marks)

    assert {rel: text.encode("utf-8") for rel, text in written.items()} == files
    again = task_from_files({rel: text.encode("utf-8") for rel, text in written.items()}, task.meta)
    assert (again.snippets, again.issues) == (
        task_from_files(files, task.meta).snippets,
        task_from_files(files, task.meta).issues,
    )


SOURCE = '''\
import math


def f(x, y):
    """Doc."""
    a = x + 1
    # a comment

    b = a * y
    if b > 0:
        b = math.sqrt(b)
    return b
'''


def test_nested_marks_get_tags_at_the_least_indented_line_ends_first_then_starts():
    marks = [Mark("body", 6, 12), Mark("add", 6, 6), Mark("scale", 9, 11), Mark("root", 11, 11)]

    written = write_tags(SOURCE, marks)

    assert (
        written
        == '''\
import math


def f(x, y):
    """Doc."""
    # <paper2code name="body">
    # <paper2code name="add">
    a = x + 1
    # </paper2code name="add">
    # a comment

    # <paper2code name="scale">
    b = a * y
    if b > 0:
        # <paper2code name="root">
        b = math.sqrt(b)
        # </paper2code name="root">
    # </paper2code name="scale">
    return b
    # </paper2code name="body">
'''
    )
    assert strip_tags(written) == (SOURCE, marks)


def test_adjacent_siblings_close_before_the_next_opens_and_equal_ranges_nest_in_the_order_given():
    written = write_tags(SOURCE, [Mark("one", 6, 6), Mark("outer", 9, 9), Mark("inner", 9, 9)])
    lines = split_lines(written)

    assert lines[5:8] == ['    # <paper2code name="one">', "    a = x + 1", '    # </paper2code name="one">']
    assert lines[10:15] == [
        '    # <paper2code name="outer">',
        '    # <paper2code name="inner">',
        "    b = a * y",
        '    # </paper2code name="inner">',
        '    # </paper2code name="outer">',
    ]
    snippets, _ = parse_file(written, "f.py")
    assert [(s.name, s.parent) for s in snippets] == [("one", None), ("outer", None), ("inner", "outer")]


def test_a_range_that_leaves_its_block_is_tagged_at_its_least_indented_line():
    written = write_tags(SOURCE, [Mark("tail", 11, 12)])

    assert split_lines(written)[10:14] == [
        '    # <paper2code name="tail">',
        "        b = math.sqrt(b)",
        "    return b",
        '    # </paper2code name="tail">',
    ]


def test_tabs_and_crlf_are_kept_in_the_tag_lines():
    tabbed = "def f(x):\n\tif x:\n\t\treturn 1\n\treturn 2\n"
    assert write_tags(tabbed, [Mark("branch", 2, 3)]).split("\n")[1:5] == [
        '\t# <paper2code name="branch">',
        "\tif x:",
        "\t\treturn 1",
        '\t# </paper2code name="branch">',
    ]
    crlf = "def f(x):\r\n    return x\r\n"
    written = write_tags(crlf, [Mark("identity", 2, 2)])
    assert written == (
        'def f(x):\r\n    # <paper2code name="identity">\r\n    return x\r\n    # </paper2code name="identity">\r\n'
    )
    assert strip_tags(written) == (crlf, [Mark("identity", 2, 2)])


def test_a_file_without_a_final_newline_ends_with_the_end_tag():
    written = write_tags("def f():\n    return 1", [Mark("one", 2, 2)])

    assert written == 'def f():\n    # <paper2code name="one">\n    return 1\n    # </paper2code name="one">'
    assert strip_tags(written) == ("def f():\n    return 1", [Mark("one", 2, 2)])


def test_no_marks_write_the_text_unchanged():
    assert write_tags(SOURCE, []) == SOURCE
    assert strip_tags(SOURCE) == (SOURCE, [])


def test_a_hand_tagged_file_in_another_spelling_is_rewritten_in_the_writers_spelling_with_the_same_snippets():
    path = FIXTURES / "hostile_pset" / "crlf tabs" / "lib" / "tabbed.py"
    original = path.read_bytes().decode("utf-8")

    written = write_tags(*strip_tags(original))

    assert written != original
    changed = [(a, b) for a, b in zip(split_lines(original), split_lines(written), strict=True) if a != b]
    assert changed == [
        ('\t#<paper2code name="clip high">', '\t# <paper2code name="clip high">'),
        ('\t#</paper2code name="clip high">', '\t# </paper2code name="clip high">'),
    ]
    assert [(s.name, s.code) for s in parse_file(written, "t.py")[0]] == [
        (s.name, s.code) for s in parse_file(original, "t.py")[0]
    ]


def test_an_end_tag_indented_unlike_its_start_reads_as_a_mark_and_is_rewritten_aligned():
    text = 'def f():\n    # <paper2code name="a">\n    return 1\n  # </paper2code name="a">\n'

    untagged, marks = strip_tags(text)

    assert marks == [Mark("a", 2, 2)]
    assert write_tags(untagged, marks) == text.replace("  # </p", "    # </p")


# Refusals: each names its mark and lines, and nothing is written.


def _refused(text: str, marks: list[Mark]) -> pytest.ExceptionInfo[MarkError]:
    with pytest.raises(MarkError) as err:
        write_tags(text, marks, "f.py")
    assert check_marks(text, marks, "f.py") == list(err.value.problems)
    return err


@pytest.mark.parametrize(
    ("mark", "needle"),
    [
        (Mark("late", 12, 13), 'mark "late" (lines 12-13) lies outside the file, which has 12 line(s)'),
        (Mark("zero", 0, 3), 'mark "zero" (lines 0-3) lies outside the file'),
        (
            Mark("backwards", 9, 6),
            'mark "backwards" (lines 9-6): its first line 9 comes after its last line 6',
        ),
        (Mark("float", 6.0, 7), 'mark "float" (lines 6.0-7): line numbers must be whole numbers'),
    ],
)
def test_a_range_outside_the_file_is_refused(mark, needle):
    problem = _problem(_refused(SOURCE, [mark]), "bad_range")

    assert needle in problem.message
    assert problem.name == mark.name and problem.file == "f.py"


def test_the_line_after_a_final_newline_and_an_empty_file_are_outside():
    assert "has 12 line(s)" in str(_refused(SOURCE, [Mark("x", 12, 13)]).value)
    assert "lies outside the file, which is empty" in str(_refused("", [Mark("x", 1, 1)]).value)


def test_a_partial_overlap_is_refused_naming_both_marks_and_the_shared_lines():
    problem = _problem(_refused(SOURCE, [Mark("left", 6, 10), Mark("right", 9, 12)]), "partial_overlap")

    assert problem.message.startswith(
        'marks "left" (lines 6-10) and "right" (lines 9-12) overlap on lines 9-10 without one containing the other'
    )
    assert "nest like brackets" in problem.message
    assert (problem.first, problem.last) == (9, 10)
    assert str(problem).startswith("f.py:9-10: ")


def test_a_name_used_twice_is_refused_naming_the_first_use():
    problem = _problem(_refused(SOURCE, [Mark("step", 6, 6), Mark("step", 9, 9)]), "duplicate_name")

    assert problem.message.startswith(
        'mark "step" (lines 9-9): the name is already used by the mark on lines 6-6'
    )


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("", "a snippet needs a name"),
        ("   ", "a snippet needs a name"),
        ('say "hi"', "cannot hold a double quote"),
        ("two\nlines", "cannot hold a line break"),
        ("tab\there", "cannot hold a line break, tab or other control character"),
        (" padded", "cannot start or end with whitespace"),
    ],
)
def test_a_name_the_format_cannot_hold_is_refused(name, needle):
    problem = _problem(_refused(SOURCE, [Mark(name, 6, 7)]), "bad_name")

    assert needle in problem.message
    assert "(lines 6-7)" in problem.message and (problem.first, problem.last) == (6, 7)


def test_a_range_of_blank_lines_and_one_of_comments_only_are_refused():
    blank = _problem(_refused(SOURCE, [Mark("gap", 2, 3)]), "blank_range")
    assert blank.message == 'mark "gap" (lines 2-3) holds only blank lines: there is nothing to implement'

    comment = _problem(_refused(SOURCE, [Mark("note", 7, 8)]), "no_code")
    assert comment.message.startswith('mark "note" (lines 7-8) holds only comments and blank lines')


STRINGY = '''\
def f(x):
    text = """first
second
"""
    total = 1 + \\
        x
    return text, total
'''


def test_a_tag_that_would_land_inside_a_multi_line_string_is_refused():
    start = _problem(_refused(STRINGY, [Mark("inside", 3, 5)]), "tag_in_string")
    assert start.message.startswith(
        'mark "inside" (lines 3-5): its start tag would go between lines 2 and 3, inside a multi-line string'
    )
    end = _problem(_refused(STRINGY, [Mark("half", 1, 2)]), "tag_in_string")
    assert "its end tag would go between lines 2 and 3" in end.message


def test_a_tag_that_would_break_a_backslash_continuation_is_refused():
    problem = _problem(_refused(STRINGY, [Mark("sum", 5, 5)]), "line_continuation")

    assert problem.message.startswith(
        'mark "sum" (lines 5-5): its end tag would go between lines 5 and 6, but line 5 is continued'
    )
    assert write_tags(STRINGY, [Mark("sum", 5, 6), Mark("text", 2, 4)])


def test_marks_on_text_that_still_holds_tags_are_refused():
    tagged = write_tags(SOURCE, [Mark("add", 6, 6)])

    problem = _problem(_refused(tagged, [Mark("other", 11, 11)]), "already_tagged")

    assert problem.message.startswith("line 6 already holds a paper2code tag")
    assert (problem.first, problem.last) == (6, 6)


def test_every_problem_is_reported_at_once():
    err = _refused(SOURCE, [Mark("", 2, 3), Mark("a", 6, 10), Mark("b", 9, 20), Mark("a", 9, 11)])

    codes = sorted(p.code for p in err.value.problems)
    assert codes == ["bad_name", "bad_range", "blank_range", "duplicate_name", "partial_overlap"]
    assert len(str(err.value).splitlines()) == 5


def test_a_task_writes_every_file_or_none_with_names_unique_across_its_files():
    files = {"a.py": SOURCE, "b.py": SOURCE, "paper2code_test.py": "assert True\n"}
    good = {"a.py": [Mark("add", 6, 6)], "b.py": [Mark("scale", 9, 9)]}
    written = write_task_tags(files, good)
    assert written["paper2code_test.py"] == files["paper2code_test.py"]
    assert written["a.py"] == write_tags(SOURCE, good["a.py"])

    with pytest.raises(MarkError) as err:
        write_task_tags(files, {"a.py": [Mark("add", 6, 6)], "b.py": [Mark("add", 9, 9), Mark("gap", 2, 3)]})
    duplicate = _problem(err, "duplicate_name")
    assert duplicate.file == "b.py"
    assert duplicate.message.startswith(
        'mark "add" (lines 9-9): the name is already used by the mark on a.py (lines 6-6)'
    )
    assert _problem(err, "blank_range").file == "b.py"

    with pytest.raises(MarkError) as err:
        write_task_tags(files, {"c.py": [Mark("x", 1, 1)]})
    assert (
        _problem(err, "unknown_file").message == 'there are marks for "c.py", which is not a file of the task'
    )


def test_a_selection_across_files_is_refused_and_one_made_upwards_is_ordered():
    assert mark_from_selection("tail", ("a.py", 12), ("a.py", 9)) == ("a.py", Mark("tail", 9, 12))

    with pytest.raises(MarkError) as err:
        mark_from_selection("span", ("a.py", 9), ("b.py", 3))

    problem = _problem(err, "across_files")
    assert problem.message.startswith(
        'the selection for "span" starts in a.py (line 9) and ends in b.py (line 3)'
    )


# Tags that cannot be read as marks.


@pytest.mark.parametrize(
    ("text", "code", "line"),
    [
        ('# <paper2code name="a">\nx = 1\n', "unclosed", 1),
        ('x = 1\n# </paper2code name="a">\n', "mismatched_end", 2),
        (
            '# <paper2code name="a">\nx = 1\n# <paper2code name="b">\ny = 2\n# </paper2code name="a">\n'
            '# </paper2code name="b">\n',
            "mismatched_end",
            5,
        ),
        ('# <paper2code name="a">\n# </paper2code name="a">\nx = 1\n', "empty_range", 1),
    ],
)
def test_tags_that_do_not_pair_up_are_refused_by_strip_with_the_tagged_line(text, code, line):
    with pytest.raises(MarkError) as err:
        strip_tags(text, "f.py")

    problem = _problem(err, code)
    assert problem.first == line and problem.message.startswith(f"line {line}: ")
    assert str(problem).startswith(f"f.py:{line}")


def test_strip_task_tags_refuses_an_annotated_file_the_task_lacks():
    with pytest.raises(MarkError) as err:
        strip_task_tags({"a.py": SOURCE}, ["a.py", "b.py"])

    assert _problem(err, "unknown_file").file == "b.py"


def test_a_problem_without_a_file_is_located_by_its_lines():
    err = _refused(SOURCE, [Mark("gap", 2, 3)])
    with pytest.raises(MarkError) as bare:
        write_tags(SOURCE, [Mark("gap", 2, 3)])

    assert str(err.value).startswith("f.py:2-3: ")
    assert str(bare.value).startswith('lines 2-3: mark "gap"')
