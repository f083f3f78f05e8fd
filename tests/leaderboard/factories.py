"""Test data for the leaderboard: factory_boy factories and a builder of scored runs from verdict strings,
plus a module-scoped fixture with the paper's published results imported and aggregated."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping
from pathlib import Path

import factory
import pytest
from django.db import transaction
from django.utils import timezone

from contributions.models import Paper, Release, ReleaseEntry, Snippet, Task, TaskVersion
from evaluation.models import Completion, EvaluationRun, LanguageModel, TestResult
from researchcodebench import scoring

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data"
ORIGINAL = SHARED / "overall_stats.json"
REGISTRY = SHARED / "papers.yaml"


class PaperFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Paper

    key = factory.Sequence(lambda n: f"paper-{n}")
    title = factory.LazyAttribute(lambda o: f"Title of {o.key}")
    first_commit_date = dt.date(2025, 3, 1)


class TaskFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Task

    paper = factory.SubFactory(PaperFactory)
    key = factory.LazyAttribute(lambda o: o.paper.key)


class TaskVersionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = TaskVersion

    task = factory.SubFactory(TaskFactory)
    number = 1
    content_hash = factory.Sequence(lambda n: f"{n:064x}")
    origin = TaskVersion.Origin.IMPORTED


class SnippetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Snippet

    task_version = factory.SubFactory(TaskVersionFactory)
    name = factory.Sequence(lambda n: f"snippet {n}")
    ordinal = factory.Sequence(lambda n: n)
    lines = 3


class LanguageModelFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = LanguageModel

    key = factory.Sequence(lambda n: f"MODEL_{n}")
    name = factory.LazyAttribute(lambda o: o.key.replace("_", "-").title())
    developer = "OpenAI"
    open_weights = False
    knowledge_cutoff = dt.date(2024, 10, 1)
    knowledge_cutoff_raw = factory.LazyAttribute(
        lambda o: o.knowledge_cutoff.strftime("%Y-%m") if o.knowledge_cutoff else ""
    )


class RunFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = EvaluationRun

    model = factory.SubFactory(LanguageModelFactory)
    template = "rcb-v2"
    with_paper = True
    source = EvaluationRun.Source.GENERATED
    verification = EvaluationRun.Verification.GENERATED
    status = EvaluationRun.Status.FINISHED
    finished_at = factory.LazyFunction(timezone.now)


def make_benchmark(
    papers: Mapping[str, tuple[dt.date | None, list[int]]], release: str | None = "rel"
) -> tuple[Release | None, dict[str, list[Snippet]]]:
    """Papers (key -> (first commit date, snippet line counts)), one task each, optionally in a release."""
    rel = Release.objects.create(name=release) if release else None
    out: dict[str, list[Snippet]] = {}
    for key, (date, lines) in papers.items():
        version = TaskVersionFactory(task__paper__key=key, task__paper__first_commit_date=date)
        out[key] = [
            SnippetFactory(task_version=version, name=f"s{i}", ordinal=i, lines=n)
            for i, n in enumerate(lines)
        ]
        if rel is not None:
            ReleaseEntry.objects.create(release=rel, task_version=version, task=version.task)
    return rel, out


def make_run(
    snippets: Mapping[str, list[Snippet]],
    verdicts: Mapping[str, str],
    *,
    categories: Mapping[str, str] | None = None,
    **run_kwargs,
) -> EvaluationRun:
    """A run whose results follow ``verdicts``: paper key -> one character per snippet and index, snippets
    separated by spaces, e.g. ``"PF F- P"`` (P passed, F failed, - no result, I infrastructure failure).
    ``categories`` maps paper key -> category of its failures (default "logic")."""
    run = RunFactory(**run_kwargs)
    completions, marks = [], []
    for paper, text in verdicts.items():
        for snippet, per_idx in zip(snippets[paper], text.split(" "), strict=True):
            for idx, mark in enumerate(per_idx):
                if mark == "-":
                    continue
                completions.append(
                    Completion(run=run, snippet=snippet, completion_idx=idx, stage=Completion.Stage.DONE)
                )
                marks.append((mark, (categories or {}).get(paper, "logic")))
    Completion.objects.bulk_create(completions)
    results = []
    for c, (mark, category) in zip(completions, marks, strict=True):
        if mark == "P":
            results.append(TestResult(completion=c, outcome="passed", passed=True, tier="none"))
        elif mark == "I":
            results.append(
                TestResult(
                    completion=c, outcome="infra_error", passed=False, category="sandbox_failure",
                    tier="infrastructure",
                )
            )  # fmt: skip
        else:
            results.append(TestResult(completion=c, outcome="failed", passed=False, category=category))
    TestResult.objects.bulk_create(results)
    return run


def snippet_results(
    snippets: Mapping[str, list[Snippet]], verdicts: Mapping[str, str]
) -> list[scoring.SnippetResult]:
    """The same verdicts as core ``SnippetResult`` objects (infrastructure failures left out)."""
    out = []
    for paper, text in verdicts.items():
        for snippet, per_idx in zip(snippets[paper], text.split(" "), strict=True):
            for idx, mark in enumerate(per_idx):
                if mark in "PF":
                    out.append(scoring.SnippetResult(paper, snippet.name, snippet.lines, idx, mark == "P"))
    return out


def published_available() -> bool:
    try:
        import evaluation.services.published  # noqa: F401
    except ImportError:
        return False
    return ORIGINAL.is_file() and REGISTRY.is_file()


@pytest.fixture(scope="module")
def published_board(django_db_setup, django_db_blocker) -> Iterator[None]:
    """The 32 published models imported (with the registry's dates) and aggregated, once per module;
    rolled back afterwards. Skips when the data or the importer is absent."""
    if not published_available():
        pytest.skip(f"needs {ORIGINAL}, {REGISTRY} and evaluation.services.published")
    from evaluation.services.published import published_import
    from leaderboard.services import leaderboard_refresh_stale

    with django_db_blocker.unblock():
        with transaction.atomic():
            published_import(source=ORIGINAL, papers=REGISTRY)
            leaderboard_refresh_stale()
            yield
            transaction.set_rollback(True)
