"""Factories of the evaluation app: language models, runs, completions, test results, worker heartbeats.

Defaults describe a finished run of a catalogued model (developer and knowledge cutoff set, as the
leaderboard's contamination views need); a test names the fields its assertions depend on.
"""

from __future__ import annotations

import datetime as dt

import factory
from django.utils import timezone

from evaluation.models import Completion, EvaluationRun, LanguageModel, TestResult, WorkerHeartbeat
from tests.factories.contributions import SnippetFactory

#: the verification level a run of each source gets unless a test says otherwise
VERIFICATION_OF_SOURCE = {
    EvaluationRun.Source.IMPORTED: EvaluationRun.Verification.PUBLISHED,
    EvaluationRun.Source.UPLOADED: EvaluationRun.Verification.UPLOADED,
    EvaluationRun.Source.GENERATED: EvaluationRun.Verification.GENERATED,
}


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

    class Params:
        #: a model a user created through an upload: ``LanguageModelFactory(self_reported=True, owner=user)``
        self_reported = factory.Trait(management=LanguageModel.Management.SELF_REPORTED)


class EvaluationRunFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = EvaluationRun

    model = factory.SubFactory(LanguageModelFactory)
    template = "rcb-v2"
    with_paper = True
    source = EvaluationRun.Source.GENERATED
    verification = factory.LazyAttribute(lambda o: VERIFICATION_OF_SOURCE[o.source])
    status = EvaluationRun.Status.FINISHED
    finished_at = factory.LazyAttribute(
        lambda o: timezone.now() if o.status in EvaluationRun.FINAL_STATUSES else None
    )


class CompletionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Completion

    run = factory.SubFactory(EvaluationRunFactory)
    snippet = factory.SubFactory(SnippetFactory)
    completion_idx = 0
    stage = Completion.Stage.DONE


class TestResultFactory(factory.django.DjangoModelFactory):
    """A verdict; ``passed`` and ``tier`` follow ``outcome`` (the table's check constraint ties them)."""

    __test__ = False  # not a pytest test class

    class Meta:
        model = TestResult

    completion = factory.SubFactory(CompletionFactory)
    outcome = TestResult.Outcome.PASSED
    passed = factory.LazyAttribute(lambda o: o.outcome == TestResult.Outcome.PASSED)
    tier = factory.LazyAttribute(
        lambda o: (
            TestResult.Tier.NONE
            if o.passed
            else TestResult.Tier.INFRASTRUCTURE
            if o.outcome == TestResult.Outcome.INFRA_ERROR
            else TestResult.Tier.MODEL
        )
    )


class WorkerHeartbeatFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = WorkerHeartbeat

    hostname = factory.Sequence(lambda n: f"worker{n}@host")
    queues = factory.LazyFunction(lambda: ["site"])
    started_at = factory.LazyFunction(timezone.now)
    last_seen_at = factory.SelfAttribute("started_at")
