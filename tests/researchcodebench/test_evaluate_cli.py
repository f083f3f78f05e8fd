"""``python -m researchcodebench evaluate``: fixed interface, JSON output, exit statuses."""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace

import pytest

from researchcodebench.cli import main
from researchcodebench.environments import repo_root
from researchcodebench.evaluate_cli import exit_status
from researchcodebench.sandbox.local import LocalSandbox

from .runner_fixtures import eval_python, make_pset


@pytest.fixture(scope="module", autouse=True)
def _needs_bwrap():
    try:
        LocalSandbox().check()
    except Exception as exc:  # noqa: BLE001 - any reason the sandbox cannot run here skips the module
        pytest.skip(str(exc))


@pytest.fixture
def pset(tmp_path, monkeypatch):
    monkeypatch.setenv("RCB_CACHE_DIR", str(tmp_path / "cache"))
    return make_pset(tmp_path / "pset")


def _run(capsys, *args: str) -> tuple[int, str, str]:
    status = main(["evaluate", *args, "--python", eval_python(), "--workers", "1"])
    out, err = capsys.readouterr()
    return status, out, err


def test_oracle_passes_and_blank_fails_with_json_scores(pset, capsys):
    status, out, _ = _run(capsys, str(pset), "--oracle", "--no-cache", "--json")
    data = json.loads(out)
    assert status == 0
    assert [v["outcome"] for v in data["verdicts"]] == ["passed"]
    assert data["verdicts"][0]["task"] == "toy" and data["verdicts"][0]["completion_idx"] == 0
    assert data["scores"]["line_rate"]["mean"] == 100.0 and data["scores"]["coverage"] == 1.0
    assert data["scores"]["per_paper"] == {"toy": 100.0}
    status, out, _ = _run(capsys, str(pset), "--blank", "--no-cache", "--json")
    assert status == 0
    assert json.loads(out)["scores"]["passed"] == 0


def test_predictions_with_code_and_responses_are_evaluated(pset, tmp_path, capsys):
    lines = [
        {
            "task": "toy",
            "snippet": "scale values",
            "completion_idx": 0,
            "code": "result = [v * factor for v in values]",
        },
        {"task": "toy", "snippet": "scale values", "completion_idx": 1, "response": "No code, sorry."},
        {
            "task": "toy",
            "snippet": "scale values",
            "completion_idx": 2,
            "response": "Here:\n```python\nresult = [v + factor for v in values]\n```",
        },
    ]
    path = tmp_path / "preds.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    status, out, _ = _run(capsys, str(pset), "--predictions", str(path), "--json")
    data = json.loads(out)
    assert status == 0
    assert [(v["completion_idx"], v["outcome"], v["category"]) for v in data["verdicts"]] == [
        (0, "passed", "passed"),
        (1, "no_code", "no_code"),
        (2, "failed", "logic"),
    ]
    assert data["scores"]["task_rate"]["rates"] == [100.0, 0.0, 0.0]
    status, out, _ = _run(capsys, str(pset), "--predictions", str(path), "--json")
    assert [v["cached"] for v in json.loads(out)["verdicts"]] == [True, False, True]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            '{"task": "toy", "snippet": "scale values", "code": "x"}\n{broken\n',
            "preds.jsonl:2: not valid JSON",
        ),
        (
            '{"task": "toy", "snippet": "nope", "code": "x"}\n',
            "preds.jsonl:1: task 'toy' has no snippet 'nope'",
        ),
        ('{"task": "other", "snippet": "s", "code": "x"}\n', "preds.jsonl:1: unknown task 'other'"),
        (
            '{"task": "toy", "snippet": "scale values"}\n',
            "preds.jsonl:1: missing field 'code' (or 'response')",
        ),
        ('{"snippet": "scale values", "code": "x"}\n', "preds.jsonl:1: missing field 'task'"),
        (
            '{"task": "toy", "snippet": "scale values", "completion_idx": "0", "code": "x"}\n',
            "must be an integer",
        ),
        (
            '{"task": "toy", "snippet": "scale values", "code": "x"}\n' * 2,
            "preds.jsonl:2: duplicate of line 1",
        ),
    ],
)
def test_bad_predictions_exit_2_naming_file_and_line(pset, tmp_path, capsys, content, message):
    path = tmp_path / "preds.jsonl"
    path.write_text(content)
    status, out, err = _run(capsys, str(pset), "--predictions", str(path))
    assert status == 2
    assert message in err
    assert out == ""


