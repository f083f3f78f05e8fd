"""Slow clients against the production web stack: gunicorn alone, and nginx (docker/nginx.conf) in front.

Starts gunicorn as compose.yaml does (3 threaded workers) on the embedded defaults (SQLite in a temporary
RCB_VAR_DIR), and nginx with the production configuration pointed at it. Then, for each side in the same
run: the p50/p95 of a plain page (``/healthz``) with no load, and again while ``--slow`` connections each
send a request's headers one byte every few seconds (a slowloris). A request unanswered after ``GIVE_UP_S``
counts as that long. Needs nginx (``make bench-slow-clients``
installs Debian's package).

    .venv/bin/python bench/slow_clients.py [--slow 100] [--requests 60] [--json]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from leaderboard_load import free_port

REPO = Path(__file__).resolve().parent.parent
PAGE = "/healthz"


def _wait(port: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"nothing listens on {port}")


#: A request that takes longer counts as this long (the page did not answer in time).
GIVE_UP_S = 5.0


def _timings(port: int, count: int) -> list[float]:
    out = []
    for _ in range(count):
        started = time.monotonic()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=GIVE_UP_S)
        try:
            conn.request("GET", PAGE, headers={"Host": "127.0.0.1"})
            conn.getresponse().read()
        except OSError:
            out.append(GIVE_UP_S)
            continue
        finally:
            conn.close()
        out.append(time.monotonic() - started)
    return out


class Slowloris:
    """``count`` connections that each send a request's headers one byte every ``every`` seconds."""

    def __init__(self, port: int, count: int, every: float = 2.0) -> None:
        self.port, self.count, self.every = port, count, every
        self.stop = threading.Event()
        self.sockets: list[socket.socket] = []

    def __enter__(self) -> Slowloris:
        for _ in range(self.count):
            try:
                s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
                s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                self.sockets.append(s)
            except OSError:
                break
        self.thread = threading.Thread(target=self._drip, daemon=True)
        self.thread.start()
        time.sleep(1.0)
        return self

    def _drip(self) -> None:
        while not self.stop.wait(self.every):
            for s in list(self.sockets):
                try:
                    s.sendall(b"X")
                except OSError:
                    self.sockets.remove(s)

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for s in self.sockets:
            s.close()


def _quantiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 1),
        "p95_ms": round(ordered[max(0, int(len(ordered) * 0.95) - 1)] * 1000, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slow", type=int, default=100, help="slow connections")
    parser.add_argument("--requests", type=int, default=60, help="timed requests per measurement")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.path.exists(nginx):
        print("nginx is not installed (make bench-slow-clients installs it)", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="rcb-slow-"))
    env = {
        **os.environ,
        "DJANGO_SECRET_KEY": "bench-only-key-" + "x" * 40,
        "DJANGO_DEBUG": "1",
        "RCB_VAR_DIR": str(work / "var"),
    }
    env.pop("DATABASE_URL", None)
    env.pop("CELERY_BROKER_URL", None)
    python = str(REPO / ".venv" / "bin" / "python")
    subprocess.run([python, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=REPO, env=env, check=True)
    g_port, n_port = free_port(), free_port()
    gunicorn = subprocess.Popen(
        [
            python, "-m", "gunicorn", "config.wsgi:application", "--bind", f"127.0.0.1:{g_port}",
            "--workers", "3", "--worker-class", "gthread", "--threads", "8", "--timeout", "60",
        ],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    conf = (REPO / "docker" / "nginx.conf").read_text()
    conf = conf.replace("server web:8000;", f"server 127.0.0.1:{g_port};")
    conf = conf.replace("listen 8080;", f"listen 127.0.0.1:{n_port};")
    conf = re.sub(r"/tmp/", f"{work}/", conf).replace("access_log /dev/stdout;", "access_log off;")
    (work / "nginx.conf").write_text(conf)
    proxy = subprocess.Popen(
        [nginx, "-c", str(work / "nginx.conf"), "-p", str(work), "-g", "daemon off;"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    report: dict[str, object] = {"page": PAGE, "slow_connections": args.slow, "requests": args.requests}
    try:
        _wait(g_port)
        _wait(n_port)
        _timings(n_port, 5)
        for side, port in (("gunicorn alone", g_port), ("nginx in front", n_port)):
            print(f"measuring {side}...", file=sys.stderr)
            quiet = _quantiles(_timings(port, args.requests))
            with Slowloris(port, args.slow) as attack:
                opened = len(attack.sockets)
                loaded = _quantiles(_timings(port, args.requests))
            report[side] = {"quiet": quiet, "with_slow_clients": loaded, "slow_connections_open": opened}
    finally:
        for proc in (proxy, gunicorn):
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        for side in ("gunicorn alone", "nginx in front"):
            row = report[side]
            print(
                f"{side:15s} quiet p50 {row['quiet']['p50_ms']} ms p95 {row['quiet']['p95_ms']} ms; with "
                f"{row['slow_connections_open']} slow clients p50 {row['with_slow_clients']['p50_ms']} ms "
                f"p95 {row['with_slow_clients']['p95_ms']} ms"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
