"""A verdict applied as a delta: the read-model rows it touches, updated in place (docs/scoring.md#how-aggregation-runs).

``leaderboard_apply_result`` is what the ``post_save`` of a ``TestResult`` calls (``receivers``): a verdict
recorded for one completion, or a re-judge that overwrites one. What it writes, whatever the size of the run:

1. the (run, snippet) ``RunSnippetScore`` row, recomputed from that snippet's few results of record
   (``aggregates.snippet_state``, the rebuild's own code), compared with the stored row;
2. the difference between the two rows, applied to ``RunErrorCount`` (per category and tier: the rows keep
   each index's failure), to the snippet's ``SnippetStat``, and, when the snippet counts in the run's
   scores, to the run's ``RunPaperScore`` row of its paper (integer sums, confirmation counts) and to the
   run's ``RunScore`` rows
   whose selection holds that paper, recombined exactly from the run's paper rows
   (``aggregates.score_fields``); their bootstrap intervals stay as last computed;
3. ``RunAggregation``: one more result seen, and one more change the intervals do not reflect yet; after
   commit, the release's background step is requested (``leaderboard_request_release_refresh``),
   which recomputes the intervals and the contamination selections;
4. the cache scopes of the run's release and model (``scopes.scopes_bump``), when a row changed: their
   pages are built afresh on the next request, every other release's and model's stay cached.

A run's first verdict (or the first since its rows were built by an older version) rebuilds the run
instead (``leaderboard_refresh_run``), which also starts its deltas.

Transactions and locks: everything happens inside the transaction that records the verdict, so a verdict
and its delta commit together (a rolled-back verdict leaves no trace on the board, and a worker that dies
between the two cannot leave the board behind, as a delta sent after commit could). The verdict's writer
holds evaluation's run row; the delta then takes the leaderboard's own lock of the run
(``locks.run_aggregation_lock``): the deltas of one run are applied one after the other, each on the rows
the previous one committed. The aggregation lock is then taken shared, so deltas of different runs run side
by side and never during a whole-run rebuild. ``SnippetStat`` is the one row deltas of different runs share: it is read for update.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Exists, F, OuterRef
from django.utils import timezone

from contributions.models import ReleaseEntry
from evaluation.models import Completion, EvaluationRun
from leaderboard.aggregates import (
    Contribution,
    SnippetState,
    loaded_failures,
    score_fields,
    snippet_state,
    solve_rate,
    stored_failures,
)
from leaderboard.models import (
    RunAggregation,
    RunErrorCount,
    RunPaperScore,
    RunScore,
    RunSnippetScore,
    SnippetStat,
)
from leaderboard.scopes import run_scopes, scopes_bump
from leaderboard.services.locks import aggregation_lock, run_aggregation_lock
from leaderboard.services.rebuild import SnippetInfo, leaderboard_refresh_run, snippet_infos
from leaderboard.services.release_step import RECOMBINED_FIELDS, paper_rows
from leaderboard.services.scheduling import leaderboard_request_release_refresh

#: the ``TestResult`` fields a verdict is made of: a save that changes none of them changes no score
VERDICT_FIELDS = frozenset({"outcome", "passed", "tier", "category", "confirmation"})


@dataclass(frozen=True)
class _Target:
    """What a delta needs to know about the result's run and snippet."""

    run_id: int
    release_id: int | None
    model_id: int
    with_paper: bool
    incremental: bool
    info: SnippetInfo
    #: the snippet counts in the run's scores (``rebuild.scored_snippets``' rule)
    counted: bool
    #: the snippet is one the run should have a result for (``rebuild``'s rule for the snippets a run should have)
    expected: bool


