"""The GPU lane (issue 13 item 5): task versions that need a GPU go to the eval-gpu queue (model tests and
validation), validation names code that asks for a GPU, workers report their GPUs in the heartbeat and
/status/ shows them, and only a worker with a GPU consumes eval-gpu. Tests marked ``gpu`` run on a GPU host
(``pytest -m gpu``) and skip elsewhere, saying why."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from config.celery import app
from contributions.models import ProposalRevision, TaskVersion
from contributions.services import proposal_create, proposal_submit, revision_create
from evaluation.models import WorkerHeartbeat
from evaluation.services import Prediction, run_create, worker_heartbeat_record
from evaluation.worker_signals import gpu_queue_decision
from researchcodebench.gpu import detect_gpus, gpu_uses
from tests.evaluation.engine_helpers import import_release
from tests.factories import EXAMPLE_MANIFEST, UserFactory, example_upload, fake_llm_model

REPO = Path(__file__).resolve().parents[2]
H200 = {"name": "NVIDIA H200", "memory": "143771 MiB"}


def queued(queue: str) -> list[tuple[str, str]]:
    """Take every message out of ``queue`` on the configured broker: (task name, its arguments)."""
    taken = []
    with app.connection_for_write() as conn:
        channel = conn.default_channel
        # Declared as Celery declares it: a fresh vhost (each test process has its own) has no queue yet.
        app.amqp.queues[queue](channel).declare()
        while (message := channel.basic_get(queue, no_ack=True)) is not None:
            taken.append((message.headers["task"], message.headers["argsrepr"]))
    return taken


@pytest.fixture
def empty_queues():
    for queue in ("site", "eval-cpu", "eval-gpu"):
        queued(queue)


def fake_nvidia_smi(folder: Path, output: str, status: int = 0) -> Path:
    """A folder whose ``nvidia-smi`` prints ``output``: what the NVIDIA driver's tool prints on a GPU host."""
    folder.mkdir(parents=True, exist_ok=True)
    tool = folder / "nvidia-smi"
    tool.write_text(f"#!/bin/sh\ncat <<'EOF'\n{output}\nEOF\nexit {status}\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return folder


# -- routing --------------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_model_tests_of_a_task_version_that_needs_a_gpu_go_to_eval_gpu(
    tmp_path, empty_queues, django_capture_on_commit_callbacks
):
    release = import_release(tmp_path, name="mixed", task_ids=("rmsnorm", "focal-loss"))
    TaskVersion.objects.filter(task__key="rmsnorm").update(needs_gpu=True)
    predictions = [
        Prediction(task=v.task.key, snippet=name, code="pass")
        for v in release.task_versions.select_related("task")
        for name in v.snippets.values_list("name", flat=True)
    ]
    with django_capture_on_commit_callbacks(execute=True):
        run = run_create(
            model=fake_llm_model("http://127.0.0.1:9/v1"),
            release=release,
            source="uploaded",
            verification="uploaded",
            predictions=predictions,
        )

    gpu_ids = set(run.completions.filter(snippet__task_version__needs_gpu=True).values_list("pk", flat=True))
    cpu_ids = set(run.completions.filter(snippet__task_version__needs_gpu=False).values_list("pk", flat=True))
    assert gpu_ids and cpu_ids
    on_gpu, on_cpu = queued("eval-gpu"), queued("eval-cpu")
    assert {name for name, _ in on_gpu} == {"evaluation.tasks.completion_test_gpu"}
    assert {name for name, _ in on_cpu} == {"evaluation.tasks.completion_test_cpu"}
    assert {int(args.strip("(),")) for _, args in on_gpu} == gpu_ids
    assert {int(args.strip("(),")) for _, args in on_cpu} == cpu_ids


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("needs_gpu", "queue", "task"), [(True, "eval-gpu", "gpu"), (False, "eval-cpu", "cpu")]
)
def test_validation_of_a_contributed_task_goes_to_the_queue_its_manifest_asks_for(
    needs_gpu, queue, task, empty_queues, django_capture_on_commit_callbacks
):
    author = UserFactory()
    proposal = proposal_create(author=author, task_key=f"rms-{task}", meta={"title": "RMSNorm"})
    manifest = {**EXAMPLE_MANIFEST, "needs_gpu": needs_gpu}
    revision_create(proposal=proposal, by=author, intake_result=example_upload(), manifest=manifest)
    with django_capture_on_commit_callbacks(execute=True):
        proposal_submit(proposal=proposal, by=author)

    revision = ProposalRevision.objects.get(proposal=proposal)
    assert queued(queue) == [(f"evaluation.tasks.revision_validate_{task}", f"({revision.pk},)")]
    assert queued("eval-cpu" if needs_gpu else "eval-gpu") == []


# -- what validation detects -------------------------------------------------------------------------------


