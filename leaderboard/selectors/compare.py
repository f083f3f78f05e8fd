"""Two or more models side by side (the comparison page), comparable by construction: every model on a run
of one setting (release, prompt template, paper in the prompt or not), per-paper scores, per-snippet verdicts
and, for each pair, the paired difference in Scaled Pass@1 with its bootstrap interval. Models with no
setting in common are not lined up: the comparison says which settings each has and the nearest common one.
The page reads ``model_compare``; the API (``/api/v1/compare/``) its numbers, ``comparison_summary``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

from evaluation.models import EvaluationRun, LanguageModel
from leaderboard.selectors.models import (
    ModelDetail,
    RunSummary,
    SnippetVerdict,
    model_detail,
    verdict_state,
)
from researchcodebench.scoring import PairedDifference, paired_difference


@dataclass(frozen=True, order=True)
class Setting:
    """What a score is relative to: the release (None: a run on no release), the prompt template and
    whether the paper was in the prompt; for a run on no release, ``covers``: what it covers instead (its
    ``RunSummary.label``, such as "new task rmsnorm v2" for a run queued on the task's approval). Scores of
    different settings are on different tasks or prompts."""

    release: str | None
    template: str
    with_paper: bool
    covers: str = ""

    @classmethod
    def of(cls, run: RunSummary) -> Setting:
        return cls(run.release, run.template, run.with_paper, "" if run.release else run.label)

    @property
    def label(self) -> str:
        paper = "with the paper" if self.with_paper else "without the paper"
        if self.release:
            release = f"release {self.release}"
        else:
            release = f"{self.covers} (not in a release)" if self.covers else "no release"
        return f"{release}, template {self.template}, {paper}"

    @property
    def query(self) -> dict[str, str]:
        """The comparison's query parameters that pick this setting."""
        query = {
            "release": self.release or "",
            "template": self.template,
            "paper": "with" if self.with_paper else "without",
        }
        return {**query, "covers": self.covers} if self.covers else query

    def picks(self, setting: Setting) -> bool:
        """Whether ``setting`` is this one (``SettingQuery.picks`` takes part of one)."""
        return setting == self


@dataclass(frozen=True)
class SettingQuery:
    """Part of a setting, as the API asks for one: each of ``release``, ``template`` and ``with_paper`` that
    is not None must match, the others may be anything."""

    release: str | None = None
    template: str | None = None
    with_paper: bool | None = None

    def picks(self, setting: Setting) -> bool:
        return (
            (self.release is None or setting.release == self.release)
            and (self.template is None or setting.template == self.template)
            and (self.with_paper is None or setting.with_paper == self.with_paper)
        )

    @property
    def label(self) -> str:
        parts = [f"release {self.release}"] if self.release is not None else []
        parts += [f"template {self.template}"] if self.template is not None else []
        if self.with_paper is not None:
            parts.append("with the paper" if self.with_paper else "without the paper")
        return ", ".join(parts) or "any setting"


#: the most models one comparison shows (each costs a model page's queries)
COMPARE_LIMIT = 6


@dataclass(frozen=True)
class ModelSettings:
    """The settings a model has a scored run on, its model page's own first."""

    key: str
    name: str
    settings: tuple[Setting, ...]


@dataclass(frozen=True)
class SettingChoice:
    """The settings of the picked models: ``common`` (every model has a scored run on each), ``chosen``
    (the one compared; None when none is common or none the one asked for picks), ``nearest`` (when none is
    common: the setting most of the models share, with ``nearest_keys`` the models that have it; None when
    no two models share one) and each model's own."""

    chosen: Setting | None
    common: tuple[Setting, ...]
    per_model: tuple[ModelSettings, ...]
    asked: Setting | SettingQuery | None = None
    nearest: Setting | None = None
    nearest_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class PairedRow:
    """The paired difference of two compared models (indices into ``ModelComparison.models``): first minus
    second; None when they share no judged snippet."""

    first: int
    second: int
    difference: PairedDifference | None


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
    """``models`` each on its run of ``setting``."""

    setting: Setting
    models: tuple[ModelDetail, ...]
    papers: tuple[ComparedPaper, ...]
    snippets: tuple[ComparedSnippet, ...]
    differing: int
    pairs: tuple[PairedRow, ...] = ()


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


def _scored(detail: ModelDetail) -> list[RunSummary]:
    return [r for r in detail.runs if r.scaled_pass_at_1 is not None]


def setting_choice(
    details: Sequence[ModelDetail], asked: Setting | SettingQuery | None = None
) -> SettingChoice:
    """Which setting ``details`` (each model's default page) are compared on: the first common one that
    ``asked`` picks (a setting, or part of one), else (nothing asked) the first model's own setting when
    common, else the common setting of its newest run; none when nothing is common (or none that ``asked``
    picks), with the nearest setting instead when nothing is common."""
    per_model = []
    for d in details:
        own = [Setting.of(d.run)] if d.run is not None and d.run.scaled_pass_at_1 is not None else []
        settings = dict.fromkeys([*own, *(Setting.of(r) for r in _scored(d))])
        per_model.append(ModelSettings(key=d.model.key, name=d.model.name, settings=tuple(settings)))
    sets = [set(m.settings) for m in per_model]
    common_set = set.intersection(*sets) if sets else set()
    order = per_model[0].settings if per_model else ()
    common = tuple(s for s in order if s in common_set)
    if asked is not None:
        chosen = next((s for s in common if asked.picks(s)), None)
    else:
        chosen = common[0] if common else None
    nearest, nearest_keys = None, ()
    if not common:
        counts = Counter(s for m in per_model for s in m.settings)
        first_seen: dict[Setting, int] = {}
        for s in (s for m in per_model for s in m.settings):
            first_seen.setdefault(s, len(first_seen))
        shared = [s for s, n in counts.items() if n >= 2]
        if shared:
            nearest = min(shared, key=lambda s: (-counts[s], first_seen[s]))
            nearest_keys = tuple(m.key for m in per_model if nearest in m.settings)
    return SettingChoice(
        chosen=chosen, common=common, per_model=tuple(per_model), asked=asked,
        nearest=nearest, nearest_keys=nearest_keys,
    )  # fmt: skip


def _run_on(detail: ModelDetail, setting: Setting) -> int:
    """The model's run on ``setting`` the comparison uses: its finished one, newest first, else its newest
    scored one (the model page's own run when it is on the setting)."""
    if detail.run is not None and Setting.of(detail.run) == setting:
        return detail.run.run_id
    on = [r for r in _scored(detail) if Setting.of(r) == setting]
    finished = [r for r in on if r.status == EvaluationRun.Status.FINISHED]
    return (finished or on)[0].run_id


def model_compare(
    *, keys: Sequence[str], setting: Setting | SettingQuery | None = None
) -> tuple[SettingChoice, ModelComparison | None]:
    """Two or more models side by side on one setting (``setting_choice``): per-paper scores, per-snippet
    verdicts (snippets whose verdicts differ first, then document order) and each pair's paired difference.
    The comparison is None when the models have no setting in common (or not ``setting``). Raises
    ``LanguageModel.DoesNotExist`` naming an unknown key. Eight queries per model, eight more for each one
    whose model page shows another setting."""
    details = []
    for key in dict.fromkeys(keys):
        try:
            details.append(model_detail(key=key))
        except LanguageModel.DoesNotExist:
            raise LanguageModel.DoesNotExist(f"no model {key!r}") from None
    choice = setting_choice(details, setting)
    if choice.chosen is None:
        return choice, None
    details = [
        d if d.run is not None and d.run.run_id == _run_on(d, choice.chosen)
        else model_detail(key=d.model.key, run_id=_run_on(d, choice.chosen))
        for d in details
    ]  # fmt: skip
    return choice, _comparison(choice.chosen, details)


def _fractions(detail: ModelDetail) -> dict[tuple[str, str, str], tuple[int, float]]:
    """(paper, task, name) -> (lines, fraction of the tested completions that passed) of each judged snippet."""
    return {
        (v.paper_key, v.task_key, v.name): (v.lines, v.passed / v.tested)
        for v in detail.verdict_grid
        if v.tested
    }


def _comparison(setting: Setting, details: Sequence[ModelDetail]) -> ModelComparison:
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
    fractions = [_fractions(d) for d in details]
    pairs = tuple(
        PairedRow(first=i, second=j, difference=paired_difference(fractions[i], fractions[j]))
        for i, j in combinations(range(len(details)), 2)
    )
    return ModelComparison(
        setting=setting,
        pairs=pairs,
        models=tuple(details),
        papers=tuple(paper_rows),
        snippets=tuple(snippets),
        differing=sum(1 for s in snippets if s.differs),
    )


@dataclass(frozen=True)
class ComparedScore:
    """One model of a comparison as the API answers it: the settings it has a scored run on, and its run on
    the compared setting with that run's scores (None: not compared)."""

    key: str
    name: str
    settings: tuple[Setting, ...]
    run_id: int | None
    scaled_pass_at_1: float | None
    pass_at_1: float | None


@dataclass(frozen=True)
class ComparedPair:
    """``first`` minus ``second`` (model keys) in Scaled Pass@1 over the snippets both were judged on (None
    when they share none)."""

    first: str
    second: str
    difference: PairedDifference | None


@dataclass(frozen=True)
class ComparisonSummary:
    """A comparison's numbers (the API's answer): the ``setting`` compared on (None when the models have
    none in common, or none that ``asked`` picks), each model's score on it, each pair's paired difference;
    the settings they all have (``common``) and, when none, the ``nearest`` one with the models that have it
    (``nearest_models``); ``note`` says in words why nothing is compared (empty when something is)."""

    setting: Setting | None
    asked: SettingQuery | None
    models: tuple[ComparedScore, ...]
    pairs: tuple[ComparedPair, ...]
    common: tuple[Setting, ...]
    nearest: Setting | None
    nearest_models: tuple[str, ...]
    note: str


def comparison_summary(*, keys: Sequence[str], asked: SettingQuery | None = None) -> ComparisonSummary:
    """``model_compare`` of ``keys`` on the first common setting ``asked`` picks, as numbers: each model's
    Scaled Pass@1 on the setting and each pair's paired difference, or, when nothing is compared, the
    settings each model has and the nearest common one. Raises ``LanguageModel.DoesNotExist`` naming an
    unknown key. The queries of ``model_compare``."""
    choice, data = model_compare(keys=keys, setting=asked)
    compared = data.models if data is not None else ()
    runs = {d.model.key: d.run for d in compared if d.run is not None}
    models = []
    for m in choice.per_model:
        run = runs.get(m.key)
        models.append(
            ComparedScore(
                key=m.key,
                name=m.name,
                settings=m.settings,
                run_id=run.run_id if run else None,
                scaled_pass_at_1=run.scaled_pass_at_1 if run else None,
                pass_at_1=run.pass_at_1 if run else None,
            )
        )
    pairs = tuple(
        ComparedPair(compared[p.first].model.key, compared[p.second].model.key, p.difference)
        for p in (data.pairs if data is not None else ())
    )
    return ComparisonSummary(
        setting=choice.chosen, asked=asked, models=tuple(models), pairs=pairs, common=choice.common,
        nearest=choice.nearest, nearest_models=choice.nearest_keys, note=_note(choice),
    )  # fmt: skip


def _note(choice: SettingChoice) -> str:
    """Why ``choice`` compares nothing, in words ("" when it compares)."""
    if choice.chosen is not None:
        return ""
    names = {m.key: m.name for m in choice.per_model}
    if choice.common:
        listed = "; ".join(s.label for s in choice.common)
        return f"Not every model has a scored run on {choice.asked.label}. They all have runs on: {listed}."
    note = "These models have no setting in common."
    if choice.nearest is None:
        return f"{note} No two of them share a setting."
    shared = ", ".join(names[k] for k in choice.nearest_keys)
    return f"{note} The setting most of them share is {choice.nearest.label} ({shared})."
