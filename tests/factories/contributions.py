"""Factories of the catalogue (papers, tasks, task versions, snippets, releases) and of proposals.

The portal writes these rows only through the contributions services; tests build them directly so that a
test of a page or a score needs no task folder. Rows with a natural key (paper and task key, a task's
version number, a version's snippet name) are fetched when they already exist, so that two releases built
by the same helper share their task versions, as releases of the real catalogue do.
"""

from __future__ import annotations

from pathlib import Path

import factory

from contributions.intake import IntakeResult
from contributions.models import Paper, Proposal, Release, ReleaseEntry, Snippet, Task, TaskVersion


class PaperFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Paper
        django_get_or_create = ("key",)

    key = factory.Sequence(lambda n: f"paper-{n}")
    title = factory.LazyAttribute(lambda o: f"Title of {o.key}")


class TaskFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Task
        django_get_or_create = ("key",)

    paper = factory.SubFactory(PaperFactory)
    key = factory.LazyAttribute(lambda o: o.paper.key)


class TaskVersionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = TaskVersion
        django_get_or_create = ("task", "number")

    task = factory.SubFactory(TaskFactory)
    number = 1
    content_hash = factory.Sequence(lambda n: f"{n:064x}")
    origin = TaskVersion.Origin.IMPORTED


class SnippetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Snippet
        django_get_or_create = ("task_version", "name")

    task_version = factory.SubFactory(TaskVersionFactory)
    name = factory.Sequence(lambda n: f"snippet {n}")
    ordinal = factory.Sequence(lambda n: n)
    lines = 3


class ReleaseFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Release

    name = factory.Sequence(lambda n: f"release-{n}")


class ReleaseEntryFactory(factory.django.DjangoModelFactory):
    """One task version in a release; ``task`` follows the version (the model keeps both)."""

    class Meta:
        model = ReleaseEntry

    release = factory.SubFactory(ReleaseFactory)
    task_version = factory.SubFactory(TaskVersionFactory)
    task = factory.SelfAttribute("task_version.task")
    position = 0


# --------------------------------------------------------------------------------------- contributions

#: the example task the proposal builders upload (a small, fast task: one annotated file, one test)
EXAMPLE_TASK = Path(__file__).resolve().parents[2] / "examples" / "pset" / "rmsnorm"


def example_upload(**replace: bytes) -> IntakeResult:
    """The files of ``examples/pset/rmsnorm`` as what the safe intake returns for an archive upload; keyword
    arguments replace or add files by path: ``example_upload(**{"rmsnorm.py": b"..."})``."""
    files = {
        path.relative_to(EXAMPLE_TASK).as_posix(): path.read_bytes()
        for path in sorted(EXAMPLE_TASK.rglob("*"))
        if path.is_file() and path.name != "task.yaml"
    }
    files.update(replace)
    return IntakeResult(files=files, source="archive", origin="rmsnorm.zip", commit=None)


#: the declarations of the example upload (form step c)
EXAMPLE_MANIFEST = {
    "annotated_files": ["rmsnorm.py"],
    "oracle_files": ["rmsnorm_ref.py"],
    "test_entry": "paper2code_test.py",
    "paper_file": "paper2code_paper.md",
}


class ProposalFactory(factory.django.DjangoModelFactory):
    """A draft proposal (build other states through the services, as the portal does)."""

    class Meta:
        model = Proposal

    author = factory.SubFactory("tests.factories.users.UserFactory")
    task_key = factory.Sequence(lambda n: f"proposal-{n}")
    title = factory.LazyAttribute(lambda o: f"Paper of {o.task_key}")
    meta = factory.LazyAttribute(lambda o: {"id": o.task_key, "title": o.title})
