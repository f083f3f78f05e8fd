"""Impossible variants of task versions, derived with a runner and stored with the version (docs/integrity.md).

A version validated as a contribution stores the variants its validation derived; ``manage.py import_pset
--variants`` asks for those of imported versions (``contributions.signals.variants_wanted``), which
``task_version_derive_variants`` derives in the version's own environment (or reads from the runner's store)
and stores once (``contributions.services.task_version_store_variants``). Versions that store none get theirs
derived by the worker that first confirms a pass on them (``evaluation.workspace``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from contributions.models import TaskVersion
from contributions.services import task_version_store_variants
from researchcodebench import envs
from researchcodebench.runner import Runner


@dataclass(frozen=True)
class VariantsOutcome:
    """What ``task_version_derive_variants`` did for one version: how many of its ``snippets`` have variants
    (``with_variants``), those without and why (``without``: name -> note), where they came from
    (``source``: "derived", "read from the store", "stored with the version"), the seconds it took, or why
    none were stored (``error``)."""

    task_version: TaskVersion
    snippets: int
    with_variants: int
    without: dict[str, str]
    source: str
    seconds: float
    error: str = ""

    def line(self) -> str:
        """One line for the operator."""
        key = self.task_version.task.key
        if self.error:
            return f"task {key}: no impossible variants stored: {self.error}"
        line = (
            f"task {key}: impossible variants for {self.with_variants} of {self.snippets} snippet(s), "
            f"{self.source} in {self.seconds:.1f} s"
        )
        if self.without:
            shown = "; ".join(f"{name!r} ({note})" for name, note in list(self.without.items())[:5])
            line += f"; none for {shown}"
        return line


def _stored_outcome(task_version: TaskVersion) -> VariantsOutcome:
    stored = task_version.variants if isinstance(task_version.variants, dict) else {}
    without = {
        name: str(data.get("note", ""))
        for name, data in stored.items()
        if isinstance(data, dict) and not data.get("variants")
    }
    return VariantsOutcome(
        task_version, len(stored), len(stored) - len(without), without, "stored with the version", 0.0
    )


def task_version_derive_variants(*, task_version: TaskVersion, runner: Runner) -> VariantsOutcome:
    """Derive the impossible variants of every snippet of ``task_version`` with ``runner``, in the version's
    environment (its lock's, else the runner's default), and store them with the version; a version that
    stores variants keeps them. Nothing is stored when the version has no files, its environment cannot be
    built or its reference does not pass there (its variants would say nothing)."""
    from contributions.task_folders import task_version_task
    from evaluation.workspace import runner_assign_environment

    if task_version.variants_environment:
        return _stored_outcome(task_version)
    if not task_version.has_files:
        return VariantsOutcome(task_version, 0, 0, {}, "", 0.0, "the version has no files")
    started = time.monotonic()
    task = task_version_task(task_version=task_version)
    runner_assign_environment(runner=runner, task=task, task_version=task_version)
    try:
        environment = runner.environment_of(task).id
    except envs.EnvironmentBuildError as exc:
        return VariantsOutcome(task_version, len(task.snippets), 0, {}, "", 0.0, str(exc))
    if not runner.coverage(task)["tests"]:
        error = f"the task's reference does not pass in {environment}"
        return VariantsOutcome(task_version, len(task.snippets), 0, {}, "", 0.0, error)
    found = {s.name: runner.snippet_variants(task, s) for s in task.snippets}
    sources = {runner.variant_sources.get((task.root, name)) for name in found}
    task_version_store_variants(
        task_version=task_version,
        variants={name: item.to_dict() for name, item in found.items()},
        environment=environment,
    )
    without = {name: item.note for name, item in found.items() if not item.variants}
    return VariantsOutcome(
        task_version,
        len(found),
        len(found) - len(without),
        without,
        "derived" if "derived" in sources else "read from the store",
        time.monotonic() - started,
    )


def task_versions_derive_variants(
    *, task_version_ids: Iterable[int], runner: Runner, report: Callable[[str], object] | None = None
) -> list[VariantsOutcome]:
    """``task_version_derive_variants`` for each version of ``task_version_ids`` in order, ``report`` getting
    each one's line as it is done."""
    ids = list(task_version_ids)
    versions = TaskVersion.objects.select_related("task").in_bulk(ids)
    outcomes = []
    for pk in ids:
        version = versions.get(pk)
        if version is None:
            continue
        outcome = task_version_derive_variants(task_version=version, runner=runner)
        outcomes.append(outcome)
        if report is not None:
            report(outcome.line())
    return outcomes
