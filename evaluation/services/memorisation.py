"""Memorisation figures of completions (``researchcodebench.memorisation``, docs/scoring.md#memorisation).

``overlap_fields`` is what ``verdicts.test_result_record`` writes on a completion with its verdict, so the
figures commit, and move the cached pages' scopes, with the result they sit next to; ``overlap_backfill``
measures completions recorded before the figures existed (the migration that added them calls it).
"""

from __future__ import annotations

from typing import Any

from researchcodebench.memorisation import overlap

#: completions measured per batch by ``overlap_backfill``
BACKFILL_BATCH = 500


def overlap_fields(*, reference: str, code: str, code_extracted: bool = True) -> dict[str, Any]:
    """The ``Completion`` overlap fields of ``code`` against the snippet's ``reference`` code: all None
    when there is nothing to compare (no code extracted, an empty completion, a metadata-only snippet)."""
    measured = overlap(reference=reference, completion=code) if code_extracted and reference else None
    if measured is None:
        return {
            "overlap_reference_tokens": None,
            "overlap_longest_run": None,
            "overlap_ngram_share": None,
            "near_verbatim": None,
        }
    return {
        "overlap_reference_tokens": measured.reference_tokens,
        "overlap_longest_run": measured.longest_run,
        "overlap_ngram_share": measured.ngram_share,
        "near_verbatim": measured.near_verbatim,
    }


def overlap_backfill(completion_model: Any) -> int:
    """Measure every tested completion of ``completion_model`` (the model class: a migration passes its
    historical one) that has code and no figures yet; returns how many were measured. Batched by id, so it
    holds a bounded number of rows in memory."""
    todo = (
        completion_model.objects.filter(
            overlap_reference_tokens__isnull=True, result__isnull=False, code_extracted=True
        )
        .exclude(code="")
        .exclude(snippet__code="")
    )
    measured, last = 0, 0
    while True:
        batch = list(
            todo.filter(pk__gt=last)
            .order_by("pk")
            .values_list("pk", "code", "snippet__code")[:BACKFILL_BATCH]
        )
        if not batch:
            return measured
        for pk, code, reference in batch:
            completion_model.objects.filter(pk=pk).update(**overlap_fields(reference=reference, code=code))
        measured += len(batch)
        last = batch[-1][0]
