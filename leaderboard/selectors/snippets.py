"""A snippet's page: the snippet with its reference code, difficulty and every completion of it with its
verdict; finding a snippet by its URL (paper key and name) and the problem text a model saw for it; the
snippet list.

``snippet_detail`` takes a snippet id; page URLs carry the paper key and the snippet name (names hold
spaces, commas and other free text), so ``snippet_lookup`` resolves them, preferring the version of the
default release, then the newest version. ``snippet_problem`` rebuilds the masked file and the prompt with
the core library (``researchcodebench.problems``) from the task version's stored bytes, in memory: a page
view never writes a task folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from django.db.models import F, QuerySet, Value
from django.db.models.functions import Coalesce

from contributions.models import Release, Snippet, TaskVersion
from contributions.task_folders import TaskFolderError, task_version_read
from evaluation.models import Completion, EvaluationRun, TestResult
from leaderboard.cutoffs import model_cutoff
from leaderboard.selectors.common import ModelRef, after_cutoff, pass_rate, snippet_stat
from researchcodebench import problems


@dataclass(frozen=True)
class Attempt:
    """One completion of the snippet with its verdict of record (outcome "" = not tested yet)."""

    completion_id: int
    completion_idx: int
    run_id: int
    model: ModelRef
    with_paper: bool
    template: str
    code: str
    code_extracted: bool
    outcome: str
    passed: bool | None
    category: str
    tier: str
    exception_type: str
    exception_message: str
    stdout_tail: str
    stderr_tail: str
    duration_s: float | None
    #: the model's answer as it came back, before extraction ("" when none is stored: see ``run_source``)
    raw_response: str = ""
    #: how the run's results came in (``EvaluationRun.Source``): an upload may carry no raw response
    run_source: str = ""
    # Memorisation (docs/scoring.md#memorisation): None when not measured (no code, no reference code)
    #: the longest run of normalised tokens shared with the reference, as a share of the reference's (0-1)
    overlap_run_share: float | None = None
    #: the share of the reference's distinct 5-token sequences found in the completion (0-1)
    overlap_ngram_share: float | None = None
    #: the reference's normalised tokens
    overlap_reference_tokens: int | None = None
    #: reproduces the reference nearly verbatim (None: not measured, or the reference is too short to tell)
    near_verbatim: bool | None = None
    #: the paper's first commit is after the model's knowledge cutoff (None: either date unknown)
    after_cutoff: bool | None = None


@dataclass(frozen=True)
class SnippetDetail:
    id: int
    paper_key: str
    paper_title: str
    task_key: str
    task_version_id: int
    task_version: int
    name: str
    file: str
    start_line: int | None
    end_line: int | None
    lines: int
    depth: int | None
    parent_id: int | None
    reference_code: str
    runs: int
    results: int
    passed: int
    solve_rate: float | None
    with_paper_solve_rate: float | None
    without_paper_solve_rate: float | None
    attempts: tuple[Attempt, ...]  # best models first is the page's choice: ordered by model name here
    checked_by_test: bool = True
    unchecked_reason: str = ""
    unchecked_explanation: str = ""
    #: the paper's first commit (what the memorisation figures are read against: the models' cutoffs)
    paper_first_commit_date: date | None = None


def _attempt(c: Completion, first_commit: date | None) -> Attempt:
    """One completion of the snippet page with its verdict of record (empty fields: not tested yet)."""
    r = _result(c)
    return Attempt(
        completion_id=c.pk,
        completion_idx=c.completion_idx,
        run_id=c.run_id,
        model=ModelRef.of(c.run.model),
        with_paper=c.run.with_paper,
        template=c.run.template,
        code=c.code,
        code_extracted=c.code_extracted,
        outcome=r.outcome if r else "",
        passed=r.passed if r else None,
        category=r.category if r else "",
        tier=r.tier if r else "",
        exception_type=r.exception_type if r else "",
        exception_message=r.exception_message if r else "",
        stdout_tail=r.stdout_tail if r else "",
        stderr_tail=r.stderr_tail if r else "",
        duration_s=r.duration_s if r else None,
        raw_response=c.raw_response,
        run_source=c.run.source,
        overlap_run_share=c.overlap_run_share,
        overlap_ngram_share=c.overlap_ngram_share,
        overlap_reference_tokens=c.overlap_reference_tokens,
        near_verbatim=c.near_verbatim,
        after_cutoff=after_cutoff(first_commit, model_cutoff(c.run.model)),
    )


def snippet_detail(*, snippet_id: int) -> SnippetDetail:
    """A snippet with its reference code, difficulty and every completion of it with its verdict (from
    finished, testing or generating runs). Raises ``Snippet.DoesNotExist``. Two queries."""
    s = Snippet.objects.select_related("task_version__task__paper", "stat").get(pk=snippet_id)
    stat = snippet_stat(s)
    first_commit = s.task_version.task.paper.first_commit_date
    attempts = tuple(
        _attempt(c, first_commit)
        for c in Completion.objects.filter(snippet=s)
        .exclude(run__status__in=[EvaluationRun.Status.FAILED, EvaluationRun.Status.CANCELLED])
        .select_related("run__model", "result")
        .order_by("run__model__name", "run_id", "completion_idx")
    )
    return SnippetDetail(
        id=s.pk,
        paper_key=s.task_version.task.paper.key,
        paper_title=s.task_version.task.paper.title,
        task_key=s.task_version.task.key,
        task_version_id=s.task_version_id,
        task_version=s.task_version.number,
        name=s.name,
        file=s.file,
        start_line=s.start_line,
        end_line=s.end_line,
        lines=s.lines,
        depth=s.depth,
        parent_id=s.parent_id,
        reference_code=s.code,
        runs=stat.runs,
        results=stat.results,
        passed=stat.passed,
        solve_rate=stat.solve_rate,
        with_paper_solve_rate=pass_rate(stat.with_paper_passed, stat.with_paper_results),
        without_paper_solve_rate=pass_rate(stat.without_paper_passed, stat.without_paper_results),
        attempts=attempts,
        checked_by_test=s.checked_by_test,
        unchecked_reason=s.get_unchecked_reason_display() if s.unchecked_reason else "",
        unchecked_explanation=s.unchecked_explanation,
        paper_first_commit_date=first_commit,
    )


def _result(c: Completion) -> TestResult | None:
    try:
        return c.result
    except TestResult.DoesNotExist:
        return None


def snippet_list(*, paper: str | None = None) -> QuerySet[Snippet]:
    """Every snippet of every task version with its difficulty (``stat``, absent before any result;
    ``results_scored``: its results over every scored run, 0 before any), by task, version and document
    order; ``paper`` (a key) narrows it to one paper's."""
    qs = (
        Snippet.objects.select_related("task_version__task__paper", "stat")
        .annotate(results_scored=Coalesce(F("stat__results"), Value(0)))
        .order_by("task_version__task__key", "task_version__number", "ordinal")
    )
    return qs.filter(task_version__task__paper__key=paper) if paper else qs


