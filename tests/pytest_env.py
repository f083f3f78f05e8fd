"""Pytest plugin (loaded with -p in pyproject.toml): environment defaults set before Django reads settings.

The suite runs with DEBUG off (as in production), so it needs a secret key; it keeps its SQLite database and
filesystem broker folder under var/test so that tests never touch the demo's data.
"""

import os
from pathlib import Path

os.environ.setdefault("DJANGO_SECRET_KEY", "test-only-secret-key-not-for-production")
os.environ.setdefault("DJANGO_STATIC_MANIFEST", "0")
os.environ.setdefault("RCB_VAR_DIR", str(Path(__file__).resolve().parent.parent / "var" / "test"))
