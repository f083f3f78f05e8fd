"""The original paper's published results: import them and check them (reading and re-encoding them is
``evaluation.published_source``, plain Python).

``published_import`` turns either into catalogue rows (papers, tasks, metadata-only task versions with their
snippets, the release ``rcb-2025-published``) and evaluation rows (one language model, managed as
``published`` and so locked for uploads, and one finished, imported run per model, with a completion and a
test result per published record). It is idempotent: rows
are keyed by natural keys (model key, paper key, (task, content hash), (model, release, source),
(run, snippet, completion index)) and only what is missing is created. Catalogue rows are written only
through ``contributions.services`` (their one writer); this module writes the evaluation rows itself.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from contributions.models import Paper, Release, ReleaseEntry, TaskVersion
from contributions.services import catalogue, releases
from evaluation.models import Completion, EvaluationRun, LanguageModel, TestResult
from evaluation.published_source import (
    CREDIT,
    ENVIRONMENT,
    FIXTURE_FORMAT,
    RELEASE_NAME,
    RELEASE_TITLE,
    TEMPLATE,
    TIMEOUT_EXIT_CODE,
    PublishedModel,
    PublishedRecord,
    PublishedSource,
    PublishedSourceError,
    published_source_read,
)
from researchcodebench.errors import classify_imported
from researchcodebench.pset import PaperMeta
from researchcodebench.scoring import (
    line_rates,
    normalise_cutoff,
    per_paper,
    task_rates,
)

# company (as the original writes it) -> provider; models behind OpenRouter carry company OPENROUTER.
_PROVIDER_BY_COMPANY = {
    "OPENAI": LanguageModel.Provider.OPENAI,
    "ANTHROPIC": LanguageModel.Provider.ANTHROPIC,
    "GOOGLE": LanguageModel.Provider.GOOGLE,
    "XAI": LanguageModel.Provider.XAI,
    "DEEPSEEK": LanguageModel.Provider.DEEPSEEK,
    "OPENROUTER": LanguageModel.Provider.OPENROUTER,
}


@dataclass
class PublishedImportReport:
    """What one import did. Counts of rows created; ``*_updated`` rows whose imported fields changed."""

    source: str
    format: str
    release: str
    release_created: bool = False
    made_default: bool = False
    models_created: int = 0
    models_updated: int = 0
    papers_created: int = 0
    papers_updated: int = 0
    tasks_created: int = 0
    task_versions_created: int = 0
    task_versions_linked: int = 0
    snippets_created: int = 0
    runs_created: int = 0
    completions_created: int = 0
    results_created: int = 0
    #: model key -> display name, for models whose display name had to be disambiguated
    renamed: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    duration_s: float = 0.0

    @property
    def changed(self) -> bool:
        return any(
            (
                self.release_created,
                self.models_created,
                self.models_updated,
                self.papers_created,
                self.papers_updated,
                self.task_versions_created,
                self.runs_created,
                self.completions_created,
            )
        )

    def summary_lines(self) -> list[str]:
        lines = [
            f"source: {self.source} ({self.format})",
            f"release {self.release}: {'created' if self.release_created else 'existing'}"
            + (", now the default release" if self.made_default else ""),
            f"models: {self.models_created} created, {self.models_updated} updated",
            f"papers: {self.papers_created} created, {self.papers_updated} updated",
            f"task versions: {self.task_versions_created} metadata-only created, "
            f"{self.task_versions_linked} linked to imported versions with files",
            f"snippets created: {self.snippets_created}",
            f"runs: {self.runs_created} created; completions: {self.completions_created}; "
            f"test results: {self.results_created}",
        ]
        lines += [f"display name of {key}: {name!r} (disambiguated)" for key, name in self.renamed.items()]
        lines += [f"note: {note}" for note in self.notes]
        lines.append(f"took {self.duration_s:.2f} s")
        return lines


@dataclass(frozen=True)
class ScoreMismatch:
    """A score recomputed from the database that differs from the source's by more than the tolerance."""

    model: str
    what: str  # "line", "task" or "paper:<key>"
    expected: float | None
    actual: float | None


# ------------------------------------------------------------------------------------------------ import


