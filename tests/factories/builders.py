"""Higher-level builders made of the factories: small benchmarks, runs with verdicts, the upload tests'
release, predictions files (good and adversarial) and API client, a model served by the fake LLM server,
and proposals moved through the real workflow services."""

from __future__ import annotations

import datetime as dt
import itertools
import json
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from django.apps import apps
from rest_framework.test import APIClient

from contributions.models import Proposal, ProposalRevision, Release, Snippet
from contributions.services import (
    proposal_create,
    proposal_review,
    proposal_submit,
    proposal_validation_finish,
    proposal_validation_start,
    revision_create,
)
from contributions.services.proposals import RUBRIC_KEYS
from evaluation.models import Completion, EvaluationRun, LanguageModel, TestResult
from evaluation.services.verdicts import test_result_record
from researchcodebench import scoring
from researchcodebench.runner import Verdict
from researchcodebench.validation import Finding, ValidationReport
from tests.factories.contributions import (
    EXAMPLE_MANIFEST,
    PaperFactory,
    ReleaseEntryFactory,
    ReleaseFactory,
    SnippetFactory,
    TaskVersionFactory,
    example_upload,
)
from tests.factories.evaluation import (
    CompletionFactory,
    EvaluationRunFactory,
    LanguageModelFactory,
    TestResultFactory,
)
from tests.factories.users import UserFactory, api_token_for

# --- benchmarks and runs described by verdict strings (scores, leaderboard) --------------------------


def make_benchmark(
    papers: Mapping[str, tuple[dt.date | None, list[int]]], release: str | None = "rel"
) -> tuple[Release | None, dict[str, list[Snippet]]]:
    """Papers (key -> (first commit date, snippet line counts)), one task each, optionally in a release."""
    rel = ReleaseFactory(name=release) if release else None
    out: dict[str, list[Snippet]] = {}
    for key, (date, lines) in papers.items():
        version = TaskVersionFactory(task__paper__key=key, task__paper__first_commit_date=date)
        out[key] = [
            SnippetFactory(task_version=version, name=f"s{i}", ordinal=i, lines=n)
            for i, n in enumerate(lines)
        ]
        if rel is not None:
            ReleaseEntryFactory(release=rel, task_version=version)
    return rel, out


def make_run(
    snippets: Mapping[str, list[Snippet]],
    verdicts: Mapping[str, str],
    *,
    categories: Mapping[str, str] | None = None,
    **run_kwargs,
) -> EvaluationRun:
    """A run (``EvaluationRunFactory(**run_kwargs)``) whose results follow ``verdicts``: paper key -> one
    character per snippet and index, snippets separated by spaces, e.g. ``"PF F- P"`` (P passed, F failed,
    - no result, I infrastructure failure). ``categories`` maps paper key -> category of its failures
    (default "logic")."""
    run = EvaluationRunFactory(**run_kwargs)
    completions, results = [], []
    for paper, text in verdicts.items():
        for snippet, per_idx in zip(snippets[paper], text.split(" "), strict=True):
            for idx, mark in enumerate(per_idx):
                if mark == "-":
                    continue
                completion = CompletionFactory.build(run=run, snippet=snippet, completion_idx=idx)
                completions.append(completion)
                results.append(_verdict(completion, mark, (categories or {}).get(paper, "logic")))
    # Bulk inserts: the leaderboard tests build runs of hundreds of results.
    Completion.objects.bulk_create(completions)
    TestResult.objects.bulk_create(results)
    return run


def _verdict(completion: Completion, mark: str, category: str) -> TestResult:
    if mark == "P":
        return TestResultFactory.build(completion=completion)
    if mark == "I":
        return TestResultFactory.build(
            completion=completion, outcome=TestResult.Outcome.INFRA_ERROR, category="sandbox_failure"
        )
    return TestResultFactory.build(
        completion=completion, outcome=TestResult.Outcome.FAILED, category=category
    )


def snippet_results(
    snippets: Mapping[str, list[Snippet]], verdicts: Mapping[str, str]
) -> list[scoring.SnippetResult]:
    """The verdicts of ``make_run`` as core ``SnippetResult`` objects (infrastructure failures left out)."""
    out = []
    for paper, text in verdicts.items():
        for snippet, per_idx in zip(snippets[paper], text.split(" "), strict=True):
            for idx, mark in enumerate(per_idx):
                if mark in "PF":
                    out.append(scoring.SnippetResult(paper, snippet.name, snippet.lines, idx, mark == "P"))
    return out


