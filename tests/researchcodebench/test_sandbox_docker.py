"""The docker sandbox: exact engine API calls (against a recording fake client), the evaluation image's
Dockerfile, engine-unreachable handling with a real client, and a real container when an engine exists."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import pytest
import requests

from researchcodebench.sandbox.base import (
    OUTPUT_TAIL_BYTES,
    Limits,
    RunSpec,
    Sandbox,
    SandboxUnavailable,
    WarmCapableSandbox,
)
from researchcodebench.sandbox.docker import (
    DEFAULT_CUDA_VARIANT,
    DEFAULT_IMAGE,
    LABEL_DEADLINE,
    LABEL_RUN,
    SOURCE_DIR,
    STDIN_PATH,
    TASK_COPY_FAILED,
    DockerSandbox,
    ImageRecipe,
    eval_image_build_args,
    image_name,
    lock_hash_of_python,
)

REPO = Path(__file__).resolve().parents[2]
MISSING_SOCKET = "unix:///nonexistent-rcb-dir/docker.sock"
LOCK_311 = "# researchcodebench environment lock: python 3.11, platform x86_64-manylinux_2_28\n"


# -- a recording fake of the docker SDK surface the sandbox uses -------------------------------------------


@dataclass
class Script:
    """How the fake engine behaves for the next run."""

    status_code: int = 0
    stdout: bytes = b""
    stderr: bytes = b""
    oom: bool = False
    wait_error: Exception | None = None  # raised by the first wait (after sleeping wait_sleep_s)
    wait_sleep_s: float = 0.0
    start_error: Exception | None = None
    create_error: Exception | None = None
    kill_error: Exception | None = None
    running_after_kill_error: bool = False
    wait_engine_error: str | None = None


@dataclass
class FakeContainer:
    engine: FakeEngine
    kwargs: dict[str, Any]
    id: str = "c0ffee"
    attrs: dict[str, Any] = field(default_factory=dict)
    status: str = "created"
    labels: dict[str, str] = field(default_factory=dict)
    waits: int = 0

    def _record(self, name: str, **kwargs: Any) -> None:
        self.engine.calls.append((name, kwargs))

    def start(self) -> None:
        self._record("start")
        for mount in self.kwargs.get("mounts", []):
            if mount["Target"] == STDIN_PATH:
                self.engine.stdin_seen = Path(mount["Source"]).read_bytes()
        if self.engine.script.start_error:
            raise self.engine.script.start_error
        self.status = "running"

    def wait(self, timeout: float | None = None) -> dict[str, Any]:
        self._record("wait", timeout=timeout)
        self.waits += 1
        script = self.engine.script
        if self.waits == 1 and script.wait_error is not None:
            time.sleep(script.wait_sleep_s)
            raise script.wait_error
        self.status = "exited"
        error = {"Message": script.wait_engine_error} if script.wait_engine_error else None
        return {"StatusCode": script.status_code, "Error": error}

    def kill(self) -> None:
        self._record("kill")
        if self.engine.script.kill_error:
            raise self.engine.script.kill_error
        self.engine.script.status_code = 137

    def reload(self) -> None:
        self._record("reload")
        running = self.engine.script.running_after_kill_error and self.status == "running"
        self.attrs = {"State": {"OOMKilled": self.engine.script.oom, "Running": running}}

    def logs(self, *, stdout: bool, stderr: bool) -> bytes:
        self._record("logs", stdout=stdout, stderr=stderr)
        return (self.engine.script.stdout if stdout else b"") + (self.engine.script.stderr if stderr else b"")

    def remove(self, *, force: bool = False) -> None:
        self._record("remove", force=force)
        self.engine.removed.append(self.id)


class FakeContainers:
    def __init__(self, engine: FakeEngine) -> None:
        self.engine = engine

    def create(self, **kwargs: Any) -> FakeContainer:
        self.engine.calls.append(("containers.create", kwargs))
        if self.engine.script.create_error:
            raise self.engine.script.create_error
        container = FakeContainer(self.engine, kwargs, labels=kwargs.get("labels", {}))
        self.engine.created.append(container)
        return container

    def list(self, **kwargs: Any) -> list[FakeContainer]:
        self.engine.calls.append(("containers.list", kwargs))
        return list(self.engine.listed)


class FakeImages:
    def __init__(self, engine: FakeEngine) -> None:
        self.engine = engine

    def get(self, name: str) -> object:
        self.engine.calls.append(("images.get", {"name": name}))
        if name not in self.engine.images:
            raise docker.errors.ImageNotFound(f"No such image: {name}")
        return object()


class FakeEngine:
    """Stands in for ``docker.DockerClient``; records every call as ``(name, kwargs)``."""

    def __init__(self, script: Script | None = None, images: tuple[str, ...] = (DEFAULT_IMAGE,)) -> None:
        self.script = script or Script()
        self.images = set(images)
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.created: list[FakeContainer] = []
        self.removed: list[str] = []
        self.listed: list[FakeContainer] = []
        self.stdin_seen: bytes | None = None
        self.containers = FakeContainers(self)
        self.images_api = FakeImages(self)

    def ping(self) -> bool:
        self.calls.append(("ping", {}))
        return True

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]

    def create_kwargs(self) -> dict[str, Any]:
        (kwargs,) = [kw for name, kw in self.calls if name == "containers.create"]
        return kwargs


def fake_client(engine: FakeEngine) -> Any:
    """A client object exposing ``containers``, ``images`` and ``ping`` backed by ``engine``."""

    class Client:
        containers = engine.containers
        images = engine.images_api
        ping = staticmethod(engine.ping)

    return Client()


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    task = tmp_path / "task"
    task.mkdir()
    (task / "paper2code_test.py").write_text("print('ok')\n")
    (task / "model.py").write_text("x = 1\n")
    (task / "model_ref.py").write_text("SECRET = 42\n")
    (task / "oracle").mkdir()
    (task / "oracle" / "answer.py").write_text("SECRET = 43\n")
    return task


def make_spec(workdir: Path, **overrides: Any) -> RunSpec:
    values: dict[str, Any] = {
        "workdir": str(workdir),
        "argv": ("python", "paper2code_test.py"),
        "env": {"PATH": "/usr/local/bin:/usr/bin:/bin", "OMP_NUM_THREADS": "1"},
        "limits": Limits(timeout_s=30, memory_mb=512, max_procs=32, cpu_s=40, file_size_mb=8, open_files=64),
    }
    values.update(overrides)
    return RunSpec(**values)


def run_with(script: Script, spec: RunSpec, **sandbox_kwargs: Any) -> tuple[Any, FakeEngine]:
    engine = FakeEngine(script)
    result = DockerSandbox(fake_client(engine), **sandbox_kwargs).run(spec)
    return result, engine


# -- the container's configuration -------------------------------------------------------------------------


def test_docker_sandbox_satisfies_the_sandbox_protocol_without_warm_interpreters() -> None:
    sandbox = DockerSandbox(fake_client(FakeEngine()))
    assert isinstance(sandbox, Sandbox)
    assert not isinstance(sandbox, WarmCapableSandbox)
    assert sandbox.name == "docker"


def test_container_is_isolated_and_limited_as_specified(workdir: Path) -> None:
    result, engine = run_with(Script(status_code=0, stdout=b"ok\n"), make_spec(workdir))
    kw = engine.create_kwargs()

    assert result.exit_code == 0 and result.infra_error is None and not result.timed_out
    assert kw["image"] == DEFAULT_IMAGE
    assert kw["command"][:2] == ["/bin/sh", "-c"] and kw["command"][4:] == ["python", "paper2code_test.py"]
    assert kw["command"][2].startswith(
        f"cp -R --copy-contents --preserve=mode,timestamps {SOURCE_DIR}/. /task/"
    )
    assert kw["network_mode"] == "none"
    assert kw["read_only"] is True
    assert set(kw["tmpfs"]) == {"/tmp", "/task"}
    assert "size=256m" in kw["tmpfs"]["/tmp"] and "noexec" in kw["tmpfs"]["/tmp"]
    assert kw["tmpfs"]["/task"] == "rw,nosuid,nodev,size=1024m,uid=10001,gid=10001,mode=0700"
    assert kw["mem_limit"] == kw["memswap_limit"] == 512 * 1024 * 1024
    assert kw["nano_cpus"] == 1_000_000_000
    assert kw["pids_limit"] == 32
    assert kw["cap_drop"] == ["ALL"]
    assert kw["security_opt"] == ["no-new-privileges"]
    assert kw["user"] == "10001:10001"
    assert kw["init"] is True
    assert kw["working_dir"] == "/task"
    # The image's environment comes first on PATH; the rest of the spec's environment is passed as it is.
    assert kw["environment"] == {
        "PATH": "/opt/rcb/venv/bin:/usr/local/bin:/usr/bin:/bin",
        "OMP_NUM_THREADS": "1",
    }
    assert kw["log_config"]["Type"] == "json-file"
    assert kw["log_config"]["Config"] == {"max-size": "1024k", "max-file": "2"}
    ulimits = {u["Name"]: (u["Soft"], u["Hard"]) for u in kw["ulimits"]}
    assert ulimits == {"nofile": (64, 64), "fsize": (8 * 1024 * 1024, 8 * 1024 * 1024), "cpu": (40, 41)}
    assert "device_requests" not in kw
    assert kw["labels"][LABEL_RUN] and float(kw["labels"][LABEL_DEADLINE]) > time.time() + 30
    task_mount = kw["mounts"][0]
    assert (task_mount["Target"], task_mount["Source"], task_mount["Type"], task_mount["ReadOnly"]) == (
        SOURCE_DIR,
        str(workdir),
        "bind",
        True,
    )


def test_task_folder_size_and_cpu_quota_come_from_the_run_limits(workdir: Path) -> None:
    spec = make_spec(workdir, limits=Limits(timeout_s=30, task_dir_mb=64, cpu_quota=0.5))
    _, engine = run_with(Script(), spec)
    kw = engine.create_kwargs()
    assert "size=64m" in kw["tmpfs"]["/task"]
    assert kw["nano_cpus"] == 500_000_000
    assert "task folder limit 64 MB" in kw["command"][2]


def test_task_folder_that_does_not_fit_its_limit_is_an_infra_error_naming_the_limit(workdir: Path) -> None:
    message = b"cp: error writing '/task/big.bin': No space left on device\nrcb-task: cannot copy the task"
    message += b" folder into /task (task folder limit 8 MB)\n"
    result, _ = run_with(Script(status_code=TASK_COPY_FAILED, stderr=message), make_spec(workdir))
    assert result.infra_error is not None and "task folder limit 8 MB" in result.infra_error


def test_task_tmpfs_is_open_to_every_user_when_the_container_user_is_a_name(workdir: Path) -> None:
    _, engine = run_with(Script(), make_spec(workdir), user="sandbox")
    assert engine.create_kwargs()["tmpfs"]["/task"].endswith(",mode=1777")


def test_create_arguments_are_accepted_by_the_sdk_and_reach_the_engine_host_config(workdir: Path) -> None:
    # The fake client would accept any keyword; the SDK's own translation (the step containers.create
    # performs before the HTTP call) proves every keyword is real and lands in the engine's HostConfig.
    from docker.models.containers import _create_container_args

    _, engine = run_with(Script(), make_spec(workdir, needs_gpu=True, hidden_paths=("model_ref.py",)))
    args = _create_container_args({**engine.create_kwargs(), "version": "1.45"})
    host = args["host_config"]
    assert (host["NetworkMode"], host["ReadonlyRootfs"], host["Init"]) == ("none", True, True)
    assert host["Memory"] == host["MemorySwap"] == 512 * 1024 * 1024
    assert (host["PidsLimit"], host["NanoCpus"], host["CapDrop"]) == (32, 1_000_000_000, ["ALL"])
    assert host["SecurityOpt"] == ["no-new-privileges"]
    assert [m["Target"] for m in host["Mounts"]] == [SOURCE_DIR, f"{SOURCE_DIR}/model_ref.py"]
    assert host["Tmpfs"]["/task"].startswith("rw,nosuid,nodev,size=1024m")
    assert host["DeviceRequests"][0]["Capabilities"] == [["gpu"]]
    assert (args["user"], args["working_dir"]) == ("10001:10001", "/task")


def test_calls_create_start_wait_reload_logs_then_remove_in_order(workdir: Path) -> None:
    result, engine = run_with(Script(status_code=1, stdout=b"out", stderr=b"Traceback"), make_spec(workdir))
    assert engine.names() == [
        "containers.create",
        "start",
        "wait",
        "reload",
        "logs",
        "logs",
        "remove",
    ]
    assert engine.calls[2][1] == {"timeout": 30}
    assert engine.calls[-1][1] == {"force": True}
    assert (result.exit_code, result.signal, result.stdout, result.stderr) == (1, None, b"out", b"Traceback")


def test_cpu_quota_and_image_are_configurable(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The library reads no environment: the image comes from the caller (the portal's settings, the CLI).
    monkeypatch.setenv("RCB_DOCKER_IMAGE", "rcb-eval:from-the-environment")
    _, engine = run_with(Script(), make_spec(workdir))
    assert engine.create_kwargs()["image"] == DEFAULT_IMAGE
    _, engine = run_with(Script(), make_spec(workdir), cpus=2.5, image="rcb-eval:custom")
    assert engine.create_kwargs()["nano_cpus"] == 2_500_000_000
    assert engine.create_kwargs()["image"] == "rcb-eval:custom"
    _, engine = run_with(Script(), make_spec(workdir, image="rcb-eval:paper-x"))
    assert engine.create_kwargs()["image"] == "rcb-eval:paper-x"


def test_gpu_is_requested_only_for_runs_that_need_it(workdir: Path) -> None:
    _, cpu_engine = run_with(Script(), make_spec(workdir, needs_gpu=False))
    _, gpu_engine = run_with(Script(), make_spec(workdir, needs_gpu=True))
    assert "device_requests" not in cpu_engine.create_kwargs()
    (request,) = gpu_engine.create_kwargs()["device_requests"]
    assert request["Count"] == -1
    assert request["Capabilities"] == [["gpu"]]


LOCK_HASH = "0123456789abcdef" + "f" * 48


def locked_spec(workdir: Path, **overrides: Any) -> RunSpec:
    """A run of a task with its own environment: the runner gives it that environment's interpreter."""
    python = f"/var/lib/rcb/envs/{LOCK_HASH}/bin/python"
    return make_spec(workdir, python=python, argv=(python, "-I", "paper2code_test.py"), **overrides)


