"""The Docker sandbox: one short-lived, locked-down container per test run (the production backend).

Each run creates a container from the evaluation environment's image (``DockerSandbox.image_for``):
``RunSpec.image`` when the caller names one; else, for a task with its own locked environment
(``researchcodebench.envs``: its interpreter lives at ``<environments>/<lock hash>/bin/python``), the image
built from that lock, ``researchcodebench-eval:<lock hash[:16]>-<variant>`` (``image_name``; variant ``cpu``,
or the backend's CUDA variant for a run that needs a GPU; ``manage.py build_eval_images`` builds them from
docker/eval.Dockerfile); else the backend's ``image``, which the portal and the CLI take from
``RCB_DOCKER_IMAGE``, else ``DEFAULT_IMAGE``. Each container runs with:

* no network at all (``network_mode="none"``: not even loopback to the host),
* a read-only root filesystem, a size-capped ``noexec`` tmpfs at ``/tmp``,
* a private tmpfs of ``Limits.task_dir_mb`` at ``/task`` (the working directory), filled at start from the
  prepared task folder, which is bind-mounted read-only at ``/run/rcb-src``: what a run writes into its task
  folder never reaches the engine host's disk and a write past the limit fails with ENOSPC,
* memory limit == memory+swap limit (no swap), a CPU quota of ``Limits.cpu_quota`` cores (``nano_cpus``),
  a pids limit, rlimits for open files, file size and CPU seconds,
* every capability dropped, ``no-new-privileges``, a non-root user (``10001:10001``), an init process
  that reaps zombies and forwards the kill,
* a capped ``json-file`` log (the backend keeps only the tail of each stream anyway),
* NVIDIA devices only when ``RunSpec.needs_gpu`` is set.

Hidden paths (oracle files) are masked in the read-only view: each hidden *file* gets ``/dev/null``
bind-mounted over it and each hidden *directory* an empty read-only tmpfs, so the container sees (and
copies into ``/task``) an empty file/folder where the oracle was, and the unprivileged, capability-less
process cannot unmount the mask. A hidden path whose components involve a
symlink is refused (``infra_error``): a mount target is resolved inside the container, so a link could
redirect the mask away from the file it should hide.

Bind mounts are resolved by the engine on *its* host: the task folder (and the folder next to it that holds
a run's stdin) must live on a filesystem that the engine sees at the same path. With a local engine this is
always true; in compose, mount the runner's work folder into the worker at the identical host path.

The container is removed after every run, whatever happened. Every container carries the labels
``LABEL_RUN`` (a run id) and ``LABEL_DEADLINE`` (a Unix time after which it is certainly stale), so
``DockerSandbox.cleanup()`` can remove leftovers of a crashed worker without touching live runs of others.

The ``docker`` SDK is imported lazily, inside this module's functions, so the core package imports (and
the local sandbox works) where the SDK is not installed.
"""

from __future__ import annotations

import logging
import os
import posixpath
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, replace
from typing import Any

from .base import Limits, RunResult, RunSpec, SandboxUnavailable, tail

log = logging.getLogger(__name__)

#: Image used when neither the spec nor the backend names one; built from docker/eval.Dockerfile.
DEFAULT_IMAGE = "researchcodebench-eval:py3.11-torch2.13.0-cpu"
#: Repository of the evaluation images; the image of a locked environment is tagged ``<hash[:16]>-<variant>``.
IMAGE_REPOSITORY = "researchcodebench-eval"
#: The torch build of an image without a GPU.
CPU_VARIANT = "cpu"
#: The CUDA build of torch in the images of runs that need a GPU (a variant of download.pytorch.org/whl).
DEFAULT_CUDA_VARIANT = "cu128"
_VARIANT = re.compile(r"^(cpu|cu1[0-9]{2,3})$")
#: A locked environment's interpreter: ``<environments>/<64 hex lock hash>/bin/python[3[.N]]`` (envs.py).
_LOCKED_PYTHON = re.compile(r"(?:^|/)([0-9a-f]{64})/bin/python(?:3(?:\.[0-9]+)?)?$")
#: Labels of an evaluation image built from a lock: its lock hash and its torch build.
LABEL_LOCK_HASH = "org.researchcodebench.lock-hash"
LABEL_TORCH_VARIANT = "org.researchcodebench.torch-variant"
#: Label carrying the run id; every container this backend creates has it.
LABEL_RUN = "org.researchcodebench.run"
#: Label carrying the Unix time (seconds) after which a container of this backend is certainly stale.
LABEL_DEADLINE = "org.researchcodebench.deadline"
#: Where the task folder appears inside the container (also the working directory).
TASK_DIR = "/task"
#: Where an evaluation image holds its environment (docker/eval.Dockerfile): first on every run's PATH.
IMAGE_VENV = "/opt/rcb/venv"
#: Where a run's stdin file appears inside the container (only when ``RunSpec.stdin`` is given).
STDIN_PATH = "/run/rcb-stdin"
#: Where the prepared task folder is visible read-only inside the container (copied from here into /task).
SOURCE_DIR = "/run/rcb-src"
#: Exit status of the copy step when the task folder cannot be copied into /task (too big for the limit).
TASK_COPY_FAILED = 112
#: Exit statuses above this are "killed by signal (status - 128)", the convention of the init process.
_SIGNAL_BASE = 128
#: Seconds added to a run's timeout before its container counts as stale (start-up, kill, log reading).
_STALE_GRACE_S = 120.0


