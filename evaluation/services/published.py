"""The original paper's published results: read them (two formats), import them, check them, re-encode them.

Two source formats are accepted, detected from the content:

- the original's ``overall_stats.json`` (docs/scoring.md), read with ``researchcodebench.scoring.load_published``
  plus the fields that reader does not keep (exit codes, ``client_kwargs``, snippet order);
- our own compact fixture ``rcb-hub-published/1`` (JSON, optionally gzipped), written by
  ``published_fixture_write`` and shipped as ``demo/rcb-2025-published.json.gz``. It holds the same figures
  re-encoded: model metadata under our field names, paper registry fields, the snippet list with line
  counts, one verdict string per (model, completion index) and the published scores to check against.

``published_import`` turns either into catalogue rows (papers, tasks, metadata-only task versions with their
snippets, the release ``rcb-2025-published``) and evaluation rows (one language model, managed as
``published`` and so locked for uploads, and one finished, imported run per model, with a completion and a
test result per published record). It is idempotent: rows
are keyed by natural keys (model key, paper key, (task, content hash), (model, release, source),
(run, snippet, completion index)) and only what is missing is created. Catalogue rows are written only
through ``contributions.services`` (their one writer); this module writes the evaluation rows itself.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from contributions.models import Paper, Release, ReleaseEntry, TaskVersion
from contributions.services import catalogue, releases
from evaluation.models import Completion, EvaluationRun, LanguageModel, TestResult
from researchcodebench.errors import classify_imported
from researchcodebench.pset import DATE_KEYS, PaperMeta, PsetError, normalise_date, read_registry_entries
from researchcodebench.scoring import (
    ResultsFormatError,
    line_rates,
    load_published,
    normalise_cutoff,
    per_paper,
    task_rates,
)

FIXTURE_FORMAT = "rcb-hub-published/1"
RELEASE_NAME = "rcb-2025-published"
RELEASE_TITLE = "ResearchCodeBench 2025 (published results)"
TEMPLATE = "rcb-2025"
CREDIT = (
    "Published results of ResearchCodeBench: Benchmarking LLMs on Implementing Novel Machine Learning "
    "Research Code (Hua et al., arXiv:2506.02314), re-encoded in the hub's own format. The figures are "
    "the paper's; the encoding is ours."
)
ENVIRONMENT = "original harness (published results)"
#: The original killed a test with coreutils ``timeout`` at 60 s, which exits 124 (docs/scoring.md).
TIMEOUT_EXIT_CODE = 124
#: Marks "no record for this snippet" in a fixture verdict string.
NO_RECORD = "."

_PAPER_FIELDS = ("title", "arxiv_abs", "github_url", "venue")
# company (as the original writes it) -> provider; models behind OpenRouter carry company OPENROUTER.
_PROVIDER_BY_COMPANY = {
    "OPENAI": LanguageModel.Provider.OPENAI,
    "ANTHROPIC": LanguageModel.Provider.ANTHROPIC,
    "GOOGLE": LanguageModel.Provider.GOOGLE,
    "XAI": LanguageModel.Provider.XAI,
    "DEEPSEEK": LanguageModel.Provider.DEEPSEEK,
    "OPENROUTER": LanguageModel.Provider.OPENROUTER,
}


class PublishedSourceError(ValueError):
    """A published-results source cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class PublishedModel:
    """One model's metadata under the hub's field names (``knowledge_cutoff`` as the source wrote it)."""

    key: str
    name: str
    provider_model_id: str = ""
    developer: str = ""
    company: str = ""
    open_weights: bool | None = None
    knowledge_cutoff: str | None = None
    input_cost_per_mtok: float | None = None
    output_cost_per_mtok: float | None = None
    request_options: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "name": self.name,
            "provider_model_id": self.provider_model_id,
            "developer": self.developer,
            "company": self.company,
            "open_weights": self.open_weights,
            "knowledge_cutoff": self.knowledge_cutoff,
            "input_cost_per_mtok": self.input_cost_per_mtok,
            "output_cost_per_mtok": self.output_cost_per_mtok,
            "request_options": self.request_options,
        }