def test_a_locked_environment_runs_in_the_cpu_image_of_its_lock_hash(workdir: Path) -> None:
    _, engine = run_with(Script(), locked_spec(workdir))
    kw = engine.create_kwargs()
    assert (
        kw["image"] == "researchcodebench-eval:0123456789abcdef-cpu" == image_name(LOCK_HASH, variant="cpu")
    )
    assert kw["command"][4:] == ["python", "-I", "paper2code_test.py"]
    assert "device_requests" not in kw


def test_a_gpu_run_of_a_locked_environment_gets_the_cuda_image_and_every_gpu(workdir: Path) -> None:
    from docker.models.containers import _create_container_args

    _, engine = run_with(Script(), locked_spec(workdir, needs_gpu=True))
    kw = engine.create_kwargs()
    assert kw["image"] == f"researchcodebench-eval:0123456789abcdef-{DEFAULT_CUDA_VARIANT}"
    host = _create_container_args({**kw, "version": "1.45"})["host_config"]
    assert host["DeviceRequests"] == [
        {"Driver": "", "Count": -1, "DeviceIDs": [], "Capabilities": [["gpu"]], "Options": {}}
    ]
    _, engine = run_with(Script(), locked_spec(workdir, needs_gpu=True), cuda_variant="cu126")
    assert engine.create_kwargs()["image"] == "researchcodebench-eval:0123456789abcdef-cu126"