def test_code_that_asks_for_a_cuda_device_is_found_with_file_and_line(tmp_path):
    (tmp_path / "model.py").write_text(
        "import torch\n"
        "def f(x):\n"
        "    return x.cuda()\n"
        "dev = torch.device('cuda:0')\n"
        "y = torch.zeros(3, device='cuda')\n"
        "z = torch.ones(2).to('cuda')\n"
    )
    (tmp_path / "paper2code_test.py").write_text(
        "import torch\n"
        "dev = 'cuda' if torch.cuda.is_available() else 'cpu'\n"  # runs anywhere: not a GPU need
        "x = torch.zeros(2, device=dev).to('cpu')\n"
        "torch.cuda.manual_seed(0)\n"
    )
    (tmp_path / "broken.py").write_text("def (:\n")
    uses = gpu_uses(tmp_path, ["model.py", "paper2code_test.py", "broken.py", "notes.md"])
    assert [(u.file, u.line) for u in uses] == [
        ("model.py", 3),
        ("model.py", 4),
        ("model.py", 5),
        ("model.py", 6),
    ]
    assert uses[0].code == "x.cuda()" and uses[1].code == "torch.device('cuda:0')"


def test_the_example_tasks_ask_for_no_gpu():
    for task in (REPO / "examples" / "pset").iterdir():
        if task.is_dir():
            files = [p.relative_to(task).as_posix() for p in task.rglob("*.py")]
            assert gpu_uses(task, files) == [], task.name


# -- devices and the heartbeat ------------------------------------------------------------------------------


def test_devices_are_read_from_nvidia_smi(tmp_path, monkeypatch):
    folder = fake_nvidia_smi(tmp_path / "bin", "NVIDIA H200, 143771 MiB\nNVIDIA A100-SXM4-80GB, 81920 MiB")
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
    assert detect_gpus() == [H200, {"name": "NVIDIA A100-SXM4-80GB", "memory": "81920 MiB"}]


