"""Production files: the compose file parses and every service runs a real entry point on a real queue.

There is no Docker engine on the CI machine, so these tests check the files against the code they start.
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from config.celery import QUEUES

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((REPO / "compose.yaml").read_text())


def command_of(service: dict) -> list[str]:
    command = service["command"]
    if command[:2] == ["sh", "-c"]:
        return command[2].split("&& exec ", 1)[-1].split()
    return command


def test_compose_declares_the_required_services_with_health_checks(compose):
    services = compose["services"]
    expected = {
        "proxy",
        "web",
        "worker-site",
        "worker-eval-cpu",
        "worker-eval-gpu",
        "postgres",
        "rabbitmq",
        "redis",
    }
    assert expected <= set(services)
    for name in expected:
        assert "healthcheck" in services[name], f"{name} has no health check"
        assert services[name]["healthcheck"]["test"], name


def test_named_volumes_used_by_services_are_declared(compose):
    declared = set(compose["volumes"])
    for name, service in compose["services"].items():
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            if not source.startswith(("/", "./")):
                assert source in declared, f"{name} uses undeclared volume {source}"


def test_web_runs_gunicorn_on_the_real_wsgi_application(compose):
    command = command_of(compose["services"]["web"])
    assert command[0] == "gunicorn"
    module_name, attr = command[1].split(":")
    module = importlib.import_module(module_name)
    assert callable(getattr(module, attr))
    assert "migrate" in compose["services"]["web"]["command"][2]


@pytest.mark.parametrize(
    ("service", "queues"),
    [("worker-site", {"site"}), ("worker-eval-cpu", {"eval-cpu"}), ("worker-eval-gpu", {"eval-gpu"})],
)
def test_each_worker_starts_the_real_celery_app_on_its_queue(compose, service, queues):
    command = command_of(compose["services"][service])
    assert command[:4] == ["celery", "-A", "config", "worker"]
    app = importlib.import_module(command[2]).celery_app
    assert app.main == "researchcodebench_hub"
    consumed = set(command[command.index("-Q") + 1].split(","))
    assert consumed == queues
    assert consumed <= set(QUEUES)


def test_the_gpu_worker_reserves_nvidia_devices_and_only_it_does(compose):
    services = compose["services"]
    devices = services["worker-eval-gpu"]["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["driver"] == "nvidia" and devices[0]["capabilities"] == ["gpu"]
    for name, service in services.items():
        if name != "worker-eval-gpu":
            assert "deploy" not in service, name


def test_eval_workers_use_the_docker_sandbox_and_the_beat_runs_once(compose):
    services = compose["services"]
    for name in ("worker-eval-cpu", "worker-eval-gpu"):
        assert services[name]["environment"]["RCB_SANDBOX"] == "docker"
    with_beat = [n for n, s in services.items() if "-B" in s.get("command", [])]
    assert with_beat == ["worker-site"]


def test_portal_services_require_a_secret_key_and_use_postgres_and_rabbitmq(compose):
    env = compose["services"]["web"]["environment"]
    assert env["DATABASE_URL"].startswith("postgres://")
    assert env["CELERY_BROKER_URL"].startswith("amqp://")
    assert ":?" in env["DJANGO_SECRET_KEY"], "compose must refuse to start without DJANGO_SECRET_KEY"


def test_web_processes_and_workers_share_one_redis_cache(compose):
    services = compose["services"]
    assert services["redis"]["image"] == "redis:7-alpine" and not services["redis"].get("ports")
    for name in ("web", "worker-site", "worker-eval-cpu", "worker-eval-gpu"):
        assert services[name]["environment"]["RCB_CACHE_URL"] == "redis://redis:6379/1", name
        assert services[name]["depends_on"]["redis"] == {"condition": "service_healthy"}, name


def test_dockerfile_runs_gunicorn_as_a_non_root_user_with_collected_static():
    text = (REPO / "Dockerfile").read_text()
    users = re.findall(r"^USER\s+(\S+)", text, flags=re.M)
    assert users and users[-1] not in {"root", "0", "0:0"}
    assert "collectstatic" in text
    cmd = re.search(r"^CMD\s+(\[.*\])", text, flags=re.M).group(1)
    assert '"gunicorn", "config.wsgi:application"' in cmd
    for line in (REPO / "requirements.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            assert "==" in line, f"requirements.txt must pin every package: {line}"


# --- manage.py check --deploy -----------------------------------------------------------------------------

#: a production environment behind a TLS-terminating proxy: debug off, a strong key, the site's host, HTTPS
#: redirect and HSTS on (secure cookies and the proxy's X-Forwarded-Proto are the debug-off defaults)
PRODUCTION_ENV = {
    "DJANGO_DEBUG": "0",
    "DJANGO_SECRET_KEY": "k2V9qLm4Xt7Rb1Nw8Zc3Hy6Pd0Fs5Gj-" * 2,
    "DJANGO_ALLOWED_HOSTS": "rcb.example.org",
    "DJANGO_STATIC_MANIFEST": "0",
    "DJANGO_SECURE_SSL_REDIRECT": "1",
    "DJANGO_SECURE_HSTS_SECONDS": "31536000",
    "DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS": "1",
    "DJANGO_SECURE_HSTS_PRELOAD": "1",
}


def check_deploy(tmp_path: Path, **overrides: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **PRODUCTION_ENV, "RCB_VAR_DIR": str(tmp_path / "var"), **overrides}
    env.pop("DATABASE_URL", None)  # a throwaway SQLite database, never the suite's
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_is_clean_under_production_settings(tmp_path):
    done = check_deploy(tmp_path)
    assert done.returncode == 0, done.stderr + done.stdout
    assert "System check identified no issues" in done.stdout


@pytest.mark.parametrize(
    ("variable", "value", "warning"),
    [
        ("DJANGO_SECURE_HSTS_SECONDS", "0", "security.W004"),
        ("DJANGO_SECURE_SSL_REDIRECT", "0", "security.W008"),
        ("DJANGO_SECURE_COOKIES", "0", "security.W012"),
    ],
)
def test_check_deploy_names_each_transport_setting_left_off(tmp_path, variable, value, warning):
    done = check_deploy(tmp_path, **{variable: value})
    assert done.returncode != 0
    assert warning in done.stderr + done.stdout


def test_behind_a_proxy_its_header_marks_requests_as_https(db, client, settings):
    settings.SECURE_SSL_REDIRECT = True
    settings.ALLOWED_HOSTS = ["testserver"]
    assert client.get("/status/").status_code == 301
    response = client.get("/status/", headers={"X-Forwarded-Proto": "https"})
    assert response.status_code == 200
    # The load balancer's plain-HTTP probe is answered (200, or 503 with no worker alive), not redirected.
    assert client.get("/healthz").status_code in (200, 503)


def test_a_bad_proxy_header_name_stops_start_up_naming_the_variable(tmp_path):
    done = check_deploy(tmp_path, DJANGO_SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto: https")
    assert done.returncode != 0
    assert "DJANGO_SECURE_PROXY_SSL_HEADER" in done.stderr


def test_files_the_compose_file_mounts_exist(compose):
    for name, service in compose["services"].items():
        for volume in service.get("volumes", []):
            if volume.startswith("./"):
                assert (REPO / volume.split(":", 1)[0]).is_file(), f"{name} mounts a missing {volume}"


def test_only_the_proxy_is_published_and_it_caps_bodies_like_the_portal(compose, settings):
    services = compose["services"]
    published = {name for name, service in services.items() if service.get("ports")}
    assert published == {"proxy"}
    assert services["proxy"]["ports"] == ["8000:8080"]
    command = command_of(services["web"])
    assert command[command.index("--worker-class") + 1] == "gthread"
    assert services["web"]["environment"]["RCB_TRUSTED_PROXY_COUNT"] == "1"
    conf = (REPO / "docker" / "nginx.conf").read_text()
    directive = lambda name: re.search(rf"^\s*{name}\s+([^;]+);", conf, re.M).group(1)  # noqa: E731
    cap = directive("client_max_body_size")
    assert cap.endswith("m") and int(cap[:-1]) * 1024 * 1024 == settings.RCB_REQUEST_MAX_BYTES
    for timeout in ("client_header_timeout", "client_body_timeout", "send_timeout"):
        assert int(directive(timeout).rstrip("s")) <= 20, timeout
    assert directive("proxy_request_buffering") == "on"
    assert "server web:8000" in conf


def test_docker_compose_validates_the_file():
    import shutil

    tool = shutil.which("docker-compose")
    if tool is None:
        pytest.skip("docker-compose is not installed (Debian's docker-compose package)")
    env = {**os.environ, "DJANGO_SECRET_KEY": "x" * 50}
    done = subprocess.run(
        [tool, "-f", str(REPO / "compose.yaml"), "config", "-q"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
