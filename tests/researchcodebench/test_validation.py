"""The validation battery (researchcodebench.validation) on the examples and on tasks that each break one
check (tests/researchcodebench/fixtures/validation), through the real local sandbox and warm runner."""

from __future__ import annotations

import json
import shutil
import textwrap
import time
from pathlib import Path

import pytest

from researchcodebench.annotations import parse_file
from researchcodebench.pset import PaperMeta, read_pset, task_from_files
from researchcodebench.runner import TIMEOUT_FACTOR, Runner
from researchcodebench.validation import (
    FILL_KINDS,
    OUT_OF_TIME,
    Finding,
    ValidationReport,
    battery_budget_s,
    mutation_fills,
    validate_task,
)
from researchcodebench.variants import SnippetVariants

from .runner_fixtures import checked_local_sandbox, eval_python

pytestmark = pytest.mark.sandbox

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "pset"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "validation"


@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    sandbox = checked_local_sandbox(tmp_path_factory.mktemp("scratch"))
    with Runner(sandbox=sandbox, environment=eval_python(), workers=2) as warm_runner:
        yield warm_runner


@pytest.fixture(scope="module")
def fixtures():
    return read_pset(FIXTURES)


def errors_of(report: ValidationReport, check: str) -> list[Finding]:
    return [f for f in report.findings if f.check == check and f.is_error]


# ---------------------------------------------------------------------------- examples


@pytest.mark.parametrize("task_id", [t.id for t in read_pset(EXAMPLES).tasks])
def test_every_example_task_validates_green_with_every_snippet_checked(runner, task_id):
    task = read_pset(EXAMPLES).task(task_id)
    report = validate_task(task, runner=runner)
    assert report.ok, [f.to_dict() for f in report.findings]
    assert [s["name"] for s in report.snippets] == [s.name for s in task.snippets]
    assert all(s["checked"] is True for s in report.snippets)
    assert len(report.reference_durations_s) == 5
    slowest = max(report.reference_durations_s)
    assert report.timeout_s == pytest.approx(
        min(max(TIMEOUT_FACTOR * slowest, runner.timeout_floor_s), runner.cap_s(task)), abs=1e-3
    )
    tried = {row["kind"] for s in report.snippets for row in s["fills"] if "skipped" not in row}
    assert tried == set(FILL_KINDS)
    # Every snippet has impossible variants, each of which the reference fails in a test that runs its code.
    assert report.variants_environment == report.environment
    for snippet in task.snippets:
        found = SnippetVariants.from_dict(report.variants[snippet.name])
        assert len(found.variants) >= 2, (snippet.name, found.note)
        assert all(set(v.fails) <= set(found.tests) and v.describe() for v in found.variants)


# ---------------------------------------------------------------------------- broken tasks


def test_flags_the_snippet_the_test_ignores_with_its_name_and_the_fill_that_passed(runner, fixtures):
    report = validate_task(fixtures.task("unchecked-snippet"), runner=runner)
    assert not report.ok
    (finding,) = errors_of(report, "mutation")
    assert finding.snippet == "shift values"
    assert (finding.file, finding.line) == ("toy.py", 12)
    assert "not checked by the test" in finding.message
    assert "'placeholder'" in finding.message and "'pass'" in finding.message
    assert "    pass" in finding.detail
    by_name = {s["name"]: s for s in report.snippets}
    assert by_name["scale values"]["checked"] is True
    assert by_name["shift values"]["checked"] is False
    assert all(row["passed"] for row in by_name["shift values"]["fills"])