def test_an_image_the_spec_names_wins_and_an_unlocked_interpreter_uses_the_backend_image(
    workdir: Path,
) -> None:
    _, engine = run_with(Script(), locked_spec(workdir, image="rcb-eval:pinned"))
    assert engine.create_kwargs()["image"] == "rcb-eval:pinned"
    host_python = "/work/main/.venv-eval/bin/python"
    _, engine = run_with(Script(), make_spec(workdir, python=host_python), image="rcb-eval:default")
    assert engine.create_kwargs()["image"] == "rcb-eval:default"


def test_a_missing_locked_image_is_an_infra_error_saying_how_to_build_it(workdir: Path) -> None:
    script = Script(create_error=docker.errors.ImageNotFound("No such image"))
    result, _ = run_with(script, locked_spec(workdir))
    assert result.infra_error is not None
    assert "'researchcodebench-eval:0123456789abcdef-cpu' not found" in result.infra_error
    assert "manage.py build_eval_images" in result.infra_error


@pytest.mark.parametrize(
    ("lock_hash", "variant", "message"),
    [
        ("abc", "cpu", "not a lock hash"),
        (LOCK_HASH.upper(), "cpu", "not a lock hash"),
        (LOCK_HASH, "gpu", "torch variant"),
        (LOCK_HASH, "cu12; rm -rf /", "torch variant"),
    ],
)
def test_image_names_refuse_what_is_not_a_lock_hash_or_a_torch_variant(lock_hash, variant, message) -> None:
    with pytest.raises(ValueError, match=message):
        image_name(lock_hash, variant=variant)


