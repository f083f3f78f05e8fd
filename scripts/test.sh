#!/usr/bin/env bash
# `make test`: set up (with dev tools), then run the whole suite. PostgreSQL when DATABASE_URL points at one,
# else SQLite; the broker from CELERY_BROKER_URL, else the filesystem transport. Extra args go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh --dev
export DJANGO_SECRET_KEY="${DJANGO_SECRET_KEY:-test-only-key-9fQ2mX7vLk4Tz8Rw3Nc6Hb1Yd5Gs0Pj-not-for-production}"
export RCB_VAR_DIR="${RCB_VAR_DIR:-$PWD/var/test}"
echo "database: ${DATABASE_URL:-sqlite (default)}   broker: ${CELERY_BROKER_URL:-filesystem:// (default)}"
exec .venv/bin/python -m pytest --durations=25 "$@"
