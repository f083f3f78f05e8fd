"""No field key or internal identifier in a message a person reads (issue 34 item 6).

Every refusal the services raise (the proposal services' ``ProposalError``, the catalogue's
``CatalogueError``, the runs' ``RunError``, ``EstimateError``, ``RejudgeError`` and ``UploadNotAllowed``) is
walked here: a leading ``field:`` key is the field the error names, so ``ProposalError.words`` drops it (the
form shows the error at the field, by its label); what is left has no snake_case identifier (``api_key_env``,
``n_completions``), file names apart. A refusal shown away from its field names the field by its label
(``ProposalError.words_away``), and the pages that show such refusals say them that way."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from django.urls import reverse

from contributions.forms import CodeForm, FilesForm, PaperMetaForm, contribution_label
from contributions.services.proposal_state import MAX_REASON, ProposalError
from contributions.views import contribute
from contributions.views.contribute import FIELD_STEPS
from tests.contributions.test_contribute_form import folder_files, start, step, upload, zipped
from tests.factories import UserFactory
from tests.factories.builders import proposal_validated

REPO = Path(__file__).resolve().parents[2]
#: the error types whose messages reach a page, and where they are raised
RAISED = {
    "ProposalError": REPO / "contributions" / "services",
    "CatalogueError": REPO / "contributions" / "services",
    "RunError": REPO / "evaluation" / "services",
    "EstimateError": REPO / "evaluation" / "services",
    "RejudgeError": REPO / "evaluation" / "services",
    "UploadNotAllowed": REPO / "evaluation" / "services",
}
FIELD_KEY = re.compile(r"^[a-z_]+: ")
#: a snake_case identifier; a file name (``paper2code_test.py``) is not one
IDENTIFIER = re.compile(r"(?<![\w.])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w.])")
#: a placeholder of an f-string
VALUE = "<value>"


def _text(node: ast.expr) -> str | None:
    """The literal text of a message, each f-string placeholder as ``VALUE``; None when not a literal."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant) else VALUE for v in node.values)
    return None


def _refusals() -> list[tuple[str, str, str, str | None]]:
    """(where, error type, message, field) of every refusal raised with a literal message; a field given as
    a variable that also leads the message (``f"{key}: ..."``, ``field=key``) reads as ``VALUE``."""
    found = []
    for kind, folder in RAISED.items():
        for path in sorted(folder.glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if not (isinstance(node, ast.Call) and getattr(node.func, "id", "") == kind and node.args):
                    continue
                message = _text(node.args[0])
                if message is None:
                    continue
                field_node = next((k.value for k in node.keywords if k.arg == "field"), None)
                field = (
                    field_node.value
                    if isinstance(field_node, ast.Constant)
                    else VALUE
                    if field_node is not None
                    else None
                )
                found.append((f"{path.relative_to(REPO)}:{node.lineno}", kind, message, field))
    return found


REFUSALS = _refusals()


def test_the_walk_finds_the_refusals_of_every_service():
    kinds = {kind for _, kind, _, _ in REFUSALS}
    assert kinds == set(RAISED)
    assert len([r for r in REFUSALS if r[1] == "ProposalError" and r[3]]) >= 20


def _words(kind: str, message: str, field: str | None) -> str:
    return ProposalError(message, field=field).words if kind == "ProposalError" else message


@pytest.mark.parametrize(("where", "kind", "message", "field"), REFUSALS, ids=lambda v: str(v))
def test_a_refusal_reads_without_field_keys_or_identifiers(where, kind, message, field):
    words = _words(kind, message, field)
    assert not FIELD_KEY.match(words[:1].lower() + words[1:]), f"{where}: a field's key leads {words!r}"
    assert not IDENTIFIER.findall(words), f"{where}: {IDENTIFIER.findall(words)} in {words!r}"
    if kind == "ProposalError" and field:
        assert words[:1] == words[:1].upper(), where


@pytest.mark.parametrize("field", sorted(FIELD_STEPS))
def test_a_refusal_away_from_its_field_names_the_fields_label(field):
    label = contribution_label(field)
    assert label and not IDENTIFIER.findall(label), field
    forms = (PaperMetaForm, CodeForm, FilesForm)
    labels = [str(f.base_fields[field].label) for f in forms if field in f.base_fields]
    assert labels in ([], [label])
    words = ProposalError(f"{field}: name a file of the upload", field=field).words_away(label)
    assert words == f"{label}: name a file of the upload"


def test_the_code_step_names_a_refused_declaration_by_its_label(client, db, monkeypatch):
    client.force_login(UserFactory())
    proposal = start(client)

    def refused(**kwargs):
        raise ProposalError("test_entry: 'run_me.py' is not a file of the upload", field="test_entry")

    monkeypatch.setattr(contribute, "revision_upload", refused)
    response = client.post(step(proposal, 2), {"archive": upload(zipped(folder_files("rmsnorm")))})
    assert response.status_code == 400
    assert response.context["form"].errors["archive"] == [
        "The upload cannot be a task. Test entry point: 'run_me.py' is not a file of the upload."
    ]
    assert "test_entry" not in response.content.decode()


def test_a_withdrawal_refused_for_its_reason_says_which_answer(client, db):
    proposal = proposal_validated()
    client.force_login(proposal.author)
    response = client.post(
        reverse("contributions:proposal_withdraw", args=[proposal.pk]),
        {"reason": "x" * (MAX_REASON + 1)},
        follow=True,
    )
    shown = [str(m) for m in response.context["messages"]]
    assert shown == [
        f"The reason for withdrawing may be at most {MAX_REASON} characters long (it has {MAX_REASON + 1})."
    ]