def test_a_host_without_nvidia_smi_or_where_it_fails_has_no_devices(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    assert detect_gpus() == []
    failing = fake_nvidia_smi(tmp_path / "bin", "NVIDIA-SMI has failed: no driver", status=9)
    monkeypatch.setenv("PATH", str(failing))
    assert detect_gpus() == []


@pytest.mark.django_db
def test_the_heartbeat_records_devices_and_the_status_page_shows_them(client):
    worker_heartbeat_record(hostname="gpu@h", queues=["eval-gpu"], pid=1, devices=[H200])
    worker_heartbeat_record(hostname="cpu@h", queues=["eval-cpu", "site"], pid=2, devices=[])
    # a later beat without devices (the shutdown's) keeps what was detected at start
    worker_heartbeat_record(hostname="gpu@h", queues=["eval-gpu"], pid=1)
    assert WorkerHeartbeat.objects.get(hostname="gpu@h").devices == [H200]

    page = client.get("/status/").content.decode()
    gpu_row = page[page.index("gpu@h") : page.index("</tr>", page.index("gpu@h"))]
    cpu_row = page[page.index("cpu@h") : page.index("</tr>", page.index("cpu@h"))]
    assert "NVIDIA H200 (143771 MiB)" in gpu_row and "eval-gpu" in gpu_row
    assert "<td>none</td>" in cpu_row
    health = client.get("/healthz").json()
    assert {w["hostname"]: w["devices"] for w in health["workers"]} == {"gpu@h": [H200], "cpu@h": []}


@pytest.mark.parametrize(
    ("queues", "devices", "allow", "kept", "refused"),
    [
        (["eval-cpu", "eval-gpu", "site"], [], False, ["eval-cpu", "site"], True),
        (["eval-gpu"], [], False, [], True),
        (["eval-gpu"], [H200], False, ["eval-gpu"], False),
        (["eval-cpu", "eval-gpu"], [], True, ["eval-cpu", "eval-gpu"], False),
        (["eval-cpu", "site"], [], False, ["eval-cpu", "site"], False),
    ],
)
def test_only_a_worker_with_a_gpu_keeps_the_eval_gpu_queue(queues, devices, allow, kept, refused):
    got, error = gpu_queue_decision(queues, devices, allow_without_gpu=allow)
    assert got == kept
    assert (error is not None) == refused
    if refused:
        assert "no GPU" in error and "RCB_GPU_QUEUE_WITHOUT_GPU" in error


# -- real workers -------------------------------------------------------------------------------------------


NO_GPU_ENV = {"RCB_GPU_QUEUE_WITHOUT_GPU": "0"}


@pytest.mark.slow
def test_a_real_worker_without_a_gpu_drops_eval_gpu_and_says_why(start_worker, tmp_path):
    env = {**NO_GPU_ENV, "PATH": f"{tmp_path / 'no-gpu-tools'}:{os.environ['PATH']}"}
    if detect_gpus():
        pytest.skip("this host has a GPU: a worker here keeps eval-gpu")
    worker = start_worker("eval-cpu,eval-gpu", extra_env=env)
    beat = WorkerHeartbeat.objects.get(hostname=worker.hostname)
    assert beat.queues == ["eval-cpu"] and beat.devices == []
    assert "does not consume the eval-gpu queue" in worker.log()


@pytest.mark.slow
def test_a_real_worker_with_a_gpu_consumes_eval_gpu_and_reports_it(start_worker, tmp_path):
    folder = fake_nvidia_smi(tmp_path / "bin", "NVIDIA H200, 143771 MiB")
    worker = start_worker("eval-gpu", extra_env={**NO_GPU_ENV, "PATH": f"{folder}:{os.environ['PATH']}"})
    beat = WorkerHeartbeat.objects.get(hostname=worker.hostname)
    assert beat.queues == ["eval-gpu"] and beat.devices == [H200]


@pytest.mark.slow
def test_a_real_worker_for_eval_gpu_only_refuses_to_start_without_a_gpu(transactional_db, tmp_path):
    if detect_gpus():
        pytest.skip("this host has a GPU: a worker here keeps eval-gpu")
    env = {**os.environ, **NO_GPU_ENV, "PATH": os.environ["PATH"]}
    env["PATH"] = ":".join(p for p in env["PATH"].split(":") if not (Path(p) / "nvidia-smi").exists())
    done = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "eval-gpu", "--hostname", "nogpu@t",
         "--without-mingle", "--without-gossip", "--loglevel", "INFO"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "has no GPU" in done.stderr and "no other queue" in done.stderr
    assert not WorkerHeartbeat.objects.filter(hostname="nogpu@t", status="online").exists()


# -- on a GPU host (pytest -m gpu) ---------------------------------------------------------------------------


@pytest.fixture
def gpu_host() -> list[dict[str, str]]:
    devices = detect_gpus()
    if not devices:
        pytest.skip("no GPU here: nvidia-smi is missing or lists no GPU (run `pytest -m gpu` on a GPU host)")
    return devices


@pytest.mark.gpu
def test_on_a_gpu_host_the_worker_heartbeat_lists_its_gpus(gpu_host):
    got, error = gpu_queue_decision(["eval-gpu"], gpu_host, allow_without_gpu=False)
    assert got == ["eval-gpu"] and error is None
    assert all(d["name"] and d["memory"].endswith("MiB") for d in gpu_host)


@pytest.mark.gpu
def test_on_a_gpu_host_a_sandboxed_gpu_run_sees_cuda(gpu_host, tmp_path):
    from researchcodebench.environments import resolve_environment
    from researchcodebench.runner import sandbox_env
    from researchcodebench.sandbox.base import Limits, RunSpec
    from researchcodebench.sandbox.local import LocalSandbox

    python = resolve_environment(os.environ.get("RCB_EVAL_PYTHON") or None).python
    probe = "import torch, sys\nprint(torch.__version__)\nsys.exit(0 if torch.cuda.is_available() else 3)\n"
    (tmp_path / "t.py").write_text(probe)
    spec = RunSpec(
        workdir=str(tmp_path),
        argv=(python, "t.py"),
        env=sandbox_env(True),
        limits=Limits(timeout_s=120),
        needs_gpu=True,
        python=python,
    )
    result = LocalSandbox(scratch_root=str(tmp_path / "scratch")).run(spec)
    # exit 3: the environment's torch is a CPU build or the devices did not reach the sandbox
    assert result.exit_code == 0, (result.infra_error, result.stdout[-500:], result.stderr[-2000:])


def test_validation_warns_at_the_first_gpu_use_when_the_manifest_does_not_ask_for_a_gpu(tmp_path):
    from dataclasses import replace

    from researchcodebench.pset import read_pset, write_pset
    from researchcodebench.runner import task_facts
    from researchcodebench.validation import WARNING, gpu_findings
    from tests.evaluation.engine_helpers import example_tasks

    write_pset(example_tasks(("rmsnorm",)), tmp_path / "pset")
    test_file = tmp_path / "pset" / "rmsnorm" / "paper2code_test.py"
    lines = test_file.read_text().splitlines()
    test_file.write_text(
        "\n".join([*lines, "_ = torch.zeros(1).cuda()", "_ = torch.ones(1, device='cuda')"]) + "\n"
    )
    (task,) = read_pset(tmp_path / "pset").tasks

    (finding,) = gpu_findings(task, task_facts(task))
    assert (finding.check, finding.severity) == ("environment", WARNING)
    assert (finding.file, finding.line) == ("paper2code_test.py", len(lines) + 1)
    assert "torch.zeros(1).cuda()" in finding.message and "(and 1 more)" in finding.message
    assert "needs_gpu: true" in finding.detail
    gpu_task = replace(task, manifest=replace(task.manifest, needs_gpu=True))
    assert gpu_findings(gpu_task, task_facts(gpu_task)) == []
