"""Tag parsing, the snippet tree, line counts and validation (docs/task-format.md)."""

from __future__ import annotations

from researchcodebench.annotations import AnnotationIssue, Snippet, line_count, parse_file


def _codes(issues: list[AnnotationIssue]) -> list[tuple[int, str]]:
    return [(i.line, i.code) for i in issues]


NESTED = """\
def f(x):
    # <paper2code name="outer: a, b = c">
    y = x + 1  # trailing comment counts
    # a comment line does not count

    # <paper2code name="inner">
    \"\"\"docstring lines count\"\"\"
    z = y * 2
    #   <paper2code name="leaf">
    if z:
        # <paper2code name="deepest">
        z -= 1
        # </paper2code name="deepest">
    #   </paper2code name="leaf">
    # </paper2code name="inner">
    # </paper2code name="outer: a, b = c">
    return z
"""


def test_extracts_nested_snippets_with_tree_depth_and_exact_code() -> None:
    snippets, issues = parse_file(NESTED, "m.py")
    assert issues == []
    by_name = {s.name: s for s in snippets}
    assert [s.name for s in snippets] == ["outer: a, b = c", "inner", "leaf", "deepest"]
    outer = by_name["outer: a, b = c"]
    assert (outer.start_line, outer.end_line, outer.depth, outer.parent) == (2, 16, 0, None)
    assert outer.children == ("inner",)
    assert by_name["leaf"].parent == "inner" and by_name["leaf"].depth == 2
    assert by_name["deepest"].depth == 3 and by_name["deepest"].children == ()
    assert by_name["deepest"].code == "        z -= 1"
    assert by_name["deepest"].indent == 8
    # outer: y, docstring, z, if, z -= 1 -> 5; comments, tags and blanks excluded
    assert outer.lines == 5
    assert by_name["inner"].lines == 4
    assert outer.code.split("\n")[0] == "    y = x + 1  # trailing comment counts"
    assert outer.code.split("\n")[-1] == '    # </paper2code name="inner">'


def test_line_count_skips_blank_and_comment_lines_only() -> None:
    assert line_count("a = 1\n\n   # c\n  b = 2  # c\n'''doc'''\n\t\n") == 3
    assert line_count("") == 0


def test_snippet_round_trips_through_dict() -> None:
    snippets, _ = parse_file(NESTED, "m.py")
    for snip in snippets:
        assert Snippet.from_dict(snip.to_dict()) == snip


def test_tabs_count_as_one_indentation_character() -> None:
    text = 'def f():\n\t# <paper2code name="a">\n\treturn 1\n\t# </paper2code name="a">\n'
    snippets, issues = parse_file(text, "t.py")
    assert issues == [] and snippets[0].indent == 1
    mixed = 'def f():\n\t# <paper2code name="a">\n\treturn 1\n    # </paper2code name="a">\n'
    _, issues = parse_file(mixed, "t.py")
    assert _codes(issues) == [(4, "indent_mismatch")]
    assert "indented 4" in issues[0].message and "indented 1" in issues[0].message


def test_crlf_lines_still_match_tags() -> None:
    text = 'x = 0\r\n# <paper2code name="a">\r\nx = 1\r\n# </paper2code name="a">\r\n'
    snippets, issues = parse_file(text, "c.py")
    assert (
        issues == [] and snippets[0].lines == 1 and (snippets[0].start_line, snippets[0].end_line) == (2, 4)
    )


def test_reports_every_problem_at_once_with_lines() -> None:
    text = "\n".join(
        [
            '# <paper2code name="never closed">',  # 1
            "a = 1",  # 2
            '  # <paper2code name="indent">',  # 3
            "  b = 2",  # 4
            '# </paper2code name="indent">',  # 5
            '# </paper2code name="stray">',  # 6
            '# <paper2code name="empty">',  # 7
            "# only a comment",  # 8
            '# </paper2code name="empty">',  # 9
            '# <paper2code name="empty">',  # 10
            "c = 3",  # 11
            '# </paper2code name="empty">',  # 12
        ]
    )
    _, issues = parse_file(text, "bad.py")
    codes = _codes(issues)
    assert (1, "unclosed") in codes
    assert (5, "indent_mismatch") in codes
    assert (6, "mismatched_end") in codes
    assert (7, "empty_snippet") in codes
    assert (10, "duplicate_name") in codes
    assert all(i.file == "bad.py" and i.hint for i in issues)


def test_end_tag_closing_an_outer_tag_reports_the_inner_one_still_open() -> None:
    text = '# <paper2code name="a">\n# <paper2code name="b">\nx = 1\n# </paper2code name="a">\n# </paper2code name="b">\n'
    _, issues = parse_file(text, "x.py")
    messages = [i.message for i in issues if i.code == "mismatched_end"]
    assert any('"b"' in m and "still open" in m and "line 2" in m for m in messages)


def test_repeated_opening_tag_used_as_closing_tag_is_explained() -> None:
    text = (
        'def f():\n    # <paper2code name="step">\n    x = 1\n    # <paper2code name="step">\n    return x\n'
    )
    snippets, issues = parse_file(text, "r.py")
    assert snippets == []
    assert _codes(issues) == [(4, "repeated_open_as_close")]
    assert '</paper2code name="step">' in issues[0].hint and "line 4" in issues[0].hint


def test_inline_or_string_tag_text_is_not_a_tag_and_warns() -> None:
    text = 'x = 1  # <paper2code name="a">\ns = "# <paper2code name=\'b\'>"\ny = 2\n'
    snippets, issues = parse_file(text, "i.py")
    assert snippets == []
    assert _codes(issues) == [(1, "inline_tag"), (2, "inline_tag")]
    assert all(i.severity == "warning" for i in issues)


def test_malformed_tag_on_its_own_line_warns() -> None:
    snippets, issues = parse_file("# <paper2code name='single quotes'>\nx = 1\n", "m.py")
    assert snippets == [] and _codes(issues) == [(1, "malformed_tag")]


def test_tag_inside_multiline_string_is_an_error() -> None:
    text = 'DOC = """\n# <paper2code name="a">\nx\n# </paper2code name="a">\n"""\n'
    snippets, issues = parse_file(text, "s.py")
    assert len(snippets) == 1  # the original would read it as a tag; we report it
    assert [(i.line, i.code) for i in issues] == [(2, "tag_in_string"), (4, "tag_in_string")]


def test_whole_function_inside_tag_warns_about_signature() -> None:
    text = (
        'class A:\n    # <paper2code name="method">\n    @staticmethod\n    def f(x):\n        return x\n'
        '    # </paper2code name="method">\n    # <paper2code name="two defs">\n    def g():\n        pass\n'
        '    h = 1\n    # </paper2code name="two defs">\n'
    )
    _, issues = parse_file(text, "d.py")
    assert _codes(issues) == [(4, "signature_inside")]
    assert issues[0].severity == "warning" and "def" in issues[0].hint


def test_first_later_end_tag_wins_like_the_original() -> None:
    # Unbalanced input: the original pairs each start with the next end of the same name.
    text = '# <paper2code name="a">\nx = 1\n# </paper2code name="a">\ny = 2\n# </paper2code name="a">\n'
    snippets, issues = parse_file(text, "o.py")
    assert [(s.start_line, s.end_line) for s in snippets] == [(1, 3)]
    assert _codes(issues) == [(5, "mismatched_end")]
