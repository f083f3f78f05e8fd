#!/usr/bin/env bash
# `make test`: set up (with dev tools), then run the whole suite. PostgreSQL when DATABASE_URL points at one,
# else SQLite; the broker from CELERY_BROKER_URL, else the filesystem transport. Extra args go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh --dev --docker
# The docker lane's tests need an engine: the one DOCKER_HOST names, else a private one started here
# (scripts/docker-engine.sh) with its base image made from Debian's packages. Where none can start, the
# docker tests skip and say why (RCB_DOCKER_UNAVAILABLE).
if [[ -z ${DOCKER_HOST:-} ]]; then
  if started=$(scripts/docker-engine.sh start 2>/tmp/rcb-docker-start.$$); then
    export "$started"
    if scripts/docker-engine.sh base-image; then
      export RCB_BASE_IMAGE="${RCB_BASE_IMAGE:-researchcodebench-base:bookworm-py3.11}"
    fi
  else
    export RCB_DOCKER_UNAVAILABLE="no Docker engine: scripts/docker-engine.sh start failed: $(tail -n 1 /tmp/rcb-docker-start.$$)"
  fi
  rm -f /tmp/rcb-docker-start.$$
fi
# The default evaluation image, built once here rather than by each test process at its first docker test: two
# processes built it side by side (about 3 minutes each on 2 cores), and a test that only looks for it skipped
# while they did. A failed build is reported by the docker tests themselves.
if [[ -n ${DOCKER_HOST:-} && -n ${RCB_BASE_IMAGE:-} && -z ${RCB_DOCKER_UNAVAILABLE:-} ]]; then
  .venv/bin/python -m researchcodebench images --base-image "$RCB_BASE_IMAGE" \
    || echo "the default evaluation image did not build here: the docker tests say why"
fi
export DJANGO_SECRET_KEY="${DJANGO_SECRET_KEY:-test-only-key-9fQ2mX7vLk4Tz8Rw3Nc6Hb1Yd5Gs0Pj-not-for-production}"
export RCB_VAR_DIR="${RCB_VAR_DIR:-$PWD/var/test}"
echo "database: ${DATABASE_URL:-sqlite (default)}   broker: ${CELERY_BROKER_URL:-filesystem:// (default)}   docker: ${DOCKER_HOST:-${RCB_DOCKER_UNAVAILABLE:-none}}"
if [[ $# -gt 0 ]]; then
  exec .venv/bin/python -m pytest --durations=25 "$@"
fi
# The whole suite: everything but the crash tests on four processes (pytest-xdist, each test file whole on one
# of them; tests/pytest_env.py gives each process its own test database, var folder and RabbitMQ vhost), then
# the crash tests on their own, since they restart the broker and kill processes under the others' feet. CI
# (.ci/run) runs this on the default path (SQLite, the filesystem broker) and on PostgreSQL and RabbitMQ.
# Four on two cores: the suite mostly waits (on workers, sandboxes, browsers and subprocesses it starts), and
# two processes kept the cores less than half busy (RCB_TEST_PROCESSES sets another number).
processes="${RCB_TEST_PROCESSES:-4}"
if [[ ${CELERY_BROKER_URL:-} == amqp* ]] && ! rabbitmqctl list_vhosts >/dev/null 2>&1; then
  echo "rabbitmqctl cannot reach the broker to give each test process its own vhost: one process"
  processes=0
fi
status=0
# --no-loadscope-reorder: xdist would otherwise hand out the files with the most tests first, whatever the
# order tests/conftest.py gives them (the longest first, by tests/durations.json), and a long file of a few
# tests (the wheel on the oldest Python, warm versus cold) would start last and run alone at the end.
.venv/bin/python -m pytest -n "$processes" --dist loadfile --no-loadscope-reorder -m "not crash" --durations=25 || status=$?
.venv/bin/python -m pytest -m crash --durations=10 || status=$((status ? status : $?))
exit "$status"
