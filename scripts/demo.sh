#!/usr/bin/env bash
# `make demo`: set up, migrate, load the demo data, then run the web server and one Celery worker (all
# queues, with the embedded beat scheduler) until Ctrl-C, which stops both.
# Embedded defaults: SQLite under var/, the filesystem broker under var/broker/, the local sandbox.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh

export DJANGO_DEBUG="${DJANGO_DEBUG:-1}"
HOST="${RCB_DEMO_HOST:-127.0.0.1}"
PORT="${RCB_DEMO_PORT:-8000}"
PY=.venv/bin/python

$PY manage.py migrate --noinput
$PY manage.py load_demo

pids=()
stop() {
  trap - INT TERM EXIT
  echo
  echo "stopping web server and worker..."
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  echo "stopped."
}
trap 'stop; exit 0' INT TERM
trap stop EXIT

.venv/bin/celery -A config worker -B -Q site,eval-cpu,eval-gpu --concurrency 2 --loglevel INFO \
  --hostname "demo@%h" --schedule var/celerybeat-schedule >var/worker.log 2>&1 &
pids+=($!)
$PY manage.py runserver --noreload "$HOST:$PORT" &
pids+=($!)

echo
echo "ResearchCodeBench Hub is running at http://$HOST:$PORT/  (worker log: var/worker.log; Ctrl-C stops both)"
echo
wait -n "${pids[@]}"