def test_variants_are_derived_per_snippet_and_a_snippet_no_test_runs_has_none_with_an_error(
    tmp_path, fixtures
):
    """The variants check (issue 32): the snippet the test calls gets variants its test fails; the one it
    never calls gets none, an error at its line saying why, which a maintainer may accept like an unchecked
    snippet. The stages stream each snippet's variants, before the mutation check."""
    stages: list[tuple[str, dict]] = []
    sandbox = checked_local_sandbox(tmp_path / "scratch")
    # A runner of its own with no store: the variants are derived here, whatever the suite derived before.
    with Runner(sandbox=sandbox, environment=eval_python(), workers=2, variant_store=None) as fresh:
        task = fixtures.task("unchecked-snippet")
        report = validate_task(task, runner=fresh, progress=lambda stage, data: stages.append((stage, data)))
        sources = dict(fresh.variant_sources)
    # Its variants stage streamed an error at its line saying why; the report keeps one finding per cause, the
    # mutation check's (a maintainer accepts it once).
    streamed = [f for stage, data in stages if stage == "variants" for f in data.get("findings", [])]
    (finding,) = [f for f in streamed if f["severity"] == "error"]
    assert (finding["snippet"], finding["file"], finding["line"]) == ("shift values", "toy.py", 12)
    assert "is not checked by the test" in finding["message"]
    assert "no test that the reference passes runs this snippet's code" in finding["message"]
    assert errors_of(report, "variants") == []
    assert [f.snippet for f in errors_of(report, "mutation")] == ["shift values"]
    checked = SnippetVariants.from_dict(report.variants["scale values"])
    assert checked.variants and checked.tests == ("ToyTest.test_scale",)
    assert all(v.fails == ("ToyTest.test_scale",) for v in checked.variants)
    assert SnippetVariants.from_dict(report.variants["shift values"]).variants == ()
    assert report.variants_environment == report.environment
    assert sources == {(task.root, "scale values"): "derived", (task.root, "shift values"): "derived"}
    shown = [data["variants"] for stage, data in stages if stage == "variants"]
    assert [(v["snippet"], v["count"] > 0) for v in shown] == [
        ("scale values", True),
        ("shift values", False),
    ]
    assert shown[0]["described"] and shown[0]["source"] == "derived"
    names = [stage for stage, _ in stages]
    assert max(i for i, n in enumerate(names) if n == "variants") < names.index("mutation")
    assert ValidationReport.from_dict(json.loads(json.dumps(report.to_dict()))).variants == report.variants


def test_a_test_that_only_recognises_the_fixed_fills_is_flagged_by_the_mutants(runner, fixtures):
    """Issue 18 item 4: the fixed fills all fail, but mutants of the reference drawn for this validation
    pass: the snippet is not checked, and its record has the mutation score."""
    report = validate_task(fixtures.task("fills-only"), runner=runner, seed="fixed-for-the-test")
    assert not report.ok
    (finding,) = errors_of(report, "mutation")
    assert finding.snippet == "weighted total" and "mutants of its reference" in finding.message
    (record,) = report.snippets
    assert all(not row["passed"] for row in record["fills"] if "skipped" not in row)
    assert record["checked"] is False
    score = record["mutation_score"]
    assert score["total"] == len(record["mutants"]) > 4  # the first draw looked weak: more were drawn
    assert score["killed"] * 2 <= score["total"]
    assert "passed the test" in finding.detail
    assert report.mutation_seed == "fixed-for-the-test"


def test_a_first_draw_of_equivalent_mutants_is_confirmed_by_more_before_a_snippet_is_flagged(runner):
    """Soft-DTW's boundary snippet has two equivalent mutants (a table one row or column larger, whose extra
    cells stay unused); seed3 draws both first. The snippet is judged on the confirmation draw too."""
    task = read_pset(EXAMPLES).task("soft-dtw")
    report = validate_task(task, runner=runner, seed="seed3")
    record = next(s for s in report.snippets if s["name"] == "boundary conditions")
    assert [m["change"] for m in record["mutants"][:2]] == ["1 -> 2", "1 -> 2"]
    assert not any(m["passed"] is False for m in record["mutants"][:2])
    assert len(record["mutants"]) > 4 and record["checked"] is True and report.ok