def test_bad_predictions_report_every_problem_and_never_crash(pset, tmp_path, capsys):
    path = tmp_path / "preds.jsonl"
    path.write_bytes(
        b'{"task": "toy", "snippet": "scale values", "code": "x\\ud800"}\n'
        + b'{"task": "toy", "snippet": "scale values", "completion_idx": '
        + b"7" * 5000
        + b', "code": "x"}\n'
        + b"[" * 100_000
        + b"\n"
        + b'{"task": "'
        + b"T" * 100_000
        + b'", "snippet": "s", "code": "x"}\n'
    )
    status, out, err = _run(capsys, str(pset), "--predictions", str(path))
    assert status == 2 and out == ""
    assert "preds.jsonl:1: field 'code' holds a lone surrogate" in err
    assert (
        "preds.jsonl:2: field 'completion_idx' must be an integer from 0 to 99, got a 5000-digit number"
        in err
    )
    assert "preds.jsonl:3: not valid JSON here (nested too deeply)" in err
    assert "preds.jsonl:4: field 'task' is too long (100000 characters; at most 500): 'TTTT" in err
    assert len(err) < 2000


def test_unknown_task_filter_exits_2(pset, capsys):
    status, _, err = _run(capsys, str(pset), "--tasks", "missing", "--oracle")
    assert status == 2 and "unknown task id(s) missing" in err


def test_human_output_lists_each_verdict_and_the_scores(pset, capsys):
    status, out, _ = _run(capsys, str(pset), "--blank", "--no-cache")
    assert status == 0
    assert "toy / scale values #0" in out and "[Name Errors]" in out
    assert "0/1 passed" in out
    assert "Scaled Pass@1 0.00, Pass@1 0.00" in out and "  toy: Scaled Pass@1 0.00" in out
    assert "error categories: Name Errors 1" in out and "name_" not in out


def test_passes_are_confirmed_against_variants_derived_once_then_read_from_the_cache(pset, tmp_path, capsys):
    """Issue 32: the first pass derives its task's impossible variants (kept under RCB_CACHE_DIR), a second
    evaluation reads them; both say which, and the summary counts the confirmed passes."""
    honest = {"task": "toy", "snippet": "scale values", "code": "result = [factor * v for v in values]"}
    path = tmp_path / "preds.jsonl"
    path.write_text(json.dumps(honest) + "\n")
    status, out, err = _run(capsys, str(pset), "--predictions", str(path), "--no-cache", "--json")
    data = json.loads(out)
    assert status == 0
    (verdict,) = data["verdicts"]
    assert (verdict["outcome"], verdict["confirmation"]) == ("passed", "confirmed") and verdict["variant"]
    assert data["scores"]["confirmations"] == {"confirmed": 1, "unconfirmed": 0, "forged": 0}
    assert data["scores"]["variants"] == {"toy": {"derived": ["scale values"], "cached": []}}
    assert "impossible variants of toy: derived now for 1 snippet(s)" in err
    assert (tmp_path / "cache" / "variants").is_dir()
    status, out, err = _run(capsys, str(pset), "--predictions", str(path), "--no-cache")
    assert status == 0
    assert "impossible variants of toy: read from the cache for 1 snippet(s)" in err
    assert "passes: 1 confirmed against an impossible variant of the test, 0 unconfirmed" in out


MISSING = "rcb_no_such_module"


