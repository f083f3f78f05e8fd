"""What a run of a release will be before it is started: its default settings and its estimated size and cost.

Two questions answered before anything is created:

- ``release_run_defaults``: the prompt template and paper setting a new run of a release gets unless the
  maintainer or submitter picks others (the upload form and the start form preselect them, the upload API
  applies them when a request leaves them out).
- ``run_estimate``: how many requests, tokens and dollars a generated run would cost. It is an estimate:
  the prompts are built exactly as generation builds them (``researchcodebench.problems.build_prompt``), but
  tokens are counted as characters / ``CHARS_PER_TOKEN`` (no tokenizer is model-neutral; 4 characters per
  token is the usual rule of thumb for English and code with BPE tokenizers) and the answer's length is
  guessed from the reference code's (times ``OUTPUT_FACTOR``, for fences and a line of prose). Reasoning
  tokens, which some models bill as output, are not counted.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal

from contributions.models import Release, Snippet, TaskVersion
from evaluation import llm
from evaluation.models import EvaluationRun, LanguageModel
from researchcodebench.problems import DEFAULT_TEMPLATE, TEMPLATES, build_prompt

#: characters per token of the estimate (a rule of thumb for BPE tokenizers on English text and code)
CHARS_PER_TOKEN = 4
#: an answer's length relative to the reference code it replaces (the code plus its fence and a short note)
OUTPUT_FACTOR = 1.5
#: the most completions per snippet a generated run may ask for (web form and command alike)
MAX_SAMPLES = 20


class EstimateError(ValueError):
    """A run of this model cannot be started (the message says why, naming the model or the release)."""


@dataclass(frozen=True)
class RunDefaults:
    """The prompt template and paper setting a new run of a release gets unless told otherwise."""

    template: str
    with_paper: bool

    @property
    def paper(self) -> str:
        """The paper setting as the board's ``paper`` parameter spells it."""
        return "with" if self.with_paper else "without"


def release_run_defaults(*, release: Release | None) -> RunDefaults:
    """The settings of the release's published results when it has any (so that new runs are ranked on
    the same board as the paper's numbers), else the portal's default template with the paper in the
    prompt (the board's default view)."""
    if release is not None:
        published = Counter(
            EvaluationRun.objects.filter(release=release, source=EvaluationRun.Source.IMPORTED)
            .values_list("template", "with_paper")
            .order_by()
        )
        if published:
            (template, with_paper), _n = published.most_common(1)[0]
            if template in TEMPLATES:
                return RunDefaults(template=template, with_paper=with_paper)
    return RunDefaults(template=DEFAULT_TEMPLATE, with_paper=True)


@dataclass(frozen=True)
class RunEstimate:
    """The estimated size and cost of a generated run; ``cost_usd`` is None when the model has no prices.

    ``problems`` names the task versions whose prompts could not be built (their items would fail
    generation with that reason); they are left out of the token counts.
    """

    model: LanguageModel
    release: Release
    template: str
    with_paper: bool
    n_completions: int
    snippets: int
    tasks: int
    input_tokens: int
    output_tokens: int
    cost_usd: Decimal | None
    problems: list[str] = field(default_factory=list)

    @property
    def requests(self) -> int:
        return self.snippets * self.n_completions

    @property
    def paper(self) -> str:
        return "with" if self.with_paper else "without"

    @property
    def note(self) -> str:
        """How the figures were estimated (shown with them)."""
        return (
            f"An estimate: the prompts are built exactly as they will be sent and counted at {CHARS_PER_TOKEN} "
            f"characters per token; answers are assumed {OUTPUT_FACTOR:g} times as long as the reference code; "
            "reasoning tokens are not counted."
        )

    def lines(self) -> list[str]:
        """The estimate as plain sentences (the command prints them; the page shows the same figures)."""
        cost = (
            f"about ${self.cost_usd:.2f}"
            if self.cost_usd is not None
            else "unknown (the model has no prices per token)"
        )
        out = [
            f"Model {self.model.key} on release {self.release.name}, template {self.template}, "
            f"{self.paper} the paper, {self.n_completions} sample{'s' if self.n_completions != 1 else ''} "
            "per snippet",
            f"{self.requests} requests ({self.snippets} snippets of {self.tasks} tasks x {self.n_completions})",
            f"Estimated tokens: {self.input_tokens:,} in, {self.output_tokens:,} out",
            f"Estimated cost: {cost}",
            self.note,
        ]
        out += [f"Cannot build prompts: {p}" for p in self.problems]
        return out


def _token_count(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def run_estimate(
    *, model: LanguageModel, release: Release, template: str, with_paper: bool, n_completions: int
) -> RunEstimate:
    """Estimate a generated run of ``model`` on every testable snippet of ``release`` (module docstring).

    Builds every prompt once, from the stored files (nothing is written to disk). Raises ``EstimateError``
    for an unknown template or a sample count outside 1..``MAX_SAMPLES``.
    """
    from contributions.task_folders import task_version_read

    if template not in TEMPLATES:
        raise EstimateError(f"unknown template {template!r}; choose one of {', '.join(TEMPLATES)}")
    if not 1 <= n_completions <= MAX_SAMPLES:
        raise EstimateError(f"the number of samples must be between 1 and {MAX_SAMPLES}")
    versions = list(
        TaskVersion.objects.filter(release_entries__release=release, has_files=True).select_related("task")
    )
    snippets = Snippet.objects.filter(task_version__in=versions).order_by("task_version_id", "ordinal")
    by_version: dict[int, list[Snippet]] = {}
    for snippet in snippets:
        by_version.setdefault(snippet.task_version_id, []).append(snippet)
    input_tokens = output_tokens = n_snippets = 0
    problems: list[str] = []
    for version in versions:
        rows = by_version.get(version.pk, [])
        n_snippets += len(rows)
        try:
            task = task_version_read(task_version=version)
            prompts = [
                build_prompt(task, task.snippet(s.name), template=template, with_paper=with_paper)
                for s in rows
            ]
        except Exception as exc:  # generation records the same failure per item; here it is named once
            problems.append(f"{version.task.key}: {type(exc).__name__}: {exc}")
            continue
        input_tokens += sum(_token_count(p.text) for p in prompts)
        output_tokens += sum(math.ceil(_token_count(s.code) * OUTPUT_FACTOR) for s in rows)
    input_tokens *= n_completions
    output_tokens *= n_completions
    cost = llm.cost_of(model, input_tokens, output_tokens)
    return RunEstimate(
        model=model,
        release=release,
        template=template,
        with_paper=with_paper,
        n_completions=n_completions,
        snippets=n_snippets,
        tasks=len(versions),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost_usd=cost.quantize(Decimal("0.0001")) if cost is not None else None,
        problems=problems,
    )
