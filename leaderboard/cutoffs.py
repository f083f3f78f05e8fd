"""Knowledge cutoffs and the contamination selections built on them: reads the aggregation (services) and
every board page (selectors) share (docs/scoring.md#contamination).

``model_cutoff`` is a model's cutoff as a date, ``cutoff_text`` as the original compared it; the global rule
is one per release (``release_global_selections``) and never follows a board's other filters; the per-model
rule keeps the papers after the model's own cutoff (``per_model_selection``). Both go through
``scoring.papers_after``, so a paper with no known date is left out by either. ``release_paper_dates`` gives
the papers of each release with their dates: what the contamination page lists and the selections read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import date

from django.db.models import Q

from contributions.models import Paper, ReleaseEntry
from evaluation.models import EvaluationRun, LanguageModel
from leaderboard.models import Contamination
from researchcodebench import scoring


def cutoff_text(model: LanguageModel) -> str | None:
    """The cutoff as the original compared it: the source's text when known, else the ISO date."""
    return _cutoff_text(model.knowledge_cutoff_raw, model.knowledge_cutoff)


def _cutoff_text(raw: str, cutoff: date | None) -> str | None:
    if raw and raw.strip().lower() not in ("null", "none"):
        return raw.strip()
    return cutoff.isoformat() if cutoff else None


def model_cutoff(model: LanguageModel) -> date | None:
    """The cutoff as a date (the stored date, else the normalised text)."""
    if model.knowledge_cutoff:
        return model.knowledge_cutoff
    try:
        return scoring.normalise_cutoff(cutoff_text(model))
    except ValueError:
        return None


def paper_dates() -> dict[str, date | None]:
    """first_commit_date of every paper, by key (one query)."""
    return dict(Paper.objects.values_list("key", "first_commit_date"))


def global_selection(cutoffs: Iterable[str | None], dates: Mapping[str, date | None]) -> list[str]:
    """The papers the original global rule keeps for these models' cutoffs (sorted keys)."""
    return sorted(scoring.global_contamination_papers(dict(dates), list(cutoffs), rule="original"))


def per_model_selection(model: LanguageModel, dates: Mapping[str, date | None]) -> list[str]:
    """Papers after the model's own cutoff; none when the cutoff is unknown (as ``score_published``)."""
    return sorted(scoring.per_model_papers(dict(dates), model_cutoff(model)) or [])


def before_cutoff_selection(model: LanguageModel, dates: Mapping[str, date | None]) -> list[str]:
    """Papers with a known first commit on or before the model's cutoff; none when the cutoff is unknown. With
    ``per_model_selection`` it splits the dated papers in two; an undated paper is on neither side."""
    cutoff = model_cutoff(model)
    return sorted(scoring.papers_between(dict(dates), None, cutoff)) if cutoff else []


def release_paper_dates(release_ids: Iterable[int | None]) -> dict[int | None, dict[str, date | None]]:
    """The first-commit date of each paper of each release (``None``: every paper, for the runs of no
    release), by release id then paper key. One query, two with ``None``."""
    ids = set(release_ids)
    named = [i for i in ids if i is not None]
    dates: dict[int | None, dict[str, date | None]] = {i: {} for i in ids}
    if named:
        for release_id, key, first in ReleaseEntry.objects.filter(release_id__in=named).values_list(
            "release_id", "task_version__task__paper__key", "task_version__task__paper__first_commit_date"
        ):
            dates[release_id][key] = first
    if None in ids:
        dates[None] = paper_dates()
    return dates


def window_selection(dates: Mapping[str, date | None], start: date | None, end: date | None) -> list[str]:
    """The papers of ``dates`` first committed within ``start``..``end`` (both included), sorted keys;
    never a paper with no known date (``scoring.papers_between``)."""
    return sorted(scoring.papers_between(dict(dates), start, end))


def release_cutoffs(release_ids: Iterable[int | None]) -> dict[int | None, list[str | None]]:
    """Cutoff texts of every model with a scored run of each release (``None``: of no release), whatever
    its template, paper setting or status, by release id. One query."""
    ids = set(release_ids)
    named = [i for i in ids if i is not None]
    runs = Q(release_id__in=named) | (Q(release_id__isnull=True) if None in ids else Q(pk__in=[]))
    models: dict[int | None, dict[int, str | None]] = {i: {} for i in ids}
    for release_id, model_id, raw, cutoff in (
        EvaluationRun.objects.filter(runs, scores__mode=Contamination.NONE)
        .values_list("release_id", "model_id", "model__knowledge_cutoff_raw", "model__knowledge_cutoff")
        .distinct()
    ):
        models[release_id][model_id] = _cutoff_text(raw, cutoff)
    return {release_id: list(by_model.values()) for release_id, by_model in models.items()}


def release_global_selections(
    release_ids: Iterable[int | None], *, extra_cutoffs: Iterable[str | None] = ()
) -> dict[int | None, list[str]]:
    """The papers the original global rule keeps on the board of each release (``None``: the runs of no
    release), by release id. Three queries at most, whatever the number of releases.

    The rule is one per release and never follows the board's other filters (docs/scoring.md#contamination):
    the cutoffs are ``release_cutoffs`` (plus ``extra_cutoffs``, e.g. of a run being aggregated); the papers
    are the release's own (every paper for runs of no release), so that a paper outside the release can
    neither be kept nor move the cutoff.
    """
    ids = set(release_ids)
    if not ids:
        return {}
    dates = release_paper_dates(ids)
    cutoffs = release_cutoffs(ids)
    extra = list(extra_cutoffs)
    return {
        release_id: global_selection([*cutoffs[release_id], *extra], dates[release_id]) for release_id in ids
    }