def _provider_for(model: PublishedModel) -> str:
    by_company = _PROVIDER_BY_COMPANY.get(model.company.upper())
    if by_company:
        return by_company
    if model.key.upper().startswith("OPENROUTER_"):
        return LanguageModel.Provider.OPENROUTER
    return LanguageModel.Provider.OTHER


def _reasoning_effort(options: Mapping[str, Any]) -> str | None:
    effort = options.get("reasoning_effort")
    reasoning = options.get("reasoning")
    if effort is None and isinstance(reasoning, dict):
        effort = reasoning.get("effort")
    return str(effort) if effort else None


def display_names(models: Iterable[PublishedModel], taken: Iterable[str] = ()) -> dict[str, str]:
    """Unique display names: a model keeps its name unless another model shares it (or ``taken`` holds it);
    then every model of that name gets a suffix: its reasoning effort if that tells them apart, else its
    provider model id, else its key. Deterministic (models are handled in key order)."""
    taken_set = set(taken)
    groups: dict[str, list[PublishedModel]] = {}
    for m in sorted(models, key=lambda m: m.key):
        groups.setdefault(m.name, []).append(m)
    chosen: dict[str, str] = {}
    used: set[str] = set(taken_set)
    for name, group in groups.items():
        if len(group) == 1 and name not in taken_set:
            chosen[group[0].key] = name
            used.add(name)
    for name, group in groups.items():
        if len(group) == 1 and name not in taken_set:
            continue
        for m in group:
            effort = _reasoning_effort(m.request_options)
            candidates = [f"{name} ({effort})" if effort else None]
            candidates += [
                f"{name} ({m.provider_model_id})" if m.provider_model_id else None,
                f"{name} ({m.key})",
            ]
            efforts = [_reasoning_effort(o.request_options) for o in group]
            if effort is None or efforts.count(effort) > 1:
                candidates[0] = None
            pick = next((c for c in candidates if c and c not in used), None)
            if pick is None:
                counter = 2
                while f"{name} ({m.key}) {counter}" in used:
                    counter += 1
                pick = f"{name} ({m.key}) {counter}"
            chosen[m.key] = pick
            used.add(pick)
    return chosen


def _decimal(value: float | None) -> Decimal | None:
    return None if value is None else Decimal(str(value))


def _model_fields(model: PublishedModel, where: str) -> dict[str, Any]:
    try:
        cutoff = normalise_cutoff(model.knowledge_cutoff)
    except ValueError as exc:
        raise PublishedSourceError(f"{where}: model {model.key!r}: knowledge cutoff: {exc}") from exc
    return {
        "provider": _provider_for(model),
        "provider_model_id": model.provider_model_id,
        "developer": model.developer,
        "company": model.company,
        "open_weights": model.open_weights,
        "knowledge_cutoff": cutoff,
        "knowledge_cutoff_raw": model.knowledge_cutoff or "",
        "input_cost_per_mtok": _decimal(model.input_cost_per_mtok),
        "output_cost_per_mtok": _decimal(model.output_cost_per_mtok),
        "request_options": model.request_options,
    }


def _save_fields(row: LanguageModel, values: Mapping[str, Any], names: list[str]) -> bool:
    """Set the fields ``names`` of ``row`` from ``values`` and save only them (and ``updated_at``).

    Returns False, saving nothing, when ``names`` is empty."""
    if not names:
        return False
    for name in names:
        setattr(row, name, values[name])
    row.save(update_fields=[*names, "updated_at"])
    return True


