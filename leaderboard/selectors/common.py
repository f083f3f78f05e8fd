"""What several leaderboard pages share: a language model as every table shows it (``ModelRef``), a run's
score over a selection of papers (``Score``, from a stored row or recombined exactly from per-paper sums),
whether a paper is after a model's cutoff, error counts by tier, and a snippet's difficulty."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from typing import Any, NamedTuple

from django.db.models import TextField
from django.db.models.functions import Cast

from contributions.models import Snippet
from evaluation.models import LanguageModel, TestResult
from evaluation.selectors.counts import forging_rate
from leaderboard.aggregates import summed_indices
from leaderboard.cutoffs import model_cutoff
from leaderboard.models import RunPaperScore, RunScore, SnippetStat
from researchcodebench import errors as error_catalogue
from researchcodebench.scoring import combine_rates


@dataclass(frozen=True)
class ModelRef:
    """A language model as every table shows it."""

    key: str
    name: str
    developer: str
    company: str
    open_weights: bool | None
    knowledge_cutoff: date | None
    knowledge_cutoff_raw: str
    provider_model_id: str
    #: created by a user through an upload (``LanguageModel.Management.SELF_REPORTED``): shown as such
    self_reported: bool = False

    @classmethod
    def of(cls, m: LanguageModel) -> ModelRef:
        return cls(
            key=m.key,
            name=m.name,
            developer=m.developer,
            company=m.company,
            open_weights=m.open_weights,
            knowledge_cutoff=model_cutoff(m),
            knowledge_cutoff_raw=m.knowledge_cutoff_raw,
            provider_model_id=m.provider_model_id,
            self_reported=m.is_self_reported,
        )


@dataclass(frozen=True)
class Score:
    """A run's score over one selection of papers. ``ci95`` is None when not computed for that selection
    (the bootstrap cannot be recombined from per-paper sums: only stored selections have it)."""

    scaled_pass_at_1: float | None
    scaled_pass_at_1_std: float | None
    line_rates: tuple[float | None, ...]
    pass_at_1: float | None
    pass_at_1_std: float | None
    task_rates: tuple[float | None, ...]
    ci95: tuple[float, float] | None
    snippets: int
    expected_snippets: int
    lines: int
    coverage: float
    papers: int
    #: the passes of the selection confirmed against an impossible variant, unconfirmed (no variant), and
    #: its forged verdicts (docs/scoring.md#forging-rate)
    passes_confirmed: int = 0
    passes_unconfirmed: int = 0
    passes_forged: int = 0

    @property
    def coverage_complete(self) -> bool:
        return self.expected_snippets > 0 and self.snippets >= self.expected_snippets

    @property
    def forging_rate(self) -> float | None:
        """forged / (forged + confirmed) passes, in percent; None when not measured (no pass confirmed or
        forged: results imported without code, or a run without passes)."""
        return forging_rate(forged=self.passes_forged, confirmed=self.passes_confirmed)


def _none(value: Any) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def score_from_row(row: RunScore) -> Score:
    """A stored score row as a ``Score`` (with its bootstrap interval when it has one)."""
    return Score(
        scaled_pass_at_1=row.line_mean,
        scaled_pass_at_1_std=row.line_std,
        line_rates=tuple(row.line_rates),
        pass_at_1=row.task_mean,
        pass_at_1_std=row.task_std,
        task_rates=tuple(row.task_rates),
        ci95=(row.ci_low, row.ci_high) if row.ci_low is not None and row.ci_high is not None else None,
        snippets=row.snippets,
        expected_snippets=row.expected_snippets,
        lines=row.lines,
        coverage=row.coverage,
        papers=row.papers,
        passes_confirmed=row.passes_confirmed,
        passes_unconfirmed=row.passes_unconfirmed,
        passes_forged=row.passes_forged,
    )


class PaperSums(NamedTuple):
    """The fields of a ``RunPaperScore`` that ``score_from_papers`` reads, as a plain tuple."""

    run_id: int
    paper_id: int
    line_num: list[int]
    line_den: list[int]
    task_num: list[int]
    task_den: list[int]
    snippets: int
    expected_snippets: int
    lines: int
    results: int
    passes_confirmed: int
    passes_unconfirmed: int
    passes_forged: int


def paper_sums(run_ids: Iterable[int]) -> dict[int, list[PaperSums]]:
    """The ``PaperSums`` of every paper row of ``run_ids``, by run (unordered). One query; the four JSON
    lists of every row are parsed in one go: decoding them one by one (40,000 small documents for 100
    runs x 100 papers) was most of a page over every run's papers."""
    lists = ("line_num", "line_den", "task_num", "task_den")
    # Each list as its JSON text (a cast both PostgreSQL and the embedded SQLite understand).
    texts = {f"{c}_text": Cast(c, TextField()) for c in lists}
    rows = list(
        RunPaperScore.objects.filter(run_id__in=list(run_ids))
        .order_by()
        .annotate(**texts)
        .values_list(
            "run_id",
            "paper_id",
            *texts,
            "snippets",
            "expected_snippets",
            "lines",
            "results",
            "passes_confirmed",
            "passes_unconfirmed",
            "passes_forged",
        )  # fmt: skip
    )
    decoded = json.loads("[" + ",".join(f"[{r[2]},{r[3]},{r[4]},{r[5]}]" for r in rows) + "]")
    out: dict[int, list[PaperSums]] = defaultdict(list)
    for r, (line_num, line_den, task_num, task_den) in zip(rows, decoded, strict=True):
        out[r[0]].append(PaperSums(r[0], r[1], line_num, line_den, task_num, task_den, *r[6:]))
    return out