def snippet_lookup(*, paper_key: str, name: str, snippet_id: int | None = None) -> int:
    """The id of the snippet called ``name`` in a task of paper ``paper_key``.

    ``snippet_id`` pins one version (it must belong to that paper and carry that name). Without it: the
    snippet of the default release's task version if there is one, else of the newest version. Raises
    ``Snippet.DoesNotExist`` when nothing matches. One query.
    """
    candidates = list(
        Snippet.objects.filter(task_version__task__paper__key=paper_key, name=name)
        .order_by("-task_version__created_at", "-task_version__number", "-pk")
        .values_list("pk", "task_version_id")
    )
    if not candidates:
        raise Snippet.DoesNotExist(f"paper {paper_key!r} has no snippet {name!r}")
    if snippet_id is not None:
        if snippet_id not in {pk for pk, _v in candidates}:
            raise Snippet.DoesNotExist(f"snippet {snippet_id} is not {name!r} of paper {paper_key!r}")
        return snippet_id
    default = Release.objects.filter(is_default=True).values_list("task_versions", flat=True)
    in_default = set(default)
    for pk, version_id in candidates:
        if version_id in in_default:
            return pk
    return candidates[0][0]


@dataclass(frozen=True)
class Problem:
    """What a model saw for one snippet: the masked file and the full prompt (``available`` False with a
    ``reason`` when the portal holds no files for the version, e.g. results imported from the paper)."""

    available: bool
    reason: str
    #: whether the portal holds the version's files (False: metadata-only, imported with published results)
    has_files: bool
    template: str
    with_paper: bool
    masked_file: str
    masked_path: str
    prompt: str
    prompt_hash: str


def snippet_problem(
    *,
    task_version_id: int,
    name: str,
    template: str = problems.DEFAULT_TEMPLATE,
    with_paper: bool = True,
) -> Problem:
    """The problem for snippet ``name`` of task version ``task_version_id`` under ``template`` (with or
    without the paper). Raises ``TaskVersion.DoesNotExist`` for an unknown id."""
    if template not in problems.TEMPLATES:
        raise ValueError(f"template: {template!r} is not one of {', '.join(problems.TEMPLATES)}")
    task_version = TaskVersion.objects.select_related("task").get(pk=task_version_id)
    empty = Problem(False, "", task_version.has_files, template, with_paper, "", "", "", "")
    if not task_version.has_files:
        return Problem(
            **{
                **empty.__dict__,
                "reason": (
                    "This task version holds only metadata (snippet names and line counts, imported with the "
                    "paper's published results): the portal has no task files, so it cannot show the masked "
                    "code or the prompt. Import the task folder (python manage.py import_pset) to see them."
                ),
            }
        )
    try:
        task = task_version_read(task_version=task_version)
        snippet = task.snippet(name)
        masked = problems.mask_file(task.read_text(snippet.file), snippet)
        prompt = problems.build_prompt(task, snippet, template=template, with_paper=with_paper)
    except (TaskFolderError, KeyError, ValueError, OSError) as exc:
        return Problem(**{**empty.__dict__, "reason": f"The problem cannot be rebuilt: {exc}"})
    return Problem(True, "", True, template, with_paper, masked, snippet.file, prompt.text, prompt.hash)