@dataclass(frozen=True)
class PublishedRecord:
    """One published verdict: completion ``completion_idx`` of snippet ``snippet`` of paper ``paper``."""

    paper: str
    snippet: str
    completion_idx: int
    passed: bool
    exit_code: int | None


@dataclass(frozen=True)
class PublishedScores:
    """The scores the source states for one model (means over completion indices)."""

    line: float
    task: float
    papers: dict[str, float]


@dataclass(frozen=True)
class PublishedSource:
    """A published-results source in memory, whichever format it came from.

    ``snippets`` maps each paper to its snippets ``(name, N)`` in the source's order; ``records`` maps each
    model key to its verdicts; ``scores`` holds what the source claims, for ``published_verify``.
    """

    path: str
    format: str
    models: tuple[PublishedModel, ...]
    papers: tuple[PaperMeta, ...]
    snippets: dict[str, tuple[tuple[str, int], ...]]
    records: dict[str, tuple[PublishedRecord, ...]]
    scores: dict[str, PublishedScores]


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


# --------------------------------------------------------------------------------------------- reading


def _text(value: Any) -> str | None:
    """Registry text: None for missing, null or the original's string "null"."""
    if value is None:
        return None
    text = str(value).strip()
    return None if text in ("", "null") else text


def _paths(value: Any) -> tuple[str, ...]:
    if value is None or value == "null":
        return ()
    if isinstance(value, str):
        return tuple(p.strip() for p in value.split(",") if p.strip() and p.strip() != "null")
    if isinstance(value, list):
        return tuple(str(p) for p in value if p is not None and str(p) != "null")
    return ()


def _paper_from_entry(key: str, entry: Mapping[str, Any], where: str) -> PaperMeta:
    """A paper's registry fields as a ``PaperMeta`` with id ``key`` (unknown keys are not kept)."""
    kwargs: dict[str, Any] = {name: _text(entry.get(name)) for name in _PAPER_FIELDS}
    for name in DATE_KEYS:
        try:
            kwargs[name] = normalise_date(entry.get(name))
        except ValueError as exc:
            raise PublishedSourceError(f"{where}: paper {key!r}: field {name!r}: {exc}") from exc
    return PaperMeta(
        id=key,
        annotated_file_paths=_paths(entry.get("annotated_file_paths")),
        context_file_paths=_paths(entry.get("context_file_paths")),
        **kwargs,
    )


def read_registry(path: Path) -> dict[str, dict[str, Any]]:
    """A ``papers.yaml``-style registry as ``{id: entry}``; clear errors naming the file and entry."""
    try:
        return read_registry_entries(path)
    except PsetError as exc:
        raise PublishedSourceError(str(exc)) from exc


def _merge_registry(
    papers: Iterable[PaperMeta], registry: Mapping[str, Mapping[str, Any]] | None, where: str
) -> tuple[PaperMeta, ...]:
    """Registry fields override the source's own paper metadata where the registry has a value."""
    if not registry:
        return tuple(papers)
    merged = []
    for paper in papers:
        entry = registry.get(paper.id)
        if entry is None:
            merged.append(paper)
            continue
        override = _paper_from_entry(paper.id, entry, where)
        names = (*_PAPER_FIELDS, *DATE_KEYS, "annotated_file_paths", "context_file_paths")
        values = {name: getattr(override, name) for name in names}
        merged.append(replace(paper, **{name: v for name, v in values.items() if v not in (None, ())}))
    return tuple(merged)


def _cost(value: Any, where: str) -> float | None:
    if value is None or value == "null":
        return None
    try:
        return float(value)
    except (TypeError, ValueError) as exc:
        raise PublishedSourceError(f"{where}: not a number: {value!r}") from exc