def score_from_papers(rows: Iterable[RunPaperScore | PaperSums]) -> Score:
    """Recombine per-paper sums into one score (exact for line/task rates; ``ci95`` None)."""
    rows = list(rows)
    sums = summed_indices(rows)
    line = combine_rates(sums["line_num"], sums["line_den"], sums["task_den"])
    task = combine_rates(sums["task_num"], sums["task_den"], sums["task_den"])
    expected = sum(r.expected_snippets for r in rows)
    snippets = sum(r.snippets for r in rows)
    return Score(
        scaled_pass_at_1=_none(line.mean),
        scaled_pass_at_1_std=_none(line.std),
        line_rates=tuple(_none(v) for v in line.rates),
        pass_at_1=_none(task.mean),
        pass_at_1_std=_none(task.std),
        task_rates=tuple(_none(v) for v in task.rates),
        ci95=None,
        snippets=snippets,
        expected_snippets=expected,
        lines=sum(r.lines for r in rows),
        coverage=snippets / expected if expected else 0.0,
        papers=sum(1 for r in rows if r.results),
        passes_confirmed=sum(r.passes_confirmed for r in rows),
        passes_unconfirmed=sum(r.passes_unconfirmed for r in rows),
        passes_forged=sum(r.passes_forged for r in rows),
    )


def after_cutoff(paper_date: date | None, cutoff: date | None) -> bool | None:
    """Whether a paper's first commit is after a model's cutoff; None when either date is unknown."""
    if paper_date is None or cutoff is None:
        return None
    return paper_date > cutoff


@dataclass(frozen=True)
class ErrorCountRow:
    category: str
    label: str
    tier: str
    count: int
    share: float  # percent of the failures of the same tier


def error_rows(counts: Iterable[tuple[str, str, int]]) -> tuple[tuple[ErrorCountRow, ...], ...]:
    """(category, tier, count) triples as the model tier's rows and the infrastructure tier's, each
    largest first with its share of the tier's failures."""
    by_tier: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for category, tier, n in counts:
        by_tier[tier][category] += n
    out = []
    for tier in (TestResult.Tier.MODEL, TestResult.Tier.INFRASTRUCTURE):
        cats = by_tier.get(tier, {})
        total = sum(cats.values())
        out.append(
            tuple(
                ErrorCountRow(
                    category=c,
                    label=error_catalogue.LABELS.get(c, c.replace("_", " ").capitalize()),
                    tier=tier,
                    count=n,
                    share=100 * n / total if total else 0.0,
                )
                for c, n in sorted(cats.items(), key=lambda kv: (-kv[1], kv[0]))
            )
        )
    return out[0], out[1]


def snippet_stat(s: Snippet) -> SnippetStat:
    """The snippet's difficulty row (selected with it), or an empty one before any result."""
    try:
        return s.stat
    except SnippetStat.DoesNotExist:
        return SnippetStat(snippet=s)


def pass_rate(passed: int, results: int) -> float | None:
    """``passed`` as a percentage of ``results``; None without results."""
    return 100 * passed / results if results else None
