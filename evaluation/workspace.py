"""The runner of a worker process.

``shared_runner`` is the one core ``Runner`` of a worker process (warm interpreters, calibrated timeouts,
verdict cache), built from ``settings.RCB_SANDBOX`` and ``settings.RCB_EVAL_PYTHON``. The task folders it
runs in are the catalogue's: ``contributions.task_folders.task_version_task``.
"""

from __future__ import annotations

import threading
from pathlib import Path

from django.conf import settings

from researchcodebench.runner import Runner, VerdictCache, make_sandbox
from researchcodebench.sandbox.base import Limits

_runner: Runner | None = None
_lock = threading.Lock()


def shared_runner() -> Runner:
    """This process's core runner (created on first use, kept warm for the life of the worker)."""
    global _runner
    with _lock:
        if _runner is None:
            cache = (
                VerdictCache(str(Path(settings.VAR_DIR) / "cache")) if settings.RCB_VERDICT_CACHE else None
            )
            _runner = Runner(
                sandbox=make_sandbox(
                    settings.RCB_SANDBOX,
                    docker_image=settings.RCB_DOCKER_IMAGE,
                    allow_unsandboxed=settings.RCB_ALLOW_UNSANDBOXED,
                ),
                environment=settings.RCB_EVAL_PYTHON or None,
                limits=Limits(task_dir_mb=settings.RCB_TASK_DIR_MB, cpu_quota=settings.RCB_CPU_QUOTA),
                cache=cache,
                workers=1,
            )
        return _runner


def cold_runner() -> Runner:
    """A new runner that shares nothing with ``shared_runner``: no warm interpreter, no verdict cache, and
    its own reference runs (the test-count check runs each task's reference again, cold). The timeout is
    the task's cap rather than one calibrated on a warm start. Close it after use (a context manager).
    This is the independent harness path of a maintainer's re-judge (docs/integrity.md#re-judging)."""
    return Runner(
        sandbox=make_sandbox(
            settings.RCB_SANDBOX,
            docker_image=settings.RCB_DOCKER_IMAGE,
            allow_unsandboxed=settings.RCB_ALLOW_UNSANDBOXED,
        ),
        environment=settings.RCB_EVAL_PYTHON or None,
        limits=Limits(task_dir_mb=settings.RCB_TASK_DIR_MB, cpu_quota=settings.RCB_CPU_QUOTA),
        cache=None,
        warm=False,
        calibrate=False,
        workers=1,
    )