def test_the_sandbox_refuses_a_cuda_variant_that_is_not_one() -> None:
    for bad in ("cpu", "cuda", ""):
        with pytest.raises(ValueError):
            DockerSandbox(fake_client(FakeEngine()), cuda_variant=bad)


def test_lock_hashes_are_read_only_from_an_environments_interpreter_path() -> None:
    assert lock_hash_of_python(f"/envs/{LOCK_HASH}/bin/python3.11") == LOCK_HASH
    assert lock_hash_of_python(f"{LOCK_HASH}/bin/python") == LOCK_HASH
    assert lock_hash_of_python(f"/envs/{LOCK_HASH}/lib/python") is None
    assert lock_hash_of_python(f"/envs/{LOCK_HASH}x/bin/python") is None
    assert lock_hash_of_python(None) is None


def test_host_interpreter_in_argv_is_replaced_by_the_image_interpreter(workdir: Path) -> None:
    host_python = "/work/main/.venv-eval/bin/python"
    spec = make_spec(workdir, python=host_python, argv=(host_python, "-X", "utf8", "paper2code_test.py"))
    _, engine = run_with(Script(), spec)
    assert engine.create_kwargs()["command"][4:] == ["python", "-X", "utf8", "paper2code_test.py"]


def test_hidden_files_get_dev_null_and_hidden_folders_an_empty_tmpfs(workdir: Path) -> None:
    spec = make_spec(workdir, hidden_paths=("model_ref.py", "oracle", "not_there_ref.py"))
    _, engine = run_with(Script(), spec)
    masks = {m["Target"]: m for m in engine.create_kwargs()["mounts"][1:]}
    ref, oracle = f"{SOURCE_DIR}/model_ref.py", f"{SOURCE_DIR}/oracle"
    assert set(masks) == {ref, oracle}
    assert masks[ref]["Source"] == "/dev/null"
    assert masks[ref]["Type"] == "bind" and masks[ref]["ReadOnly"]
    assert masks[oracle]["Type"] == "tmpfs" and masks[oracle]["ReadOnly"]
    assert not (workdir / "not_there_ref.py").exists()