# --- verdicts confirmed against impossible variants (issue 32), recorded through the service ----------------


def confirmation_verdict(kind: str, *, variant: str = "v-expected-1", slate: str = "fresh") -> Verdict:
    """A core verdict as a confirming runner gives it (``researchcodebench.runner.Runner._confirm``):
    "confirmed" and "unconfirmed" passes, "forged" (it passed the impossible variant ``variant``: failed),
    "unconfirmable" (every confirmation run ended without a result: failed), "plain" (a pass recorded
    without a confirmation) and "failed" (a plain failure). Each carries how its tests ended (``tests``),
    which is never stored."""
    tests = {"test_forward": "passed"}
    if kind in ("confirmed", "unconfirmed", "plain"):
        return Verdict(
            outcome="passed", category="passed", tier="none", reason="passed", tests=tests,
            confirmation="" if kind == "plain" else kind,
            variant=variant if kind == "confirmed" else "", variant_slate=slate if kind == "confirmed" else "",
        )  # fmt: skip
    if kind == "forged":
        return Verdict(
            outcome="failed", category="verdict_forged", tier="model", tests=tests, confirmation="forged",
            variant=variant, variant_slate=slate,
            reason="verdict forged: passed an impossible variant of the test, which the reference fails "
            f"(variant {variant}: test_forward passed)",
        )  # fmt: skip
    if kind == "unconfirmable":
        return Verdict(
            outcome="failed", category="pass_unconfirmable", tier="model", tests=tests, confirmation="forged",
            reason="the pass could not be confirmed: its runs against impossible variants of the test ended "
            "without a result (a timeout or a crash), where the reference's end in failed assertions",
        )  # fmt: skip
    assert kind == "failed", kind
    return Verdict(outcome="failed", category="logic", tier="model", reason="AssertionError: outputs differ")


def record_verdicts(run: EvaluationRun, items: list[tuple[Snippet, int, Verdict]]) -> list[Completion]:
    """A completion of ``run`` for each ``(snippet, completion index, verdict)``, its verdict recorded through
    ``test_result_record`` as a worker records it (the leaderboard's deltas included), in order."""
    completions = [
        CompletionFactory(run=run, snippet=snippet, completion_idx=idx, stage=Completion.Stage.TESTING)
        for snippet, idx, _ in items
    ]
    for completion, (_, _, verdict) in zip(completions, items, strict=True):
        test_result_record(completion_id=completion.pk, verdict=verdict, worker_host="worker", attempt=1)
    return completions


# --- the run pages' and uploads' release: runs whose items sit in given stages --------------------------

#: task key -> snippet names of ``make_release`` ("gamma" is metadata only: no files, cannot be tested)
TASKS = {"alpha": ["a1", "a2"], "beta": ["b1"]}


def make_release(name: str = "r1", *, with_metadata_only: bool = True) -> Release:
    """A release with two testable tasks (3 snippets) and, optionally, one metadata-only task. Releases
    made by this builder share the same task versions."""
    release = ReleaseFactory(name=name)
    tasks = dict(TASKS)
    if with_metadata_only:
        tasks["gamma"] = ["g1"]
    paper = PaperFactory(key="P", title="A paper")
    for position, (key, snippets) in enumerate(tasks.items()):
        version = TaskVersionFactory(
            task__key=key, task__paper=paper, content_hash=f"hash-{key}", has_files=key != "gamma"
        )
        for ordinal, snippet in enumerate(snippets):
            SnippetFactory(task_version=version, name=snippet, ordinal=ordinal)
        ReleaseEntryFactory(release=release, task_version=version, position=position)
    return release


