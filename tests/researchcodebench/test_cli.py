"""`python -m researchcodebench`: the fixed interfaces of inspect, mask, problem, score and validate."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from researchcodebench import cli
from researchcodebench.cli import build_parser, main
from researchcodebench.validation import ValidationReport

from .runner_fixtures import eval_python

REPO = Path(__file__).resolve().parents[2]
HOSTILE = Path(__file__).parent / "fixtures" / "hostile_pset"
DATA = REPO.parent / "shared" / "data"
VALIDATION_FIXTURES = Path(__file__).parent / "fixtures" / "validation"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_inspect_json_has_the_documented_shape(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "inspect", str(HOSTILE), "--json")
    doc = json.loads(out)
    assert code == 0
    assert doc["totals"] == {"tasks": 3, "snippets": 11, "lines": 28}
    assert doc["errors"] == []
    task = doc["tasks"][0]
    assert task["id"] == "attn: v2, final=yes" and task["errors"] == []
    assert task["snippets"][1] == {
        "name": "scores",
        "file": "deep/a b/c,d/e=f/model core.py",
        "start_line": 7,
        "end_line": 9,
        "lines": 1,
        "depth": 1,
        "parent": "attention: scores, softmax = weights",
    }


def test_inspect_reports_errors_with_file_and_line_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task = tmp_path / "t"
    task.mkdir()
    (tmp_path / "papers.yaml").write_text(
        "- id: t\n  annotated_file_paths: a.py\n  context_file_paths: null\n"
    )
    (task / "paper2code_test.py").write_text("")
    (task / "a.py").write_text('# <paper2code name="x">\nx = 1\n# <paper2code name="x">\n')
    code, out, _ = _run(capsys, "inspect", str(tmp_path), "--json")
    doc = json.loads(out)
    assert code == 1
    assert [(e["task"], e["file"], e["line"], e["code"]) for e in doc["errors"]] == [
        ("t", "a.py", 3, "repeated_open_as_close")
    ]
    code, out, _ = _run(capsys, "inspect", str(tmp_path))
    assert code == 1 and "t/a.py:3: error:" in out


def test_mask_prints_the_masked_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "mask", str(HOSTILE), "md_task", "scale")
    assert code == 0
    assert out.endswith(
        "        var = sum((x - mean) ** 2 for x in xs) / len(xs)\n"
        '        # TODO: Implement block "scale"\n\n'
        "        # Approximately 1 line(s) of code.\n\n"
    )
    assert 'paper2code name="mean' not in out


def test_problem_prints_prompt_per_template(capsys: pytest.CaptureFixture[str]) -> None:
    code, v2, _ = _run(capsys, "problem", str(HOSTILE), "crlf tabs", "hinge")
    assert code == 0 and "## loss.py\n" in v2
    code, old, _ = _run(
        capsys, "problem", str(HOSTILE), "crlf tabs", "hinge", "--template", "rcb-2025", "--no-paper"
    )
    assert code == 0 and "## loss.py\n" not in old and "Here is the paper" not in old


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["mask", str(HOSTILE), "nope", "x"], "has no task 'nope'"),
        (["mask", str(HOSTILE), "md_task", "nope"], "has no snippet 'nope'"),
        (["inspect", "/nonexistent/pset"], "not a folder"),
        (["score", "/nonexistent.json"], "cannot read"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(
    argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, *argv)
    assert code == 2 and needle in err and "Traceback" not in err


def test_malformed_results_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "r.json"
    bad.write_text('{"results": {"p": {"results": {"M": {"results": {"s": [{"passed": true}]}}}}}}')
    code, _, err = _run(capsys, "score", str(bad))
    assert code == 2 and "bad record" in err and "r.json" in err


def test_usage_errors_exit_2() -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["score"])
    assert exc.value.code == 2


def test_every_subcommand_has_help() -> None:
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert {"inspect", "mask", "problem", "score"} <= set(commands)
    for name, sub in commands.items():
        assert sub.format_help().startswith("usage:"), name


def test_score_json_reproduces_the_published_leaderboard() -> None:
    stats = DATA / "overall_stats.json"
    if not stats.is_file():
        pytest.skip(f"{stats} not present")
    proc = subprocess.run(
        [sys.executable, "-m", "researchcodebench", "score", str(stats), "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    published = json.loads(stats.read_text())["overall_scores"]
    assert len(doc["models"]) == 32
    first = doc["models"][0]
    assert first["key"] == "GEMINI_2_5_PRO_PREVIEW_05_06"
    assert (round(first["scaled_pass_at_1"], 2), round(first["pass_at_1"], 2)) == (37.34, 64.15)
    for row in doc["models"]:
        assert row["scaled_pass_at_1"] == pytest.approx(published[row["key"]]["line_rates"]["mean"], abs=1e-6)
        assert row["pass_at_1"] == pytest.approx(published[row["key"]]["task_rates"]["mean"], abs=1e-6)
        assert row["ci95"][0] <= row["scaled_pass_at_1"] <= row["ci95"][1]
        assert row["coverage"] == 1.0 and row["snippets"] == 212 and row["lines"] == 1449
    assert len(doc["papers"]) == 20


def test_score_global_contamination_with_registry(capsys: pytest.CaptureFixture[str]) -> None:
    stats, registry = DATA / "overall_stats.json", DATA / "papers.yaml"
    if not (stats.is_file() and registry.is_file()):
        pytest.skip("published data not present")
    code, out, _ = _run(
        capsys, "score", str(stats), "--contamination", "global", "--papers", str(registry), "--json"
    )
    doc = json.loads(out)
    gemini = next(m for m in doc["models"] if m["key"] == "GEMINI_2_5_PRO_PREVIEW_05_06")
    assert code == 0 and gemini["snippets"] == 143 and len(gemini["papers"]) == 13
    assert (round(gemini["scaled_pass_at_1"], 2), round(gemini["pass_at_1"], 2)) == (33.30, 58.74)


def test_registered_subcommand_runs_and_its_user_errors_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def handler(args) -> int:
        if args.value == "bad":
            raise cli.CliError("value must not be 'bad'")
        print(f"got {args.value}")
        return 0

    def register(subparsers) -> None:
        parser = subparsers.add_parser("echo", help="print a value")
        parser.add_argument("value")
        parser.set_defaults(handler=handler)

    monkeypatch.setattr(cli, "REGISTRARS", (*cli.REGISTRARS, register))
    assert _run(capsys, "echo", "x")[:2] == (0, "got x\n")
    code, _, err = _run(capsys, "echo", "bad")
    assert code == 2 and "value must not be 'bad'" in err


def test_cli_validate_exits_one_naming_the_unchecked_snippet(capsys):
    status = cli.main(
        [
            "validate",
            str(VALIDATION_FIXTURES),
            "--tasks",
            "checked",
            "unchecked-snippet",
            "--python",
            eval_python(),
        ]
    )
    out = capsys.readouterr().out
    assert status == 1
    assert "checked: OK" in out and "unchecked-snippet: NOT OK" in out
    assert "error [mutation] toy.py:12: snippet 'shift values' is not checked by the test" in out


def test_cli_validate_json_for_one_task_folder_exits_zero_when_green(capsys):
    status = cli.main(["validate", str(VALIDATION_FIXTURES / "checked"), "--json", "--python", eval_python()])
    doc = json.loads(capsys.readouterr().out)
    assert status == 0 and doc["ok"] is True
    assert [t["id"] for t in doc["tasks"]] == ["checked"]
    assert ValidationReport.from_dict(doc["tasks"][0]).ok


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["validate", "/nonexistent/folder"], "neither a pset folder"),
        (["validate", str(VALIDATION_FIXTURES), "--tasks", "nope"], "has no task 'nope'"),
        (["validate", str(VALIDATION_FIXTURES), "--repeats", "0"], "--repeats must be at least 1"),
    ],
)
def test_cli_validate_refuses_bad_input_with_exit_two(capsys, argv, message):
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err
