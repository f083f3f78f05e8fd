#!/usr/bin/env bash
# `make demo`: set up, migrate, load the demo data, then run the web server, one Celery worker (all
# queues, with the embedded beat scheduler) and the demo's fake LLM until Ctrl-C, which stops all three.
# Embedded defaults: SQLite under var/, the filesystem broker under var/broker/, the local sandbox.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh

# The worker runs untrusted test code (in the local sandbox): started as root, the demo drops to the
# unprivileged RCB_DEMO_USER (default nobody) for everything after the setup, first handing it var/ and a
# cgroup of its own under this one (v1 memory, pids, cpu), so the sandbox still limits memory, processes
# and CPU per run. It stays root, saying why, when that user cannot run both interpreters (a pyenv under
# /root, say): bubblewrap, running as that user, must be able to reach the interpreter's folders.
if [ "$(id -u)" = 0 ] && [ -z "${RCB_DEMO_DROPPED:-}" ]; then
  demo_user="${RCB_DEMO_USER:-nobody}"
  drop=(setpriv --reuid "$(id -u "$demo_user")" --regid "$(id -g "$demo_user")" --clear-groups --inh-caps=-all)
  if "${drop[@]}" sh -c '.venv/bin/python -c "" && "${RCB_EVAL_PYTHON:-.venv-eval/bin/python}" -c ""' \
    2>/dev/null; then
    mkdir -p var
    chown -R "$demo_user:" var
    while IFS=: read -r _ controllers path; do
      for controller in memory pids cpu; do
        case ",$controllers," in *",$controller,"*) ;; *) continue ;; esac
        folder="/sys/fs/cgroup/$controller${path%/}/rcb-demo-$$"
        if mkdir -p "$folder" 2>/dev/null && chown -R "$demo_user:" "$folder"; then
          echo $$ >"$folder/cgroup.procs" || true
        fi
      done
    done </proc/self/cgroup
    export RCB_DEMO_DROPPED=1 HOME=/tmp
    exec "${drop[@]}" "$0" "$@"
  fi
  echo "demo: $demo_user cannot run .venv/bin/python and the evaluation interpreter (are they under" \
    "/root?); the worker runs as root. Set RCB_DEMO_USER, or make the interpreters readable." >&2
fi

export DJANGO_DEBUG="${DJANGO_DEBUG:-1}"
HOST="${RCB_DEMO_HOST:-127.0.0.1}"
PORT="${RCB_DEMO_PORT:-8000}"
LLM_PORT="${RCB_DEMO_LLM_PORT:-8001}"
PY=.venv/bin/python

# The demo model (load_demo) is served by the fake LLM on 127.0.0.1:$LLM_PORT. Its key variable gets a dummy
# value, and that one host:port (not all of 127.0.0.1, where the portal itself listens) joins the allowed
# endpoints, for the demo only.
export RCB_LLM_KEY_DEMO="${RCB_LLM_KEY_DEMO:-demo-key-not-secret}"
if [ -z "${RCB_LLM_ALLOWED_HOSTS:-}" ]; then
  RCB_LLM_ALLOWED_HOSTS="$($PY manage.py shell -v 0 -c \
    "from django.conf import settings; print(','.join(settings.RCB_LLM_ALLOWED_HOSTS))")"
fi
export RCB_LLM_ALLOWED_HOSTS="${RCB_LLM_ALLOWED_HOSTS:+$RCB_LLM_ALLOWED_HOSTS,}127.0.0.1:$LLM_PORT"

$PY manage.py migrate --noinput
$PY manage.py load_demo --fake-llm-url "http://127.0.0.1:$LLM_PORT/v1"

pids=()
stop() {
  trap - INT TERM EXIT
  echo
  echo "stopping web server, worker and fake LLM..."
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  echo "stopped."
}
trap 'stop; exit 0' INT TERM
trap stop EXIT

# The GPU queue only where a GPU is (a worker asked for eval-gpu without one drops it and logs why).
QUEUES=site,eval-cpu
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q GPU; then QUEUES="$QUEUES,eval-gpu"; fi
.venv/bin/celery -A config worker -B -Q "$QUEUES" --concurrency 2 --loglevel INFO \
  --hostname "demo@%h" --schedule var/celerybeat-schedule >var/worker.log 2>&1 &
pids+=($!)
$PY manage.py serve_fake_llm --port "$LLM_PORT" >var/fake-llm.log 2>&1 &
pids+=($!)
# Say at once why the fake LLM could not start (a taken port, say) rather than leave the demo without it.
for _ in $(seq 100); do
  grep -q "listening on" var/fake-llm.log 2>/dev/null && break
  if ! kill -0 "${pids[-1]}" 2>/dev/null; then
    echo "demo: the fake LLM did not start (set RCB_DEMO_LLM_PORT for another port):" >&2
    cat var/fake-llm.log >&2
    exit 1
  fi
  sleep 0.2
done
$PY manage.py runserver --noreload "$HOST:$PORT" &
pids+=($!)

echo
echo "ResearchCodeBench Hub is running at http://$HOST:$PORT/  (worker log: var/worker.log; fake LLM on" \
  "127.0.0.1:$LLM_PORT, log var/fake-llm.log; Ctrl-C stops all three)"
echo "Try a web evaluation: sign in as the demo maintainer, then open" \
  "http://$HOST:$PORT/runs/new/?model=demo-fake-llm&release=demo"
echo
wait -n "${pids[@]}"
