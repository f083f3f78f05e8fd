"""Small catalogue and run builders for the evaluation page, upload and API tests (ORM only, no workers)."""

from __future__ import annotations

import json
from decimal import Decimal

from contributions.models import Paper, Release, ReleaseEntry, Snippet, Task, TaskVersion
from evaluation.models import Completion, EvaluationRun, LanguageModel, TestResult

#: task key -> snippet names of the test release ("gamma" is metadata only: no files, cannot be tested)
TASKS = {"alpha": ["a1", "a2"], "beta": ["b1"]}


def make_release(name: str = "r1", *, with_metadata_only: bool = True) -> Release:
    """A release with two testable tasks (3 snippets) and, optionally, one metadata-only task."""
    paper, _ = Paper.objects.get_or_create(key="P", defaults={"title": "A paper"})
    release = Release.objects.create(name=name)
    tasks = dict(TASKS)
    if with_metadata_only:
        tasks["gamma"] = ["g1"]
    for position, (key, snippets) in enumerate(tasks.items()):
        task, _ = Task.objects.get_or_create(key=key, defaults={"paper": paper})
        version, _ = TaskVersion.objects.get_or_create(
            task=task,
            number=1,
            defaults={
                "content_hash": f"hash-{key}",
                "origin": TaskVersion.Origin.IMPORTED,
                "has_files": key != "gamma",
            },
        )
        for ordinal, snippet in enumerate(snippets):
            Snippet.objects.get_or_create(
                task_version=version, name=snippet, defaults={"ordinal": ordinal, "lines": 3}
            )
        ReleaseEntry.objects.create(release=release, task_version=version, task=task, position=position)
    return release


def make_model(key: str = "m1", name: str | None = None) -> LanguageModel:
    return LanguageModel.objects.create(key=key, name=name or f"Model {key}")


def jsonl(*records: dict | str) -> bytes:
    """JSON lines (a str record is written as is, to make broken lines)."""
    return "\n".join(r if isinstance(r, str) else json.dumps(r) for r in records).encode() + b"\n"


def full_predictions() -> bytes:
    return jsonl(
        *(
            {"task": task, "snippet": snippet, "completion_idx": 0, "code": "return 1"}
            for task, snippets in TASKS.items()
            for snippet in snippets
        )
    )


def make_run(
    *,
    model: LanguageModel,
    release: Release,
    status: str = EvaluationRun.Status.TESTING,
    source: str = EvaluationRun.Source.GENERATED,
    stages: list[str] | None = None,
    outcomes: dict[int, str] | None = None,
    errors: dict[int, str] | None = None,
) -> EvaluationRun:
    """A run with one completion per snippet of ``release`` (in order), in the given ``stages``;
    ``outcomes`` maps an item index to the outcome of its test result; ``errors`` to its error text."""
    run = EvaluationRun.objects.create(
        model=model,
        release=release,
        source=source,
        verification=(
            EvaluationRun.Verification.UPLOADED
            if source == EvaluationRun.Source.UPLOADED
            else EvaluationRun.Verification.GENERATED
        ),
        status=status,
    )
    snippets = list(
        Snippet.objects.filter(
            task_version__release_entries__release=release, task_version__has_files=True
        ).order_by("task_version__task__key", "ordinal")
    )
    stages = stages or [Completion.Stage.PENDING_TEST] * len(snippets)
    for i, (snippet, stage) in enumerate(zip(snippets, stages, strict=False)):
        completion = Completion.objects.create(
            run=run,
            snippet=snippet,
            stage=stage,
            error=(errors or {}).get(i, ""),
            cost_usd=Decimal("0.0125"),
            input_tokens=100,
            output_tokens=50,
        )
        outcome = (outcomes or {}).get(i)
        if outcome:
            TestResult.objects.create(
                completion=completion,
                outcome=outcome,
                passed=outcome == TestResult.Outcome.PASSED,
                tier=(
                    TestResult.Tier.INFRASTRUCTURE
                    if outcome == TestResult.Outcome.INFRA_ERROR
                    else TestResult.Tier.MODEL
                ),
                exception_type="AssertionError" if outcome == TestResult.Outcome.FAILED else "",
                exception_message="outputs differ" if outcome == TestResult.Outcome.FAILED else "",
            )
    return run
