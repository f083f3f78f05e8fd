"""Memorisation figures (evaluation/services/memorisation.py): measured against the snippet's reference when
the verdict is recorded (``test_result_record``), nothing when there is nothing to compare, and backfilled
for completions tested before the figures existed."""

from __future__ import annotations

import pytest

from evaluation.models import Completion
from evaluation.services import Prediction, run_create
from evaluation.services.memorisation import overlap_backfill
from evaluation.services.verdicts import test_result_record
from tests.evaluation.run_helpers import FAILED, PASSED, rms_release
from tests.factories import fake_llm_model

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(tmp_path):
    """An uploaded run of ``rmsnorm``: its largest snippet answered with the reference code itself (re-indented),
    the same snippet again with its names changed, and a snippet answered ``pass``."""
    release = rms_release(tmp_path)
    snippets = list(release.task_versions.get().snippets.order_by("ordinal"))
    largest = max(snippets, key=lambda s: len(s.code))
    other = next(s for s in snippets if s.pk != largest.pk)
    copy = "\n".join(line.strip() for line in largest.code.splitlines())
    return run_create(
        model=fake_llm_model("http://127.0.0.1:9/v1"),
        release=release,
        source="uploaded",
        verification="uploaded",
        n_completions=2,
        predictions=[
            Prediction(task="rmsnorm", snippet=largest.name, code=largest.code, completion_idx=0),
            Prediction(task="rmsnorm", snippet=largest.name, code=copy.replace("x", "inp"), completion_idx=1),
            Prediction(task="rmsnorm", snippet=other.name, code="pass"),
        ],
    )


def _record_all(run) -> list[Completion]:
    """Record a verdict for each completion; returns them as stored: the verbatim copy, the renamed copy,
    the ``pass``."""
    items = list(run.completions.order_by("-snippet__code", "completion_idx"))
    for item in items:
        test_result_record(
            completion_id=item.pk, verdict=PASSED if item.code else FAILED, worker_host="h", attempt=1
        )
    return sorted(Completion.objects.filter(run=run), key=lambda c: (-len(c.snippet.code), c.completion_idx))


def test_recording_a_verdict_stores_how_much_of_the_reference_the_completion_reproduces(run):
    assert all(c.overlap_reference_tokens is None for c in run.completions.all())

    verbatim, renamed, answered_pass = _record_all(run)

    assert verbatim.near_verbatim is True
    assert verbatim.overlap_run_share == 1.0 and verbatim.overlap_ngram_share == 1.0
    assert verbatim.overlap_longest_run == verbatim.overlap_reference_tokens >= 20
    assert renamed.near_verbatim is False and renamed.overlap_run_share < 0.5
    assert answered_pass.overlap_longest_run == 0 and answered_pass.overlap_reference_tokens > 0


def test_a_completion_with_no_code_has_no_figures(run):
    item = run.completions.get(code__contains="pass")
    Completion.objects.filter(pk=item.pk).update(code="", code_extracted=False)

    test_result_record(completion_id=item.pk, verdict=FAILED, worker_host="h", attempt=1)

    item.refresh_from_db()
    assert (item.overlap_reference_tokens, item.overlap_longest_run, item.near_verbatim) == (None, None, None)


def test_the_backfill_measures_tested_completions_that_have_no_figures_yet(run):
    measured = {c.pk: c.near_verbatim for c in _record_all(run)}
    Completion.objects.update(
        overlap_reference_tokens=None, overlap_longest_run=None, overlap_ngram_share=None, near_verbatim=None
    )

    assert overlap_backfill(Completion) == len(measured)

    assert {c.pk: c.near_verbatim for c in Completion.objects.all()} == measured
    assert overlap_backfill(Completion) == 0
