"""The verdict of record (evaluation/services/verdicts.py): ``test_result_record`` writes one result per
completion and finishes the run with the last one."""

from __future__ import annotations

import pytest

from evaluation.models import Completion, EvaluationRun, TestResult
from evaluation.services.verdicts import test_result_record
from tests.evaluation.run_helpers import FAILED, INFRA, PASSED, rms_release, take, uploaded_run
from tests.factories import fake_llm_model

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(tmp_path):
    """An uploaded run of the example task ``rmsnorm`` (``run_helpers.uploaded_run``)."""
    return uploaded_run(fake_llm_model("http://127.0.0.1:9/v1"), rms_release(tmp_path))


def test_a_duplicate_verdict_is_harmless_and_the_last_one_finishes_the_run(run):
    items = list(run.completions.all())
    for n, item in enumerate(items):
        take(item)
        verdict = PASSED if n % 2 == 0 else FAILED
        first = test_result_record(completion_id=item.pk, verdict=verdict, worker_host="h", attempt=1)
        again = test_result_record(completion_id=item.pk, verdict=INFRA, worker_host="other", attempt=2)
        assert again.pk == first.pk and again.outcome == verdict.outcome
    run.refresh_from_db()
    assert TestResult.objects.filter(completion__run=run).count() == len(items)
    assert run.status == EvaluationRun.Status.FINISHED and run.finished_at is not None
    passed = (len(items) + 1) // 2
    assert (run.counts["passed"], run.counts["failed"], run.counts["tested"]) == (
        passed,
        len(items) - passed,
        len(items),
    )
    assert Completion.objects.get(pk=items[1].pk).error == "NameError: x"