def _target(completion_id: int) -> _Target | None:
    """The result's run and snippet. Three small queries: one query joining all of it cost several times
    more to plan than to run."""
    found = (
        Completion.objects.filter(pk=completion_id)
        .order_by()  # the model's ordering joins three tables to sort one row
        .values_list("run_id", "snippet_id", "snippet__task_version_id")
        .first()
    )
    if found is None:
        return None
    run_id, snippet_id, version_id = found
    through = EvaluationRun.task_versions.through
    run = (
        EvaluationRun.objects.filter(pk=run_id)
        .order_by()
        .annotate(
            explicit=Exists(through.objects.filter(evaluationrun_id=run_id)),
            listed=Exists(through.objects.filter(evaluationrun_id=run_id, taskversion_id=version_id)),
            released=Exists(
                ReleaseEntry.objects.filter(release_id=OuterRef("release_id"), task_version_id=version_id)
            ),
        )
        .values_list(
            "release_id",
            "model_id",
            "with_paper",
            "release__counts_unchecked_snippets",
            "aggregation__incremental",
            "explicit",
            "listed",
            "released",
        )  # fmt: skip
        .first()
    )
    if run is None:
        return None
    release_id, model_id, with_paper, counts_unchecked, incremental, explicit, listed, released = run
    info = snippet_infos([snippet_id])[snippet_id]
    return _Target(
        run_id=run_id,
        release_id=release_id,
        model_id=model_id,
        with_paper=with_paper,
        incremental=bool(incremental),
        info=info,
        counted=release_id is None or counts_unchecked or info.checked,
        expected=listed if explicit else (released if release_id is not None else True),
    )


# No savepoint inside the verdict's transaction: a delta that fails must take the verdict down with it.
@transaction.atomic(savepoint=False)
def leaderboard_apply_result(*, completion_id: int, created: bool) -> bool:
    """Apply the result of record of ``completion_id`` (just recorded, ``created``, or overwritten) to the
    read models; False when the completion is gone. See the module docstring."""
    target = _target(completion_id)
    if target is None:
        return False
    if not target.incremental:
        leaderboard_refresh_run(run=EvaluationRun(pk=target.run_id), defer_global=True)
        _request_step(target.release_id)
        return True
    run_aggregation_lock(target.run_id)
    aggregation_lock(shared=True)
    results = (
        Completion.objects.filter(run_id=target.run_id, snippet_id=target.info.id, result__isnull=False)
        .order_by()
        .values_list(
            "completion_idx", "result__passed", "result__tier", "result__category", "result__outcome",
            "result__confirmation",
        )
    )  # fmt: skip
    new = snippet_state(results)
    stored = (
        RunSnippetScore.objects.filter(run_id=target.run_id, snippet_id=target.info.id).order_by("pk").first()
    )
    old = _state(stored)
    scores_moved = target.counted and (old.verdicts if old else "") != (new.verdicts if new else "")
    # A confirmation can move without the verdicts (a forged verdict re-run into a plain failure): the
    # counts of the paper and score rows move then, the scores and so their intervals do not.
    counts_moved = scores_moved or (
        target.counted and (old.confirmations if old else "") != (new.confirmations if new else "")
    )
    if new != old:
        scopes_bump(run_scopes(release_id=target.release_id, model_id=target.model_id))
        _write_snippet_row(target, stored, new)
        _apply_errors(target.run_id, old, new)
        _apply_stat(target, old, new)
        if counts_moved:
            _apply_scores(target, old, new)
    RunAggregation.objects.filter(run_id=target.run_id).update(
        results_seen=F("results_seen") + int(created), changes=F("changes") + int(scores_moved)
    )
    if scores_moved:
        _request_step(target.release_id)
    return True


def _request_step(release_id: int | None) -> None:
    # After commit, holding nothing: the release's marker is one row every verdict of the release would
    # otherwise wait on.
    transaction.on_commit(lambda: leaderboard_request_release_refresh(release_id=release_id))


def _state(row: RunSnippetScore | None) -> SnippetState | None:
    if row is None:
        return None
    return SnippetState(
        verdicts=row.verdicts,
        passed=row.passed,
        tested=row.tested,
        category=row.category,
        failures=loaded_failures(row.failures),
        confirmations=row.confirmations,
    )


def _write_snippet_row(target: _Target, stored: RunSnippetScore | None, new: SnippetState | None) -> None:
    if new is None:
        if stored is not None:
            stored.delete()
        return
    fields = {
        "verdicts": new.verdicts,
        "passed": new.passed,
        "tested": new.tested,
        "category": new.category,
        "failures": stored_failures(new.failures),
        "confirmations": new.confirmations,
    }
    if stored is None:
        RunSnippetScore.objects.create(
            run_id=target.run_id,
            snippet_id=target.info.id,
            paper_id=target.info.paper_id,
            lines=target.info.lines,
            **fields,
        )
    else:
        RunSnippetScore.objects.filter(pk=stored.pk).update(**fields)


