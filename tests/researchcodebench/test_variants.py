"""Impossible variants (researchcodebench/variants.py, docs/integrity.md): what they change, what they keep,
and that every checked snippet of the examples has at least two, each failed by the reference in tests that
run the snippet's own code."""

from __future__ import annotations

import ast
import random
import statistics
from pathlib import Path

import pytest

from researchcodebench import variants
from researchcodebench.pset import read_pset
from researchcodebench.runner import Runner, prepare_workdir, task_facts

from .runner_fixtures import checked_local_sandbox, eval_python

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "pset"

TEST = """\
import unittest
import numpy as np
import model


def helper(a, b):
    return a + b


class T(unittest.TestCase):
    def test_values(self):
        self.assertEqual(model.f(2), 4)
        np.testing.assert_allclose(model.g([1.0]), [0.5, 0.25 * 2], rtol=1e-9)
        assert model.h() == helper(1, 2)

    def test_keyword(self):
        self.assertAlmostEqual(first=model.f(1), second=2.0)


class U(T):
    pass
"""


def test_expected_sites_are_the_compared_values_of_each_test_method_inherited_ones_included():
    sites = variants.expected_sites(TEST, ["T.test_values", "T.test_keyword", "U.test_values", "T.missing"])
    texts = {test: [TEST[s.start : s.end] for s in found] for test, found in sites.items()}
    assert texts["T.test_values"] == ["4", "[0.5, 0.25 * 2]", "helper(1, 2)"]
    assert texts["T.test_keyword"] == ["2.0"]
    assert texts["U.test_values"] == texts["T.test_values"]
    assert "T.missing" not in texts
    numbers = sites["T.test_values"][1].numbers
    assert [TEST[a:b] for a, b in numbers] == ["0.5", "0.25", "2"]


def test_a_perturbation_keeps_every_line_and_its_quarter_is_a_quarter_of_the_change():
    sites = variants.expected_sites(TEST, ["T.test_values"])
    how = variants.Perturbation(1.5, 0.4)
    changes = variants.perturbed("t.py", TEST, sites, {"T.test_values": 0}, how)
    changed = variants.apply_changes(TEST, changes)
    assert changed.count("\n") == TEST.count("\n")
    assert "self.assertEqual(model.f(2), ((4) * 1.5 + 0.4))" in changed
    ast.parse(changed)
    quarter = how.at(variants.MARGIN)
    assert (quarter.scale, quarter.shift) == (1.125, 0.1)
    by_numbers = variants.apply_changes(
        TEST, variants.perturbed("t.py", TEST, sites, {"T.test_values": 1}, how)
    )
    assert "[((0.5) * 1.5 + 0.4), ((0.25) * 1.5 + 0.4) * ((2) * 1.5 + 0.4)]" in by_numbers


def test_drawn_perturbations_are_far_from_the_identity():
    rng = random.Random(7)
    for _ in range(200):
        how = variants.Perturbation.drawn(rng)
        assert 0.4 <= abs(how.scale - 1.0) <= 0.9 and 0.25 <= how.shift <= 0.75


def _variant(name: str, kinds: list[str]) -> variants.Variant:
    changes = [variants.Change("t.py", i, i + 1, "x", 1, kind, "") for i, kind in enumerate(kinds)]
    return variants.Variant.made(name, changes, ["T.test"])


def test_a_pass_is_confirmed_against_a_mutant_first_and_the_draw_among_them_varies():
    mutant_a = _variant("a", [variants.REFERENCE_MUTANT, variants.EXPECTED_VALUE])
    mutant_b = _variant("b", [variants.REFERENCE_MUTANT])
    expected = _variant("c", [variants.EXPECTED_VALUE])
    firsts = set()
    for seed in range(40):
        order = variants.confirmation_order([expected, mutant_a, mutant_b], random.Random(seed))
        assert order[2] is expected and {order[0].id, order[1].id} == {mutant_a.id, mutant_b.id}
        firsts.add(order[0].id)
    assert firsts == {mutant_a.id, mutant_b.id}
    assert variants.confirmation_order([expected]) == [expected]