def _read_original(
    path: Path, raw: dict[str, Any], registry: Mapping[str, Any] | None, registry_where: str
) -> PublishedSource:
    try:
        published = load_published(path)
    except ResultsFormatError as exc:
        raise PublishedSourceError(str(exc)) from exc
    where = str(path)
    overall = raw.get("overall_scores") or {}
    models = []
    for key, info in published.models.items():
        cfg = (overall.get(key) or {}).get("llm_cfg") or {}
        options = cfg.get("client_kwargs") or {}
        if not isinstance(options, dict):
            raise PublishedSourceError(
                f"{where}: overall_scores[{key!r}].llm_cfg.client_kwargs: expected an object"
            )
        models.append(
            PublishedModel(
                key=key,
                name=info.name,
                provider_model_id=info.provider_id or "",
                developer=info.developer or "",
                company=info.company or "",
                open_weights=info.is_open,
                knowledge_cutoff=info.knowledge_cutoff,
                input_cost_per_mtok=_cost(
                    info.input_cost, f"{where}: overall_scores[{key!r}].llm_cfg.input_cost"
                ),
                output_cost_per_mtok=_cost(
                    info.output_cost, f"{where}: overall_scores[{key!r}].llm_cfg.output_cost"
                ),
                request_options=dict(options),
            )
        )
    papers = tuple(
        _paper_from_entry(key, {**meta, "id": key}, f"{where}: results[{key!r}].paper_metadata")
        for key, meta in published.papers.items()
    )
    # Snippet order and exit codes come from the raw file: load_published keeps neither.
    snippets: dict[str, dict[str, int]] = {}
    exit_codes: dict[tuple[str, str, str, int], Any] = {}
    for paper, entry in raw["results"].items():
        order = snippets.setdefault(paper, {})
        for model, model_entry in entry["results"].items():
            for name, recs in model_entry["results"].items():
                for i, rec in enumerate(recs):
                    lines = int(rec["snippet_code_line_count"])
                    if order.setdefault(name, lines) != lines:
                        raise PublishedSourceError(
                            f"{where}: results[{paper!r}].results[{model!r}].results[{name!r}][{i}]: "
                            f"snippet_code_line_count {lines} differs from {order[name]} given elsewhere"
                        )
                    exit_codes[(paper, model, name, i)] = rec.get("exit_code")
    records: dict[str, tuple[PublishedRecord, ...]] = {}
    for model, results in published.results.items():
        seen: dict[tuple[str, str], int] = {}
        out = []
        for r in results:
            i = seen.get((r.task, r.snippet), 0)
            seen[(r.task, r.snippet)] = i + 1
            code = exit_codes[(r.task, model, r.snippet, i)]
            try:
                exit_code = None if code is None else int(code)
            except (TypeError, ValueError) as exc:
                raise PublishedSourceError(
                    f"{where}: results[{r.task!r}].results[{model!r}].results[{r.snippet!r}][{i}]: "
                    f"exit_code {code!r} is not an integer"
                ) from exc
            out.append(PublishedRecord(r.task, r.snippet, r.completion_idx, r.passed, exit_code))
        records[model] = tuple(out)
    scores: dict[str, PublishedScores] = {}
    for key in published.models:
        entry = overall.get(key)
        if not entry:
            continue
        per_paper_scores = {
            paper: float(by_model[key]["mean"])
            for paper, by_model in published.problem_scores.items()
            if key in by_model and by_model[key].get("mean") is not None
        }
        scores[key] = PublishedScores(
            line=float(entry["line_rates"]["mean"]),
            task=float(entry["task_rates"]["mean"]),
            papers=per_paper_scores,
        )
    return PublishedSource(
        path=where,
        format="original overall_stats.json",
        models=tuple(models),
        papers=_merge_registry(papers, registry, registry_where),
        snippets={p: tuple(order.items()) for p, order in snippets.items()},
        records=records,
        scores=scores,
    )


