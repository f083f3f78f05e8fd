"""Reads the leaderboard pages need beyond ``leaderboard.selectors``: finding a snippet by its URL (paper key
and name) and the problem text a model saw for it.

``selectors.snippet_detail`` takes a snippet id; page URLs carry the paper key and the snippet name (names
hold spaces, commas and other free text), so ``snippet_lookup`` resolves them, preferring the version of
the default release, then the newest version. ``snippet_problem`` rebuilds the masked file and the prompt
with the core library (``researchcodebench.problems``) from the task version's stored bytes, in memory: a
page view never writes a task folder.
"""

from __future__ import annotations

from dataclasses import dataclass

from contributions.models import Release, Snippet, TaskVersion
from contributions.task_folders import TaskFolderError, task_version_read
from researchcodebench import problems


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
