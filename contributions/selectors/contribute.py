"""Reads of the contribution form (``contributions.views`` steps a-e): what step (c) offers for each
declaration, how the core library sees a revision, and the exact problem a model would be shown (the first
guess at an upload's declarations is ``contributions.upload_manifest``).

Everything here only reads: the form's writes go through ``contributions.services`` (``proposals``,
``revisions``, ``proposal_validation``). The preview
parses the revision exactly as validation and publishing will (``task_folders.revision_task_parse``: its
task folder built in memory, parsed by ``researchcodebench.pset.task_from_files``), so what the author sees
before submitting is what the benchmark will hold.
"""

from __future__ import annotations

from dataclasses import dataclass

from contributions.models import Paper, Proposal, ProposalRevision
from contributions.task_folders import TaskFolderError, blobs_read, revision_task_parse
from contributions.upload_manifest import CODE_SUFFIXES, PAPER_SUFFIXES, tagged_files
from researchcodebench import problems
from researchcodebench import pset as rcb_pset
from researchcodebench.annotations import AnnotationIssue

#: files the form offers as the requirements list
REQUIREMENTS_SUFFIXES = (".txt", ".toml", ".cfg", ".in", ".yaml", ".yml")


def paper_for_arxiv_id(*, arxiv_id: str) -> Paper | None:
    """The catalogue's paper with this arXiv id (``researchcodebench.arxiv.arxiv_id`` form), if any: the
    form fills the metadata from it, because a contribution is often a new task of a known paper."""
    if not arxiv_id:
        return None
    return Paper.objects.filter(arxiv_id=arxiv_id).order_by("pk").first()


@dataclass(frozen=True)
class FileChoices:
    """What step (c) offers for each declaration, computed from an upload's paths and tagged files."""

    annotated: list[str]
    context: list[str]
    oracle: list[str]
    tests: list[str]
    papers: list[str]
    requirements: list[str]


def file_choices(*, paths: list[str], tagged: list[str]) -> FileChoices:
    paths = sorted(paths)
    code = [p for p in paths if p.endswith(CODE_SUFFIXES)]
    return FileChoices(
        annotated=list(tagged),
        context=[p for p in code if p not in tagged],
        oracle=[p for p in paths if p not in tagged],
        tests=code,
        papers=[p for p in paths if p.endswith(PAPER_SUFFIXES)],
        requirements=[p for p in paths if p.endswith(REQUIREMENTS_SUFFIXES) and p != rcb_pset.MANIFEST],
    )


def revision_tagged_files(*, revision: ProposalRevision) -> list[str]:
    """The revision's code files that hold tags (reads only its ``.py`` blobs)."""
    code = {rel: sha for rel, sha in revision.files.items() if rel.endswith(CODE_SUFFIXES)}
    return tagged_files(blobs_read(code, owner=str(revision)))


# --------------------------------------------------------------------------------------------- preview


@dataclass(frozen=True)
class SnippetRow:
    """One snippet of the preview's tree."""

    name: str
    file: str
    start_line: int
    end_line: int
    lines: int
    depth: int
    parent: str | None


@dataclass(frozen=True)
class Preview:
    """A revision as the core library parses it. ``error`` is set (and ``task`` None) when its stored files
    cannot be read back; ``issues`` are the parser's errors then warnings, each with ``file:line``."""

    task: rcb_pset.Task | None
    rows: list[SnippetRow]
    errors: list[AnnotationIssue]
    warnings: list[AnnotationIssue]
    error: str = ""

    @property
    def total_lines(self) -> int:
        """The task's line total as the catalogue counts it (every snippet's N, nested ones too)."""
        return sum(row.lines for row in self.rows)


def revision_preview(*, proposal: Proposal, revision: ProposalRevision) -> Preview:
    """The snippet tree (name, file:line, N, depth) and annotation issues of ``revision``, in file order."""
    owner = f"proposal {proposal.task_key} r{revision.number}"
    try:
        files = blobs_read(revision.files, owner=owner)
    except TaskFolderError as exc:
        return Preview(task=None, rows=[], errors=[], warnings=[], error=str(exc))
    task = revision_task_parse(revision=revision, files=files, root=proposal.task_key)
    rows = [
        SnippetRow(
            name=s.name,
            file=s.file,
            start_line=s.start_line,
            end_line=s.end_line,
            lines=s.lines,
            depth=s.depth,
            parent=s.parent,
        )
        for s in task.snippets
    ]
    return Preview(
        task=task,
        rows=rows,
        errors=[i for i in task.issues if i.is_error],
        warnings=[i for i in task.issues if not i.is_error],
    )


@dataclass(frozen=True)
class SnippetProblem:
    """What a model is shown for one snippet: the prompt (default template, with the paper) and the masked
    file; ``error`` says why it cannot be built (no paper, tags that do not parse)."""

    name: str
    file: str
    template: str
    prompt: str = ""
    masked: str = ""
    error: str = ""


def snippet_problem(*, preview: Preview, name: str) -> SnippetProblem | None:
    """The problem of snippet ``name`` of the preview's task, or None when the task has no such snippet."""
    task = preview.task
    snippet = next((s for s in task.snippets if s.name == name), None) if task else None
    if task is None or snippet is None:
        return None
    template = problems.DEFAULT_TEMPLATE
    try:
        masked = problems.mask_file(task.read_text(snippet.file), snippet)
        prompt = problems.build_prompt(task, snippet, template=template, with_paper=True)
    except (ValueError, KeyError, FileNotFoundError, UnicodeDecodeError) as exc:
        return SnippetProblem(name=name, file=snippet.file, template=template, error=str(exc))
    return SnippetProblem(name=name, file=snippet.file, template=template, prompt=prompt.text, masked=masked)


def _step_done_for(proposal: Proposal, step: int, revision: ProposalRevision | None) -> bool:
    """Whether form step ``step`` was completed for exactly this upload and these declarations (its content
    hash)."""
    saved = (proposal.draft or {}).get(str(step)) or {}
    return revision is not None and saved.get("content_hash") == revision.content_hash


def form_step_reached(proposal: Proposal, revision: ProposalRevision | None) -> int:
    """The last step of the contribution form (1 paper, 2 code, 3 files, 4 preview, 5 submit) the author may
    open now, with ``revision`` the proposal's newest revision: a step is open once the steps before it were
    completed for that revision."""
    if revision is None:
        return 2
    if revision.submitted_at is not None:
        # A revision whose validation could not run may be submitted again as it is; any other submitted
        # revision is final, and the next change is a new upload.
        could_not_run = revision.validation_status == ProposalRevision.ValidationStatus.ERROR
        return 5 if could_not_run else 2
    if not _step_done_for(proposal, 3, revision):
        return 3
    return 5 if _step_done_for(proposal, 4, revision) else 4
