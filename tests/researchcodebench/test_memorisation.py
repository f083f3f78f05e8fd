"""Memorisation (researchcodebench/memorisation.py): how much of the reference snippet a completion
reproduces, in normalised tokens, and when that is "near verbatim"; model output never makes it raise."""

from __future__ import annotations

import pytest

from researchcodebench import memorisation
from researchcodebench.memorisation import overlap, python_tokens

REFERENCE = """\
        # <paper2code name="loss">
        logits = model(inputs)  # forward pass
        loss = F.cross_entropy(logits, targets, label_smoothing=0.1)
        loss.backward()
        optimizer.step()
        return {"loss": loss.item(), "accuracy": (logits.argmax(-1) == targets).float().mean()}
        # </paper2code name="loss">
"""


def test_tokens_drop_comments_layout_and_quote_style_but_keep_names():
    tokens = python_tokens(REFERENCE)
    assert tokens[:6] == ["logits", "=", "model", "(", "inputs", ")"]
    assert "s:'loss'" in tokens and not any("paper2code" in t or "forward" in t for t in tokens)
    assert python_tokens("x = {'a': 1}\n") == python_tokens('x = {"a": 1}  # same\n')


def test_a_copy_reindented_recommented_and_requoted_is_near_verbatim():
    copy = REFERENCE.replace("        ", "").replace('"', "'").replace("# forward pass", "# run the model")

    found = overlap(reference=REFERENCE, completion=copy)

    assert found.tokenizer == "python"
    assert found.longest_run == found.reference_tokens == found.completion_tokens
    assert (found.run_share, found.ngram_share, found.near_verbatim) == (1.0, 1.0, True)


def test_a_copy_inside_more_code_still_reproduces_the_reference():
    found = overlap(reference=REFERENCE, completion="import torch\nx = torch.ones(3)\n" + REFERENCE)

    assert found.run_share == 1.0 and found.near_verbatim is True


def test_renaming_variables_throughout_is_not_near_verbatim():
    renamed = REFERENCE.replace("logits", "out").replace("targets", "y")

    found = overlap(reference=REFERENCE, completion=renamed)

    assert found.near_verbatim is False
    assert found.run_share < memorisation.NEAR_VERBATIM_RUN
    assert found.ngram_share < memorisation.NEAR_VERBATIM_NGRAM


def test_a_reference_under_the_minimum_is_too_short_to_tell():
    found = overlap(reference="    return x + 1\n", completion="return x + 1")

    assert found.run_share == 1.0 and found.near_verbatim is None
    assert found.reference_tokens < memorisation.MIN_REFERENCE_TOKENS


def test_there_is_nothing_to_compare_without_tokens():
    assert overlap(reference=REFERENCE, completion="   # only a comment\n") is None
    assert overlap(reference="", completion="x = 1") is None


@pytest.mark.parametrize(
    "completion",
    [
        "x = (",
        "'''never closed",
        "def f(:\n    return",
        "  a\n b\n   c",
        "f'{x'",
        "\x00\x01\x02",
        "\\",
        "if x:\nreturn 1",
        "é = 1 ; $ ? `",
        "(" * 5000,
        "\ud800 = 1",
    ],
)
def test_malformed_completions_are_measured_without_raising(completion):
    found = overlap(reference=REFERENCE, completion=completion)

    assert found is None or (found.near_verbatim is False and 0 <= found.run_share <= 1)


def test_malformed_code_falls_back_to_one_tokenizer_for_both_texts():
    found = overlap(reference=REFERENCE, completion=REFERENCE + "\nx = (")

    assert found.tokenizer == "fallback" and found.near_verbatim is True


def test_a_huge_completion_is_measured_on_a_bounded_number_of_tokens():
    found = overlap(reference=REFERENCE * 10, completion="(" * 1_000_000)
    hostile = overlap(reference=REFERENCE * 10, completion="loss . backward ( )\n" * 200_000)

    assert found.completion_tokens == hostile.completion_tokens == memorisation.MAX_TOKENS
    assert hostile.near_verbatim is False