@pytest.mark.parametrize("bad", ["../outside.py", "/etc/passwd", "."])
def test_hidden_path_outside_the_task_folder_is_an_infra_error_and_creates_nothing(
    workdir: Path, bad: str
) -> None:
    result, engine = run_with(Script(), make_spec(workdir, hidden_paths=(bad,)))
    assert result.infra_error and "not inside the task folder" in result.infra_error
    assert engine.calls == []


def test_hidden_path_through_a_symlink_is_refused(workdir: Path) -> None:
    (workdir / "link_ref.py").symlink_to(workdir / "model.py")
    result, engine = run_with(Script(), make_spec(workdir, hidden_paths=("link_ref.py",)))
    assert result.infra_error and "symlink" in result.infra_error
    assert engine.calls == []


def test_stdin_is_fed_from_a_read_only_file_that_is_removed_afterwards(workdir: Path) -> None:
    result, engine = run_with(Script(), make_spec(workdir, stdin=b"payload\n"))
    kw = engine.create_kwargs()
    assert kw["command"][:2] == ["/bin/sh", "-c"] and kw["command"][2].endswith(f'exec "$@" < {STDIN_PATH}')
    assert kw["command"][4:] == ["python", "paper2code_test.py"]
    (stdin_mount,) = [m for m in kw["mounts"] if m["Target"] == STDIN_PATH]
    assert stdin_mount["ReadOnly"] is True
    assert engine.stdin_seen == b"payload\n"
    assert not Path(stdin_mount["Source"]).exists()
    assert sorted(p.name for p in workdir.parent.iterdir()) == ["task"]
    assert result.exit_code == 0


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown needs root")
def test_task_folder_is_handed_to_the_container_user_when_running_as_root(workdir: Path) -> None:
    run_with(Script(), make_spec(workdir))
    owners = {(p.stat().st_uid, p.stat().st_gid) for p in [workdir, *workdir.rglob("*")]}
    assert owners == {(10001, 10001)}


# -- outcomes ------------------------------------------------------------------------------------------------


def test_timeout_kills_the_container_and_reports_timed_out(workdir: Path) -> None:
    script = Script(wait_error=requests.exceptions.ReadTimeout("Read timed out"), wait_sleep_s=0.05)
    result, engine = run_with(script, make_spec(workdir, limits=Limits(timeout_s=0.05)))
    assert result.timed_out is True
    assert result.signal == 9 and result.exit_code is None
    assert result.infra_error is None
    assert engine.names() == [
        "containers.create",
        "start",
        "wait",
        "kill",
        "wait",
        "reload",
        "logs",
        "logs",
        "remove",
    ]
    assert engine.removed == ["c0ffee"]


def test_read_timeout_reported_as_connection_error_still_counts_as_timeout(workdir: Path) -> None:
    error = requests.exceptions.ConnectionError("UnixHTTPConnectionPool: Read timed out.")
    result, engine = run_with(
        Script(wait_error=error, wait_sleep_s=0.05), make_spec(workdir, limits=Limits(timeout_s=0.05))
    )
    assert result.timed_out is True
    assert "kill" in engine.names() and engine.removed == ["c0ffee"]


def test_run_that_finished_at_the_deadline_is_not_a_timeout(workdir: Path) -> None:
    script = Script(
        wait_error=requests.exceptions.ReadTimeout("Read timed out"),
        wait_sleep_s=0.05,
        kill_error=docker.errors.APIError("409 Conflict: container is not running"),
        status_code=0,
    )
    result, engine = run_with(script, make_spec(workdir, limits=Limits(timeout_s=0.05)))
    assert result.timed_out is False and result.exit_code == 0
    assert engine.removed == ["c0ffee"]


def test_engine_dropping_the_connection_early_is_an_infra_error_not_a_timeout(workdir: Path) -> None:
    error = requests.exceptions.ConnectionError("Connection aborted")
    result, engine = run_with(Script(wait_error=error), make_spec(workdir, limits=Limits(timeout_s=30)))
    assert result.timed_out is False
    assert result.infra_error and "Connection aborted" in result.infra_error
    assert "kill" not in engine.names()
    assert engine.removed == ["c0ffee"]


def test_oom_killed_container_reports_oom(workdir: Path) -> None:
    result, engine = run_with(Script(status_code=137, oom=True), make_spec(workdir))
    assert result.oom is True and result.signal == 9 and result.exit_code is None
    assert result.timed_out is False
    assert engine.removed == ["c0ffee"]


def test_signal_exit_status_is_reported_as_signal(workdir: Path) -> None:
    result, _ = run_with(Script(status_code=139), make_spec(workdir))
    assert (result.exit_code, result.signal, result.oom) == (None, 11, False)