def _import_models(source: PublishedSource, report: PublishedImportReport) -> dict[str, LanguageModel]:
    keys = [m.key for m in source.models]
    existing = {m.key: m for m in LanguageModel.objects.filter(key__in=keys)}
    taken = LanguageModel.objects.exclude(key__in=keys).values_list("name", flat=True)
    # Existing models keep their display name (a maintainer may have edited it); new ones get a unique one.
    names = display_names(
        [m for m in source.models if m.key not in existing],
        taken=[*taken, *(m.name for m in existing.values())],
    )
    out: dict[str, LanguageModel] = {}
    new: list[LanguageModel] = []
    for model in source.models:
        values = _model_fields(model, source.path)
        row = existing.get(model.key)
        if row is None:
            row = LanguageModel(
                key=model.key,
                name=names[model.key],
                active=False,
                management=LanguageModel.Management.PUBLISHED,
                **values,
            )
            if names[model.key] != model.name:
                report.renamed[model.key] = names[model.key]
            new.append(row)
        else:
            if row.management == LanguageModel.Management.SELF_REPORTED:
                # A user's model under the paper's key now holds the paper's results: nobody adds to those.
                values["management"] = LanguageModel.Management.PUBLISHED
            changed = [name for name, value in values.items() if getattr(row, name) != value]
            if _save_fields(row, values, changed):
                report.models_updated += 1
        out[model.key] = row
    if new:
        LanguageModel.objects.bulk_create(new)
        report.models_created = len(new)
        # bulk_create sets primary keys on PostgreSQL and SQLite; re-read to be safe on any backend.
        for row in LanguageModel.objects.filter(key__in=[m.key for m in new]):
            out[row.key] = row
    return out


def _import_papers(source: PublishedSource, report: PublishedImportReport) -> dict[str, Paper]:
    out: dict[str, Paper] = {}
    for paper in source.papers:
        row, created = catalogue.paper_get_or_create(meta=paper)
        if created:
            report.papers_created += 1
        # Only fill what is empty: a paper imported with its task folder keeps its own registry entry.
        elif catalogue.paper_update(paper=row, meta=paper, only_empty=True):
            report.papers_updated += 1
        out[paper.id] = row
    return out


