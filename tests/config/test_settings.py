"""The settings guard: production settings refuse to start without a secret key or with bad values."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[2]


def run_check(env_overrides: dict[str, str], drop: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(env_overrides)
    return subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )


def test_check_fails_naming_the_secret_key_when_debug_is_off_and_no_key_is_set():
    result = run_check({"DJANGO_DEBUG": "0"}, drop=("DJANGO_SECRET_KEY",))
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert "DJANGO_SECRET_KEY" in result.stderr


def test_debug_defaults_to_off_so_a_missing_key_is_refused_without_any_flag():
    result = run_check({}, drop=("DJANGO_SECRET_KEY", "DJANGO_DEBUG"))
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY" in result.stderr


def test_check_passes_with_a_strong_secret_key_and_debug_off():
    result = run_check({"DJANGO_DEBUG": "0", "DJANGO_SECRET_KEY": "k2V9qLm4Xt7Rb1Nw8Zc3Hy6Pd0Fs5Gj-" * 2})
    assert result.returncode == 0, result.stderr


def test_a_malformed_boolean_names_the_variable():
    result = run_check({"DJANGO_DEBUG": "maybe"})
    assert result.returncode != 0
    assert "DJANGO_DEBUG='maybe' is not a boolean" in result.stderr


def test_a_malformed_database_url_names_the_variable():
    result = run_check({"DATABASE_URL": "nosuchscheme://x"})
    assert result.returncode != 0
    assert "DATABASE_URL" in result.stderr


def test_a_site_address_that_is_not_an_http_url_names_the_variable():
    """Links in emails are the site address before a path: a bare host or a relative one would send
    readers nowhere."""
    for value in ("rcb.example.org", "/contribute", "ftp://rcb.example.org"):
        result = run_check({"RCB_SITE_URL": value})
        assert result.returncode != 0
        assert "RCB_SITE_URL" in result.stderr, value


def test_postgresql_connections_price_random_reads_for_an_ssd_unless_told_otherwise():
    """A run's verdicts are an index lookup per completion; at PostgreSQL's default price of a random read
    (4) the planner scanned every verdict of the benchmark instead (bench/cold_pages.py, "run page": 878 ->
    241 ms of database time at 600,000 verdicts)."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        import pytest

        pytest.skip("DATABASE_URL is not PostgreSQL")
    show = "from django.db import connection as c; c.cursor().execute('select 1'); " + (
        "cur = c.cursor(); cur.execute('SHOW random_page_cost'); print(cur.fetchone()[0])"
    )

    # The suite's database may not exist yet (pytest makes test_<name>): ask the server's own database.
    server = urlsplit(url)._replace(path="/postgres").geturl()

    def shown(overrides: dict[str, str]) -> str:
        env = {**os.environ, "DATABASE_URL": server, **overrides}
        result = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", show], cwd=REPO, env=env, capture_output=True, text=True,
            timeout=60,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        return result.stdout.strip().splitlines()[-1]  # after "N objects imported automatically"

    assert shown({}) == "1.1"
    assert shown({"RCB_DB_RANDOM_PAGE_COST": "2"}) == "2"
    assert shown({"RCB_DB_RANDOM_PAGE_COST": "0"}) == "4"  # the server's own (this machine's default)
    bad = run_check({"RCB_DB_RANDOM_PAGE_COST": "cheap"})
    assert bad.returncode != 0 and "RCB_DB_RANDOM_PAGE_COST" in bad.stderr