class _SpecError(ValueError):
    """The spec cannot be run safely (e.g. a hidden path that escapes the task folder)."""


def _sdk() -> Any:
    """The ``docker`` SDK module, or ``SandboxUnavailable`` when it is not installed.

    Checked by attribute because the repository's own ``docker/`` folder (the image recipes) would import
    as an empty namespace package when the SDK is absent and the repository root is on ``sys.path``.
    """
    try:
        import docker
    except ImportError:
        docker = None
    if docker is None or not hasattr(docker, "DockerClient"):
        raise SandboxUnavailable(
            "docker sandbox: the docker SDK is not installed (pip install docker==7.1.0), "
            "or use the local sandbox (--sandbox local)"
        )
    return docker


def _docker_image_hint(image: str) -> str:
    if locked_image_hash(image) is not None:
        return "build it with `python manage.py build_eval_images` (docs/sandbox.md)"
    return "build it with `python -m researchcodebench images` (docs/sandbox.md)"


def check_variant(variant: str) -> str:
    """``variant`` when it names a torch build we make images of (``cpu``, ``cu126``, ``cu128``, ...)."""
    if not _VARIANT.match(variant):
        raise ValueError(f"torch variant must be 'cpu' or a CUDA variant such as 'cu128', got {variant!r}")
    return variant


def image_name(lock_hash: str, *, variant: str) -> str:
    """The evaluation image of the environment locked as ``lock_hash`` with torch build ``variant``."""
    if not re.fullmatch(r"[0-9a-f]{64}", lock_hash):
        raise ValueError(f"{lock_hash!r} is not a lock hash (64 lower-case hex digits)")
    return f"{IMAGE_REPOSITORY}:{lock_hash[:16]}-{check_variant(variant)}"


def locked_image_hash(image: str) -> str | None:
    """The 16-digit lock hash prefix an image name of ``image_name`` carries, else None."""
    match = re.fullmatch(rf"{re.escape(IMAGE_REPOSITORY)}:([0-9a-f]{{16}})-(cpu|cu1[0-9]{{2,3}})", image)
    return match.group(1) if match else None


def lock_hash_of_python(python: str | None) -> str | None:
    """The lock hash of a locked environment's interpreter path (see the module docstring), else None."""
    if not python:
        return None
    match = _LOCKED_PYTHON.search(python.replace(os.sep, "/"))
    return match.group(1) if match else None


#: Where a locked environment's interpreter is said to live when only its image has it (``image_environment``).
IMAGE_ENVIRONMENTS = "/opt/rcb/images"


def image_environment(lock_text: str) -> Any:
    """The ``Environment`` of a lock whose tests run in its image, not on this host: nothing is built
    here, and its interpreter path (``IMAGE_ENVIRONMENTS/<hash>/bin/python``, which does not exist on the
    host) carries the lock hash that ``DockerSandbox.image_for`` turns into the image name. Raises
    ``envs.EnvironmentBuildError`` when ``lock_text`` is not an environment lock."""
    from ..environments import Environment
    from ..envs import Lock

    lock = Lock.from_text(lock_text)
    python = f"{IMAGE_ENVIRONMENTS}/{lock.hash}/bin/python"
    return Environment(
        id=f"image-{lock.hash[:16]}",
        python=python,
        executable=python,
        version=lock.python,
        packages=lock.packages,
        requirements_hash=lock.hash,
        heavy_modules=(),
        bind_paths=(),
    )


class ImageBuildError(RuntimeError):
    """An evaluation image could not be built; ``log_tail`` holds the end of the engine's build log."""

    def __init__(self, image: str, reason: str, log_tail: str = "") -> None:
        self.image = image
        self.reason = reason
        self.log_tail = log_tail
        super().__init__(f"building {image} failed: {reason}")