def test_mutants_are_drawn_per_validation_from_its_seed(runner):
    task = read_pset(EXAMPLES).task("rmsnorm")
    first = validate_task(task, runner=runner, seed="one")
    again = validate_task(task, runner=runner, seed="one")
    other = validate_task(task, runner=runner, seed="two")
    draw = lambda report: [[m["code"] for m in s["mutants"]] for s in report.snippets]  # noqa: E731
    assert draw(first) == draw(again) and draw(first) != draw(other)
    scored = [s["mutation_score"] for s in first.snippets if s["mutation_score"]]
    assert len(scored) >= 5 and all(score["killed"] > score["total"] / 2 for score in scored)
    assert first.mutation_seed == "one" and validate_task(task, runner=runner).mutation_seed not in (
        "",
        "one",
    )


def test_the_battery_budget_follows_the_slowest_reference_and_the_snippet_count():
    one = battery_budget_s(snippets=1, slowest_reference_s=0.2)
    assert one == battery_budget_s(snippets=1, slowest_reference_s=1.0)  # at least 1 s per run
    assert battery_budget_s(snippets=10, slowest_reference_s=0.2) - 60 == pytest.approx(10 * (one - 60))
    assert battery_budget_s(snippets=2, slowest_reference_s=4.0, workers=2) - 60 == pytest.approx(
        2 * 4 * (one - 60) / 2
    )


def test_a_battery_past_its_deadline_stops_and_says_it_timed_out(runner, tmp_path):
    """A test that sleeps whenever the code is not the reference: its fills and mutants would each hold
    the worker for the whole per-run timeout. The battery ends at its deadline, naming the limit."""
    pset = tmp_path / "pset"
    shutil.copytree(EXAMPLES, pset)
    original = (pset / "rmsnorm" / "rmsnorm.py").read_text()
    test = pset / "rmsnorm" / "paper2code_test.py"
    test.write_text(
        test.read_text().replace(
            "import unittest\n",
            "import unittest\nimport time\n"
            f"if open('rmsnorm.py').read() != {original!r}:\n    time.sleep(60)\n",
            1,
        )
    )
    task = read_pset(pset).task("rmsnorm")
    started = time.monotonic()
    report = validate_task(task, runner=runner, deadline=started + 20)
    took = time.monotonic() - started
    # The deadline enforced: no run started after it nor ran past it (the margin is the last run's kill and
    # the report's making, which a busy machine stretches).
    assert took < 20 + 30, took
    (finding,) = errors_of(report, "timeout")
    assert "validation timed out" in finding.message and "slowest reference run" in finding.message
    assert OUT_OF_TIME in json.dumps(report.to_dict())


def test_a_test_that_passes_a_return_none_fill_is_flagged_naming_only_that_fill(runner, fixtures):
    report = validate_task(fixtures.task("return-none-passes"), runner=runner)
    (finding,) = errors_of(report, "mutation")
    assert finding.snippet == "find negatives"
    assert "'return None'" in finding.message and "'pass'" not in finding.message
    assert "    return None" in finding.detail
    fills = {row["kind"]: row for row in report.snippets[0]["fills"]}
    assert fills["return None"]["passed"] is True
    assert fills["return input"]["code"] == "    return values"
    assert fills["pass"]["category"] == "name"
    assert not any(fills[k]["passed"] for k in FILL_KINDS if k != "return None")


def test_a_failing_reference_is_reported_with_its_output_and_no_mutation_verdicts(runner, fixtures):
    report = validate_task(fixtures.task("failing-reference"), runner=runner)
    assert not report.ok
    (finding,) = errors_of(report, "reference")
    assert "5 of 5" in finding.message and "AssertionError" in finding.message
    assert "[3, 6, 10]" in finding.detail
    assert report.timeout_s is None
    assert all(s["checked"] is None for s in report.snippets)
    assert not errors_of(report, "mutation")
    assert report.variants == {} and not errors_of(report, "variants")


def test_a_flaky_reference_is_reported_as_flaky_with_a_failing_output(runner, fixtures):
    # Each run fails with probability 1/2: with 20 runs, all alike (not flaky) has a chance of 2 in 2^20.
    report = validate_task(fixtures.task("flaky"), runner=runner, repeats=20)
    assert not report.ok
    (finding,) = errors_of(report, "flaky")
    assert "flaky" in finding.message and "of 20 times" in finding.message
    assert "unseeded coin" in finding.detail
    assert len(report.reference_durations_s) == 20
    assert all(s["checked"] is None for s in report.snippets)


