"""The fixed command-line interface: import_pset and export_release, with clean errors."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.core.management import CommandError, call_command

from contributions.models import Release
from tests.conftest import REPO, database_url_for_current_connection
from tests.contributions.conftest import all_files


@pytest.mark.django_db
def test_import_then_export_round_trips_and_sets_the_default(small_pset, tmp_path, capsys, settings):
    settings.RCB_BENCHMARK_REPO = tmp_path / "bench"
    root = small_pset()
    call_command("import_pset", str(root), "--release", "v1", "--title", "First", "--default")
    release = Release.objects.get(name="v1")
    assert release.title == "First" and release.is_default
    assert "2 task(s), 6 snippet(s), 8 lines (default)" in capsys.readouterr().out
    call_command("export_release", "v1", str(tmp_path / "out"))
    assert all_files(tmp_path / "out") == all_files(root)


@pytest.mark.django_db
def test_command_errors_are_clear_messages(small_pset, tmp_path):
    with pytest.raises(CommandError, match=r"not a folder"):
        call_command("import_pset", str(tmp_path / "missing"), "--release", "v1")
    with pytest.raises(CommandError, match=r"no release named 'nope' \(releases: none yet\)"):
        call_command("export_release", "nope", str(tmp_path / "out"))
    unclosed = 'def f(x):\n    # <paper2code name="body">\n    return x\n'
    with pytest.raises(CommandError, match=r"alpha/model\.py:2"):
        call_command("import_pset", str(small_pset(ids=("alpha",), model=unclosed)), "--release", "v1")
    call_command("import_pset", str(small_pset("ok")), "--release", "v1")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(CommandError, match="not empty"):
        call_command("export_release", "v1", str(tmp_path / "full"))


def run_manage(*args: str, tmp_path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "DATABASE_URL": database_url_for_current_connection(),
        "RCB_BENCHMARK_REPO": str(tmp_path / "bench"),
    }
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.django_db(transaction=True)
def test_an_error_on_the_real_command_line_exits_1_without_a_traceback(tmp_path):
    # One real process is enough: every command error goes through the same CommandError path, and the
    # messages themselves are checked above (a Django start-up costs seconds on small machines).
    result = run_manage("import_pset", str(tmp_path / "missing"), "--release", "v1", tmp_path=tmp_path)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "CommandError:" in result.stderr and "missing: not a folder" in result.stderr