def _metadata_hash(snippets: tuple[tuple[str, int], ...]) -> str:
    payload = json.dumps([FIXTURE_FORMAT, [[name, lines] for name, lines in snippets]], separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _version_for(
    paper: PaperMeta,
    paper_row: Paper,
    snippets: tuple[tuple[str, int], ...],
    release: Release,
    report: PublishedImportReport,
) -> TaskVersion:
    """The task version the published results of ``paper`` attach to (see ``published_import``)."""
    entry = (
        ReleaseEntry.objects.filter(release=release, task__key=paper.id)
        .select_related("task_version")
        .first()
    )
    if entry is not None:
        return entry.task_version
    task, created = catalogue.task_get_or_create(key=paper.id, paper=paper_row)
    report.tasks_created += int(created)
    wanted = dict(snippets)
    for version in task.versions.filter(has_files=True).order_by("-number"):
        have = dict(version.snippets.values_list("name", "lines"))
        if have == wanted:
            report.task_versions_linked += 1
            return version
        if set(have) == set(wanted):
            report.notes.append(
                f"{paper.id} v{version.number} has the published snippet names but other line counts; "
                "the published results use a metadata-only version instead"
            )
    files = paper.annotated_file_paths
    version, created = catalogue.task_version_create_metadata_only(
        task=task,
        content_hash=_metadata_hash(snippets),
        meta=paper,
        snippets=snippets,
        snippet_file=files[0] if len(files) == 1 else "",
    )
    if created:
        report.task_versions_created += 1
        report.snippets_created += len(snippets)
    return version


def _outcome(record: PublishedRecord) -> tuple[str, str, str]:
    """(outcome, category, tier) of a published record.

    The file has exit codes but no output. Exit code 124 is the original's 60 s timeout. A plain failure
    without output has no known exception, so its category stays empty (unknown) instead of a guess.
    """
    timed_out = record.exit_code == TIMEOUT_EXIT_CODE
    if record.passed:
        verdict = classify_imported(passed=True, exit_code=record.exit_code)
        return TestResult.Outcome.PASSED, verdict.category, TestResult.Tier.NONE
    if timed_out:
        verdict = classify_imported(passed=False, exit_code=record.exit_code, timed_out=True)
        return TestResult.Outcome.TIMEOUT, verdict.category, verdict.tier
    return TestResult.Outcome.FAILED, "", TestResult.Tier.MODEL


def _imported_runs(release: Release, models: dict[str, LanguageModel]) -> dict[int, EvaluationRun]:
    """The imported runs of ``models`` on ``release``, by model id."""
    return {
        r.model_id: r
        for r in EvaluationRun.objects.filter(
            release=release, source=EvaluationRun.Source.IMPORTED, model__in=list(models.values())
        )
    }


def _imported_run(
    model: PublishedModel,
    row: LanguageModel,
    recs: tuple[PublishedRecord, ...],
    release: Release,
    now: datetime,
) -> EvaluationRun:
    """The finished, imported run (not saved) of ``model``'s published records ``recs``, with their counts."""
    outcomes = [_outcome(r)[0] for r in recs]
    counts = {o: outcomes.count(o) for o in sorted(set(outcomes))}
    counts["total"] = len(recs)
    temperature = model.request_options.get("temperature")
    return EvaluationRun(
        model=row,
        release=release,
        template=TEMPLATE,
        with_paper=True,
        n_completions=max(1, len({r.completion_idx for r in recs})),
        temperature=float(temperature) if isinstance(temperature, (int, float)) else None,
        source=EvaluationRun.Source.IMPORTED,
        verification=EvaluationRun.Verification.PUBLISHED,
        status=EvaluationRun.Status.FINISHED,
        status_reason="imported from the paper's published results",
        counts=counts,
        total_items=len(recs),
        label="Published with the paper (ResearchCodeBench, arXiv:2506.02314)",
        finished_at=now,
    )


def _missing_completions(
    source: PublishedSource,
    models: dict[str, LanguageModel],
    runs: dict[int, EvaluationRun],
    snippet_ids: dict[tuple[str, str], int],
) -> tuple[list[Completion], list[PublishedRecord]]:
    """A done completion (not saved) for every published record its run does not hold yet, and the records
    in the same order."""
    have = set(
        Completion.objects.filter(run__in=list(runs.values())).values_list(
            "run_id", "snippet_id", "completion_idx"
        )
    )
    completions: list[Completion] = []
    verdicts: list[PublishedRecord] = []
    for model in source.models:
        run = runs[models[model.key].pk]
        for r in source.records.get(model.key, ()):
            snippet_id = snippet_ids[(r.paper, r.snippet)]
            if (run.pk, snippet_id, r.completion_idx) in have:
                continue
            completions.append(
                Completion(
                    run=run,
                    snippet_id=snippet_id,
                    completion_idx=r.completion_idx,
                    stage=Completion.Stage.DONE,
                    code="",
                    code_extracted=True,
                    attempts=1,
                )
            )
            verdicts.append(r)
    return completions, verdicts


def _primary_keys_fill(completions: list[Completion], runs: dict[int, EvaluationRun]) -> None:
    """Set the primary keys of bulk-inserted ``completions`` on a backend that does not return them."""
    ids = {
        (c["run_id"], c["snippet_id"], c["completion_idx"]): c["id"]
        for c in Completion.objects.filter(run__in=list(runs.values())).values(
            "id", "run_id", "snippet_id", "completion_idx"
        )
    }
    for c in completions:
        c.pk = ids[(c.run_id, c.snippet_id, c.completion_idx)]


def _imported_result(completion: Completion, record: PublishedRecord) -> TestResult:
    """The test result (not saved) of ``completion`` from its published ``record``."""
    outcome, category, tier = _outcome(record)
    return TestResult(
        completion_id=completion.pk,
        outcome=outcome,
        passed=outcome == TestResult.Outcome.PASSED,
        category=category,
        tier=tier,
        exit_code=record.exit_code,
        environment=ENVIRONMENT,
        attempt=1,
    )


def _import_runs(
    source: PublishedSource,
    models: dict[str, LanguageModel],
    snippet_ids: dict[tuple[str, str], int],
    release: Release,
    report: PublishedImportReport,
) -> None:
    """One finished run per model that has none on ``release``, then a completion and a test result for
    every published record not imported yet."""
    now = timezone.now()
    runs = _imported_runs(release, models)
    new_runs = [
        _imported_run(model, models[model.key], source.records.get(model.key, ()), release, now)
        for model in source.models
        if models[model.key].pk not in runs
    ]
    if new_runs:
        EvaluationRun.objects.bulk_create(new_runs)
        report.runs_created = len(new_runs)
        runs = _imported_runs(release, models)
    completions, verdicts = _missing_completions(source, models, runs, snippet_ids)
    if not completions:
        return
    Completion.objects.bulk_create(completions, batch_size=2000)
    if any(c.pk is None for c in completions):
        _primary_keys_fill(completions, runs)
    results = [_imported_result(c, r) for c, r in zip(completions, verdicts, strict=True)]
    TestResult.objects.bulk_create(results, batch_size=2000)
    report.completions_created = len(completions)
    report.results_created = len(results)


@transaction.atomic
def published_import(*, source: Path, papers: Path | None = None) -> PublishedImportReport:
    """Import published results (either format) into the release ``rcb-2025-published``. Idempotent.

    Creates what is missing: the language models (inactive: the file has no endpoints; display names made
    unique), the papers (existing ones only get empty fields filled), per paper the task version the
    results attach to, the release (made the default release when none is), and per model one finished
    run (source imported, verification published) with a completion and a test result per record.

    The task version of a paper is: the one already in the release; else the newest version *with files*
    of the task of the same key whose snippets have exactly the published names and line counts (so the
    scores stay those of the paper); else a metadata-only version (origin published, no files) holding the
    snippets' names and line counts. Raises ``PublishedSourceError`` for a bad source.
    """
    started = time.perf_counter()
    data = published_source_read(Path(source), papers=papers)
    report = PublishedImportReport(source=data.path, format=data.format, release=RELEASE_NAME)
    unknown = sorted({r.paper for recs in data.records.values() for r in recs} - set(data.snippets))
    if unknown:
        raise PublishedSourceError(f"{data.path}: results for papers without snippets: {', '.join(unknown)}")
    paper_keys = {p.id for p in data.papers}
    missing_papers = [p for p in data.snippets if p not in paper_keys]
    if missing_papers:
        raise PublishedSourceError(f"{data.path}: no paper metadata for {', '.join(missing_papers)}")
    models = _import_models(data, report)
    paper_rows = _import_papers(data, report)
    # The published benchmark keeps the paper's scoring: its snippets count whatever their tests check.
    release, report.release_created = releases.release_get_or_create(
        name=RELEASE_NAME, title=RELEASE_TITLE, description=CREDIT, counts_unchecked_snippets=True
    )
    report.made_default = releases.release_set_default_if_none(release=release)
    snippet_ids: dict[tuple[str, str], int] = {}
    by_key = {p.id: p for p in data.papers}
    for position, (paper_key, snippets) in enumerate(data.snippets.items()):
        version = _version_for(by_key[paper_key], paper_rows[paper_key], snippets, release, report)
        releases.release_entry_get_or_create(release=release, task_version=version, position=position)
        ids = dict(version.snippets.values_list("name", "id"))
        for name, _lines in snippets:
            if name not in ids:
                raise PublishedSourceError(
                    f"{data.path}: snippet {paper_key}/{name} is not in {version} of release {RELEASE_NAME}"
                )
            snippet_ids[(paper_key, name)] = ids[name]
    _import_runs(data, models, snippet_ids, release, report)
    report.duration_s = time.perf_counter() - started
    return report


# ------------------------------------------------------------------------------------------ verification


def published_verify(*, source: Path, tolerance: float = 1e-6) -> list[ScoreMismatch]:
    """Recompute each model's scores from the database rows of its imported run and compare them with the
    scores the source states (overall line and task rates, per-paper line rates). Empty list = all equal.
    A model whose run is missing is reported as a mismatch with ``actual`` None."""
    from evaluation.selectors.runs import run_snippet_results

    data = published_source_read(Path(source))
    runs = {
        r.model.key: r
        for r in EvaluationRun.objects.filter(
            release__name=RELEASE_NAME, source=EvaluationRun.Source.IMPORTED, model__key__in=list(data.scores)
        ).select_related("model")
    }
    mismatches: list[ScoreMismatch] = []

    def check(model: str, what: str, expected: float, actual: float | None) -> None:
        if actual is None or math.isnan(actual) or abs(actual - expected) > tolerance:
            mismatches.append(ScoreMismatch(model, what, expected, actual))

    for key, expected in data.scores.items():
        run = runs.get(key)
        if run is None:
            mismatches.append(ScoreMismatch(key, "run", None, None))
            continue
        results = run_snippet_results(run=run)
        check(key, "line", expected.line, line_rates(results).mean)
        check(key, "task", expected.task, task_rates(results).mean)
        papers = per_paper(results)
        for paper, value in expected.papers.items():
            check(key, f"paper:{paper}", value, papers[paper].mean if paper in papers else None)
    return mismatches