def test_a_package_the_test_imports_but_the_environment_lacks_is_a_missing_dependency(runner, fixtures):
    report = validate_task(fixtures.task("missing-dependency"), runner=runner)
    (finding,) = errors_of(report, "environment")
    assert finding.message.startswith("missing dependency rcb_validation_fixture_missing_package")
    assert (finding.file, finding.line) == ("paper2code_test.py", 5)


def test_an_undeclared_oracle_copy_is_an_error_and_an_undeclared_data_file_a_warning(runner, fixtures):
    report = validate_task(fixtures.task("undeclared-oracle"), runner=runner)
    (copy,) = errors_of(report, "oracle")
    assert copy.file == "reference.py" and "undeclared oracle" in copy.message
    assert "'scale values'" in copy.message and "'shift values'" in copy.message
    (data,) = [f for f in report.findings if f.check == "oracle" and not f.is_error]
    assert "'expected.json'" in data.message and (data.file, data.line) == ("paper2code_test.py", 15)


def test_declaring_the_oracles_makes_that_task_green(runner, tmp_path, fixtures):
    folder = tmp_path / "pset"
    shutil.copytree(FIXTURES, folder)
    (folder / "undeclared-oracle" / "task.yaml").write_text("oracle_files: [reference.py, expected.json]\n")
    report = validate_task(read_pset(folder).task("undeclared-oracle"), runner=runner)
    assert not [f for f in report.findings if f.check == "oracle"]
    # Green but for the variants: test_shift compares with a value read from expected.json, which no
    # variant perturbs (variants.py perturbs expected values written in the test and mutates oracle modules).
    assert [(f.check, f.snippet) for f in report.findings if f.is_error] == [("variants", "shift values")]


def test_a_declared_oracle_that_does_not_exist_is_reported_on_the_manifest(runner, tmp_path):
    folder = tmp_path / "pset"
    shutil.copytree(FIXTURES, folder)
    (folder / "checked" / "task.yaml").write_text("oracle_files: [gone.json]\n")
    report = validate_task(read_pset(folder).task("checked"), runner=runner)
    (finding,) = errors_of(report, "oracle")
    assert finding.file == "task.yaml" and "'gone.json'" in finding.message


@pytest.mark.parametrize(
    ("task_id", "words"),
    [
        ("network", "use the network"),
        ("outside-write", "write outside its task folder"),
        ("slow", "exceeded the time limit (2 s)"),
    ],
)
def test_network_use_outside_writes_and_over_limit_time_are_reported(runner, fixtures, task_id, words):
    report = validate_task(fixtures.task(task_id), runner=runner)
    assert not report.ok
    assert any(words in f.message for f in errors_of(report, "sandbox")), report.findings


def test_annotation_errors_name_file_and_line_and_the_valid_snippets_still_validate(runner, tmp_path):
    folder = tmp_path / "pset"
    shutil.copytree(FIXTURES, folder)
    toy = folder / "checked" / "toy.py"
    toy.write_text(toy.read_text().replace('    # </paper2code name="shift values">\n', ""))
    report = validate_task(read_pset(folder).task("checked"), runner=runner)
    found = errors_of(report, "annotations")
    assert found and all(f.file == "toy.py" and f.line for f in found)
    assert [s["name"] for s in report.snippets] == ["scale values"]
    assert report.snippets[0]["checked"] is True


def test_a_task_held_only_in_memory_is_reported_not_run(runner):
    text = (FIXTURES / "checked" / "toy.py").read_bytes()
    meta = PaperMeta(id="memory", annotated_file_paths=("toy.py",))
    task = task_from_files({"toy.py": text, "paper2code_test.py": b"import toy\n"}, meta)
    events: list[str] = []
    report = validate_task(task, runner=runner, progress=lambda stage, data: events.append(stage))
    assert not report.ok
    assert [f.check for f in report.findings if f.is_error] == ["sandbox"]
    assert events == ["annotations", "reference", "done"]
    assert report.reference_durations_s == []