def test_output_is_kept_as_a_bounded_tail(workdir: Path) -> None:
    big = b"x" * (OUTPUT_TAIL_BYTES * 3) + b"END"
    result, _ = run_with(Script(status_code=1, stdout=big, stderr=big), make_spec(workdir))
    assert len(result.stdout) == OUTPUT_TAIL_BYTES and result.stdout.endswith(b"END")
    assert len(result.stderr) == OUTPUT_TAIL_BYTES and result.stderr.endswith(b"END")


def test_engine_error_on_start_is_an_infra_error_and_the_container_is_removed(workdir: Path) -> None:
    script = Script(start_error=docker.errors.APIError("500 Server Error: could not select device driver"))
    result, engine = run_with(script, make_spec(workdir, needs_gpu=True))
    assert result.exit_code is None
    assert result.infra_error and "could not select device driver" in result.infra_error
    assert engine.names()[-1] == "remove" and engine.removed == ["c0ffee"]


def test_missing_image_at_create_is_an_infra_error(workdir: Path) -> None:
    script = Script(create_error=docker.errors.ImageNotFound("No such image: rcb-eval:gone"))
    result, engine = run_with(script, make_spec(workdir, image="rcb-eval:gone"))
    assert result.infra_error and "No such image: rcb-eval:gone" in result.infra_error
    assert engine.removed == []


def test_engine_error_reported_by_wait_is_an_infra_error(workdir: Path) -> None:
    result, engine = run_with(Script(wait_engine_error="container vanished"), make_spec(workdir))
    assert result.infra_error and "container vanished" in result.infra_error
    assert engine.removed == ["c0ffee"]


def test_missing_task_folder_is_an_infra_error(tmp_path: Path) -> None:
    result, engine = run_with(Script(), make_spec(tmp_path / "nope"))
    assert result.infra_error and "does not exist" in result.infra_error
    assert engine.calls == []


# -- check() and cleanup() -----------------------------------------------------------------------------------


def test_check_passes_when_engine_answers_and_image_exists() -> None:
    engine = FakeEngine(images=("rcb-eval:ok",))
    DockerSandbox(fake_client(engine), image="rcb-eval:ok").check()
    assert engine.calls == [("ping", {}), ("images.get", {"name": "rcb-eval:ok"})]


def test_check_names_the_missing_image_and_how_to_build_it() -> None:
    engine = FakeEngine(images=())
    with pytest.raises(
        SandboxUnavailable, match=r"'rcb-eval:missing' not found.*python -m researchcodebench images"
    ):
        DockerSandbox(fake_client(engine), image="rcb-eval:missing").check()


def test_check_with_a_real_client_on_a_missing_socket_says_the_engine_is_unreachable() -> None:
    client = docker.DockerClient(base_url=MISSING_SOCKET, version="1.45", timeout=2)
    with pytest.raises(SandboxUnavailable, match="cannot reach a Docker engine") as info:
        DockerSandbox(client, base_url=MISSING_SOCKET).check()
    assert MISSING_SOCKET in str(info.value) and "--sandbox local" in str(info.value)


def test_check_when_the_client_cannot_even_be_created_says_the_engine_is_unreachable() -> None:
    with pytest.raises(
        SandboxUnavailable, match="cannot reach a Docker engine at unix:///nonexistent-rcb-dir"
    ):
        DockerSandbox(base_url=MISSING_SOCKET).check()


def test_run_against_an_unreachable_engine_is_an_infra_error(workdir: Path) -> None:
    result = DockerSandbox(base_url=MISSING_SOCKET).run(make_spec(workdir))
    assert result.exit_code is None
    assert result.infra_error and result.infra_error.startswith("docker engine error")


def test_cleanup_removes_exited_and_stale_containers_but_not_live_ones() -> None:
    engine = FakeEngine()
    future, past = str(int(time.time()) + 600), str(int(time.time()) - 1)
    live = FakeContainer(
        engine, {}, id="live", status="running", labels={LABEL_RUN: "a", LABEL_DEADLINE: future}
    )
    stale = FakeContainer(
        engine, {}, id="stale", status="running", labels={LABEL_RUN: "b", LABEL_DEADLINE: past}
    )
    done = FakeContainer(
        engine, {}, id="done", status="exited", labels={LABEL_RUN: "c", LABEL_DEADLINE: future}
    )
    engine.listed = [live, stale, done]
    sandbox = DockerSandbox(fake_client(engine))

    assert sandbox.cleanup() == 2
    assert sorted(engine.removed) == ["done", "stale"]
    assert engine.calls[0] == ("containers.list", {"all": True, "filters": {"label": LABEL_RUN}})

    class Vanished(FakeContainer):
        def remove(self, *, force: bool = False) -> None:
            raise docker.errors.NotFound("No such container")

    engine.removed.clear()
    engine.listed = [Vanished(engine, {}, id="gone", status="exited", labels={LABEL_RUN: "d"})]
    assert sandbox.cleanup() == 0

    engine.listed = [live]
    assert sandbox.cleanup(everything=True) == 1
    assert engine.removed == ["live"]