def _require(data: Mapping[str, Any], name: str, kind: type | tuple[type, ...], where: str) -> Any:
    if name not in data:
        raise PublishedSourceError(f"{where}: field {name!r} is missing")
    value = data[name]
    if not isinstance(value, kind):
        raise PublishedSourceError(f"{where}: field {name!r} has the wrong type ({type(value).__name__})")
    return value


def _read_fixture(
    path: Path, data: dict[str, Any], registry: Mapping[str, Any] | None, registry_where: str
) -> PublishedSource:
    where = str(path)
    models = []
    for i, entry in enumerate(_require(data, "models", list, where)):
        at = f"{where}: models[{i}]"
        if not isinstance(entry, dict):
            raise PublishedSourceError(f"{at}: expected an object")
        models.append(
            PublishedModel(
                key=_require(entry, "key", str, at),
                name=_require(entry, "name", str, at),
                provider_model_id=entry.get("provider_model_id") or "",
                developer=entry.get("developer") or "",
                company=entry.get("company") or "",
                open_weights=entry.get("open_weights"),
                knowledge_cutoff=entry.get("knowledge_cutoff"),
                input_cost_per_mtok=_cost(entry.get("input_cost_per_mtok"), f"{at}.input_cost_per_mtok"),
                output_cost_per_mtok=_cost(entry.get("output_cost_per_mtok"), f"{at}.output_cost_per_mtok"),
                request_options=dict(entry.get("request_options") or {}),
            )
        )
    papers = []
    for i, entry in enumerate(_require(data, "papers", list, where)):
        at = f"{where}: papers[{i}]"
        if not isinstance(entry, dict):
            raise PublishedSourceError(f"{at}: expected an object")
        papers.append(_paper_from_entry(_require(entry, "key", str, at), entry, at))
    snippets: dict[str, dict[str, int]] = {}
    order: list[tuple[str, str]] = []
    for i, item in enumerate(_require(data, "snippets", list, where)):
        if (
            not isinstance(item, list)
            or len(item) != 3
            or not all(isinstance(v, str) for v in item[:2])
            or not isinstance(item[2], int)
            or item[2] < 0
        ):
            raise PublishedSourceError(f"{where}: snippets[{i}]: expected [paper, snippet name, line count]")
        paper, name, lines = item
        if name in snippets.setdefault(paper, {}):
            raise PublishedSourceError(f"{where}: snippets[{i}]: duplicate snippet {paper}/{name}")
        snippets[paper][name] = lines
        order.append((paper, name))
    outcomes: dict[str, tuple[bool, int | None]] = {}
    for symbol, entry in _require(data, "outcomes", dict, where).items():
        at = f"{where}: outcomes[{symbol!r}]"
        if len(symbol) != 1 or symbol == NO_RECORD or not isinstance(entry, dict):
            raise PublishedSourceError(f"{at}: expected a one-character symbol mapped to an object")
        outcomes[symbol] = (bool(_require(entry, "passed", bool, at)), entry.get("exit_code"))
    known = {m.key for m in models}
    records: dict[str, tuple[PublishedRecord, ...]] = {}
    for key, strings in _require(data, "verdicts", dict, where).items():
        at = f"{where}: verdicts[{key!r}]"
        if key not in known:
            raise PublishedSourceError(f"{at}: no such model in 'models'")
        if not isinstance(strings, list) or not all(isinstance(s, str) for s in strings):
            raise PublishedSourceError(f"{at}: expected a list of strings, one per completion index")
        out = []
        for idx, text in enumerate(strings):
            if len(text) != len(order):
                raise PublishedSourceError(
                    f"{at}[{idx}]: {len(text)} verdicts for {len(order)} snippets (one character each)"
                )
            for pos, symbol in enumerate(text):
                if symbol == NO_RECORD:
                    continue
                if symbol not in outcomes:
                    raise PublishedSourceError(f"{at}[{idx}]: character {pos + 1}: unknown symbol {symbol!r}")
                passed, exit_code = outcomes[symbol]
                paper, name = order[pos]
                out.append(PublishedRecord(paper, name, idx, passed, exit_code))
        records[key] = tuple(out)
    scores = {}
    for key, entry in (data.get("published_scores") or {}).items():
        at = f"{where}: published_scores[{key!r}]"
        scores[key] = PublishedScores(
            line=float(_require(entry, "line", (int, float), at)),
            task=float(_require(entry, "task", (int, float), at)),
            papers={p: float(v) for p, v in (entry.get("papers") or {}).items()},
        )
    return PublishedSource(
        path=where,
        format=FIXTURE_FORMAT,
        models=tuple(models),
        papers=_merge_registry(papers, registry, registry_where),
        snippets={p: tuple(names.items()) for p, names in snippets.items()},
        records=records,
        scores=scores,
    )


