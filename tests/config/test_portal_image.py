"""The portal's own image, run for real (issue 19 item 3): a web and a worker container of it (host network)
against this machine's PostgreSQL and RabbitMQ; predictions uploaded through the web container's API are
judged by the worker container in the docker sandbox (each test in its own container on the same engine).

The engine is the one DOCKER_HOST names, else the private one ``make test`` starts; the portal image is built
from this checkout with ``scripts/docker-engine.sh portal-image`` (on a base made from Debian's packages;
RCB_PORTAL_IMAGE names a prebuilt one instead). Where no engine answers, this skips and says why."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import pytest
import requests
from django.conf import settings

from evaluation.models import EvaluationRun, TestResult
from researchcodebench.sandbox.docker import DEFAULT_IMAGE
from tests.conftest import database_url_for_current_connection, wait_for
from tests.evaluation.engine_helpers import example_tasks, import_release
from tests.factories import LanguageModelFactory, UserFactory, jsonl
from tests.factories.users import api_token_for
from tests.researchcodebench.runner_fixtures import docker_sandbox

REPO = Path(__file__).resolve().parents[2]
PORTAL_IMAGE = os.environ.get("RCB_PORTAL_IMAGE", "researchcodebench-hub:latest")
LABEL = "org.researchcodebench.test"

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def engine():
    client = docker_sandbox().client()
    # Always (re)built from this checkout: the engine's layer cache keeps the packages' layer, so only the
    # code and collectstatic are redone (the first build on an engine takes minutes).
    if os.environ.get("RCB_PORTAL_IMAGE") is None:
        done = subprocess.run(
            [str(REPO / "scripts" / "docker-engine.sh"), "portal-image"],
            capture_output=True,
            text=True,
            env={**os.environ, "RCB_PORTAL_IMAGE": PORTAL_IMAGE},
            timeout=1500,
        )
        if done.returncode != 0:
            pytest.fail(f"the portal image does not build:\n{done.stderr[-3000:]}", pytrace=False)
    yield client
    for container in client.containers.list(all=True, filters={"label": LABEL}):
        container.remove(force=True)


def _container(client, name: str, command: list[str], env: dict[str, str], volumes: dict[str, dict]):
    return client.containers.run(
        PORTAL_IMAGE,
        command,
        name=f"rcb-test-{name}-{os.getpid()}",
        detach=True,
        network_mode="host",
        environment=env,
        volumes=volumes,
        labels={LABEL: "1"},
        # The test's var folder belongs to this (root) process; production runs as `app` (compose.yaml).
        user="0:0",
    )


def test_web_and_worker_containers_judge_uploaded_predictions_in_the_docker_sandbox(
    engine, transactional_db, tmp_path
):
    from config.celery import app

    release = import_release(tmp_path, name="rms", task_ids=("rmsnorm",))
    (task,) = example_tasks(("rmsnorm",))
    owner = UserFactory(username="developer", password="pw")
    LanguageModelFactory(key="image-model", self_reported=True, owner=owner)
    token = api_token_for(owner)
    var_dir = str(Path(settings.VAR_DIR).resolve())
    # Runs' task folders live where the engine sees them at the same path: the worker's TMPDIR.
    work_dir = tmp_path / "work"
    work_dir.mkdir()
    port = _free_port()
    env = {
        "DJANGO_SECRET_KEY": os.environ["DJANGO_SECRET_KEY"],
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "DATABASE_URL": database_url_for_current_connection(),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "RCB_VAR_DIR": var_dir,
        "RCB_VERDICT_CACHE": "0",
    }
    volumes = {var_dir: {"bind": var_dir, "mode": "rw"}}
    socket_path = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock").removeprefix("unix://")
    with app.connection_for_write() as conn:
        for queue in ("site", "eval-cpu", "eval-gpu"):
            try:
                conn.default_channel.queue_purge(queue)
            except Exception:  # a queue that does not exist yet has nothing stale in it
                pass
    web = _container(
        engine,
        "web",
        ["gunicorn", "config.wsgi:application", "--bind", f"127.0.0.1:{port}", "--worker-class", "gthread"],
        env,
        volumes,
    )
    worker = _container(
        engine,
        "worker",
        [
            "celery",
            "-A",
            "config",
            "worker",
            "-Q",
            "site,eval-cpu",
            "--concurrency",
            "1",
            "--hostname",
            f"image-{os.getpid()}@localhost",
            "--without-mingle",
            "--without-gossip",
        ],
        {
            **env,
            "RCB_SANDBOX": "docker",
            "RCB_DOCKER_IMAGE": DEFAULT_IMAGE,
            "DOCKER_HOST": "unix:///var/run/docker.sock",
            "TMPDIR": str(work_dir),
        },
        {
            **volumes,
            socket_path: {"bind": "/var/run/docker.sock", "mode": "rw"},
            str(work_dir): {"bind": str(work_dir), "mode": "rw"},
        },
    )
    base = f"http://127.0.0.1:{port}"

    def web_answers() -> bool:
        web.reload()
        assert web.status == "running", web.logs().decode(errors="replace")[-3000:]
        try:
            return requests.get(f"{base}/healthz", timeout=2).status_code == 200
        except requests.RequestException:
            return False

    wait_for(web_answers, timeout=60, what="the web container to answer /healthz")
    predictions = jsonl(
        *(
            {
                "task": "rmsnorm",
                "snippet": s.name,
                "completion_idx": 0,
                "code": s.code if i % 2 == 0 else "    pass",
            }
            for i, s in enumerate(task.snippets)
        )
    )
    upload_started = time.time()
    response = requests.post(
        f"{base}/api/v1/runs/upload/",
        headers={"Authorization": f"Token {token}"},
        data={"model": "image-model", "release": release.name},
        files={"file": ("predictions.jsonl", predictions)},
        timeout=30,
    )
    assert response.status_code == 201, response.text
    run_id = response.json()["id"]

    def finished() -> bool:
        worker.reload()
        assert worker.status == "running", worker.logs().decode(errors="replace")[-3000:]
        return EvaluationRun.objects.get(pk=run_id).is_final

    wait_for(finished, timeout=400, interval=1, what="the uploaded run to finish in the worker container")
    run = EvaluationRun.objects.get(pk=run_id)
    assert run.status == EvaluationRun.Status.FINISHED, run.status_reason
    expected_pass = len(task.snippets[::2])
    assert run.counts["passed"] == expected_pass, (run.counts, worker.logs().decode(errors="replace")[-3000:])
    # Judged by the worker container, each test in a container of its own on the engine, none left behind.
    results = TestResult.objects.filter(completion__run=run)
    assert results.count() == len(task.snippets)
    assert results.filter(passed=False, tier="model").count() == len(task.snippets) - expected_pass
    assert set(results.values_list("worker_host", flat=True)) == {f"image-{os.getpid()}@localhost"}
    created = [
        event
        for event in engine.events(
            since=int(upload_started),
            until=int(time.time()) + 1,
            filters={"type": "container", "event": "create"},
            decode=True,
        )
        if "org.researchcodebench.run" in (event.get("Actor", {}).get("Attributes") or {})
    ]
    assert len(created) >= len(task.snippets)
    # Containers of other runs on a shared engine may be live: this worker's mount task folders from its TMPDIR.
    ours = [
        c.id
        for c in engine.containers.list(all=True, filters={"label": "org.researchcodebench.run"})
        if any(str(m.get("Source", "")).startswith(str(work_dir)) for m in c.attrs.get("Mounts") or ())
    ]
    assert ours == []
    assert [p.name for p in work_dir.iterdir() if p.name.startswith(("rcb-run-", ".rcb-stdin-"))] == []
    worker.stop(timeout=15)