def test_core_module_imports_without_the_docker_sdk() -> None:
    code = (
        "import sys; sys.modules['docker'] = None; "
        "import researchcodebench.sandbox.docker as m; print(m.DockerSandbox.name)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "docker"


def test_missing_sdk_makes_check_unavailable_and_run_an_infra_error(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox = DockerSandbox(fake_client(FakeEngine()))
    monkeypatch.setitem(sys.modules, "docker", None)
    with pytest.raises(SandboxUnavailable, match=r"docker SDK is not installed"):
        sandbox.check()
    result = sandbox.run(make_spec(workdir))
    assert result.infra_error and "docker SDK is not installed" in result.infra_error


# -- the evaluation image ------------------------------------------------------------------------------------


def dockerfile_instructions() -> list[tuple[str, str]]:
    text = (REPO / "docker" / "eval.Dockerfile").read_text()
    joined = re.sub(r"\\\n", " ", text)
    result = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            result.append((keyword.upper(), rest.strip()))
    return result


def dockerfile_args() -> dict[str, str]:
    return dict(rest.partition("=")[::2] for kw, rest in dockerfile_instructions() if kw == "ARG")


def test_eval_image_base_is_a_build_argument_defaulting_to_the_public_python_image() -> None:
    instructions = dockerfile_instructions()
    assert instructions[0] == ("ARG", "BASE_IMAGE=python:3.11-slim")
    froms = [rest for kw, rest in instructions if kw == "FROM"]
    assert froms == ["${BASE_IMAGE} AS build", "${BASE_IMAGE}"]
    args = eval_image_build_args(LOCK_311, variant="cpu")
    assert args["BASE_IMAGE"] == "python:3.11-slim" and args["PYTHON"] == "python3.11"
    local = ImageRecipe(base_image="researchcodebench-base:bookworm-py3.11", python="python3.11")
    assert eval_image_build_args(LOCK_311, variant="cpu", recipe=local)["BASE_IMAGE"] == local.base_image


def test_eval_image_installs_the_lock_offline_from_its_wheels_requiring_hashes_and_checks_its_hash() -> None:
    run = " ".join(rest for kw, rest in dockerfile_instructions() if kw == "RUN")
    assert "uv pip sync" in run and "--require-hashes --offline --no-index" in run
    assert 'echo "${LOCK_HASH}  environment.lock" | sha256sum -c -' in run
    copies = [rest for kw, rest in dockerfile_instructions() if kw == "COPY"]
    # The final stage takes only the environment and the lock: no uv, no wheels, no CA bundle.
    assert copies[-2:] == [
        "--from=build /opt/rcb/venv /opt/rcb/venv",
        "environment.lock /opt/rcb/environment.lock",
    ]


def test_cuda_variant_replaces_only_the_locks_torch_block(tmp_path: Path) -> None:
    # The awk program the image runs, run here on a lock in uv's format: torch's line and its indented
    # hash/annotation lines go, every other package stays with its hashes.
    run = " ".join(rest for kw, rest in dockerfile_instructions() if kw == "RUN")
    program = re.search(r"awk '([^']+)'", run).group(1)
    lock = (
        "# researchcodebench environment lock: python 3.11, platform x86_64-manylinux_2_28\n"
        "numpy==2.4.6 \\\n    --hash=sha256:aa\n    # via -r requirements.in\n"
        "torch==2.13.0+cpu \\\n    --hash=sha256:bb \\\n    --hash=sha256:cc\n    # via -r requirements.in\n"
        "typing-extensions==4.15.0 \\\n    --hash=sha256:dd\n"
    )
    (tmp_path / "environment.lock").write_text(lock)
    out = subprocess.run(
        ["awk", program, str(tmp_path / "environment.lock")], capture_output=True, text=True, check=True
    ).stdout
    assert "torch" not in out and "sha256:bb" not in out
    assert "numpy==2.4.6" in out and "sha256:aa" in out and "typing-extensions==4.15.0" in out
    assert "sha256:dd" in out


def test_compose_runs_every_worker_as_an_unprivileged_user() -> None:
    import yaml

    services = yaml.safe_load((REPO / "compose.yaml").read_text())["services"]
    workers = {name: s for name, s in services.items() if name.startswith("worker-")}
    assert set(workers) >= {"worker-site", "worker-eval-cpu", "worker-eval-gpu"}
    for name, service in workers.items():
        # No "user" means the image's USER (app), which the Dockerfile test holds to be unprivileged.
        assert str(service.get("user", "app")).split(":")[0] not in {"0", "root"}, name
    assert services["worker-eval-cpu"]["group_add"], "the eval workers reach the engine through its group"


def test_eval_image_runs_as_the_non_root_user_the_sandbox_expects_in_task() -> None:
    instructions = dockerfile_instructions()
    users = [rest for kw, rest in instructions if kw == "USER"]
    assert users and users[-1] not in {"root", "0", "0:0"}
    assert users[-1] == DockerSandbox(fake_client(FakeEngine())).user == "10001:10001"
    assert [rest for kw, rest in instructions if kw == "WORKDIR"][-1] == "/task"


# -- a real engine, when there is one ------------------------------------------------------------------------


def engine_and_image() -> tuple[Any, str]:
    try:
        client = docker.from_env(timeout=5)
        client.ping()
    except Exception as exc:  # any failure means: no usable engine here
        pytest.skip(f"no reachable Docker engine (docker.from_env().ping() failed: {exc})")
    image = os.environ.get("RCB_DOCKER_IMAGE", DEFAULT_IMAGE)
    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        pytest.skip(f"Docker engine reachable but image {image!r} missing: build docker/eval.Dockerfile")
    return client, image


INTEGRATION_TEST = """
import os, socket, sys
print("hello from", os.getuid())
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2)
    print("NETWORK OPEN")
except OSError:
    print("network blocked")
try:
    open("/etc/evil", "w")
    print("ROOT WRITABLE")
except OSError:
    print("root read-only")
print("ref:", repr(open("model_ref.py").read()))
open("out.txt", "w").write("written")
sys.exit(3)
"""


class RecordingSandbox(DockerSandbox):
    """A ``DockerSandbox`` that records the run id it labels each container with: the suite runs on two
    processes, so another test's container may be on the engine while this one checks its own are gone."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.run_ids: list[str] = []

    def create_kwargs(self, spec, *, mounts):
        kwargs = super().create_kwargs(spec, mounts=mounts)
        self.run_ids.append(kwargs["labels"][LABEL_RUN])
        return kwargs

    def containers_left(self, client) -> list:
        assert self.run_ids, "no container was created"
        return [
            c
            for run_id in self.run_ids
            for c in client.containers.list(all=True, filters={"label": f"{LABEL_RUN}={run_id}"})
        ]


def test_real_container_runs_isolated_and_is_removed(workdir: Path) -> None:
    client, image = engine_and_image()
    (workdir / "paper2code_test.py").write_text(INTEGRATION_TEST)
    sandbox = RecordingSandbox(client, image=image)
    result = sandbox.run(make_spec(workdir, hidden_paths=("model_ref.py",), limits=Limits(timeout_s=60)))
    out = result.stdout.decode()
    assert result.infra_error is None, result.infra_error
    assert result.exit_code == 3
    assert "hello from 10001" in out and "network blocked" in out and "root read-only" in out
    assert "ref: ''" in out
    # What a run writes stays in its private /task tmpfs: nothing reaches the engine host's disk.
    assert not (workdir / "out.txt").exists()
    assert sandbox.containers_left(client) == []


def test_real_container_is_killed_at_the_deadline(workdir: Path) -> None:
    client, image = engine_and_image()
    (workdir / "paper2code_test.py").write_text("while True:\n    pass\n")
    sandbox = RecordingSandbox(client, image=image)
    result = sandbox.run(make_spec(workdir, limits=Limits(timeout_s=2)))
    assert result.timed_out is True and result.infra_error is None
    assert sandbox.containers_left(client) == []


# -- the runner and a locked environment under the docker sandbox -------------------------------------------


def test_the_runner_runs_a_task_of_a_locked_environment_in_the_image_of_its_lock(tmp_path: Path) -> None:
    import hashlib

    from researchcodebench.envs import LOCK_HEADER, PLATFORM
    from researchcodebench.pset import read_pset, write_pset
    from researchcodebench.runner import Runner
    from researchcodebench.sandbox.docker import image_environment

    lock = (
        LOCK_HEADER.format(python="3.11", platform=PLATFORM)
        + "einops==0.8.1 \\\n    --hash=sha256:"
        + "e" * 64
    )
    lock_hash = hashlib.sha256(lock.encode()).hexdigest()
    environment = image_environment(lock)
    assert environment.packages == ("einops==0.8.1",) and environment.version == "3.11"
    assert not Path(environment.python).exists()  # nothing is built on this host

    examples = [t for t in read_pset(REPO / "examples" / "pset").tasks if t.id == "rmsnorm"]
    write_pset(examples, tmp_path / "pset")
    (task,) = read_pset(tmp_path / "pset").tasks
    engine = FakeEngine(Script(status_code=1, stderr=b"AssertionError"))
    with Runner(sandbox=DockerSandbox(fake_client(engine)), warm=False, calibrate=False, workers=1) as runner:
        runner.assign_environment(task, environment)
        verdict = runner.evaluate(task, task.snippets[0], "pass")
    kw = engine.create_kwargs()
    assert kw["image"] == image_name(lock_hash, variant="cpu")
    assert kw["command"][4] == "python"  # the image's interpreter, not the host path naming the lock
    assert verdict.environment == environment.id and not verdict.passed
