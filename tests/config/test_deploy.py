"""Production files: the compose file parses and every service runs a real entry point on a real queue.

There is no Docker engine on the CI machine, so these tests check the files against the code they start.
"""

from __future__ import annotations

import importlib
import re
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
    expected = {"web", "worker-site", "worker-eval-cpu", "worker-eval-gpu", "postgres", "rabbitmq"}
    assert expected <= set(services)
    for name in expected:
        assert "healthcheck" in services[name], f"{name} has no health check"
        assert services[name]["healthcheck"]["test"], name


def test_named_volumes_used_by_services_are_declared(compose):
    declared = set(compose["volumes"])
    for name, service in compose["services"].items():
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            if not source.startswith("/"):
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