#: The base image of evaluation images when none is named: the public Python image of the lock's Python.
#: Where no registry can be reached, ``scripts/docker-engine.sh base-image`` makes one from Debian's packages
#: (``RCB_BASE_IMAGE``, docs/sandbox.md).
PUBLIC_BASE_IMAGE = "python:{python}-slim"
#: The image of tasks without their own environment (``DEFAULT_IMAGE``) is the image of this lock's base.
DEFAULT_GPU_IMAGE = "researchcodebench-eval:py3.11-torch2.13.0-gpu"
#: Longest the host may take to fetch a lock's wheels.
FETCH_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class ImageRecipe:
    """How evaluation images are built on this host.

    ``base_image`` is the image the environment is installed on (default ``PUBLIC_BASE_IMAGE`` of the
    lock's Python); ``python`` the interpreter on its PATH (default ``python<lock's Python>``);
    ``sources`` where the host fetches the lock's wheels (default: ``envs.default_sources()``, i.e. pip's own
    configuration on this host); ``cert`` the CA bundle handed to the one networked step (a CUDA variant's
    torch download; default the sources' bundle); ``pip_python`` the interpreter
    whose pip fetches the wheels (default this one); ``fetch`` what fills the context's ``wheels`` folder,
    called as ``fetch(lock_text, folder, recipe=recipe)`` (default ``fetch_wheels``).
    """

    base_image: str | None = None
    python: str | None = None
    sources: Any = None
    cert: str | None = None
    pip_python: str | None = None
    index_url: str = "https://pypi.org/simple"
    torch_index: str = "https://download.pytorch.org/whl"
    fetch: Any = None

    def base_for(self, python_version: str) -> str:
        return self.base_image or PUBLIC_BASE_IMAGE.format(python=python_version)

    def interpreter_for(self, python_version: str) -> str:
        return self.python or f"python{python_version}"

    def with_sources(self) -> ImageRecipe:
        """This recipe with its package sources settled (pip's configuration is read here, once per build)."""
        if self.sources is not None:
            return self
        from ..envs import default_sources

        return replace(self, sources=default_sources())


def eval_image_build_args(
    lock_text: str, *, variant: str, recipe: ImageRecipe | None = None
) -> dict[str, str]:
    """The build arguments of the image of ``lock_text`` (an environment lock, ``envs.Lock``)."""
    from ..envs import Lock

    recipe = recipe or ImageRecipe()
    lock = Lock.from_text(lock_text)
    return {
        "LOCK_HASH": lock.hash,
        "TORCH_VARIANT": check_variant(variant),
        "BASE_IMAGE": recipe.base_for(lock.python),
        "PYTHON": recipe.interpreter_for(lock.python),
        "INDEX_URL": recipe.index_url,
        "TORCH_INDEX": recipe.torch_index,
    }


def _pip_platform() -> str:
    from ..envs import PLATFORM

    arch, _, libc = PLATFORM.partition("-")
    return f"{libc}_{arch}"