def make_staged_run(
    *,
    model: LanguageModel,
    release: Release,
    status: str = EvaluationRun.Status.TESTING,
    source: str = EvaluationRun.Source.GENERATED,
    stages: list[str] | None = None,
    outcomes: dict[int, str] | None = None,
    errors: dict[int, str] | None = None,
) -> EvaluationRun:
    """A run with one completion per testable snippet of ``release`` (in task and document order), in the
    given ``stages`` (default: all waiting for a test worker); ``outcomes`` maps an item index to the
    outcome of its test result; ``errors`` to its error text."""
    run = EvaluationRunFactory(model=model, release=release, status=status, source=source)
    snippets = list(
        Snippet.objects.filter(
            task_version__release_entries__release=release, task_version__has_files=True
        ).order_by("task_version__task__key", "ordinal")
    )
    stages = stages or [Completion.Stage.PENDING_TEST] * len(snippets)
    for i, (snippet, stage) in enumerate(zip(snippets, stages, strict=False)):
        completion = CompletionFactory(
            run=run,
            snippet=snippet,
            stage=stage,
            error=(errors or {}).get(i, ""),
            cost_usd=Decimal("0.0125"),
            input_tokens=100,
            output_tokens=50,
        )
        outcome = (outcomes or {}).get(i)
        if outcome == TestResult.Outcome.FAILED:
            TestResultFactory(
                completion=completion,
                outcome=outcome,
                exception_type="AssertionError",
                exception_message="outputs differ",
            )
        elif outcome:
            TestResultFactory(completion=completion, outcome=outcome)
    return run


def row_counts(*app_labels: str) -> dict[str, int]:
    """The rows of every model of ``app_labels`` (default: the catalogue and evaluation apps), by model
    name: what a repeated import or load must leave unchanged."""
    models = (
        m
        for label in app_labels or ("contributions", "evaluation")
        for m in apps.get_app_config(label).get_models()
    )
    return {model.__name__: model.objects.count() for model in models}


def jsonl(*records: dict | str) -> bytes:
    """JSON lines (a str record is written as is, to make broken lines)."""
    return "\n".join(r if isinstance(r, str) else json.dumps(r) for r in records).encode() + b"\n"


def full_predictions() -> bytes:
    """A predictions file with one completion for every testable snippet of ``make_release``."""
    return jsonl(
        *(
            {"task": task, "snippet": snippet, "completion_idx": 0, "code": "return 1"}
            for task, snippets in TASKS.items()
            for snippet in snippets
        )
    )


#: Lines that once crashed an upload or were accepted whole, each with the start of the error it must give
#: as the second line of a predictions file (after "line 2: ").
ADVERSARIAL_LINES: dict[str, tuple[bytes, str]] = {
    "deeply nested JSON": (
        b'{"task": "alpha", "snippet": "a2", "code": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        "not valid JSON here (nested too deeply)",
    ),
    "5000-digit completion_idx": (
        b'{"task": "alpha", "snippet": "a2", "completion_idx": ' + b"9" * 5000 + b', "code": "x"}',
        "field 'completion_idx' must be an integer from 0 to 99, got a 5000-digit number",
    ),
    "lone surrogate in code": (
        b'{"task": "alpha", "snippet": "a2", "code": "x = \\ud800"}',
        "field 'code' holds a lone surrogate '\\ud800' at character 5 (not valid Unicode)",
    ),
    "NUL in code": (
        b'{"task": "alpha", "snippet": "a2", "code": "x = \\u0000"}',
        "field 'code' holds a NUL character at character 5",
    ),
    "1 MB task name": (
        json.dumps({"task": "T" * 1024 * 1024, "snippet": "a2", "code": "x"}).encode(),
        "field 'task' is too long (1048576 characters; at most 500): 'TTTTT",
    ),
    "5 MB of code on one line": (
        json.dumps({"task": "alpha", "snippet": "a2", "code": "x" * 5 * 1024 * 1024}).encode(),
        "the line is too long (5.0 MB); the limit is 1.6 MB",
    ),
}


def token_api(user: Any) -> APIClient:
    """An API client that authenticates as ``user`` with a new API token."""
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {api_token_for(user)}")
    return api


# --- the generation engine's model ----------------------------------------------------------------------


