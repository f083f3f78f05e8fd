"""A run's counts and status move (evaluation/services/run_state.py): what ``run_refresh`` makes of its items."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import transaction

from evaluation.models import Completion, EvaluationRun
from evaluation.services.run_state import run_lock, run_refresh
from tests.factories import LanguageModelFactory, make_release, make_staged_run

pytestmark = pytest.mark.django_db

Stage = Completion.Stage


def refreshed(**kwargs) -> EvaluationRun:
    """A run of ``make_release`` (3 testable snippets) staged with ``kwargs``, refreshed under its lock."""
    run = make_staged_run(model=LanguageModelFactory(), release=make_release(), **kwargs)
    with transaction.atomic():
        return run_refresh(run_lock(run.pk))


def test_a_run_whose_every_item_failed_generation_fails_with_the_commonest_reason():
    run = refreshed(
        status=EvaluationRun.Status.GENERATING,
        stages=[Stage.FAILED] * 3,
        errors={0: "HTTP 500 from the endpoint\ntraceback", 1: "HTTP 500 from the endpoint", 2: "timed out"},
    )

    assert run.status == EvaluationRun.Status.FAILED
    assert run.status_reason == "all 3 completions failed generation: HTTP 500 from the endpoint"
    assert run.finished_at is not None
    assert (run.counts["generation_failed"], run.counts["pending"]) == (3, 0)


def test_a_run_with_nothing_left_finishes_noting_failed_generations_and_infrastructure_errors():
    run = refreshed(
        stages=[Stage.DONE, Stage.DONE, Stage.FAILED],
        outcomes={0: "passed", 1: "infra_error"},
        errors={2: "HTTP 401 from the endpoint"},
    )

    assert run.status == EvaluationRun.Status.FINISHED
    assert run.status_reason == (
        "1 of 3 completions failed generation: HTTP 401 from the endpoint; "
        "1 infrastructure errors (not counted against the model)"
    )
    assert (run.finished_at is not None, run.started_at is not None) == (True, True)
    counts = run.counts
    assert (counts["total"], counts["expected"], counts["tested"], counts["generated"]) == (3, 3, 2, 2)
    assert (counts["passed"], counts["infra_error"], counts["generation_failed"]) == (1, 1, 1)
    assert counts["stages"][Stage.DONE] == 2 and counts["stages"][Stage.FAILED] == 1
    assert (run.total_items, run.input_tokens, run.output_tokens) == (3, 300, 150)
    assert run.cost_usd == Decimal("0.0375")


def test_a_run_with_items_in_testing_is_testing_and_counts_what_is_pending():
    run = refreshed(
        status=EvaluationRun.Status.QUEUED,
        stages=[Stage.PENDING_TEST, Stage.TESTING, Stage.DONE],
        outcomes={2: "passed"},
    )

    assert run.status == EvaluationRun.Status.TESTING
    assert run.started_at is not None and run.finished_at is None
    assert (run.counts["pending"], run.counts["generated"], run.counts["tested"]) == (2, 3, 1)


def test_a_queued_run_whose_items_all_wait_stays_queued():
    run = refreshed(status=EvaluationRun.Status.QUEUED, stages=[Stage.PENDING_GENERATION] * 3)

    assert run.status == EvaluationRun.Status.QUEUED
    assert run.started_at is None
    assert (run.counts["pending"], run.counts["generated"]) == (3, 0)


def test_a_run_with_generation_left_is_generating():
    run = refreshed(
        status=EvaluationRun.Status.QUEUED, stages=[Stage.GENERATING, Stage.PENDING_TEST, Stage.PENDING_TEST]
    )

    assert run.status == EvaluationRun.Status.GENERATING


def test_a_final_run_keeps_its_status_and_gets_its_counts():
    run = refreshed(status=EvaluationRun.Status.CANCELLED, stages=[Stage.CANCELLED] * 3)

    assert run.status == EvaluationRun.Status.CANCELLED
    assert (run.counts["cancelled"], run.counts["pending"]) == (3, 0)