def test_progress_reports_each_stage_and_each_snippet_in_order(runner, fixtures):
    events: list[tuple[str, dict]] = []
    report = validate_task(
        fixtures.task("checked"), runner=runner, progress=lambda s, d: events.append((s, d))
    )
    stages = [stage for stage, _ in events]
    assert stages == [
        "annotations",
        "environment",
        "oracle",
        "reference",
        "variants",
        "variants",
        "mutation",
        "mutation",
        "done",
    ]
    assert {d["snippet"]["name"] for s, d in events if s == "mutation"} == {"scale values", "shift values"}
    assert [d["variants"]["snippet"] for s, d in events if s == "variants"] == [
        "scale values",
        "shift values",
    ]
    assert all(d["variants"]["count"] >= 1 for s, d in events if s == "variants")
    assert len(events[3][1]["runs"]) == 5
    assert events[-1][1]["report"] == report.to_dict()
    json.dumps(events)


def test_report_survives_a_json_round_trip(runner, fixtures):
    report = validate_task(fixtures.task("unchecked-snippet"), runner=runner)
    again = ValidationReport.from_dict(json.loads(json.dumps(report.to_dict())))
    assert again == report


def test_finding_bounds_its_message_and_detail_and_refuses_unknown_checks():
    finding = Finding("mutation", "error", "line one\nline two " + "x" * 1000, detail="y" * 10_000)
    assert "\n" not in finding.message and len(finding.message) <= 300
    assert len(finding.detail) <= 4000 and finding.detail.endswith("y")
    with pytest.raises(ValueError, match="unknown check"):
        Finding("style", "error", "m")
    with pytest.raises(ValueError, match="unknown severity"):
        Finding("mutation", "fatal", "m")


# ---------------------------------------------------------------------------- fills


def _fills(source: str) -> dict[str, dict[str, object]]:
    text = textwrap.dedent(source)
    (snippet, *_), _issues = parse_file(text, "m.py")
    return {f.kind: {"code": f.code, "note": f.note} for f in mutation_fills(text, snippet)}


def test_fills_return_the_first_input_other_than_self_at_the_code_indentation():
    fills = _fills(
        """\
        class Layer:
            def forward(self, x, mask=None):
                if mask is None:
                    # <paper2code name="mask">
                    x = x * 2
                    # </paper2code name="mask">
                return x
        """
    )
    assert fills["return input"]["code"] == "            return x"
    assert fills["pass"]["code"] == "            pass"
    assert fills["raise NotImplementedError"]["code"] == "            raise NotImplementedError"
    assert fills["placeholder"]["code"].startswith('            # TODO: Implement block "mask"')


def test_fills_keep_tab_indentation():
    text = 'def f(a):\n\t# <paper2code name="t">\n\tb = a + 1\n\t# </paper2code name="t">\n\treturn b\n'
    (snippet,), _ = parse_file(text, "m.py")
    fills = {f.kind: f.code for f in mutation_fills(text, snippet)}
    assert fills["return None"] == "\treturn None" and fills["pass"] == "\tpass"


def test_return_fills_are_skipped_with_a_note_outside_functions_and_without_inputs():
    in_class = _fills(
        """\
        class Config:
            # <paper2code name="fields">
            width = 4
            # </paper2code name="fields">
        """
    )
    assert in_class["return None"]["code"] is None
    assert "not inside a function" in in_class["return None"]["note"]
    assert in_class["pass"]["code"] == "    pass"
    no_input = _fills(
        """\
        class Model:
            def reset(self):
                # <paper2code name="reset">
                self.count = 0
                # </paper2code name="reset">
        """
    )
    assert no_input["return input"]["code"] is None
    assert "no input" in no_input["return input"]["note"]
    assert no_input["return None"]["code"] == "        return None"


def test_a_fill_equal_to_the_reference_is_skipped():
    fills = _fills(
        """\
        def identity(x):
            # <paper2code name="identity">
            return x
            # </paper2code name="identity">
        """
    )
    assert fills["return input"]["code"] is None
    assert "reference" in fills["return input"]["note"]