def fake_llm_model(base_url: str, *, key: str = "fake-model", max_concurrency: int = 4) -> LanguageModel:
    """A model served by the fake OpenAI-compatible server at ``base_url`` (tests/evaluation/fake_llm.py),
    its key read from RCB_LLM_KEY_FAKE."""
    return LanguageModelFactory(
        key=key,
        name=key.replace("-", " ").title(),
        provider=LanguageModel.Provider.OTHER,
        provider_model_id="fake-1",
        base_url=base_url,
        api_key_env="RCB_LLM_KEY_FAKE",
        input_cost_per_mtok=Decimal("2.0"),
        output_cost_per_mtok=Decimal("8.0"),
        max_concurrency=max_concurrency,
    )


# --- proposals moved through the workflow services --------------------------------------------------------

#: the paper of the example task (``example_upload``), as a proposal's metadata
EXAMPLE_META = {
    "title": "Root Mean Square Layer Normalization",
    "arxiv_abs": "https://arxiv.org/abs/1910.07467v1",
    "venue": "NeurIPS",
}
_proposal_keys = itertools.count()
#: the mutation check's finding on a snippet of the example task that its test does not check
NOT_CHECKED = Finding(
    check="mutation",
    severity="error",
    message="snippet 'compute rms' is not checked by the test: the test passes with the fill 'return None'",
    file="rmsnorm.py",
    line=45,
    snippet="compute rms",
    detail="fill 'return None' passed the test:\nreturn None",
)


def validation_report(*findings: Finding, snippets: list | None = None) -> ValidationReport:
    """A report of the validation battery with ``findings``: green unless one of them is an error."""
    return ValidationReport(
        ok=not any(f.is_error for f in findings),
        findings=list(findings),
        reference_durations_s=[0.1] * 5,
        timeout_s=3.0,
        snippets=snippets or [],
        duration_s=1.0,
        environment="test",
    )


def proposal_draft(
    author: Any = None, *, task_key: str | None = None, meta: Mapping[str, Any] | None = None
) -> Proposal:
    """A draft by ``author`` (a new user by default) under a fresh task key, about the example task's paper
    (``meta`` overriding its keys)."""
    return proposal_create(
        author=author or UserFactory(),
        task_key=task_key or f"proposal-{next(_proposal_keys)}",
        meta={**EXAMPLE_META, **(meta or {})},
    )


def proposal_upload(proposal: Proposal, **replace: bytes) -> ProposalRevision:
    """A new revision of ``proposal`` by its author: the example task's files (``replace`` replacing or
    adding files by path) with the example's declarations."""
    return revision_create(
        proposal=proposal,
        by=proposal.author,
        intake_result=example_upload(**replace),
        manifest=EXAMPLE_MANIFEST,
    )


def proposal_submitted(
    author: Any = None,
    *,
    task_key: str | None = None,
    meta: Mapping[str, Any] | None = None,
    **replace: bytes,
) -> Proposal:
    """A new proposal (``proposal_draft``) with the example upload (``replace`` as in ``proposal_upload``),
    submitted and waiting for validation."""
    proposal = proposal_draft(author, task_key=task_key, meta=meta)
    proposal_upload(proposal, **replace)
    proposal_submit(proposal=proposal, by=proposal.author)
    proposal.refresh_from_db()
    return proposal


def proposal_validated(
    result: ValidationReport | None = None,
    author: Any = None,
    *,
    task_key: str | None = None,
    meta: Mapping[str, Any] | None = None,
    **replace: bytes,
) -> Proposal:
    """A new submitted proposal (``proposal_submitted``) whose validation finished with ``result``: green
    by default, so the proposal is ready for review."""
    proposal = proposal_submitted(author, task_key=task_key, meta=meta, **replace)
    revision = proposal.revisions.get()
    proposal_validation_start(revision=revision)
    proposal_validation_finish(revision=revision, report=result or validation_report())
    proposal.refresh_from_db()
    return proposal


def proposal_approved(proposal: Proposal, *, reviewer: Any, capture: Callable[..., Any]) -> Proposal:
    """``reviewer`` approves ``proposal`` with every rubric item checked; ``capture`` (pytest-django's
    ``django_capture_on_commit_callbacks``) runs what the approval schedules on commit: publishing."""
    with capture(execute=True):
        proposal_review(
            proposal=proposal, reviewer=reviewer, decision="approve", rubric=dict.fromkeys(RUBRIC_KEYS, True)
        )
    proposal.refresh_from_db()
    return proposal