def published_source_read(path: Path, *, papers: Path | None = None) -> PublishedSource:
    """Read either format (gzipped or not). ``papers`` is an optional ``papers.yaml``-style registry whose
    fields (first commit date etc.) override the source's paper metadata."""
    path = Path(path)
    try:
        blob = path.read_bytes()
    except OSError as exc:
        raise PublishedSourceError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    if blob[:2] == b"\x1f\x8b":
        try:
            blob = gzip.decompress(blob)
        except (OSError, EOFError) as exc:
            raise PublishedSourceError(f"{path}: not a valid gzip file ({exc})") from exc
    try:
        data = json.loads(blob.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PublishedSourceError(f"{path}: not valid JSON ({exc})") from exc
    registry = read_registry(papers) if papers is not None else None
    if isinstance(data, dict) and "format" in data:
        if data["format"] != FIXTURE_FORMAT:
            raise PublishedSourceError(
                f"{path}: field 'format' is {data['format']!r}; this version reads {FIXTURE_FORMAT!r}"
            )
        return _read_fixture(path, data, registry, str(papers))
    if isinstance(data, dict) and isinstance(data.get("results"), dict):
        return _read_original(path, data, registry, str(papers))
    raise PublishedSourceError(
        f"{path}: neither the original's overall_stats.json (an object with 'results') "
        f"nor a {FIXTURE_FORMAT!r} fixture (an object with 'format')"
    )


# ------------------------------------------------------------------------------------------- the fixture


def published_fixture_build(source: PublishedSource) -> dict[str, Any]:
    """The ``rcb-hub-published/1`` document for ``source`` (deterministic: same input, same document)."""
    order = [(paper, name) for paper, names in source.snippets.items() for name, _lines in names]
    position = {key: i for i, key in enumerate(order)}
    outcome_pairs = sorted(
        {(r.passed, r.exit_code) for recs in source.records.values() for r in recs},
        key=lambda pair: (not pair[0], pair[1] is None, pair[1] or 0),
    )
    # Readable symbols for the common outcomes, then letters for any other exit code.
    preferred = {(True, 0): "P", (False, 1): "F", (False, TIMEOUT_EXIT_CODE): "T"}
    spare = iter(
        c for c in "ABCDEGHIJKLMNOQRSUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in preferred.values()
    )
    symbols: dict[tuple[bool, int | None], str] = {}
    for pair in outcome_pairs:
        symbol = preferred.get(pair)
        if symbol is None:
            try:
                symbol = next(spare)
            except StopIteration:
                raise PublishedSourceError(f"{source.path}: too many distinct outcomes to encode") from None
        symbols[pair] = symbol
    verdicts: dict[str, list[str]] = {}
    for model in source.models:
        recs = source.records.get(model.key, ())
        n = max((r.completion_idx for r in recs), default=-1) + 1
        rows = [[NO_RECORD] * len(order) for _ in range(n)]
        for r in recs:
            rows[r.completion_idx][position[(r.paper, r.snippet)]] = symbols[(r.passed, r.exit_code)]
        verdicts[model.key] = ["".join(row) for row in rows]
    return {
        "format": FIXTURE_FORMAT,
        "source": CREDIT,
        "models": [m.to_dict() for m in source.models],
        "papers": [_fixture_paper(p) for p in source.papers],
        "snippets": [
            [paper, name, lines] for paper, names in source.snippets.items() for name, lines in names
        ],
        "outcomes": {
            symbol: {"passed": passed, "exit_code": code} for (passed, code), symbol in symbols.items()
        },
        "verdicts": verdicts,
        "published_scores": {
            key: {"line": s.line, "task": s.task, "papers": s.papers} for key, s in source.scores.items()
        },
    }


def _fixture_paper(paper: PaperMeta) -> dict[str, Any]:
    """A paper as the fixture stores it: ``key``, the text fields, the dates, the two path lists."""
    data: dict[str, Any] = {"key": paper.id}
    for name in (*_PAPER_FIELDS, *DATE_KEYS):
        data[name] = getattr(paper, name)
    data["annotated_file_paths"] = list(paper.annotated_file_paths)
    data["context_file_paths"] = list(paper.context_file_paths)
    return data


def published_fixture_write(*, source: Path, out: Path, papers: Path | None = None) -> Path:
    """Re-encode ``source`` (either format) as a fixture at ``out``; gzipped when ``out`` ends in .gz.

    The gzip header carries no timestamp or name, so regenerating from the same source gives the same bytes.
    """
    document = published_fixture_build(published_source_read(source, papers=papers))
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n"
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix == ".gz":
        out.write_bytes(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))
    else:
        out.write_text(text, encoding="utf-8")
    return out


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


