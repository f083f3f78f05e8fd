"""Two or more models side by side (the comparison page): each on the run its model page shows, per-paper
scores and per-snippet verdicts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evaluation.models import LanguageModel
from leaderboard.selectors.models import ModelDetail, SnippetVerdict, model_detail, verdict_state


@dataclass(frozen=True)
class ComparedCell:
    """One model's result on one snippet: ``state`` as ``verdict_state``; ``completion_idx`` the
    completion to look at (its first failure, else its first pass; None when nothing was tested)."""

    run_id: int | None
    state: str
    verdicts: str
    category: str
    completion_idx: int | None


@dataclass(frozen=True)
class ComparedSnippet:
    """A snippet as several models did it (``cells`` in the comparison's model order). Snippets are
    matched by paper, task and name, so runs on different releases compare where their tasks agree.
    ``differs``: the models' states are not all the same."""

    paper_key: str
    task_key: str
    name: str
    lines: int
    snippet_ids: tuple[int | None, ...]
    cells: tuple[ComparedCell, ...]
    differs: bool


@dataclass(frozen=True)
class ComparedPaper:
    """Per-paper Scaled Pass@1 of each model (None: not scored) and the spread between the best and the
    worst of them (None unless every model has a score)."""

    paper_key: str
    paper_title: str
    scores: tuple[float | None, ...]
    spread: float | None


@dataclass(frozen=True)
class ModelComparison:
    models: tuple[ModelDetail, ...]
    papers: tuple[ComparedPaper, ...]
    snippets: tuple[ComparedSnippet, ...]
    differing: int


def _cell(run_id: int | None, v: SnippetVerdict | None) -> ComparedCell:
    if v is None:
        return ComparedCell(run_id=run_id, state="none", verdicts="", category="", completion_idx=None)
    idx = v.verdicts.find("F")
    if idx < 0:
        idx = v.verdicts.find("P")
    return ComparedCell(
        run_id=run_id,
        state=verdict_state(v.verdicts),
        verdicts=v.verdicts,
        category=v.category,
        completion_idx=idx if idx >= 0 else None,
    )


def model_compare(*, keys: Sequence[str]) -> ModelComparison:
    """Two or more models side by side, each on the run its model page shows: per-paper scores and
    per-snippet verdicts, snippets whose verdicts differ first, then document order. Raises
    ``LanguageModel.DoesNotExist`` naming an unknown key. Seven queries per model."""
    details = []
    for key in dict.fromkeys(keys):
        try:
            details.append(model_detail(key=key))
        except LanguageModel.DoesNotExist:
            raise LanguageModel.DoesNotExist(f"no model {key!r}") from None
    papers: dict[str, str] = {}
    for d in details:
        for p in d.per_paper:
            papers.setdefault(p.paper_key, p.paper_title)
    paper_rows = []
    by_paper = [{p.paper_key: p.scaled_pass_at_1 for p in d.per_paper} for d in details]
    for paper_key in sorted(papers):
        scores = tuple(scored.get(paper_key) for scored in by_paper)
        known = [s for s in scores if s is not None]
        spread = max(known) - min(known) if len(known) == len(scores) and known else None
        paper_rows.append(ComparedPaper(paper_key, papers[paper_key], scores, spread))
    by_model = [{(v.paper_key, v.task_key, v.name): v for v in d.verdict_grid} for d in details]
    order: dict[tuple[str, str, str], SnippetVerdict] = {}
    for grid in by_model:
        for k, v in grid.items():
            order.setdefault(k, v)
    snippets = []
    for k, first in sorted(order.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[1].ordinal)):
        verdicts = [grid.get(k) for grid in by_model]
        cells = tuple(
            _cell(d.run.run_id if d.run else None, v) for d, v in zip(details, verdicts, strict=True)
        )
        snippets.append(
            ComparedSnippet(
                paper_key=k[0],
                task_key=k[1],
                name=k[2],
                lines=first.lines,
                snippet_ids=tuple(v.snippet_id if v else None for v in verdicts),
                cells=cells,
                differs=len({c.state for c in cells}) > 1,
            )
        )
    snippets.sort(key=lambda s: not s.differs)
    return ModelComparison(
        models=tuple(details),
        papers=tuple(paper_rows),
        snippets=tuple(snippets),
        differing=sum(1 for s in snippets if s.differs),
    )
