"""The original paper's published results as plain data: read them (two formats) and re-encode them.

Two source formats are accepted, detected from the content:

- the original's ``overall_stats.json`` (docs/scoring.md), read with ``researchcodebench.scoring.load_published``
  plus the fields that reader does not keep (exit codes, ``client_kwargs``, snippet order);
- our own compact fixture ``rcb-hub-published/1`` (JSON, optionally gzipped), written by
  ``published_fixture_write`` and shipped as ``demo/rcb-2025-published.json.gz``. It holds the same figures
  re-encoded: model metadata under our field names, paper registry fields, the snippet list with line
  counts, one verdict string per (model, completion index) and the published scores to check against.

No database here: ``evaluation.services.published`` imports what this module reads.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from researchcodebench.pset import DATE_KEYS, PaperMeta, PsetError, normalise_date, read_registry_entries
from researchcodebench.scoring import Published, ResultsFormatError, load_published

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


def _original_models(
    published: Published, overall: Mapping[str, Any], where: str
) -> tuple[PublishedModel, ...]:
    """Each model's metadata, with the request options (``client_kwargs``) that ``load_published`` drops."""
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
    return tuple(models)


def _original_snippets_and_exit_codes(
    raw: Mapping[str, Any], where: str
) -> tuple[dict[str, dict[str, int]], dict[tuple[str, str, str, int], Any]]:
    """Snippet order with line counts per paper, and each record's raw exit code keyed by (paper, model,
    snippet, index): ``load_published`` keeps neither. A snippet whose line count differs between records is
    refused."""
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
    return snippets, exit_codes


def _original_records(
    published: Published, exit_codes: Mapping[tuple[str, str, str, int], Any], where: str
) -> dict[str, tuple[PublishedRecord, ...]]:
    """Each model's verdicts with their exit codes (the n-th record of a snippet gets its n-th exit code)."""
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
    return records


def _original_scores(published: Published, overall: Mapping[str, Any]) -> dict[str, PublishedScores]:
    """The line, task and per-paper scores the file states, for models it has overall scores for."""
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
    return scores


def _read_original(
    path: Path, raw: dict[str, Any], registry: Mapping[str, Any] | None, registry_where: str
) -> PublishedSource:
    """The original's ``overall_stats.json``: what ``load_published`` reads, plus what it does not keep."""
    try:
        published = load_published(path)
    except ResultsFormatError as exc:
        raise PublishedSourceError(str(exc)) from exc
    where = str(path)
    overall = raw.get("overall_scores") or {}
    models = _original_models(published, overall, where)
    papers = tuple(
        _paper_from_entry(key, {**meta, "id": key}, f"{where}: results[{key!r}].paper_metadata")
        for key, meta in published.papers.items()
    )
    snippets, exit_codes = _original_snippets_and_exit_codes(raw, where)
    records = _original_records(published, exit_codes, where)
    scores = _original_scores(published, overall)
    return PublishedSource(
        path=where,
        format="original overall_stats.json",
        models=models,
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


def _fixture_models(data: Mapping[str, Any], where: str) -> list[PublishedModel]:
    """The fixture's ``models``: each an object with at least ``key`` and ``name``."""
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
    return models


def _fixture_papers(data: Mapping[str, Any], where: str) -> list[PaperMeta]:
    """The fixture's ``papers``: registry fields under ``key``."""
    papers = []
    for i, entry in enumerate(_require(data, "papers", list, where)):
        at = f"{where}: papers[{i}]"
        if not isinstance(entry, dict):
            raise PublishedSourceError(f"{at}: expected an object")
        papers.append(_paper_from_entry(_require(entry, "key", str, at), entry, at))
    return papers


def _fixture_snippets(
    data: Mapping[str, Any], where: str
) -> tuple[dict[str, dict[str, int]], list[tuple[str, str]]]:
    """The fixture's ``snippets`` as line counts per paper, and their order (the verdict strings' columns)."""
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
    return snippets, order


def _fixture_outcomes(data: Mapping[str, Any], where: str) -> dict[str, tuple[bool, int | None]]:
    """The fixture's ``outcomes``: symbol -> (passed, exit code)."""
    outcomes: dict[str, tuple[bool, int | None]] = {}
    for symbol, entry in _require(data, "outcomes", dict, where).items():
        at = f"{where}: outcomes[{symbol!r}]"
        if len(symbol) != 1 or symbol == NO_RECORD or not isinstance(entry, dict):
            raise PublishedSourceError(f"{at}: expected a one-character symbol mapped to an object")
        outcomes[symbol] = (bool(_require(entry, "passed", bool, at)), entry.get("exit_code"))
    return outcomes


def _fixture_records(
    data: Mapping[str, Any],
    where: str,
    *,
    known: set[str],
    order: list[tuple[str, str]],
    outcomes: Mapping[str, tuple[bool, int | None]],
) -> dict[str, tuple[PublishedRecord, ...]]:
    """The fixture's ``verdicts`` decoded: per model in ``known``, one string per completion index with one
    symbol of ``outcomes`` (or ``NO_RECORD``) per snippet of ``order``."""
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
    return records


def _fixture_scores(data: Mapping[str, Any], where: str) -> dict[str, PublishedScores]:
    """The fixture's ``published_scores`` (optional)."""
    scores = {}
    for key, entry in (data.get("published_scores") or {}).items():
        at = f"{where}: published_scores[{key!r}]"
        scores[key] = PublishedScores(
            line=float(_require(entry, "line", (int, float), at)),
            task=float(_require(entry, "task", (int, float), at)),
            papers={p: float(v) for p, v in (entry.get("papers") or {}).items()},
        )
    return scores


def _read_fixture(
    path: Path, data: dict[str, Any], registry: Mapping[str, Any] | None, registry_where: str
) -> PublishedSource:
    """Our ``rcb-hub-published/1`` fixture, each field checked; errors name the field."""
    where = str(path)
    models = _fixture_models(data, where)
    papers = _fixture_papers(data, where)
    snippets, order = _fixture_snippets(data, where)
    outcomes = _fixture_outcomes(data, where)
    records = _fixture_records(data, where, known={m.key for m in models}, order=order, outcomes=outcomes)
    scores = _fixture_scores(data, where)
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
