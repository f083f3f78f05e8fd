"""Scores (docs/scoring.md): Scaled Pass@1 (line rate), Pass@1 (task rate), per-paper scores, coverage,
a deterministic bootstrap interval, the paired difference of two models and the contamination views.

Formulas (exact), per completion index c over the snippets s of the selection::

    line_rate_c = 100 * sum_s N_s * P_sc / sum_s N_s
    task_rate_c = 100 * sum_s P_sc / #snippets
    mean over c, population standard deviation (ddof=0) over c

As in the original, the denominator for index c holds the snippets that have a result for c. Coverage
(how many of the expected snippets have a result) is reported next to the score instead of being hidden.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 0
_CUTOFF = re.compile(r"^(\d{4})-(\d{1,2})(?:-(\d{1,2}))?$")


@dataclass(frozen=True)
class SnippetResult:
    """The verdict of completion ``completion_idx`` of one snippet; ``lines`` is the snippet's N."""

    task: str
    snippet: str
    lines: int
    completion_idx: int
    passed: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "snippet": self.snippet,
            "lines": self.lines,
            "completion_idx": self.completion_idx,
            "passed": self.passed,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SnippetResult:
        return cls(
            task=str(data["task"]),
            snippet=str(data["snippet"]),
            lines=int(data["lines"]),
            completion_idx=int(data["completion_idx"]),
            passed=bool(data["passed"]),
        )


@dataclass(frozen=True)
class Rates:
    """Mean and population std over completion indices, and the per-index rates (index order)."""

    mean: float
    std: float
    rates: tuple[float, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"mean": self.mean, "std": self.std, "rates": list(self.rates)}


SnippetKey = tuple[str, str]


def _select(results: Iterable[SnippetResult], snippets: Iterable[SnippetKey] | None) -> list[SnippetResult]:
    if snippets is None:
        return list(results)
    wanted = set(snippets)
    return [r for r in results if (r.task, r.snippet) in wanted]


def _mean_std(values: list[float]) -> tuple[float, float]:
    if not values:
        return math.nan, math.nan
    mean = sum(values) / len(values)
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


def _rates(results: list[SnippetResult], weighted: bool) -> Rates:
    by_idx: dict[int, list[SnippetResult]] = {}
    for r in results:
        by_idx.setdefault(r.completion_idx, []).append(r)
    totals: dict[int, tuple[int, int]] = {}
    for idx, group in by_idx.items():
        if weighted:
            totals[idx] = (sum(r.lines for r in group if r.passed), sum(r.lines for r in group))
        else:
            totals[idx] = (sum(1 for r in group if r.passed), len(group))
    return rates_from_totals(totals)


def rates_from_totals(totals: Mapping[int, tuple[int, int]]) -> Rates:
    """``Rates`` from what passed out of the total per completion index: lines for Scaled Pass@1 (what
    ``line_rates`` sums), results for Pass@1 (what ``task_rates`` counts). A caller that counts in its
    database gets the same figures as from the results themselves; an index with a total of 0 rates NaN."""
    rates = [100 * totals[idx][0] / totals[idx][1] if totals[idx][1] else math.nan for idx in sorted(totals)]
    mean, std = _mean_std(rates)
    return Rates(mean=mean, std=std, rates=tuple(rates))


def line_rates(results: Iterable[SnippetResult], *, snippets: Iterable[SnippetKey] | None = None) -> Rates:
    """Scaled Pass@1 over ``results`` (restricted to ``snippets`` (task, name) pairs when given)."""
    return _rates(_select(results, snippets), weighted=True)


def task_rates(results: Iterable[SnippetResult], *, snippets: Iterable[SnippetKey] | None = None) -> Rates:
    """Pass@1 over ``results`` (restricted to ``snippets`` (task, name) pairs when given)."""
    return _rates(_select(results, snippets), weighted=False)


def per_paper(results: Iterable[SnippetResult]) -> dict[str, Rates]:
    """``problem_scores`` for one model: the line rate of each paper (task) separately."""
    grouped: dict[str, list[SnippetResult]] = {}
    for r in results:
        grouped.setdefault(r.task, []).append(r)
    return {task: _rates(group, weighted=True) for task, group in grouped.items()}


