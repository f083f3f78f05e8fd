"""Deterministic error categories (docs/scoring.md) from outcomes and final exceptions."""

from __future__ import annotations

import pytest

from researchcodebench import errors

TRACEBACK = """\
Traceback (most recent call last):
  File "/task/paper2code_test.py", line 3, in <module>
    import model
  File "/task/model.py", line 9
    return x +
               ^
SyntaxError: invalid syntax
"""

CHAINED = """\
Traceback (most recent call last):
  File "a.py", line 1, in <module>
KeyError: 'w'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "a.py", line 3, in <module>
RuntimeError: shape '[2, 3]' is invalid for input of size 7
"""


@pytest.mark.parametrize(
    ("exception", "category"),
    [
        ("SyntaxError", "syntax"),
        ("IndentationError", "syntax"),
        ("NameError", "name"),
        ("UnboundLocalError", "name"),
        ("TypeError", "type"),
        ("AttributeError", "attribute"),
        ("IndexError", "index_key"),
        ("KeyError", "index_key"),
        ("ImportError", "import"),
        ("AssertionError", "logic"),
        ("ValueError", "value_runtime"),
        ("RuntimeError", "value_runtime"),
        ("ZeroDivisionError", "value_runtime"),
        ("torch._C._LinAlgError", "value_runtime"),
        ("mylib.WeirdThing", "other"),
        (None, "logic"),
    ],
)
def test_final_exception_decides_the_category(exception, category):
    assert errors.category_for_exception(exception) == category


def test_unknown_subclass_uses_its_builtin_base():
    assert errors.category_for_exception("scipy.linalg.SomethingError", "ValueError") == "value_runtime"
    assert errors.classify("failed", exception_type="pkg.Shape", builtin_base="RuntimeError").category == (
        "value_runtime"
    )


def test_parses_the_last_exception_of_a_traceback():
    assert errors.parse_final_exception(TRACEBACK) == ("SyntaxError", "invalid syntax")
    assert errors.parse_final_exception(CHAINED) == (
        "RuntimeError",
        "shape '[2, 3]' is invalid for input of size 7",
    )
    assert errors.parse_final_exception("all good\n") is None


def test_classifies_imported_output_text_without_structured_exception():
    c = errors.classify("failed", output="noise\n" + TRACEBACK)
    assert (c.outcome, c.category, c.tier) == ("failed", "syntax", "model")


@pytest.mark.parametrize(
    ("outcome", "category", "tier"),
    [
        ("passed", "passed", "none"),
        ("timeout", "timeout", "model"),
        ("oom", "oom", "model"),
        ("no_code", "no_code", "model"),
        ("infra_error", "sandbox_failure", "infrastructure"),
    ],
)
def test_structured_outcomes_have_their_own_category(outcome, category, tier):
    c = errors.classify(outcome)
    assert (c.outcome, c.category, c.tier) == (outcome, category, tier)


def test_memory_error_is_out_of_memory():
    c = errors.classify("failed", exception_type="MemoryError")
    assert (c.outcome, c.category) == ("oom", "oom")


def test_missing_task_dependency_is_infrastructure_not_the_model():
    c = errors.classify(
        "failed",
        exception_type="ModuleNotFoundError",
        exception_message="No module named 'einops'",
        local_modules={"model", "utils"},
        task_imports={"torch", "einops"},
    )
    assert (c.outcome, c.category, c.tier, c.reason) == (
        "infra_error",
        "missing_dependency",
        "infrastructure",
        "missing dependency: einops",
    )


def test_module_only_the_completion_imports_is_a_model_import_error():
    c = errors.classify(
        "failed",
        exception_type="ModuleNotFoundError",
        module="flash_attn_utils.ops",
        task_imports={"torch"},
    )
    assert (c.outcome, c.category, c.tier) == ("failed", "import", "model")


def test_missing_module_of_the_task_folder_is_a_model_import_error():
    c = errors.classify(
        "failed", exception_type="ModuleNotFoundError", module="helpers", local_modules={"helpers"}
    )
    assert c.category == "import"


def test_without_task_imports_any_outside_module_counts_as_missing_dependency():
    c = errors.classify(
        "failed", output="Traceback (most recent call last):\nModuleNotFoundError: No module named 'x.y'\n"
    )
    assert (c.category, c.reason) == ("missing_dependency", "missing dependency: x")


def test_early_exit_and_signals_are_model_failures():
    assert errors.classify("failed", early_exit=True).category == "early_exit"
    crash = errors.classify("failed", signal_name="SIGSEGV")
    assert (crash.category, crash.reason) == ("crash", "killed by SIGSEGV")


def test_imported_results_classify_timeouts_by_missing_exit_code():
    assert errors.classify_imported(passed=False, exit_code=None).category == "timeout"
    assert errors.classify_imported(passed=True, exit_code=0).category == "passed"
    assert errors.classify_imported(passed=False, exit_code=1, output=CHAINED).category == "value_runtime"


def test_rejects_unknown_outcome():
    with pytest.raises(ValueError, match="unknown outcome"):
        errors.classify("exploded")


def test_every_category_has_a_label_and_a_tier():
    for slug, (label, tier) in errors.CATEGORIES.items():
        assert label and tier in (errors.MODEL, errors.INFRASTRUCTURE, errors.NONE)
        assert errors.tier_of(slug) == tier


def test_harness_tampering_is_a_model_tier_category():
    assert errors.tier_of("harness_tampering") == "model"
    assert errors.LABELS["harness_tampering"] == "Harness tampering"
