"""The runner of a worker process, and the environments its tasks run in.

``shared_runner`` is the one core ``Runner`` of a worker process (warm interpreters, calibrated timeouts,
verdict cache), built from ``settings.RCB_SANDBOX`` and ``settings.RCB_EVAL_PYTHON``. The task folders it
runs in are the catalogue's: ``contributions.task_folders.task_version_task``.

``task_version_environment`` gives a task version's own environment (docs/environments.md): its stored lock
built or reused under ``settings.RCB_ENV_DIR``, or, for a version with requirements but no lock, those
requirements locked now; None for a version with neither (the runner's default interpreter).
``runner_assign_environment`` hands it (or why it cannot be built) to a runner before a task runs there.

Impossible variants (docs/integrity.md): every portal runner keeps the variants it derives in the store under
``settings.RCB_VARIANTS_DIR``; ``runner_seed_variants`` gives a runner the variants a task version stores
(its validation's, or ``import_pset --variants``') when they were derived in the environment the runner
runs the task in, so a worker does not derive them again.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings

from researchcodebench import envs
from researchcodebench.environments import Environment, EvalEnvironmentError, resolve_environment
from researchcodebench.pset import Task
from researchcodebench.runner import Runner, VerdictCache, make_sandbox
from researchcodebench.sandbox.base import Limits
from researchcodebench.sandbox.docker import image_environment
from researchcodebench.variants import SnippetVariants, VariantStore

if TYPE_CHECKING:
    from contributions.models import TaskVersion

log = logging.getLogger(__name__)

_runner: Runner | None = None
_lock = threading.Lock()


def _runner_settings() -> dict:
    """What every portal runner takes from the settings: the sandbox, the default interpreter, the limits,
    the store of impossible variants."""
    return {
        "sandbox": make_sandbox(
            settings.RCB_SANDBOX,
            docker_image=settings.RCB_DOCKER_IMAGE,
            allow_unsandboxed=settings.RCB_ALLOW_UNSANDBOXED,
        ),
        "environment": settings.RCB_EVAL_PYTHON or None,
        "limits": Limits(task_dir_mb=settings.RCB_TASK_DIR_MB, cpu_quota=settings.RCB_CPU_QUOTA),
        "variant_store": VariantStore(str(settings.RCB_VARIANTS_DIR)),
    }


def shared_runner() -> Runner:
    """This process's core runner (created on first use, kept warm for the life of the worker)."""
    global _runner
    with _lock:
        if _runner is None:
            cache = (
                VerdictCache(str(Path(settings.VAR_DIR) / "cache")) if settings.RCB_VERDICT_CACHE else None
            )
            _runner = Runner(
                **_runner_settings(),
                cache=cache,
                workers=1,
                warm_memory_budget_mb=settings.RCB_WARM_MEMORY_MB,
            )
            environments_prune()
        return _runner


def shared_runner_close() -> None:
    """Stop this process's shared runner (its warm servers and their cgroups), if it was started. The next
    ``shared_runner()`` starts a new one. For worker shutdown and for processes that validated in-process
    (``load_demo``, tests), so that no warm server outlives the work that needed it."""
    global _runner
    with _lock:
        runner, _runner = _runner, None
    if runner is not None:
        runner.close()


def cold_runner() -> Runner:
    """A new runner that shares nothing with ``shared_runner``: no warm interpreter, no verdict cache, and
    its own reference runs (the test-count check runs each task's reference again, cold). The timeout is
    the task's cap rather than one calibrated on a warm start. Close it after use (a context manager).
    This is the independent harness path of a maintainer's re-judge (docs/integrity.md#re-judging)."""
    return Runner(
        **_runner_settings(),
        cache=None,
        warm=False,
        calibrate=False,
        workers=1,
    )


def env_sources() -> envs.Sources:
    """The package sources of environments (the catalogue's: ``contributions.services.environment_sources``)."""
    from contributions.services import environment_sources

    return environment_sources()


_locks: dict[tuple[str, ...], envs.Lock] = {}