def _quantile(sorted_values: list[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default method) of already sorted values."""
    pos = (len(sorted_values) - 1) * q
    low = math.floor(pos)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (pos - low)


def bootstrap_ci(
    results: Iterable[SnippetResult],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the line rate, resampling snippets with replacement.

    Each snippet contributes N_s and its pass fraction over completions. Snippets are ordered by
    (task, name) and the generator is ``random.Random(seed)``, so the interval is reproducible.
    """
    passes: dict[SnippetKey, list[bool]] = {}
    lines: dict[SnippetKey, int] = {}
    for r in results:
        key = (r.task, r.snippet)
        passes.setdefault(key, []).append(r.passed)
        lines[key] = r.lines
    keys = sorted(passes)
    if not keys:
        return math.nan, math.nan
    weights = [lines[k] for k in keys]
    gains = [lines[k] * sum(passes[k]) / len(passes[k]) for k in keys]
    rng = random.Random(seed)
    population = range(len(keys))
    stats: list[float] = []
    for _ in range(resamples):
        picks = rng.choices(population, k=len(keys))
        total = sum(map(weights.__getitem__, picks))
        stats.append(100 * sum(map(gains.__getitem__, picks)) / total if total else 0.0)
    stats.sort()
    alpha = (1 - level) / 2
    return _quantile(stats, alpha), _quantile(stats, 1 - alpha)


#: resamples of the paired bootstrap (``paired_difference``): numpy draws them all at once
PAIRED_RESAMPLES = 2000


@dataclass(frozen=True)
class PairedDifference:
    """Model A minus model B in Scaled Pass@1 points over the ``snippets`` both were judged on, with the
    percentile interval (``level``) of a paired bootstrap: each resample draws snippets with replacement and
    scores both models on the same draw, so what the two share (a snippet hard for both) cancels out.
    ``distinguishable``: the interval excludes zero."""

    difference: float
    low: float
    high: float
    snippets: int
    level: float = 0.95

    @property
    def distinguishable(self) -> bool:
        return self.low > 0 or self.high < 0


def paired_difference(
    a: Mapping[Any, tuple[int, float]],
    b: Mapping[Any, tuple[int, float]],
    *,
    resamples: int = PAIRED_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    level: float = 0.95,
) -> PairedDifference | None:
    """A minus B over the snippets both were judged on: ``a`` and ``b`` map a snippet's key (any sortable
    value, such as (task, name)) to (N_s, the fraction of its completions that passed). The difference is
    the line-weighted rate of A minus B's on the shared snippets (``100 * sum N_s (p_As - p_Bs) / sum N_s``);
    the interval comes from ``numpy.random.default_rng(seed)``, the keys sorted, so it is reproducible.
    None when they share no snippet (or the shared ones have no lines)."""
    import numpy as np

    keys = sorted(set(a) & set(b))
    lines = np.array([a[k][0] for k in keys], dtype=np.float64)
    if not keys or lines.sum() <= 0:
        return None
    gains = lines * np.array([a[k][1] - b[k][1] for k in keys], dtype=np.float64)
    difference = float(100 * gains.sum() / lines.sum())
    picks = np.random.default_rng(seed).integers(0, len(keys), size=(resamples, len(keys)))
    weights = lines[picks].sum(axis=1)
    stats = 100 * gains[picks].sum(axis=1) / np.where(weights > 0, weights, 1)
    alpha = (1 - level) / 2
    low, high = np.quantile(stats, [alpha, 1 - alpha])
    return PairedDifference(
        difference=difference, low=float(low), high=float(high), snippets=len(keys), level=level
    )


def normalise_cutoff(value: str | _dt.date | None) -> _dt.date | None:
    """A knowledge cutoff as a date: '2024-7'/'2024-07' -> 2024-07-01, '2024-11-17' as is; None/'null'/''
    -> None. ValueError for anything else."""
    if value is None:
        return None
    if isinstance(value, _dt.datetime):
        return value.date()
    if isinstance(value, _dt.date):
        return value
    text = str(value).strip()
    if text.lower() in ("", "null", "none"):
        return None
    match = _CUTOFF.match(text)
    if not match:
        raise ValueError(f"knowledge cutoff {value!r} is not YYYY-MM or YYYY-MM-DD")
    year, month, day = match.groups()
    return _dt.date(int(year), int(month), int(day) if day else 1)


def _paper_date(value: Any) -> _dt.date | None:
    if value is None or isinstance(value, _dt.date):
        return value.date() if isinstance(value, _dt.datetime) else value
    return normalise_cutoff(str(value))


def original_global_cutoff(cutoffs: Iterable[str | None]) -> _dt.date | None:
    """The original's global cutoff, bug included: the maximum of the cutoffs *as text* (so '2024-7' beats
    '2024-10'), read as the first day of its month. Null cutoffs are ignored."""
    texts = [str(c).strip() for c in cutoffs if c is not None and str(c).strip().lower() not in ("", "null")]
    if not texts:
        return None
    latest = normalise_cutoff(max(texts))
    return latest.replace(day=1) if latest else None


def fixed_global_cutoff(cutoffs: Iterable[str | None]) -> _dt.date | None:
    """The latest cutoff compared as dates (the fix of ``original_global_cutoff``)."""
    dates = [d for d in (normalise_cutoff(c) for c in cutoffs) if d is not None]
    return max(dates) if dates else None


def global_contamination_papers(
    paper_dates: Mapping[str, Any], cutoffs: Iterable[str | None], *, rule: str = "original"
) -> list[str]:
    """Papers kept for every model: ``first_commit_date`` strictly after the global cutoff.

    ``rule="original"`` compares cutoffs as text (the published behaviour), ``rule="fixed"`` as dates.
    Papers without a first commit date cannot be shown clean and are dropped (``papers_after``), also when
    no model's cutoff is known (then every dated paper is kept).
    """
    if rule not in ("original", "fixed"):
        raise ValueError(f"unknown rule {rule!r}: use 'original' or 'fixed'")
    cutoffs = list(cutoffs)
    cutoff = original_global_cutoff(cutoffs) if rule == "original" else fixed_global_cutoff(cutoffs)
    return papers_after(paper_dates, cutoff)


def per_model_papers(paper_dates: Mapping[str, Any], cutoff: str | None) -> list[str] | None:
    """Papers whose first commit is after this model's own cutoff (``papers_after``); None when the cutoff
    is unknown."""
    date = normalise_cutoff(cutoff)
    if date is None:
        return None
    return papers_after(paper_dates, date)


def papers_after(paper_dates: Mapping[str, Any], cutoff: _dt.date | None) -> list[str]:
    """The papers whose first commit is known and strictly after ``cutoff`` (None: every dated paper), in
    ``paper_dates`` order: the one rule of both contamination modes. A paper with no known date can never
    be shown clean, so no date-restricted view keeps it."""
    return papers_between(paper_dates, cutoff + _dt.timedelta(days=1) if cutoff else None, None)


def papers_between(paper_dates: Mapping[str, Any], start: _dt.date | None, end: _dt.date | None) -> list[str]:
    """The papers whose first commit is known and within ``start``..``end`` (both included; None: no bound),
    in ``paper_dates`` order (a board's paper-date window). Papers with no known date are never kept."""
    return [
        paper
        for paper, raw in paper_dates.items()
        if (d := _paper_date(raw)) is not None and (start is None or d >= start) and (end is None or d <= end)
    ]


def undated_papers(paper_dates: Mapping[str, Any]) -> list[str]:
    """The papers with no known first commit date, in ``paper_dates`` order: what every date-restricted
    view (both contamination rules, a date window) leaves out."""
    return [paper for paper, raw in paper_dates.items() if _paper_date(raw) is None]


@dataclass(frozen=True)
class ModelInfo:
    """A model's metadata as the published file gives it (``llm_cfg``)."""

    key: str
    name: str
    provider_id: str | None = None
    developer: str | None = None
    company: str | None = None
    is_open: bool | None = None
    knowledge_cutoff: str | None = None
    input_cost: float | None = None
    output_cost: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Published:
    """A parsed ``overall_stats.json``: per-model results and the published scores to compare with."""

    models: dict[str, ModelInfo]
    results: dict[str, tuple[SnippetResult, ...]]
    papers: dict[str, dict[str, Any]]
    overall: dict[str, dict[str, Any]]
    problem_scores: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)

    def snippet_lines(self) -> dict[SnippetKey, int]:
        """Every snippet seen in any model's results, with its N."""
        out: dict[SnippetKey, int] = {}
        for results in self.results.values():
            for r in results:
                out[(r.task, r.snippet)] = r.lines
        return out

    def paper_dates(self, registry: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """first_commit_date per paper: from ``registry`` when given, else from the file's metadata."""
        dates: dict[str, Any] = {}
        for paper, meta in self.papers.items():
            if registry is not None and paper in registry:
                dates[paper] = registry[paper]
            else:
                dates[paper] = meta.get("first_commit_date")
        return dates


class ResultsFormatError(ValueError):
    """The results file is not in the original's published format (message names the path and field)."""


def load_published(path: str | Path) -> Published:
    """Read the original's published results file (``overall_stats.json``)."""
    source = Path(path)
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ResultsFormatError(f"{source}: cannot read ({exc.strerror or exc})") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResultsFormatError(f"{source}: not valid JSON ({exc})") from exc
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        raise ResultsFormatError(f"{source}: expected an object with a 'results' mapping of papers")
    overall = data.get("overall_scores") or {}
    results: dict[str, list[SnippetResult]] = {}
    papers: dict[str, dict[str, Any]] = {}
    problem_scores: dict[str, dict[str, dict[str, float]]] = {}
    for paper, entry in data["results"].items():
        where = f"{source}: results[{paper!r}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("results"), dict):
            raise ResultsFormatError(f"{where}: expected an object with a 'results' mapping of models")
        papers[paper] = dict(entry.get("paper_metadata") or {})
        problem_scores[paper] = dict(entry.get("problem_scores") or {})
        for model, model_entry in entry["results"].items():
            snippets = model_entry.get("results") if isinstance(model_entry, dict) else None
            if not isinstance(snippets, dict):
                raise ResultsFormatError(f"{where}.results[{model!r}]: expected a 'results' mapping")
            results.setdefault(model, []).extend(
                _snippet_results(paper, snippets, f"{where}.results[{model!r}]")
            )
    models = {
        key: _model_info(key, overall) for key in list(overall) + [m for m in results if m not in overall]
    }
    return Published(
        models=models,
        results={k: tuple(v) for k, v in results.items()},
        papers=papers,
        overall=dict(overall),
        problem_scores=problem_scores,
    )


def _snippet_results(paper: str, snippets: dict[str, Any], where: str) -> list[SnippetResult]:
    """One model's records on one paper (``snippet name -> [record, ...]``); ``where`` names them in errors."""
    out: list[SnippetResult] = []
    for name, records in snippets.items():
        for i, rec in enumerate(records):
            try:
                out.append(
                    SnippetResult(
                        task=paper,
                        snippet=name,
                        lines=int(rec["snippet_code_line_count"]),
                        completion_idx=int(rec.get("completion_idx", 0)),
                        passed=bool(rec["passed"]),
                    )
                )
            except (KeyError, TypeError, ValueError) as exc:
                raise ResultsFormatError(f"{where}.results[{name!r}][{i}]: bad record ({exc!r})") from exc
    return out


def _model_info(key: str, overall: dict[str, Any]) -> ModelInfo:
    """A model's metadata from its ``llm_cfg`` in the file's overall scores (its key alone when absent)."""
    cfg = (overall.get(key) or {}).get("llm_cfg") or {}
    cutoff = cfg.get("knowledge_cutoff_date")
    return ModelInfo(
        key=key,
        name=str(cfg.get("pretty_name") or key),
        provider_id=cfg.get("model"),
        developer=cfg.get("developer"),
        company=cfg.get("company"),
        is_open=cfg.get("is_open"),
        knowledge_cutoff=None if cutoff in (None, "null") else str(cutoff),
        input_cost=cfg.get("input_cost"),
        output_cost=cfg.get("output_cost"),
    )


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value


@dataclass(frozen=True)
class ModelScore:
    """One model's scores over a selection of papers."""

    key: str
    name: str
    line: Rates
    task: Rates
    ci95: tuple[float, float]
    snippets: int
    lines: int
    coverage: float
    papers: tuple[str, ...]
    per_paper: dict[str, Rates]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; a score over no snippets (NaN) becomes None so the document stays valid JSON."""
        return {
            "key": self.key,
            "name": self.name,
            "scaled_pass_at_1": _finite(self.line.mean),
            "pass_at_1": _finite(self.task.mean),
            "scaled_pass_at_1_std": _finite(self.line.std),
            "pass_at_1_std": _finite(self.task.std),
            "ci95": [_finite(v) for v in self.ci95],
            "snippets": self.snippets,
            "lines": self.lines,
            "coverage": self.coverage,
            "papers": list(self.papers),
        }


def score_model(
    key: str,
    name: str,
    results: Iterable[SnippetResult],
    *,
    expected: Mapping[SnippetKey, int],
    papers: Iterable[str] | None = None,
) -> ModelScore:
    """Score one model over ``papers`` (all when None). ``expected`` lists every snippet that *should*
    have a result (with its N): ``coverage`` = tested expected snippets / expected snippets."""
    chosen = set(papers) if papers is not None else None
    selected = [r for r in results if chosen is None or r.task in chosen]
    wanted = {k: n for k, n in expected.items() if chosen is None or k[0] in chosen}
    tested = {(r.task, r.snippet) for r in selected}
    return ModelScore(
        key=key,
        name=name,
        line=line_rates(selected),
        task=task_rates(selected),
        ci95=bootstrap_ci(selected),
        snippets=len(tested),
        lines=sum(n for k, n in wanted.items() if k in tested),
        coverage=(len(tested & set(wanted)) / len(wanted)) if wanted else 0.0,
        papers=tuple(sorted({r.task for r in selected})),
        per_paper=per_paper(selected),
    )


def score_published(
    published: Published,
    *,
    contamination: str = "none",
    registry_dates: Mapping[str, Any] | None = None,
    global_rule: str = "original",
) -> list[ModelScore]:
    """Score every model of a published file, best Scaled Pass@1 first.

    ``contamination``: ``none`` (all papers), ``global`` (the original's rule: one cutoff for all models;
    ``global_rule`` picks the text-compare original or the date-compare fix) or ``per-model`` (each model
    on the papers after its own cutoff; a model with an unknown cutoff gets no papers).
    """
    if contamination not in ("none", "global", "per-model"):
        raise ValueError(f"unknown contamination mode {contamination!r}: use none, global or per-model")
    expected = published.snippet_lines()
    dates = published.paper_dates(registry_dates)
    global_papers: list[str] | None = None
    if contamination == "global":
        cutoffs = [m.knowledge_cutoff for m in published.models.values()]
        global_papers = global_contamination_papers(dates, cutoffs, rule=global_rule)
    scores: list[ModelScore] = []
    for key, info in published.models.items():
        papers: Iterable[str] | None = None
        if contamination == "global":
            papers = global_papers
        elif contamination == "per-model":
            papers = per_model_papers(dates, info.knowledge_cutoff) or []
        scores.append(
            score_model(key, info.name, published.results.get(key, ()), expected=expected, papers=papers)
        )
    scores.sort(key=lambda s: (-(s.line.mean if not math.isnan(s.line.mean) else -math.inf), s.key))
    return scores


def combine_rates(num: Sequence[int], den: Sequence[int], present: Sequence[int]) -> Rates:
    """Rates from per-index integer sums, exactly as the rates of results are computed here
    (the portal's read models keep these sums).

    ``present[c]`` > 0 when index c has at least one result (``scoring`` only has rates for indices that
    occur); ``num[c] / den[c]`` is the rate of index c (NaN when ``den[c]`` is 0 but results exist, as in
    ``scoring`` for snippets of 0 lines).
    """
    rates: list[float] = []
    for c, count in enumerate(present):
        if count:
            rates.append(100 * num[c] / den[c] if den[c] else math.nan)
    if not rates:
        return Rates(mean=math.nan, std=math.nan, rates=())
    mean = sum(rates) / len(rates)
    return Rates(
        mean=mean, std=math.sqrt(sum((v - mean) ** 2 for v in rates) / len(rates)), rates=tuple(rates)
    )
