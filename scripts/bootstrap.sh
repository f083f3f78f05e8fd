#!/usr/bin/env bash
# Idempotent set-up used by `make demo` and `make test`:
#   1. system packages the portal needs (bubblewrap for the sandbox; chromium for browser tests with --dev;
#      wrk, the HTTP load generator of bench/leaderboard_load.py, with --bench; redis-server, the shared
#      cache of bench/mixed_load.py, with --redis; with --docker, Debian's
#      docker.io and debootstrap for the docker lane's private engine and base image, scripts/docker-engine.sh:
#      where they cannot be installed the docker tests skip, naming why),
#   2. .venv      : the portal (Python >= 3.12, requirements.txt [+ requirements-dev.txt with --dev]),
#   3. .venv-eval : the evaluation environment that runs task tests (requirements-bench.txt; torch CPU).
# A venv is only (re)installed when its requirements files changed (hash stamp in the venv).
set -euo pipefail
cd "$(dirname "$0")/.."

DEV=0
BENCH=0
DOCKER=0
REDIS=0
for arg in "$@"; do
  case "$arg" in
    --dev) DEV=1 ;;
    --bench) BENCH=1 ;;
    --docker) DOCKER=1 ;;
    --redis) REDIS=1 ;;
    *) printf 'error: unknown option %s (use --dev, --bench, --docker and/or --redis)\n' "$arg" >&2; exit 2 ;;
  esac
done

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

apt_install() {
  local missing=()
  for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  local sudo=""
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 || die "system packages missing: ${missing[*]}. Install them as root: apt-get install ${missing[*]}"
    sudo="sudo"
  fi
  command -v apt-get >/dev/null 2>&1 || die "system packages missing: ${missing[*]} (no apt-get here: install them with your package manager)"
  say "installing system packages: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

# Python interpreters: the first one on this list that runs and is new enough.
find_python() {  # $1 = minimum minor version of Python 3
  local min=$1 cand
  for cand in python3.14 python3.13 python3.12 python3.11 python3 \
              "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[1-9]*/bin/python3; do
    [[ -n "$cand" ]] || continue
    command -v "$cand" >/dev/null 2>&1 || [[ -x "$cand" ]] || continue
    if "$cand" -c "import sys; sys.exit(0 if sys.version_info >= (3, $min) else 1)" >/dev/null 2>&1; then
      command -v "$cand" 2>/dev/null || echo "$cand"; return 0
    fi
  done
  return 1
}

make_venv() {  # $1 = venv dir, $2 = python, rest = requirement files
  local venv=$1 py=$2; shift 2
  local stamp="$venv/.requirements.sha256" want
  want=$(cat "$@" | sha256sum | cut -d' ' -f1)
  if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    return 0
  fi
  if [[ ! -x "$venv/bin/python" ]]; then
    say "creating $venv with $("$py" --version 2>&1)"
    "$py" -m venv "$venv"
  fi
  say "installing $* into $venv"
  local args=()
  for f in "$@"; do args+=(-r "$f"); done
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "${args[@]}"
  echo "$want" >"$stamp"
}

packages=(bubblewrap)
[[ $DEV -eq 1 ]] && packages+=(chromium)
[[ $BENCH -eq 1 ]] && packages+=(wrk)
[[ $REDIS -eq 1 ]] && packages+=(redis-server)
apt_install "${packages[@]}"
if [[ $DOCKER -eq 1 ]]; then
  # Optional: a machine that cannot have them still runs everything but the docker lane's tests.
  ( apt_install docker.io debootstrap docker-compose ) || printf 'warning: docker.io/debootstrap/docker-compose not installed: the docker tests will skip\n' >&2
fi

PORTAL_PY=$(find_python 12) || die "Python >= 3.12 is required for the portal (Django 6). Install python3.12 or newer."
EVAL_PY=$(find_python 11 | head -1)
# The evaluation environment prefers Python 3.11, for which a local CPU build of torch may be on disk.
for cand in python3.11 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.11*/bin/python3; do
  if "$cand" -c "import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)" >/dev/null 2>&1; then
    EVAL_PY=$cand; break
  fi
done

reqs=(requirements.txt)
[[ $DEV -eq 1 ]] && reqs=(requirements.txt requirements-dev.txt)
make_venv .venv "$PORTAL_PY" "${reqs[@]}"
make_venv .venv-eval "$EVAL_PY" requirements-bench.txt
mkdir -p var
