"""Pytest plugin (loaded with -p in pyproject.toml): environment defaults set before Django reads settings.

The suite runs with DEBUG off (as in production), so it needs a strong secret key; it keeps its SQLite
database and filesystem broker folder under var/test so that tests never touch the demo's data.
"""

import os
import subprocess
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

# Strong enough for the start-up check (config/checks.py), and public: it must never be used outside tests.
os.environ.setdefault("DJANGO_SECRET_KEY", "test-only-key-9fQ2mX7vLk4Tz8Rw3Nc6Hb1Yd5Gs0Pj-not-for-production")
# The fake LLM servers of the tests listen on 127.0.0.1; api.openai.com stands for a public provider.
os.environ.setdefault("RCB_LLM_ALLOWED_HOSTS", "127.0.0.1,api.openai.com")
os.environ.setdefault("DJANGO_STATIC_MANIFEST", "0")
os.environ.setdefault("RCB_VAR_DIR", str(Path(__file__).resolve().parent.parent / "var" / "test"))
# The suite's workers consume every queue on machines without a GPU (tests of the GPU gate turn this off).
os.environ.setdefault("RCB_GPU_QUEUE_WITHOUT_GPU", "1")
# Impossible variants are derived once per task and environment and shared by every test of the session, both
# processes included (writes are atomic; the store is keyed by the tasks' content hashes): the core's runners
# take it as their default store, the portal's workers through the setting.
os.environ.setdefault("RCB_VARIANTS_DIR", str(Path(os.environ["RCB_VAR_DIR"]) / "shared"))
# A status page reused across tests would show an earlier test's workers and queues: tests/config/test_status.py
# turns the cache on where it is what is tested.
os.environ.setdefault("RCB_STATUS_CACHE_S", "0")
# Likewise the board's previous bodies while its scopes move: a test that writes and then reads expects the write
# on the next page; tests/leaderboard/test_stale_while_rebuild.py turns them on where they are what is tested.
os.environ.setdefault("RCB_BOARD_STALE_S", "0")


def _own_vhost(broker: str, name: str) -> str:
    """``broker`` (an AMQP URL) on a virtual host of its own, made (idempotently) with ``rabbitmqctl``; the
    URL unchanged where that cannot be done (no rabbitmqctl: the workers then share the broker's vhost)."""
    parts = urlsplit(broker)
    try:
        subprocess.run(["rabbitmqctl", "add_vhost", name], capture_output=True, timeout=60, check=False)
        subprocess.run(
            ["rabbitmqctl", "set_permissions", "-p", name, parts.username or "guest", ".*", ".*", ".*"],
            capture_output=True,
            timeout=60,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return broker
    return urlunsplit(parts._replace(path=f"/{name}"))


# Under pytest-xdist (scripts/test.sh runs the suite on two processes) each process is a suite of its own:
# its own test database (pytest-django adds the worker's name), its own var folder (SQLite, the filesystem
# broker, sandboxes' files) and its own RabbitMQ vhost, so that the Celery workers one test starts never take
# the tasks of a test in the other process.
_XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if _XDIST_WORKER:
    os.environ["RCB_VAR_DIR"] = str(Path(os.environ["RCB_VAR_DIR"]) / _XDIST_WORKER)
    if os.environ.get("CELERY_BROKER_URL", "").startswith("amqp"):
        os.environ["CELERY_BROKER_URL"] = _own_vhost(
            os.environ["CELERY_BROKER_URL"], f"rcb_test_{_XDIST_WORKER}"
        )


def _share_variants() -> None:
    from researchcodebench import variants

    variants.use_default_store(variants.VariantStore(os.environ["RCB_VARIANTS_DIR"]))


_share_variants()