def _import_runs(
    source: PublishedSource,
    models: dict[str, LanguageModel],
    snippet_ids: dict[tuple[str, str], int],
    release: Release,
    report: PublishedImportReport,
) -> None:
    now = timezone.now()
    runs = {
        r.model_id: r
        for r in EvaluationRun.objects.filter(
            release=release, source=EvaluationRun.Source.IMPORTED, model__in=list(models.values())
        )
    }
    new_runs = []
    for model in source.models:
        row = models[model.key]
        if row.pk in runs:
            continue
        recs = source.records.get(model.key, ())
        outcomes = [_outcome(r)[0] for r in recs]
        counts = {o: outcomes.count(o) for o in sorted(set(outcomes))}
        counts["total"] = len(recs)
        temperature = model.request_options.get("temperature")
        new_runs.append(
            EvaluationRun(
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
        )
    if new_runs:
        EvaluationRun.objects.bulk_create(new_runs)
        report.runs_created = len(new_runs)
        runs = {
            r.model_id: r
            for r in EvaluationRun.objects.filter(
                release=release, source=EvaluationRun.Source.IMPORTED, model__in=list(models.values())
            )
        }
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
    if not completions:
        return
    Completion.objects.bulk_create(completions, batch_size=2000)
    if any(c.pk is None for c in completions):
        # A backend that does not return primary keys from bulk inserts: look them up.
        ids = {
            (c["run_id"], c["snippet_id"], c["completion_idx"]): c["id"]
            for c in Completion.objects.filter(run__in=list(runs.values())).values(
                "id", "run_id", "snippet_id", "completion_idx"
            )
        }
        for c in completions:
            c.pk = ids[(c.run_id, c.snippet_id, c.completion_idx)]
    results = []
    for completion, r in zip(completions, verdicts, strict=True):
        outcome, category, tier = _outcome(r)
        results.append(
            TestResult(
                completion_id=completion.pk,
                outcome=outcome,
                passed=outcome == TestResult.Outcome.PASSED,
                category=category,
                tier=tier,
                exit_code=r.exit_code,
                environment=ENVIRONMENT,
                attempt=1,
            )
        )
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
    from evaluation.selectors import run_snippet_results

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
