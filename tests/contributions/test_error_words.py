"""No field key in a message a person reads (issue 34 item 6): every refusal of the proposal services reaches
the forms through ``ProposalError.words``, a sentence without the leading ``field:`` key (the form shows it at
the field, by its label)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from contributions.services.proposals import ProposalError

SERVICES = Path(__file__).resolve().parents[2] / "contributions" / "services"
FIELD_KEY = re.compile(r"^[a-z_]+: ")


def _refusals() -> list[tuple[str, str, str | None]]:
    """(where, message, field) of every ``ProposalError(...)`` raised in the services; an f-string's
    placeholders read as ``X``."""
    found = []
    for path in sorted(SERVICES.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (
                isinstance(node, ast.Call) and getattr(node.func, "id", "") == "ProposalError" and node.args
            ):
                continue
            first = node.args[0]
            if isinstance(first, ast.Constant):
                message = str(first.value)
            elif isinstance(first, ast.JoinedStr):
                message = "".join(str(v.value) if isinstance(v, ast.Constant) else "X" for v in first.values)
            else:
                continue
            field = next(
                (
                    k.value.value
                    for k in node.keywords
                    if k.arg == "field" and isinstance(k.value, ast.Constant)
                ),
                None,
            )
            found.append((f"{path.name}:{node.lineno}", message, field))
    return found


REFUSALS = _refusals()


def test_the_services_raise_field_refusals():
    assert len([r for r in REFUSALS if r[2]]) >= 10


@pytest.mark.parametrize(("where", "message", "field"), [r for r in REFUSALS if r[2]], ids=lambda v: str(v))
def test_a_field_refusal_reads_as_a_sentence_without_its_key(where, message, field):
    words = ProposalError(message, field=field).words
    assert not FIELD_KEY.match(words), where
    assert words[:1] == words[:1].upper(), where