def fetch_wheels(lock_text: str, folder: str, *, recipe: ImageRecipe | None = None) -> list[str]:
    """Fetch exactly the wheels of ``lock_text`` into ``folder`` with the host's pip and package sources
    (its index, extra indexes, find-links, CA settings and proxy), each checked against the lock's hash;
    returns their file names. Raises ``ImageBuildError`` naming pip's complaint when one cannot be had."""
    from ..envs import Lock

    sources = (recipe or ImageRecipe()).with_sources().sources
    lock = Lock.from_text(lock_text)
    os.makedirs(folder, exist_ok=True)
    argv = _pip_download_argv(recipe.pip_python or sys.executable, lock.python, folder, sources)
    image = image_name(lock.hash, variant=CPU_VARIANT)
    try:
        with tempfile.TemporaryDirectory(prefix="rcb-lock-") as tmp:
            lock_file = os.path.join(tmp, "environment.lock")
            with open(lock_file, "w", encoding="utf-8") as fh:
                fh.write(lock.text)
            argv += ["--requirement", lock_file]
            done = subprocess.run(argv, capture_output=True, text=True, timeout=FETCH_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ImageBuildError(image, f"fetching the lock's wheels failed: {exc}") from exc
    if done.returncode != 0:
        raise ImageBuildError(
            image,
            f"the host's pip could not fetch the lock's wheels from {sources.describe()}",
            (done.stderr or done.stdout)[-4000:],
        )
    wheels = sorted(name for name in os.listdir(folder) if name.endswith(".whl"))
    if len(wheels) != len(lock.packages):
        raise ImageBuildError(
            image, f"the lock names {len(lock.packages)} packages but {len(wheels)} wheels were fetched"
        )
    return wheels


def _pip_download_argv(pip_python: str, python_version: str, folder: str, sources: Any) -> list[str]:
    """``pip download`` of exactly the locked wheels (no dependencies, hashes required, binaries only) for
    the image's interpreter and platform into ``folder``, from ``sources`` (an ``envs.Sources``); the lock
    file is added by the caller."""
    major, _, minor = python_version.partition(".")
    argv = [
        pip_python,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--disable-pip-version-check",
        "--no-deps",
        "--require-hashes",
        "--only-binary=:all:",
        "--python-version",
        python_version,
        "--implementation",
        "cp",
        "--abi",
        f"cp{major}{minor}",
        "--abi",
        "abi3",
        "--abi",
        "none",
        "--platform",
        _pip_platform(),
        "--dest",
        folder,
    ]
    if sources.index_url:
        argv += ["--index-url", sources.index_url]
    for url in sources.extra_index_urls:
        argv += ["--extra-index-url", url]
    for link in sources.find_links:
        argv += ["--find-links", link]
    if sources.cert:
        argv += ["--cert", sources.cert]
    return argv


def _build_context(context: str, lock_text: str, *, variant: str, recipe: ImageRecipe) -> None:
    """Fill ``context`` with what the image's build sees, and nothing else of the host (``recipe`` has its
    sources settled)."""
    from ..environments import repo_root

    shutil.copyfile(repo_root() / "docker" / "eval.Dockerfile", os.path.join(context, "eval.Dockerfile"))
    with open(os.path.join(context, "environment.lock"), "w", encoding="utf-8") as fh:
        fh.write(lock_text)
    (recipe.fetch or fetch_wheels)(lock_text, os.path.join(context, "wheels"), recipe=recipe)
    sources = recipe.sources
    uv = os.path.join(context, "uv")
    shutil.copyfile(sources.executable(), uv)
    os.chmod(uv, 0o755)
    if variant != CPU_VARIANT:
        cert = recipe.cert or sources.cert
        if cert and os.path.isfile(cert):
            shutil.copyfile(cert, os.path.join(context, "ca-bundle.crt"))


def build_eval_image(
    client: Any,
    *,
    lock_text: str,
    variant: str,
    recipe: ImageRecipe | None = None,
    also_tag: str | None = None,
) -> tuple[str, float]:
    """Build the evaluation image of ``lock_text`` with torch build ``variant`` through ``client``
    (``images.build``); returns its name and the seconds the build took (fetching the wheels included).

    The build context is a private folder holding only the recipe (docker/eval.Dockerfile), the lock as
    ``environment.lock``, the lock's wheels (``fetch_wheels``), the host's uv and, for a CUDA variant, the
    CA bundle; a CPU image builds with no network at all. ``also_tag`` names the image a second time (the
    default image is the image of the base's lock). Raises ``ImageBuildError`` with the build log's tail
    when the wheels cannot be had or the engine refuses or the build fails, and
    ``envs.EnvironmentBuildError`` when ``lock_text`` is not an environment lock.
    """
    docker = _sdk()
    import requests

    recipe = (recipe or ImageRecipe()).with_sources()
    args = eval_image_build_args(lock_text, variant=variant, recipe=recipe)
    image = image_name(args["LOCK_HASH"], variant=variant)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rcb-image-") as context:
        _build_context(context, lock_text, variant=variant, recipe=recipe)
        try:
            built, _log = client.images.build(
                path=context,
                dockerfile="eval.Dockerfile",
                tag=image,
                buildargs=args,
                labels={LABEL_LOCK_HASH: args["LOCK_HASH"], LABEL_TORCH_VARIANT: variant},
                network_mode="none" if variant == CPU_VARIANT else "host",
                rm=True,
                forcerm=True,
            )
            if also_tag:
                repository, _, tag = also_tag.rpartition(":")
                built.tag(repository, tag)
        except docker.errors.BuildError as exc:
            lines = [str(chunk.get("stream") or chunk.get("error") or "") for chunk in exc.build_log or ()]
            raise ImageBuildError(image, str(exc.msg), "".join(lines)[-4000:]) from exc
        except (docker.errors.DockerException, requests.exceptions.RequestException, OSError) as exc:
            raise ImageBuildError(image, f"{type(exc).__name__}: {exc}") from exc
    return image, time.monotonic() - started


def base_lock(*, recipe: ImageRecipe | None = None) -> str:
    """The lock of the shared base (``envs.BASE_REQUIREMENTS``): the environment of tasks without their own,
    whose image is ``DEFAULT_IMAGE``."""
    from ..envs import lock_requirements

    return lock_requirements([], sources=(recipe or ImageRecipe()).with_sources().sources).text


def ensure_default_image(
    client: Any,
    *,
    variant: str = CPU_VARIANT,
    recipe: ImageRecipe | None = None,
    rebuild: bool = False,
    tag: str | None = None,
) -> tuple[str, str, float]:
    """Make ``tag`` (default ``DEFAULT_IMAGE``, ``DEFAULT_GPU_IMAGE`` for a CUDA ``variant``) the image of the
    base's lock as this host's package sources resolve it now; returns the tag, what was done and the seconds
    it took.

    What was done is ``present`` (the tag's lock-hash label is the lock's hash), ``retagged`` (the engine
    had the lock's image under its own name, from ``build_eval_image``) or ``built``. A tag whose label
    names another lock is stale: the base's pins stay, but their dependencies resolve to newer releases as
    the index gains them, so an engine kept from an earlier run can hold an image of an older lock. Raises
    ``ImageBuildError`` as ``build_eval_image`` does.
    """
    from ..envs import Lock

    tag = tag or (DEFAULT_IMAGE if variant == CPU_VARIANT else DEFAULT_GPU_IMAGE)
    recipe = (recipe or ImageRecipe()).with_sources()
    started = time.monotonic()
    lock_text = base_lock(recipe=recipe)
    lock_hash = Lock.from_text(lock_text).hash
    if not rebuild:
        if _image_of_lock(client, tag, lock_hash) is not None:
            return tag, "present", time.monotonic() - started
        own = _image_of_lock(client, image_name(lock_hash, variant=variant), lock_hash)
        if own is not None:
            repository, _, name = tag.rpartition(":")
            own.tag(repository, name)
            return tag, "retagged", time.monotonic() - started
    build_eval_image(client, lock_text=lock_text, variant=variant, recipe=recipe, also_tag=tag)
    return tag, "built", time.monotonic() - started


def _image_of_lock(client: Any, name: str, lock_hash: str) -> Any | None:
    """The engine's image ``name`` when its lock-hash label is ``lock_hash``; None when it is missing or was
    built from another lock (or none)."""
    try:
        image = client.images.get(name)
    except _sdk().errors.ImageNotFound:
        return None
    return image if (image.labels or {}).get(LABEL_LOCK_HASH) == lock_hash else None


def engine_client(base_url: str | None = None, *, timeout_s: float = 60.0) -> Any:
    """A client of the engine at ``base_url`` (else the one ``DOCKER_HOST`` names) that has answered a ping;
    ``SandboxUnavailable`` saying where it looked when the SDK is missing or no engine answers."""
    docker = _sdk()
    timeout = int(max(1, timeout_s))
    try:
        client = (
            docker.DockerClient(base_url=base_url, timeout=timeout)
            if base_url
            else docker.from_env(timeout=timeout)
        )
        client.ping()
    except Exception as exc:  # any failure here means the same thing: no engine to talk to
        where = base_url or "the engine DOCKER_HOST names (default unix:///var/run/docker.sock)"
        raise SandboxUnavailable(
            f"cannot reach a Docker engine at {where}: {exc} (scripts/docker-engine.sh start runs a private one)"
        ) from exc
    return client


def image_present(client: Any, name: str) -> bool:
    """Whether the engine of ``client`` has the image ``name`` (other engine errors propagate)."""
    try:
        client.images.get(name)
    except _sdk().errors.ImageNotFound:
        return False
    return True


class DockerSandbox:
    """Runs each ``RunSpec`` in a fresh, locked-down container and removes it afterwards.

    ``client`` is a ``docker.DockerClient`` (or an object with the same ``containers``/``images``/``ping``
    surface); when omitted, one is created on first use from ``base_url`` or, without it, from the
    environment (``DOCKER_HOST`` etc.). ``cpus``, when given, replaces the runs' ``Limits.cpu_quota``
    (cores); ``user`` the ``uid:gid`` the test
    runs as; ``tmp_size_mb`` the size of ``/tmp``; ``log_max_kb`` the cap of each of the (at most two)
    log files the engine keeps per container; ``engine_timeout_s`` bounds every other engine call;
    ``image_python`` replaces ``argv[0]`` when it is the host interpreter ``RunSpec.python`` (that path
    does not exist in the image); ``cuda_variant`` is the torch build of the images of runs that need a GPU.

    ``run`` never raises for the child's behaviour nor for engine failures: those become
    ``RunResult(infra_error=...)``.
    """

    name = "docker"
    #: Every run is a new container: nothing of an earlier run is there (docs/sandbox.md).
    slate = "container"

    def __init__(
        self,
        client: Any | None = None,
        *,
        base_url: str | None = None,
        image: str | None = None,
        cpus: float | None = None,
        user: str = "10001:10001",
        tmp_size_mb: int = 256,
        log_max_kb: int = 1024,
        engine_timeout_s: float = 60.0,
        image_python: str = "python",
        cuda_variant: str = DEFAULT_CUDA_VARIANT,
    ) -> None:
        if cpus is not None and cpus <= 0:
            raise ValueError(f"DockerSandbox: cpus must be > 0, got {cpus!r}")
        if tmp_size_mb <= 0 or log_max_kb <= 0:
            raise ValueError("DockerSandbox: tmp_size_mb and log_max_kb must be > 0")
        self._client = client
        self.base_url = base_url
        self.image = image or DEFAULT_IMAGE
        self.cpus = cpus
        self.user = user
        self.tmp_size_mb = tmp_size_mb
        self.log_max_kb = log_max_kb
        self.engine_timeout_s = engine_timeout_s
        self.image_python = image_python
        if cuda_variant == CPU_VARIANT:
            raise ValueError("DockerSandbox: cuda_variant must be a CUDA build such as 'cu128', not 'cpu'")
        self.cuda_variant = check_variant(cuda_variant)

    # -- engine access -------------------------------------------------------------------------------

    def client(self) -> Any:
        """The engine client, created on first use. Raises ``docker.errors.DockerException`` if unreachable."""
        if self._client is None:
            docker = _sdk()
            timeout = int(max(1, self.engine_timeout_s))
            if self.base_url:
                self._client = docker.DockerClient(base_url=self.base_url, timeout=timeout)
            else:
                self._client = docker.from_env(timeout=timeout)
        return self._client

    def check(self, image: str | None = None) -> None:
        """Raise ``SandboxUnavailable`` unless the engine answers and ``image`` (default: ours) exists."""
        docker = _sdk()
        import requests  # a dependency of the SDK, so only importable once the SDK is known present

        image = image or self.image
        # Without a base URL the SDK itself finds the engine (DOCKER_HOST, else its default socket).
        where = self.base_url or "the engine DOCKER_HOST names (default unix:///var/run/docker.sock)"
        try:
            client = self.client()
            client.ping()
        except (docker.errors.DockerException, requests.exceptions.RequestException, OSError) as exc:
            raise SandboxUnavailable(
                f"docker sandbox: cannot reach a Docker engine at {where} ({exc}). Start the Docker daemon "
                "(or set DOCKER_HOST), or use the local sandbox (--sandbox local)."
            ) from exc
        try:
            client.images.get(image)
        except docker.errors.ImageNotFound as exc:
            raise SandboxUnavailable(
                f"docker sandbox: evaluation image {image!r} not found on the engine; {_docker_image_hint(image)}"
            ) from exc
        except (docker.errors.DockerException, requests.exceptions.RequestException, OSError) as exc:
            raise SandboxUnavailable(f"docker sandbox: cannot inspect image {image!r}: {exc}") from exc

    def image_for(self, spec: RunSpec) -> str:
        """The image ``spec`` runs in (the order is in the module docstring)."""
        if spec.image:
            return spec.image
        lock_hash = lock_hash_of_python(spec.python)
        if lock_hash is not None:
            return image_name(lock_hash, variant=self.cuda_variant if spec.needs_gpu else CPU_VARIANT)
        return self.image

    # -- one run ---------------------------------------------------------------------------------------

    def run(self, spec: RunSpec) -> RunResult:
        """Run ``spec`` in a new container; the container is removed before this returns."""
        try:
            docker = _sdk()
        except SandboxUnavailable as exc:
            return RunResult(exit_code=None, duration_s=0.0, infra_error=str(exc))
        import requests  # a dependency of the SDK, so only importable once the SDK is known present

        engine_errors = (docker.errors.DockerException, requests.exceptions.RequestException, OSError)
        started = time.monotonic()
        container: Any | None = None
        stdin_dir: str | None = None
        try:
            workdir = os.path.abspath(spec.workdir)
            if not os.path.isdir(workdir):
                raise _SpecError(f"task folder {workdir!r} does not exist")
            mounts = self._mounts(workdir, spec.hidden_paths)
            if spec.stdin is not None:
                try:
                    stdin_dir, stdin_mount = self._stdin_mount(workdir, spec.stdin)
                except OSError as exc:
                    raise _SpecError(f"cannot write the run's stdin file: {exc}") from exc
                mounts.append(stdin_mount)
            try:
                self._grant_workdir(workdir)
            except OSError as exc:
                raise _SpecError(f"cannot hand the task folder to the container user: {exc}") from exc
            kwargs = self.create_kwargs(spec, mounts=mounts)
            container = self.client().containers.create(**kwargs)
            container.start()
            return self._wait_and_collect(container, spec.limits, started)
        except _SpecError as exc:
            return RunResult(
                exit_code=None, duration_s=time.monotonic() - started, infra_error=f"docker sandbox: {exc}"
            )
        except docker.errors.ImageNotFound as exc:
            image = self.image_for(spec)
            return RunResult(
                exit_code=None,
                duration_s=time.monotonic() - started,
                infra_error=f"docker sandbox: evaluation image {image!r} not found on the engine; "
                f"{_docker_image_hint(image)} ({exc})",
            )
        except engine_errors as exc:
            return RunResult(
                exit_code=None,
                duration_s=time.monotonic() - started,
                infra_error=f"docker engine error: {type(exc).__name__}: {exc}",
            )
        finally:
            if container is not None:
                self._remove(container)
            if stdin_dir is not None:
                shutil.rmtree(stdin_dir, ignore_errors=True)

    def create_kwargs(self, spec: RunSpec, *, mounts: list[Any]) -> dict[str, Any]:
        """The exact keyword arguments of ``containers.create`` for ``spec`` (``mounts`` prepared by run)."""
        from docker.types import DeviceRequest, LogConfig, Ulimit

        limits = spec.limits
        memory = limits.memory_mb * 1024 * 1024
        run_id = uuid.uuid4().hex
        deadline = time.time() + limits.timeout_s + _STALE_GRACE_S
        kwargs: dict[str, Any] = {
            "image": self.image_for(spec),
            "command": self._command(spec),
            "name": f"rcb-{run_id[:16]}",
            "labels": {LABEL_RUN: run_id, LABEL_DEADLINE: str(int(deadline))},
            "environment": self._environment(spec),
            "working_dir": TASK_DIR,
            "user": self.user,
            "network_mode": "none",
            "read_only": True,
            "tmpfs": {
                "/tmp": f"rw,noexec,nosuid,nodev,size={self.tmp_size_mb}m",
                TASK_DIR: f"rw,nosuid,nodev,size={limits.task_dir_mb}m,{self._tmpfs_owner()}",
            },
            "mounts": mounts,
            "mem_limit": memory,
            "memswap_limit": memory,
            "nano_cpus": int((self.cpus if self.cpus is not None else limits.cpu_quota) * 1_000_000_000),
            "pids_limit": limits.max_procs,
            "ulimits": [
                Ulimit(name="nofile", soft=limits.open_files, hard=limits.open_files),
                Ulimit(
                    name="fsize",
                    soft=limits.file_size_mb * 1024 * 1024,
                    hard=limits.file_size_mb * 1024 * 1024,
                ),
                # soft < hard: the process first gets SIGXCPU (a recognisable signal), SIGKILL a second later.
                Ulimit(name="cpu", soft=limits.effective_cpu_s(), hard=limits.effective_cpu_s() + 1),
            ],
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "init": True,
            "log_config": LogConfig(
                type=LogConfig.types.JSON, config={"max-size": f"{self.log_max_kb}k", "max-file": "2"}
            ),
            "stdin_open": False,
            "tty": False,
        }
        if spec.needs_gpu:
            kwargs["device_requests"] = [DeviceRequest(count=-1, capabilities=[["gpu"]])]
        return kwargs

    @staticmethod
    def _environment(spec: RunSpec) -> dict[str, str]:
        """The run's environment, with the image's environment first on PATH (the spec's PATH is the host's)."""
        env = dict(spec.env)
        env["PATH"] = f"{IMAGE_VENV}/bin" + (f":{env['PATH']}" if env.get("PATH") else "")
        return env

    def _tmpfs_owner(self) -> str:
        """Mount options giving the task tmpfs to the container user (a name cannot be resolved here)."""
        uid_gid = self.user.split(":")
        if all(part.isdigit() for part in uid_gid):
            uid = uid_gid[0]
            gid = uid_gid[1] if len(uid_gid) > 1 else uid
            return f"uid={uid},gid={gid},mode=0700"
        return "mode=1777"

    def _command(self, spec: RunSpec) -> list[str]:
        argv = list(spec.argv)
        if not argv:
            raise _SpecError("empty argv")
        if spec.python and argv[0] == spec.python:
            argv[0] = self.image_python
        # --copy-contents: a hidden file is a bound /dev/null in the view; copy it as an empty file (the
        # capability-less user could not create a device node).
        script = (
            f"cp -R --copy-contents --preserve=mode,timestamps {SOURCE_DIR}/. {TASK_DIR}/ || "
            f'{{ echo "rcb-task: cannot copy the task folder into {TASK_DIR} (task folder limit '
            f'{spec.limits.task_dir_mb} MB)" >&2; exit {TASK_COPY_FAILED}; }}; exec "$@"'
        )
        if spec.stdin is not None:
            # The engine's attach stream cannot reliably signal end-of-input; a read-only file can.
            script += f" < {STDIN_PATH}"
        return ["/bin/sh", "-c", script, "rcb-task", *argv]

    def _mounts(self, workdir: str, hidden_paths: tuple[str, ...]) -> list[Any]:
        from docker.types import Mount

        mounts: list[Any] = [Mount(target=SOURCE_DIR, source=workdir, type="bind", read_only=True)]
        real_workdir = os.path.realpath(workdir)
        for rel in hidden_paths:
            norm = posixpath.normpath(rel.replace(os.sep, "/"))
            if posixpath.isabs(norm) or norm == "." or norm == ".." or norm.startswith("../"):
                raise _SpecError(f"hidden path {rel!r} is not inside the task folder")
            host_path = os.path.join(workdir, *norm.split("/"))
            if not os.path.lexists(host_path):
                continue  # nothing to hide; creating a mount point would add a file to the task folder
            if os.path.realpath(host_path) != os.path.join(real_workdir, *norm.split("/")):
                raise _SpecError(f"hidden path {rel!r} involves a symlink and cannot be masked safely")
            target = f"{SOURCE_DIR}/{norm}"
            if os.path.isdir(host_path):
                mounts.append(
                    Mount(target=target, source=None, type="tmpfs", read_only=True, tmpfs_size=4096)
                )
            else:
                mounts.append(Mount(target=target, source="/dev/null", type="bind", read_only=True))
        return mounts

    def _stdin_mount(self, workdir: str, data: bytes) -> tuple[str, Any]:
        from docker.types import Mount

        # Next to the task folder, not in it (the test must not see an extra file) and not in this
        # process's /tmp, which a containerised worker does not share with the engine.
        folder = tempfile.mkdtemp(prefix=".rcb-stdin-", dir=os.path.dirname(workdir))
        os.chmod(folder, 0o755)
        path = os.path.join(folder, "stdin")
        try:
            with open(path, "wb") as fh:
                fh.write(data)
            os.chmod(path, 0o644)
        except OSError:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return folder, Mount(target=STDIN_PATH, source=path, type="bind", read_only=True)

    def _grant_workdir(self, workdir: str) -> None:
        """Let the container user read the task folder it copies into /task (a fresh copy owned by the
        runner)."""
        uid_gid = self.user.split(":")
        numeric = all(part.isdigit() for part in uid_gid)
        if hasattr(os, "geteuid") and os.geteuid() == 0 and numeric:
            uid = int(uid_gid[0])
            gid = int(uid_gid[1]) if len(uid_gid) > 1 else uid
            for root, dirs, files in os.walk(workdir):
                os.lchown(root, uid, gid)
                for entry in dirs + files:
                    os.lchown(os.path.join(root, entry), uid, gid)
        else:
            # Not root: cannot chown, so let every user read the private copy (nobody needs to write it).
            for root, _dirs, files in os.walk(workdir):
                os.chmod(root, 0o755)
                for entry in files:
                    path = os.path.join(root, entry)
                    if not os.path.islink(path):
                        os.chmod(path, os.stat(path).st_mode | 0o444)

    def _wait_and_collect(self, container: Any, limits: Limits, started: float) -> RunResult:
        import requests

        timed_out = False
        t0 = time.monotonic()
        try:
            status = container.wait(timeout=limits.timeout_s)
        except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
            # A read timeout may surface as ConnectionError; only a wait that lasted the limit is a timeout.
            if time.monotonic() - t0 < 0.9 * limits.timeout_s:
                raise
            timed_out = self._kill(container)
            status = container.wait(timeout=self.engine_timeout_s)
        duration = time.monotonic() - started
        container.reload()
        state = container.attrs.get("State") or {}
        oom = bool(state.get("OOMKilled"))
        stdout = tail(container.logs(stdout=True, stderr=False))
        stderr = tail(container.logs(stdout=False, stderr=True))
        # The engine reports its own failures while waiting (not the child's) in Error.Message.
        error_info = status.get("Error")
        error = error_info.get("Message") if isinstance(error_info, dict) else None
        code = status.get("StatusCode")
        exit_code: int | None = code
        signal: int | None = None
        if isinstance(code, int) and _SIGNAL_BASE < code <= _SIGNAL_BASE + 64:
            exit_code, signal = None, code - _SIGNAL_BASE
        if not error and code == TASK_COPY_FAILED and b"rcb-task:" in stderr:
            error = stderr.decode(errors="replace").strip()[-500:]
            return RunResult(exit_code=code, duration_s=duration, stderr=stderr, infra_error=error)
        return RunResult(
            exit_code=exit_code,
            duration_s=duration,
            stdout=stdout,
            stderr=stderr,
            signal=signal,
            timed_out=timed_out,
            oom=oom,
            infra_error=f"docker engine error while waiting: {error}" if error else None,
        )

    def _kill(self, container: Any) -> bool:
        """Kill a container at its deadline. False if it had already exited (it finished just in time)."""
        docker = _sdk()

        try:
            container.kill()
        except docker.errors.APIError:
            container.reload()
            if (container.attrs.get("State") or {}).get("Running"):
                raise
            return False
        return True

    def _remove(self, container: Any) -> None:
        try:
            container.remove(force=True)
        except Exception as exc:  # removal must never mask the run's result
            log.warning(
                "docker sandbox: could not remove container %s (%s); DockerSandbox.cleanup() will retry",
                getattr(container, "id", "?"),
                exc,
            )

    # -- housekeeping ----------------------------------------------------------------------------------

    def cleanup(self, *, everything: bool = False) -> int:
        """Remove leftover containers of this backend; return how many were removed.

        By default removes labelled containers that are not running or whose stale deadline has passed,
        so it is safe while other workers share the engine. ``everything=True`` also removes live ones
        (use only when no run can be in flight, e.g. at the start of the only worker on a host).
        Engine failures propagate as ``docker.errors.DockerException``.
        """
        docker = _sdk()
        now = time.time()
        removed = 0
        for container in self.client().containers.list(all=True, filters={"label": LABEL_RUN}):
            labels = container.labels or {}
            try:
                deadline = float(labels.get(LABEL_DEADLINE, "0"))
            except ValueError:
                deadline = 0.0
            if everything or container.status != "running" or deadline < now:
                try:
                    container.remove(force=True)
                except docker.errors.NotFound:
                    continue  # its own run removed it meanwhile
                removed += 1
        return removed
