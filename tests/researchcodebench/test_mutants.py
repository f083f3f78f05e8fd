"""AST mutants of snippet code: one token changed, everything else kept, nothing that does not parse."""

from __future__ import annotations

import ast

from researchcodebench.mutants import ast_mutants

BODY = """\
        # scale then shift (a + b in this comment stays)
        total = x * 2.0 + offset
        if total <= 0:
            total -= 1
        return total, f"{total + 1}"
"""


def test_each_kind_changes_one_token_and_keeps_comments_and_indentation():
    changes = {(m.kind, m.line, m.change) for m in ast_mutants(BODY)}
    assert changes == {
        ("operator", 2, "* -> /"),
        ("constant", 2, "2.0 -> 4.0"),
        ("operator", 2, "+ -> -"),
        ("comparison", 3, "<= -> >"),
        ("constant", 3, "0 -> 1"),
        ("operator", 4, "-= -> +="),
        ("constant", 4, "1 -> 2"),
    }
    flipped = next(m for m in ast_mutants(BODY) if m.kind == "comparison")
    assert flipped.code == BODY.replace("total <= 0", "total > 0")
    assert all(m.code.splitlines()[0] == BODY.splitlines()[0] for m in ast_mutants(BODY))


def test_per_kind_takes_the_first_sites_in_source_order():
    mutants = ast_mutants(BODY, per_kind=1)
    assert [(m.kind, m.change) for m in mutants] == [
        ("operator", "* -> /"),
        ("constant", "2.0 -> 4.0"),
        ("comparison", "<= -> >"),
    ]


def test_every_mutant_parses_and_differs_from_the_original():
    for mutant in ast_mutants(BODY):
        wrapped = "if True:\n" + mutant.code
        assert ast.dump(ast.parse(wrapped)) != ast.dump(ast.parse("if True:\n" + BODY))


def test_code_that_does_not_parse_or_has_nothing_to_change_has_no_mutants():
    assert ast_mutants("    return (x +\n") == []
    assert ast_mutants("    return model.forward(inputs)\n") == []
    assert ast_mutants("") == []


def test_non_ascii_text_before_a_site_keeps_the_right_column():
    mutants = ast_mutants('label = "λ→μ" if n < 3 else "ν"\n')
    assert {m.change for m in mutants} == {"< -> >=", "3 -> 4"}
    assert 'if n >= 3 else "ν"' in next(m.code for m in mutants if m.kind == "comparison")