def _apply_errors(run_id: int, old: SnippetState | None, new: SnippetState | None) -> None:
    """``RunErrorCount``: the new row's failures in, the old row's out; a count that reaches 0 is deleted
    (a rebuild has no row for a category without failures)."""
    diff: Counter[tuple[str, str]] = Counter(new.errors() if new else [])
    diff.subtract(old.errors() if old else [])
    moved = {key: n for key, n in diff.items() if n}
    if not moved:
        return
    rows = {
        (r.category, r.tier): r
        for r in RunErrorCount.objects.filter(
            run_id=run_id, category__in={c for c, _ in moved}, tier__in={t for _, t in moved}
        ).order_by()
    }
    for (category, tier), n in sorted(moved.items()):
        row = rows.get((category, tier))
        count = (row.count if row else 0) + n
        if row is None:
            RunErrorCount.objects.create(run_id=run_id, category=category, tier=tier, count=count)
        elif count > 0:
            RunErrorCount.objects.filter(pk=row.pk).update(count=count)
        else:
            row.delete()


def _apply_stat(target: _Target, old: SnippetState | None, new: SnippetState | None) -> None:
    """``SnippetStat`` of the snippet: results and passes across runs, by paper setting. Created when the
    snippet has none yet (a rebuild gives every snippet with a verdict a row)."""
    tested = (new.tested if new else 0) - (old.tested if old else 0)
    passed = (new.passed if new else 0) - (old.passed if old else 0)
    runs = int(bool(new and new.tested)) - int(bool(old and old.tested))
    # Ordered by its own key, so that the lock stays on this one row (no join to the snippet to sort).
    stat = SnippetStat.objects.select_for_update().filter(snippet_id=target.info.id).order_by("pk").first()
    if stat is None:
        SnippetStat.objects.get_or_create(snippet_id=target.info.id)
        stat = SnippetStat.objects.select_for_update().get(snippet_id=target.info.id)
    if not (tested or passed or runs):
        return
    stat.runs += runs
    stat.results += tested
    stat.passed += passed
    stat.solve_rate = solve_rate(stat.passed, stat.results)
    side = "with_paper" if target.with_paper else "without_paper"
    setattr(stat, f"{side}_results", getattr(stat, f"{side}_results") + tested)
    setattr(stat, f"{side}_passed", getattr(stat, f"{side}_passed") + passed)
    stat.save(update_fields=["runs", "results", "passed", "solve_rate", f"{side}_results", f"{side}_passed"])


def _apply_scores(target: _Target, old: SnippetState | None, new: SnippetState | None) -> None:
    """The paper row: old contribution out, new in, every paper row of the run as wide as the longest
    verdict; then the run's score rows whose selection holds the paper, recombined from the paper rows."""
    info = target.info
    delta = Contribution.of_snippet(
        new.verdicts if new else "",
        info.lines,
        expected=target.expected,
        confirmations=new.confirmations if new else "",
    )
    delta.add(
        Contribution.of_snippet(
            old.verdicts if old else "",
            info.lines,
            expected=target.expected,
            confirmations=old.confirmations if old else "",
        ),
        -1,
    )
    papers = paper_rows(target.run_id)
    width = max([len(new.verdicts) if new else 0, *(len(p.task_den) for p in papers)])
    row = next((p for p in papers if p.paper_id == info.paper_id), None)
    if row is None:
        row = RunPaperScore(run_id=target.run_id, paper_id=info.paper_id, expected_snippets=0)
        row.paper_key = info.paper_key
        papers.append(row)
    total = Contribution(
        sums={name: list(getattr(row, name)) for name in delta.sums},
        counts={name: getattr(row, name) for name in delta.counts},
    )
    total.add(delta)
    total.widen(width)
    fields = total.fields()
    for name, value in fields.items():
        setattr(row, name, value)
    widened = [p for p in papers if p is not row and len(p.task_den) < width]
    for p in widened:
        for name in delta.sums:
            setattr(p, name, [*getattr(p, name), *[0] * (width - len(getattr(p, name)))])
    if row.pk is None:
        row.save()
    else:
        RunPaperScore.objects.filter(pk=row.pk).update(**fields)
    if widened:
        RunPaperScore.objects.bulk_update(widened, list(delta.sums))

    now = timezone.now()
    scores = [
        s
        for s in RunScore.objects.filter(run_id=target.run_id).order_by("pk")
        if s.selection is None or info.paper_key in s.selection
    ]
    for score in scores:
        for name, value in score_fields(papers, score.selection).items():
            setattr(score, name, value)
        score.computed_at = now
    RunScore.objects.bulk_update(scores, list(RECOMBINED_FIELDS))