def test_re_emitted_files_keep_their_lines_and_their_size_says_nothing_of_the_version():
    public = "x = 1\ny = 2\n"
    variant = "x = ((1) * 1.5 + 0.4)\ny = 2\n"
    rng = random.Random(3)
    sizes = {name: [] for name in ("public", "variant")}
    for _ in range(300):
        for name, text in (("public", public), ("variant", variant)):
            emitted = variants.re_emitted(text, len(public), rng)
            assert emitted.startswith(text) and emitted.count("\n") == text.count("\n") + 1
            sizes[name].append(len(emitted.encode()))
    low, high = len(public) + variants.PAD_BASE, len(public) + variants.PAD_BASE + variants.PAD_RANGE
    assert all(low <= s < high for s in sizes["public"] + sizes["variant"])
    assert abs(statistics.mean(sizes["public"]) - statistics.mean(sizes["variant"])) < variants.PAD_RANGE / 10
    assert variants.re_emitted(public, len(public)) != variants.re_emitted(public, len(public))


def test_the_snippets_copy_is_found_in_the_oracle_and_its_mutants_keep_every_line():
    task = read_pset(EXAMPLES).task("rmsnorm")
    snippet = task.snippet("partial rms over the first k features")
    oracle = task.read_text("rmsnorm_ref.py")
    first, last = variants.oracle_copy(task.read_text("rmsnorm.py"), oracle, snippet)
    lines = oracle.split("\n")
    assert lines[first - 1].strip() == "k = int(self.dim * self.p)" and lines[last - 1].strip() == "count = k"
    found = variants.mutations("rmsnorm_ref.py", oracle, first, last, snippet)
    assert found
    for mutation in found:
        mutated = variants.apply_changes(oracle, [mutation.change])
        assert mutated.count("\n") == oracle.count("\n") and mutated != oracle
        assert first <= mutation.change.line <= last
        ast.parse(mutated)
        assert mutation.code != snippet.code and mutation.code.count("\n") == snippet.code.count("\n")


def test_the_test_and_the_oracles_are_written_anew_for_every_run_and_the_annotated_files_are_not(tmp_path):
    task = read_pset(EXAMPLES).task("rmsnorm")
    facts = task_facts(task)
    assert set(facts.texts) == {"paper2code_test.py", "rmsnorm_ref.py"}
    first, second = tmp_path / "a", tmp_path / "b"
    for dest in (first, second):
        dest.mkdir()
        prepare_workdir(str(dest), task, None, None, facts.hidden, texts=facts.texts)
    for name in facts.texts:
        a, b = (first / name).read_text(), (second / name).read_text()
        assert a != b and a.startswith(facts.texts[name]) and b.startswith(facts.texts[name])
    assert (first / "rmsnorm.py").read_bytes() == (Path(task.root) / "rmsnorm.py").read_bytes()


@pytest.mark.slow
def test_every_snippet_of_every_example_task_has_at_least_two_variants_failed_where_its_code_runs(tmp_path):
    """The variants of all 90 snippets (derived once per suite run and shared through the store)."""
    pset = read_pset(EXAMPLES)
    with Runner(
        sandbox=checked_local_sandbox(tmp_path / "scratch"), environment=eval_python(), workers=2
    ) as runner:
        counts = {}
        for task in pset.tasks:
            covering = runner.coverage(task)["covering"]
            for snippet in task.snippets:
                found = runner.snippet_variants(task, snippet)
                counts[f"{task.id}/{snippet.name}"] = len(found.variants)
                running = set(covering[snippet.name])
                for variant in found.variants:
                    assert variant.fails, variant
                    assert set(variant.fails) <= set(found.tests)
                    assert running & {variants.MODULE, variants.SCRIPT} or set(variant.fails) <= running
                    assert variant.kinds and all(c.file in runner.facts(task).texts for c in variant.changes)
    print(f"variants per snippet over {len(counts)} snippets: {sorted(set(counts.values()))}")
    assert all(count >= 2 for count in counts.values()), {k: v for k, v in counts.items() if v < 2}
    assert len(counts) == sum(len(t.snippets) for t in pset.tasks) == 90


@pytest.mark.slow
def test_the_reference_fails_exactly_the_tests_a_variant_names_each_by_a_failed_assertion(tmp_path):
    task = read_pset(EXAMPLES).task("rmsnorm")
    snippet = task.snippet("root mean square")
    with Runner(
        sandbox=checked_local_sandbox(tmp_path / "scratch"), environment=eval_python(), workers=2
    ) as runner:
        found = runner.snippet_variants(task, snippet)
        mutant = next(v for v in found.variants if variants.REFERENCE_MUTANT in v.kinds)
        facts = runner.facts(task)
        overrides = variants.variant_texts(facts.texts, mutant.changes)
        limits = runner.limits
        reference = runner._run(task, None, None, facts, limits, overrides=overrides, trusted=True)
    assert not reference.passed
    assert {t for t, o in (reference.tests or {}).items() if o != "passed"} == set(mutant.fails)
    assert all(reference.tests[t] == "failed" for t in mutant.fails)
