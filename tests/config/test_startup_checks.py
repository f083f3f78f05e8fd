"""Start-up checks with debug off (issue 10, item 6): a guessable secret key stops every command; a missing
static files manifest stops the web entry points (gunicorn's config.wsgi, runserver) but neither
``collectstatic`` nor ``migrate``. Each case runs real processes, as a deployment would."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from config.checks import secret_key_weakness

REPO = Path(__file__).resolve().parents[2]
STRONG_KEY = "k2V9qLm4Xt7Rb1Nw8Zc3Hy6Pd0Fs5Gj-" * 2


def run(args: list[str], env_overrides: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "DJANGO_DEBUG": "0", "DJANGO_SECRET_KEY": STRONG_KEY, **env_overrides}
    env.pop("DATABASE_URL", None)  # a throwaway SQLite database under RCB_VAR_DIR, never the suite's
    return subprocess.run(
        [sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture
def no_manifest(tmp_path) -> dict[str, str]:
    """Debug off, manifest storage on, and a static root that collectstatic has never filled."""
    return {
        "DJANGO_STATIC_MANIFEST": "1",
        "DJANGO_STATIC_ROOT": str(tmp_path / "staticfiles"),
        "RCB_VAR_DIR": str(tmp_path / "var"),
    }


# --- secret key -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("a" * 50, "too repetitive"),
        ("abcde" * 12, "too repetitive"),
        ("Zq8vX2mLp9Tr4Wk7Nb1Hc6Yd3Fg5Js0Q", "too short"),
        ("django-insecure-" + STRONG_KEY, "a development key"),
    ],
)
def test_debug_off_refuses_a_weak_secret_key_naming_it_and_how_to_generate_one(tmp_path, key, why):
    result = run(["manage.py", "check"], {"DJANGO_SECRET_KEY": key, "RCB_VAR_DIR": str(tmp_path)})
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and "DJANGO_SECRET_KEY" in result.stderr
    assert why in result.stderr
    assert "secrets.token_urlsafe(50)" in result.stderr
    assert key not in result.stderr


def test_debug_on_accepts_a_weak_key_for_local_development(tmp_path):
    result = run(
        ["manage.py", "check"],
        {"DJANGO_DEBUG": "1", "DJANGO_SECRET_KEY": "a" * 50, "RCB_VAR_DIR": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr


def test_the_suites_own_key_is_strong():
    assert secret_key_weakness(os.environ["DJANGO_SECRET_KEY"]) is None


def test_a_generated_key_is_strong():
    assert all(secret_key_weakness(secrets.token_urlsafe(50)) is None for _ in range(20))


# --- static files manifest ------------------------------------------------------------------------------

MANIFEST_FIX = ("manage.py collectstatic", "DJANGO_STATIC_MANIFEST=0")


def test_wsgi_refuses_to_start_without_the_manifest_naming_both_fixes(no_manifest):
    result = run(["-c", "import config.wsgi"], no_manifest)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert all(fix in result.stderr for fix in MANIFEST_FIX)


def test_asgi_refuses_to_start_without_the_manifest(no_manifest):
    result = run(["-c", "import config.asgi"], no_manifest)
    assert result.returncode != 0
    assert all(fix in result.stderr for fix in MANIFEST_FIX)


def test_runserver_refuses_to_start_without_the_manifest(no_manifest):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Serving would never exit by itself: the timeout turns a missing refusal into a failure.
    result = run(
        ["manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
        {**no_manifest, "DJANGO_ALLOWED_HOSTS": "127.0.0.1"},
        timeout=90,
    )
    assert result.returncode != 0
    assert all(fix in result.stderr for fix in MANIFEST_FIX)


def test_without_manifest_storage_the_web_entry_point_starts(no_manifest):
    result = run(["-c", "import config.wsgi"], {**no_manifest, "DJANGO_STATIC_MANIFEST": "0"})
    assert result.returncode == 0, result.stderr


@pytest.mark.slow
def test_migrate_and_collectstatic_work_without_the_manifest_and_then_the_web_starts(no_manifest):
    migrate = run(["manage.py", "migrate", "--noinput"], no_manifest, timeout=300)
    assert migrate.returncode == 0, migrate.stderr
    collect = run(["manage.py", "collectstatic", "--noinput"], no_manifest, timeout=300)
    assert collect.returncode == 0, collect.stderr
    assert (Path(no_manifest["DJANGO_STATIC_ROOT"]) / "staticfiles.json").is_file()
    wsgi = run(["-c", "import config.wsgi"], no_manifest)
    assert wsgi.returncode == 0, wsgi.stderr
