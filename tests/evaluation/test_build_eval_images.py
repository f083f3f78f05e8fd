"""manage.py build_eval_images against a recording fake of the engine's image API: one build per missing
(lock hash, torch build), the build arguments and context, CPU and CUDA variants, --dry-run, and refusals."""

from __future__ import annotations

import hashlib
from io import StringIO
from pathlib import Path
from typing import Any

import docker
import pytest
from django.core.management import CommandError, call_command

from researchcodebench.envs import LOCK_HEADER, PLATFORM
from researchcodebench.sandbox.base import RunSpec
from researchcodebench.sandbox.docker import DEFAULT_CUDA_VARIANT, ImageRecipe, image_name
from tests.factories import TaskVersionFactory

pytestmark = pytest.mark.django_db

REPO = Path(__file__).resolve().parents[2]


def lock_text(extra: str = "", python: str = "3.11") -> str:
    body = "numpy==2.4.6 \\\n    --hash=sha256:" + "a" * 64 + "\n"
    body += "torch==2.13.0+cpu \\\n    --hash=sha256:" + "b" * 64 + "\n" + extra
    return LOCK_HEADER.format(python=python, platform=PLATFORM) + body


def locked_version(text: str, *, needs_gpu: bool = False, key: str | None = None, **kwargs: Any):
    fields = {"task__key": key} if key else {}
    return TaskVersionFactory(
        environment_lock=text,
        environment_hash=hashlib.sha256(text.encode()).hexdigest(),
        needs_gpu=needs_gpu,
        **fields,
        **kwargs,
    )


class FakeImages:
    """The ``images`` API of a client: ``get`` knows ``present``; ``build`` records its arguments and the
    files of the build context, then the image is present."""

    def __init__(self, present: set[str], fail: set[str]) -> None:
        self.present = present
        self.fail = fail
        self.builds: list[dict[str, Any]] = []
        self.contexts: list[dict[str, str]] = []
        self.wheels: list[list[str]] = []

    def get(self, name: str) -> object:
        if name not in self.present:
            raise docker.errors.ImageNotFound(f"No such image: {name}")
        return object()

    def build(self, **kwargs: Any) -> tuple[object, list]:
        self.builds.append(kwargs)
        context = Path(kwargs["path"])
        self.contexts.append(
            {
                p.name: p.read_text() if p.suffix in {".lock", ".Dockerfile"} else p.name
                for p in context.iterdir()
            }
        )
        self.wheels.append(sorted(p.name for p in (context / "wheels").iterdir()))
        if kwargs["tag"] in self.fail:
            raise docker.errors.BuildError(
                "No matching distribution found for torch", [{"stream": "step 3\n"}]
            )
        self.present.add(kwargs["tag"])
        return object(), []


class FakeClient:
    def __init__(self, present: set[str] | None = None, fail: set[str] | None = None) -> None:
        self.images = FakeImages(set(present or ()), set(fail or ()))


def fake_fetch(lock_text: str, folder: str, *, recipe: Any) -> list[str]:
    """Stands in for the host's pip: one placeholder wheel per package of the lock."""
    from researchcodebench.envs import Lock

    Path(folder).mkdir(parents=True, exist_ok=True)
    names = [f"{p.replace('==', '-')}-py3-none-any.whl" for p in Lock.from_text(lock_text).packages]
    for name in names:
        (Path(folder) / name).write_bytes(b"")
    return names


RECIPE = ImageRecipe(base_image="researchcodebench-base:bookworm-py3.11", fetch=fake_fetch)


