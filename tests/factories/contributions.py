"""Factories of the catalogue (papers, tasks, task versions, snippets, releases).

The portal writes these rows only through the contributions services; tests build them directly so that a
test of a page or a score needs no task folder. Rows with a natural key (paper and task key, a task's
version number, a version's snippet name) are fetched when they already exist, so that two releases built
by the same helper share their task versions, as releases of the real catalogue do.
"""

from __future__ import annotations

import factory

from contributions.models import Paper, Release, ReleaseEntry, Snippet, Task, TaskVersion


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