def requirements_lock(requirements: list[str] | tuple[str, ...]) -> envs.Lock:
    """The lock of ``requirements`` (resolved once per process); raises ``EnvironmentBuildError``."""
    key = tuple(sorted(requirements))
    if key not in _locks:
        try:
            _locks[key] = envs.lock_requirements(
                key, sources=env_sources(), cache_root=str(settings.RCB_ENV_DIR)
            )
        except envs.RequirementsError as exc:
            raise envs.EnvironmentBuildError(package=None, reason=str(exc)) from exc
    return _locks[key]


def lock_environment(lock: envs.Lock) -> tuple[Environment, envs.BuiltEnvironment]:
    """The environment of ``lock``, built on this host when missing; raises ``EnvironmentBuildError``."""
    built = envs.build_environment(lock, cache_root=settings.RCB_ENV_DIR, sources=env_sources())
    try:
        return resolve_environment(built.python), built
    except EvalEnvironmentError as exc:
        raise envs.EnvironmentBuildError(package=None, reason=str(exc), log_path=built.log_path) from exc


def task_version_environment(*, task_version: TaskVersion) -> Environment | None:
    """The environment ``task_version``'s tests run in (see the module docstring); raises
    ``EnvironmentBuildError`` naming the package when it cannot be resolved or built."""
    if task_version.environment_lock:
        lock = envs.Lock.from_text(task_version.environment_lock)
    elif task_version.environment_requirements:
        lock = requirements_lock(list(task_version.environment_requirements))
    else:
        return None
    if settings.RCB_SANDBOX == "docker":
        # The test runs in the lock's image (manage.py build_eval_images), so this host builds nothing.
        return image_environment(lock.text)
    return lock_environment(lock)[0]


def runner_assign_environment(*, runner: Runner, task: Task, task_version: TaskVersion) -> None:
    """Make ``runner`` run ``task`` in the version's environment; one that cannot be built makes its runs
    infrastructure verdicts naming the package (never the model's)."""
    try:
        environment = task_version_environment(task_version=task_version)
    except envs.EnvironmentBuildError as exc:
        log.warning("%s: %s", task_version, exc)
        runner.assign_environment(task, exc)
        return
    if environment is not None:
        runner.assign_environment(task, environment)


def runner_seed_variants(*, runner: Runner, task: Task, task_version: TaskVersion) -> int:
    """Give ``runner`` the impossible variants ``task_version`` stores for ``task`` (its materialised folder),
    when they were derived in the environment the runner runs it in (after ``runner_assign_environment``)
    and the runner has none of its own for the snippet yet; returns how many snippets were seeded. A version
    without variants, or with variants of another environment, leaves the runner to derive (or read its
    store)."""
    stored = task_version.variants if isinstance(task_version.variants, dict) else {}
    if not stored or not task_version.variants_environment:
        return 0
    try:
        environment = runner.environment_of(task).id
    except envs.EnvironmentBuildError:
        return 0
    if environment != task_version.variants_environment:
        return 0
    names = {s.name for s in task.snippets}
    seeded = []
    for name, data in stored.items():
        if name not in names or (task.root, name) in runner.variant_sources:
            continue
        try:
            seeded.append(SnippetVariants.from_dict(data))
        except (KeyError, TypeError, ValueError, AttributeError):
            log.warning(
                "%s: the stored variants of %r do not read; the worker derives them", task_version, name
            )
    runner.seed_variants(task, seeded)
    return len(seeded)


def environments_prune() -> list[str]:
    """Remove environments unused for ``RCB_ENV_MAX_AGE_DAYS`` and beyond ``RCB_ENV_MAX_GB`` (their own
    bytes), least recently used first; returns the removed lock hashes. Failures are logged, never raised:
    pruning is housekeeping."""
    try:
        return envs.prune_environments(
            settings.RCB_ENV_DIR,
            max_age_days=settings.RCB_ENV_MAX_AGE_DAYS,
            max_bytes=int(settings.RCB_ENV_MAX_GB * 1024**3),
        )
    except OSError:
        log.exception("could not prune the environments in %s", settings.RCB_ENV_DIR)
        return []