def test_an_interpreter_lacking_a_module_the_task_imports_stops_before_judging_with_exit_3(tmp_path, capsys):
    pset = make_pset(tmp_path / "pset", prelude=f"import {MISSING}\n")
    status, out, err = _run(capsys, str(pset), "--oracle", "--no-cache")
    assert status == 3 and out == ""
    (line,) = err.splitlines()
    assert line.startswith(
        f"error: the evaluation interpreter {eval_python()} (--python) cannot import {MISSING}"
    )
    assert f"`{eval_python()} -m pip install {MISSING}`" in line and "nothing was judged" in line


def test_without_flags_the_first_interpreter_with_the_tasks_packages_is_used_and_named(
    pset, capsys, monkeypatch
):
    monkeypatch.delenv("RCB_EVAL_PYTHON", raising=False)
    status = main(["evaluate", str(pset), "--oracle", "--no-cache", "--workers", "1"])
    out, err = capsys.readouterr()
    checkout = repo_root() / ".venv-eval" / "bin" / "python"
    if checkout.exists():
        chosen = (str(checkout), "the repository's .venv-eval")
    elif sys.version_info >= (3, 11):
        chosen = (sys.executable, "rcb's own interpreter")
    else:
        # An installed rcb on 3.10: its own interpreter is too old for the harness, and it says so.
        assert status == 3 and out == "" and "the sandbox's harness needs 3.11 or newer" in err
        assert "--python rcb-eval/bin/python" in err
        return
    assert status == 0 and "1/1 passed" in out
    assert f"evaluation interpreter: {chosen[0]} (Python " in err and chosen[1] in err


def test_without_flags_and_no_interpreter_with_the_packages_it_prints_the_install_command(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.delenv("RCB_EVAL_PYTHON", raising=False)
    pset = make_pset(tmp_path / "pset", prelude=f"import {MISSING}\n")
    status = main(["evaluate", str(pset), "--oracle", "--no-cache"])
    out, err = capsys.readouterr()
    assert status == 3 and out == ""
    (line,) = err.splitlines()
    if sys.version_info >= (3, 11):
        assert f"{sys.executable} (rcb's own interpreter) cannot import {MISSING}" in line
        assert f"`{sys.executable} -m pip install {MISSING}`" in line and "--env auto" in line
    else:
        assert f"rcb-eval/bin/pip install {MISSING}`" in line and "--env auto" in line


def test_every_verdict_an_infrastructure_error_exits_4_and_says_nothing_was_judged(tmp_path, capsys):
    # Imported by name at run time only: the interpreter check cannot see it, the task's reference fails too.
    prelude = f"import importlib\nimportlib.import_module({MISSING!r})\n"
    pset = make_pset(tmp_path / "pset", prelude=prelude)
    status, out, err = _run(capsys, str(pset), "--oracle", "--no-cache")
    assert status == 4, err
    assert "[Reference fails in its environment]" in out
    assert err.splitlines()[-1].startswith(
        "error: nothing was judged: every verdict is an infrastructure error"
    )


@pytest.mark.parametrize(
    ("tiers", "expected"),
    [
        (["none", "model"], 0),
        (["none", "infrastructure"], 3),
        (["infrastructure", "infrastructure"], 4),
        ([], 4),
    ],
)
def test_exit_status_counts_infrastructure_verdicts_and_nothing_judged(tiers, expected):
    verdicts = [SimpleNamespace(tier=t, category="missing_dependency") for t in tiers]
    status, why = exit_status(verdicts)
    assert status == expected and (why == "") == (expected == 0)
    if expected == 3:
        assert (
            why
            == "1 of 2 verdicts are infrastructure errors (Missing dependency 1): the scores leave them out"
        )


def test_help_lists_the_exit_statuses(capsys):
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    out = capsys.readouterr().out
    for line in ("0  every item was judged", "2  bad input", "3  infrastructure", "4  nothing was judged"):
        assert line in out
