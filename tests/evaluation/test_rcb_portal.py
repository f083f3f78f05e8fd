"""``rcb download`` and ``rcb submit`` (researchcodebench/portal_cli.py) against a live portal: the release
archive is checked and unpacked safely, a retried submit starts one run, ``--wait`` reports the final run."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
import requests
from django.utils import timezone

from evaluation.models import EvaluationRun, PredictionsUpload
from leaderboard.services import leaderboard_refresh_run
from researchcodebench.cli import main
from researchcodebench.errors import CliError
from researchcodebench.portal_cli import safe_members
from researchcodebench.pset import read_pset
from tests.evaluation.engine_helpers import import_release
from tests.factories import TestResultFactory, UserFactory, api_token_for

PSET = Path(__file__).resolve().parents[2] / "examples" / "pset"


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_download_checks_the_hash_and_unpacks_the_release(transactional_db, live_server, tmp_path, capsys):
    import_release(tmp_path / "import", name="rms", task_ids=("rmsnorm",))
    out = tmp_path / "dl"
    assert main(["download", "rms", "--portal", live_server.url, "--output", str(out)]) == 0
    assert _files(out / "rmsnorm") == _files(PSET / "rmsnorm")
    assert [t.id for t in read_pset(out).tasks] == ["rmsnorm"]
    assert "sha256" in capsys.readouterr().err

    again = tmp_path / "again"
    argv = ["download", "rms", "--portal", live_server.url, "--output", str(again), "--sha256", "0" * 64]
    assert main(argv) == 2
    assert "refused" in capsys.readouterr().err and not again.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".rcb-download-")] == []


def _tar(*members: tuple[str, bytes | str]) -> tarfile.TarFile:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, body in members:
            info = tarfile.TarInfo(name)
            if isinstance(body, str):  # a symbolic link to ``body``
                info.type, info.linkname = tarfile.SYMTYPE, body
                tar.addfile(info)
            else:
                info.size = len(body)
                tar.addfile(info, io.BytesIO(body))
    buffer.seek(0)
    return tarfile.open(fileobj=buffer)


@pytest.mark.parametrize(
    "member",
    [
        ("r1/../../evil.py", b"x"),
        ("/etc/evil", b"x"),
        ("other/papers.yaml", b"x"),
        ("r1/link", "/etc/passwd"),
    ],
    ids=["dotdot", "absolute", "outside-top", "symlink"],
)
def test_download_refuses_an_archive_reaching_outside_its_folder(member):
    with pytest.raises(CliError, match="refused"):
        safe_members(_tar(("r1/papers.yaml", b"[]"), member), "r1")


def _predictions(path: Path) -> Path:
    task = read_pset(PSET).task("rmsnorm")
    lines = [
        {"task": "rmsnorm", "snippet": s.name, "completion_idx": 0, "code": s.code, "template": "rcb-v2"}
        for s in task.snippets
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_a_retried_submit_starts_one_run_and_wait_reports_the_final_run(
    transactional_db, live_server, start_worker, tmp_path, monkeypatch, capsys
):
    start_worker("site")  # checks the file the portal answered 202 for (Prefer: respond-async)
    import_release(tmp_path / "import", name="rms", task_ids=("rmsnorm",))
    monkeypatch.setenv("RCB_TOKEN", api_token_for(UserFactory(username="dev")))
    predictions = _predictions(tmp_path / "p.jsonl")
    argv = [
        "submit",
        str(predictions),
        "--portal",
        live_server.url,
        "--release",
        "rms",
        "--model",
        "my-model",
    ]
    argv += ["--model-name", "My Model"]

    assert main(argv) == 0
    first = capsys.readouterr()
    assert main(argv) == 0
    second = capsys.readouterr()
    run = EvaluationRun.objects.get()
    upload = PredictionsUpload.objects.get()
    assert first.out.strip() == second.out.strip() == f"{live_server.url}/runs/{run.pk}/"
    assert f"upload {upload.pk} checked" in first.err and upload.run == run and upload.data == b""
    assert "submitted before" in second.err and run.model.key == "my-model"
    assert run.template == "rcb-v2" and run.with_paper is True

    # A visitor without a token shares a copy of the run a few seconds old; --wait asks with the token, so
    # the first answer it reads is the run as it is now, not that copy.
    shared = requests.get(f"{live_server.url}/api/v1/runs/{run.pk}/", timeout=30)
    assert shared.json()["status"] != "cancelled" and "public" in shared.headers["Cache-Control"]
    EvaluationRun.objects.filter(pk=run.pk).update(status="cancelled", status_reason="stopped by the test")
    assert requests.get(f"{live_server.url}/api/v1/runs/{run.pk}/", timeout=30).json() == shared.json()
    assert main([*argv, "--wait", "--poll", "0.1"]) == 1
    waited = capsys.readouterr()
    assert waited.err.splitlines()[-1] == f"run {run.pk}: cancelled"
    assert f"run {run.pk}: {shared.json()['status']}" not in waited.err
    assert "status: cancelled: stopped by the test" in waited.out
    assert EvaluationRun.objects.count() == 1


def test_wait_prints_the_score_the_board_shows_for_the_finished_run(
    transactional_db, live_server, start_worker, tmp_path, monkeypatch, capsys
):
    start_worker("site")
    import_release(tmp_path / "import", name="rms", task_ids=("rmsnorm",))
    monkeypatch.setenv("RCB_TOKEN", api_token_for(UserFactory(username="dev")))
    argv = [
        "submit",
        str(_predictions(tmp_path / "p.jsonl")),
        "--portal",
        live_server.url,
        "--release",
        "rms",
    ]
    argv += ["--model", "my-model", "--model-name", "My Model"]
    assert main(argv) == 0
    run = EvaluationRun.objects.get()
    # What the workers would record: every completion passed, the run finished and on the board.
    for completion in run.completions.all():
        TestResultFactory(completion=completion)
    EvaluationRun.objects.filter(pk=run.pk).update(status="finished", finished_at=timezone.now())
    leaderboard_refresh_run(run=run)
    capsys.readouterr()

    assert main([*argv, "--wait", "--poll", "0.1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [f"{live_server.url}/runs/{run.pk}/", "Scaled Pass@1: 100.00  Pass@1: 100.00"]


def test_a_file_the_worker_refuses_is_an_error_naming_each_line(
    transactional_db, live_server, start_worker, tmp_path, monkeypatch, capsys
):
    start_worker("site")
    import_release(tmp_path / "import", name="rms", task_ids=("rmsnorm",))
    monkeypatch.setenv("RCB_TOKEN", api_token_for(UserFactory(username="dev")))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task": "rmsnorm", "snippet": "no such snippet", "code": "x"}\n{nope\n')
    argv = ["submit", str(bad), "--portal", live_server.url, "--release", "rms", "--model", "m"]
    assert main([*argv, "--model-name", "M"]) == 2
    upload = PredictionsUpload.objects.get()
    assert capsys.readouterr().err.strip() == (
        f"error: upload {upload.pk} refused: line 1: unknown snippet 'no such snippet' in task 'rmsnorm'; "
        "line 2: not valid JSON (Expecting property name enclosed in double quotes at column 2)"
    )
    assert upload.status == "refused" and not EvaluationRun.objects.exists()


def test_submit_without_a_token_says_which_variable(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("RCB_TOKEN", raising=False)
    argv = ["submit", str(_predictions(tmp_path / "p.jsonl")), "--portal", "http://127.0.0.1:9"]
    assert main([*argv, "--release", "r", "--model", "m"]) == 2
    line = _one_line_error(capsys.readouterr().err)
    assert "RCB_TOKEN" in line and "http://127.0.0.1:9/accounts/tokens/" in line


def _one_line_error(err: str) -> str:
    """The only line of ``err``: words, no HTML, no traceback."""
    (line,) = err.splitlines()
    assert line.startswith("error: ") and "<" not in line and "Traceback" not in line, err
    return line


def test_downloading_a_release_the_portal_lacks_is_one_line_naming_it(
    transactional_db, live_server, tmp_path, capsys
):
    status = main(["download", "nosuch", "--portal", live_server.url, "--output", str(tmp_path / "x")])
    line = _one_line_error(capsys.readouterr().err)
    assert status == 2 and line.startswith("error: the portal has no release 'nosuch' (")
    assert f"{live_server.url}/releases/" in line and not (tmp_path / "x").exists()


def test_a_refused_token_is_one_line_saying_where_to_make_one(
    transactional_db, live_server, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("RCB_TOKEN", "not-a-token")
    argv = ["submit", str(_predictions(tmp_path / "p.jsonl")), "--portal", live_server.url]
    assert main([*argv, "--release", "r", "--model", "m"]) == 2
    line = _one_line_error(capsys.readouterr().err)
    assert line.startswith("error: the portal refused the token in RCB_TOKEN (HTTP 401")
    assert line.endswith(f"make a token at {live_server.url}/accounts/tokens/")


def test_an_unreachable_portal_is_one_line_with_exit_3(tmp_path, capsys):
    assert main(["download", "r", "--portal", "http://127.0.0.1:9", "--output", str(tmp_path / "r")]) == 3
    line = _one_line_error(capsys.readouterr().err)
    assert line == "error: cannot reach the portal at http://127.0.0.1:9: connection refused"


def test_submitting_a_file_that_is_not_there_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RCB_TOKEN", "t")
    argv = ["submit", str(tmp_path / "none.jsonl"), "--portal", "http://127.0.0.1:9", "--release", "r"]
    assert main([*argv, "--model", "m"]) == 2
    assert (
        _one_line_error(capsys.readouterr().err)
        == f"error: {tmp_path / 'none.jsonl'}: No such file or directory"
    )
