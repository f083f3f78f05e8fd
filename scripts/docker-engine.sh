#!/usr/bin/env bash
# A private Docker engine for the docker sandbox's tests and for machines with no engine of their own
# (docs/sandbox.md, "A real engine"):
#
#   scripts/docker-engine.sh start       start a private dockerd unless one of ours answers; prints DOCKER_HOST=...
#   scripts/docker-engine.sh stop        stop it (running containers are killed with it)
#   scripts/docker-engine.sh status      say whether it answers (exit 0) or not (exit 1)
#   scripts/docker-engine.sh host        print its DOCKER_HOST value
#   scripts/docker-engine.sh base-image  build the base image from Debian's packages, with no registry
#   scripts/docker-engine.sh base-image portal   the portal's base (trixie: python3.13, git, bubblewrap)
#   scripts/docker-engine.sh portal-image build the portal's image (Dockerfile) on that base
#
# The engine has no default network at all (--bridge=none, no iptables, no forwarding, no masquerading):
# containers run with --network none, and image builds that need the network use the host's
# (--network host). It keeps its own data root, exec root and socket under RCB_DOCKER_ROOT (default
# /var/lib/rcb-docker as root, else var/docker in the checkout), so it never touches a system engine.
#
# The base image (RCB_BASE_IMAGE, default researchcodebench-base:bookworm-py3.11) is a minimal Debian root
# made by debootstrap from the mirror apt uses (RCB_DEBIAN_MIRROR overrides it), then `docker import`:
# the same root as Debian's own python3.11, which docker/eval.Dockerfile and the portal's Dockerfile take
# as BASE_IMAGE where no registry can be reached.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ $(id -u) -eq 0 ]]; then default_root=/var/lib/rcb-docker; else default_root=$PWD/var/docker; fi
ROOT=${RCB_DOCKER_ROOT:-$default_root}
SOCKET=$ROOT/docker.sock
HOST=unix://$SOCKET
PIDFILE=$ROOT/dockerd.pid
LOG=$ROOT/dockerd.log
BASE_IMAGE=${RCB_BASE_IMAGE:-researchcodebench-base:bookworm-py3.11}
SUITE=${RCB_DEBIAN_SUITE:-bookworm}
INCLUDE=python3.11,ca-certificates
PORTAL_BASE_IMAGE=${RCB_PORTAL_BASE_IMAGE:-researchcodebench-base:trixie-py3.13}
PORTAL_IMAGE=${RCB_PORTAL_IMAGE:-researchcodebench-hub:latest}

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

answers() { [[ -S $SOCKET ]] && DOCKER_HOST=$HOST timeout 10 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

start() {
  if answers; then echo "DOCKER_HOST=$HOST"; return 0; fi
  command -v dockerd >/dev/null 2>&1 || die "no dockerd here: run scripts/bootstrap.sh --docker (installs Debian's docker.io)"
  [[ $(id -u) -eq 0 ]] || die "a private dockerd needs root (or use an engine of your own: set DOCKER_HOST)"
  mkdir -p "$ROOT/data" "$ROOT/exec"
  if [[ -f $PIDFILE ]] && ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then rm -f "$PIDFILE" "$SOCKET"; fi
  say "starting a private dockerd (data in $ROOT, log $LOG)"
  # setsid: the engine outlives the shell that started it, and a TERM to that shell's group does not reach it.
  setsid dockerd \
    --bridge=none --iptables=false --ip6tables=false --ip-forward=false --ip-masq=false \
    --data-root "$ROOT/data" --exec-root "$ROOT/exec" --pidfile "$PIDFILE" \
    -H "$HOST" --log-level warn >"$LOG" 2>&1 </dev/null &
  for _ in $(seq 1 60); do
    if answers; then echo "DOCKER_HOST=$HOST"; return 0; fi
    sleep 0.5
  done
  tail -n 20 "$LOG" >&2 || true
  die "dockerd did not answer on $SOCKET within 30 s (log above)"
}

stop() {
  [[ -f $PIDFILE ]] || { say "no private dockerd running"; return 0; }
  local pid; pid=$(cat "$PIDFILE")
  if kill -0 "$pid" 2>/dev/null; then
    say "stopping dockerd $pid"
    kill -TERM "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
  fi
  rm -f "$PIDFILE"
}

mirror() {
  if [[ -n ${RCB_DEBIAN_MIRROR:-} ]]; then echo "$RCB_DEBIAN_MIRROR"; return; fi
  local uri
  uri=$(grep -h -s -E '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null \
        | grep -v -- '-security' | head -n 1 | sed -E 's/^URIs: *//; s/^deb (\[[^]]*\] )?//; s/ .*//')
  echo "${uri:-http://deb.debian.org/debian}"
}

base_image() {
  if [[ ${1:-} == portal ]]; then
    BASE_IMAGE=$PORTAL_BASE_IMAGE SUITE=${RCB_PORTAL_DEBIAN_SUITE:-trixie}
    INCLUDE=python3.13,python3.13-venv,git,bubblewrap,ca-certificates
  fi
  answers || die "no engine answers on $SOCKET: run '$0 start' first"
  if DOCKER_HOST=$HOST docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
    say "base image $BASE_IMAGE is present"; return 0
  fi
  command -v debootstrap >/dev/null 2>&1 || die "no debootstrap here: run scripts/bootstrap.sh --docker"
  local dir; dir=$(mktemp -d "${TMPDIR:-/tmp}/rcb-base.XXXXXX")
  trap 'rm -rf "${dir:-}"; trap - RETURN' RETURN
  local from; from=$(mirror)
  say "debootstrap $SUITE (minbase, $INCLUDE) from $from"
  debootstrap --variant=minbase --include="$INCLUDE" \
    "$SUITE" "$dir" "$from" >"$ROOT/debootstrap.log" 2>&1 \
    || { tail -n 20 "$ROOT/debootstrap.log" >&2; die "debootstrap failed (log above)"; }
  # Nothing of the build host's apt state or caches goes into the image.
  rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
  say "importing it as $BASE_IMAGE"
  tar -C "$dir" -c . | DOCKER_HOST=$HOST docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' --change "CMD [\"${INCLUDE%%,*}\"]" - "$BASE_IMAGE" >/dev/null
  say "built $BASE_IMAGE"
}

portal_image() {
  answers || die "no engine answers on $SOCKET: run '$0 start' first"
  base_image portal
  local cert=${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}
  if [[ -f $cert ]]; then cp "$cert" docker/ca-bundle.crt; else rm -f docker/ca-bundle.crt; fi
  say "building $PORTAL_IMAGE on $PORTAL_BASE_IMAGE"
  # The host's network for the package downloads (the engine has no network of its own).
  DOCKER_HOST=$HOST DOCKER_BUILDKIT=0 docker build --network host --build-arg BASE_IMAGE="$PORTAL_BASE_IMAGE" \
    --build-arg PYTHON="${RCB_PORTAL_BASE_PYTHON:-python3.13}" \
    -t "$PORTAL_IMAGE" . >"$ROOT/portal-build.log" 2>&1 \
    || { tail -n 30 "$ROOT/portal-build.log" >&2; die "the portal image did not build (log above)"; }
  say "built $PORTAL_IMAGE"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) if answers; then echo "private dockerd answers on $HOST"; else echo "no private dockerd on $HOST"; exit 1; fi ;;
  host) echo "$HOST" ;;
  base-image) base_image "${2:-}" ;;
  portal-image) portal_image ;;
  *) die "usage: $0 start|stop|status|host|base-image [portal]|portal-image" ;;
esac
