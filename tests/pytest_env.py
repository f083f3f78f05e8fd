"""Pytest plugin (loaded with -p in pyproject.toml): environment defaults set before Django reads settings.

The suite runs with DEBUG off (as in production), so it needs a strong secret key; it keeps its SQLite
database and filesystem broker folder under var/test so that tests never touch the demo's data.
"""

import os
from pathlib import Path

# Strong enough for the start-up check (config/checks.py), and public: it must never be used outside tests.
os.environ.setdefault("DJANGO_SECRET_KEY", "test-only-key-9fQ2mX7vLk4Tz8Rw3Nc6Hb1Yd5Gs0Pj-not-for-production")
# The fake LLM servers of the tests listen on 127.0.0.1; api.openai.com stands for a public provider.
os.environ.setdefault("RCB_LLM_ALLOWED_HOSTS", "127.0.0.1,api.openai.com")
os.environ.setdefault("DJANGO_STATIC_MANIFEST", "0")
os.environ.setdefault("RCB_VAR_DIR", str(Path(__file__).resolve().parent.parent / "var" / "test"))
# The suite's workers consume every queue on machines without a GPU (tests of the GPU gate turn this off).
os.environ.setdefault("RCB_GPU_QUEUE_WITHOUT_GPU", "1")
# A status page reused across tests would show an earlier test's workers and queues: tests/config/test_status.py
# turns the cache on where it is what is tested.
os.environ.setdefault("RCB_STATUS_CACHE_S", "0")