def build(client: FakeClient, *args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("build_eval_images", *args, client=client, recipe=RECIPE, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_builds_one_cpu_image_per_missing_lock_hash_with_the_lock_in_its_context():
    shared, own = lock_text(), lock_text("einops==0.8.1 \\\n    --hash=sha256:" + "c" * 64 + "\n")
    locked_version(shared, key="a")
    locked_version(shared, key="b")
    mine = locked_version(own, key="c")
    TaskVersionFactory()  # no lock: runs in the default image, nothing to build
    client = FakeClient()

    out, _ = build(client)

    tags = [b["tag"] for b in client.images.builds]
    assert tags == sorted(
        [image_name(hashlib.sha256(t.encode()).hexdigest(), variant="cpu") for t in (shared, own)]
    )
    for kwargs, context in zip(client.images.builds, client.images.contexts, strict=True):
        lock = context["environment.lock"]
        assert kwargs["buildargs"] == {
            "LOCK_HASH": hashlib.sha256(lock.encode()).hexdigest(),
            "TORCH_VARIANT": "cpu",
            "BASE_IMAGE": "researchcodebench-base:bookworm-py3.11",
            "PYTHON": "python3.11",
            "INDEX_URL": "https://pypi.org/simple",
            "TORCH_INDEX": "https://download.pytorch.org/whl",
        }
        # A CPU image builds with no network: everything it installs is in its context.
        assert kwargs["network_mode"] == "none"
        assert kwargs["dockerfile"] == "eval.Dockerfile"
        assert context["eval.Dockerfile"] == (REPO / "docker" / "eval.Dockerfile").read_text()
        assert set(context) == {"eval.Dockerfile", "environment.lock", "uv", "wheels"}
    assert client.images.wheels[0] == ["numpy-2.4.6-py3-none-any.whl", "torch-2.13.0+cpu-py3-none-any.whl"]
    assert (
        client.images.contexts[tags.index(image_name(mine.environment_hash, variant="cpu"))][
            "environment.lock"
        ]
        == own
    )
    assert "2 image(s) wanted, 0 present, 2 built" in out


def test_a_second_run_builds_nothing():
    locked_version(lock_text())
    client = FakeClient()
    build(client)
    out, _ = build(client)
    assert len(client.images.builds) == 1
    assert "present researchcodebench-eval:" in out and "1 image(s) wanted, 1 present, 0 built" in out


def test_a_lock_of_a_gpu_task_version_also_gets_its_cuda_image():
    text = lock_text()
    locked_version(text, key="cpu-task")
    gpu = locked_version(text, needs_gpu=True, key="gpu-task")
    client = FakeClient()

    build(client, "--cuda-variant", "cu126")

    args = {b["tag"]: b["buildargs"]["TORCH_VARIANT"] for b in client.images.builds}
    # The CUDA torch is the one download of a build: on the host's network.
    assert {b["buildargs"]["TORCH_VARIANT"]: b["network_mode"] for b in client.images.builds} == {
        "cpu": "none",
        "cu126": "host",
    }
    assert args == {
        image_name(gpu.environment_hash, variant="cpu"): "cpu",
        image_name(gpu.environment_hash, variant="cu126"): "cu126",
    }


def test_dry_run_prints_what_it_would_build_and_builds_nothing():
    version = locked_version(lock_text(python="3.12"), needs_gpu=True, key="gpu-task")
    present = {image_name(version.environment_hash, variant="cpu")}
    client = FakeClient(present=present)

    out, _ = build(client, "--dry-run")

    assert client.images.builds == []
    cuda = image_name(version.environment_hash, variant=DEFAULT_CUDA_VARIANT)
    assert f"would build {cuda} (torch {DEFAULT_CUDA_VARIANT}) for gpu-task v1" in out
    assert "2 image(s) wanted, 1 present, 1 to build" in out


def test_a_failed_build_is_reported_with_its_log_and_the_others_still_build():
    bad, good = lock_text("zzz==1 \\\n    --hash=sha256:" + "d" * 64 + "\n"), lock_text()
    bad_version, good_version = locked_version(bad, key="bad"), locked_version(good, key="good")
    client = FakeClient(fail={image_name(bad_version.environment_hash, variant="cpu")})
    out, err = StringIO(), StringIO()

    with pytest.raises(CommandError, match="1 image\\(s\\) failed to build"):
        call_command("build_eval_images", client=client, recipe=RECIPE, stdout=out, stderr=err)

    assert "No matching distribution found for torch" in err.getvalue() and "step 3" in err.getvalue()
    assert image_name(good_version.environment_hash, variant="cpu") in client.images.present


def test_a_lock_that_does_not_match_its_stored_hash_is_skipped_naming_the_task_version():
    TaskVersionFactory(task__key="tampered", environment_lock=lock_text(), environment_hash="0" * 64)
    client = FakeClient()
    with pytest.raises(CommandError, match="1 task version\\(s\\) skipped"):
        call_command("build_eval_images", client=client, stdout=StringIO(), stderr=(err := StringIO()))
    assert "tampered v1: the stored lock does not match its hash" in err.getvalue()
    assert client.images.builds == []


@pytest.mark.parametrize("variant", ["cpu", "cuda12", "cu12;x"])
def test_refuses_a_cuda_variant_that_is_not_one(variant):
    with pytest.raises(CommandError, match="--cuda-variant"):
        build(FakeClient(), "--cuda-variant", variant)


def test_an_unreachable_engine_is_a_clear_error():
    locked_version(lock_text())
    with pytest.raises(CommandError, match="cannot reach a Docker engine at unix:///nonexistent-rcb/d.sock"):
        call_command("build_eval_images", "--base-url", "unix:///nonexistent-rcb/d.sock", stdout=StringIO())


def test_under_the_docker_sandbox_a_workers_task_environment_is_its_image_and_nothing_is_built(
    settings, tmp_path
):
    from evaluation.workspace import task_version_environment
    from researchcodebench.sandbox.docker import DockerSandbox, lock_hash_of_python

    settings.RCB_SANDBOX = "docker"
    settings.RCB_ENV_DIR = tmp_path / "envs"
    version = locked_version(lock_text(), needs_gpu=True)

    environment = task_version_environment(task_version=version)

    assert lock_hash_of_python(environment.python) == version.environment_hash
    assert not (tmp_path / "envs").exists()
    sandbox = DockerSandbox(FakeClient())
    spec = RunSpec(
        workdir=str(tmp_path), argv=(environment.python,), python=environment.python, needs_gpu=True
    )
    assert sandbox.image_for(spec) == image_name(version.environment_hash, variant=DEFAULT_CUDA_VARIANT)
