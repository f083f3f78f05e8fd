"""The fixed command-line interface: import_pset and export_release, with clean errors."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import git
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


# --- import_pset --git: the same safe intake as the contribution form ---------------------------------------


def pset_repository(root: Path, pset: Path, subdir: str = "") -> tuple[str, str]:
    """A local git repository holding ``pset`` (under ``subdir``): (file:// URL, commit)."""
    repo = git.Repo.init(root)
    shutil.copytree(pset, root / subdir if subdir else root, dirs_exist_ok=True)
    repo.git.add("--all")
    author = git.Actor("Fixture", "fixture@example.invalid")
    return f"file://{root}", repo.index.commit("pset", author=author, committer=author).hexsha


@pytest.fixture
def git_import(settings, tmp_path):
    settings.RCB_BENCHMARK_REPO = tmp_path / "bench"
    settings.VAR_DIR = tmp_path / "var"
    settings.RCB_INTAKE_ALLOW_FILE_URLS = True
    return tmp_path / "var" / "quarantine"


@pytest.mark.django_db
def test_import_pset_from_a_git_commit_creates_the_release(small_pset, tmp_path, git_import, capsys):
    root = small_pset()
    url, sha = pset_repository(tmp_path / "repo", root)
    call_command("import_pset", "--git", url, "--commit", sha, "--release", "v1", "--default")
    out = capsys.readouterr().out
    assert f"fetched {url} at {sha}: " in out and "2 task(s), 6 snippet(s), 8 lines (default)" in out
    assert Release.objects.get(name="v1").is_default
    call_command("export_release", "v1", str(tmp_path / "out"))
    assert all_files(tmp_path / "out") == all_files(root)
    assert list(git_import.iterdir()) == []  # fetch and pset folders are removed


@pytest.mark.django_db
def test_import_pset_from_git_takes_a_subfolder_and_names_the_commit_in_errors(
    small_pset, tmp_path, git_import
):
    url, sha = pset_repository(tmp_path / "repo", small_pset(), subdir="benchmark/pset")
    call_command(
        "import_pset", "--git", url, "--commit", sha, "--subdir", "benchmark/pset", "--release", "v1"
    )
    assert Release.objects.get(name="v1").entries.count() == 2
    with pytest.raises(CommandError, match=r"--subdir 'nowhere': no files there"):
        call_command("import_pset", "--git", url, "--commit", sha, "--subdir", "nowhere", "--release", "v2")
    unclosed = 'def f(x):\n    # <paper2code name="body">\n    return x\n'
    url, sha = pset_repository(tmp_path / "bad-repo", small_pset("bad", ids=("alpha",), model=unclosed))
    with pytest.raises(
        CommandError, match=rf"(?s){re.escape(url)}@{sha[:12]}: 1 error\(s\).*alpha/model\.py:2"
    ):
        call_command("import_pset", "--git", url, "--commit", sha, "--release", "v3")
    assert not Release.objects.filter(name__in=["v2", "v3"]).exists()


@pytest.mark.django_db
def test_import_pset_from_git_refuses_unsafe_sources_and_bad_arguments(
    small_pset, tmp_path, git_import, settings
):
    url, sha = pset_repository(tmp_path / "repo", small_pset())
    with pytest.raises(CommandError, match=r"ext::sh: git transport helpers"):
        call_command("import_pset", "--git", "ext::sh", "--commit", sha, "--release", "v1")
    with pytest.raises(CommandError, match=r"HEAD: a commit is 7 to 40 hexadecimal digits"):
        call_command("import_pset", "--git", url, "--commit", "HEAD", "--release", "v1")
    with pytest.raises(CommandError, match=r"--git needs --commit"):
        call_command("import_pset", "--git", url, "--release", "v1")
    with pytest.raises(CommandError, match=r"not allowed with argument"):
        call_command("import_pset", str(tmp_path), "--git", url, "--commit", sha, "--release", "v1")
    with pytest.raises(CommandError, match=r"--commit and --subdir go with --git"):
        call_command("import_pset", str(tmp_path), "--commit", sha, "--release", "v1")
    settings.RCB_INTAKE_ALLOW_FILE_URLS = False
    with pytest.raises(CommandError, match=r"only https:// URLs are accepted"):
        call_command("import_pset", "--git", url, "--commit", sha, "--release", "v1")
    assert not Release.objects.exists()


@pytest.mark.django_db
def test_import_with_variants_stores_them_with_each_version_and_says_per_task_how_many(
    small_pset, tmp_path, capsys, settings
):
    """Issue 32: ``--variants`` derives each imported version's impossible variants (or reads them from the
    workers' store) and stores them with it; a snippet no test runs ('square root') has none, and says why."""
    settings.RCB_BENCHMARK_REPO = tmp_path / "bench"
    call_command("import_pset", str(small_pset()), "--release", "v1", "--variants")
    out = capsys.readouterr().out
    release = Release.objects.get(name="v1")
    for entry in release.entries.select_related("task_version__task"):
        version = entry.task_version
        key = version.task.key
        assert re.search(
            rf"task {key}: impossible variants for 2 of 3 snippet\(s\), (derived|read from the store) in "
            r"[\d.]+ s; none for 'square root' \(no test that the reference passes runs",
            out,
        ), out
        assert version.variants_environment
        assert set(version.variants) == {"scale input", "shift", "square root"}
        assert [bool(version.variants[n]["variants"]) for n in ("scale input", "shift", "square root")] == [
            True,
            True,
            False,
        ]
    assert "impossible variants: 4 of 6 snippet(s) of 2 task(s) have some" in out
    # Imported again, the versions keep what they store.
    call_command("import_pset", str(small_pset("again")), "--release", "v2", "--variants")
    assert "stored with the version in 0.0 s" in capsys.readouterr().out
