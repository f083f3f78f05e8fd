"""Reads of the contribution form (``contributions.views`` steps a-e): what an upload declares, how the core
library sees a revision, and the exact problem a model would be shown.

Everything here only reads: the form's writes go through ``contributions.services`` (``proposals``,
``revisions``, ``proposal_validation``). The preview
parses the revision exactly as validation and publishing will (``task_folders.revision_task_files`` and
``revision_meta`` build the task folder; ``researchcodebench.pset.task_from_files`` parses it in memory), so
what the author sees before submitting is what the benchmark will hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import yaml

from contributions.models import Paper, Proposal, ProposalRevision
from contributions.services.proposals import MANIFEST_DEFAULTS, PAPER_SUFFIXES
from contributions.task_folders import TaskFolderError, blobs_read, revision_meta, revision_task_files
from researchcodebench import problems
from researchcodebench import pset as rcb_pset
from researchcodebench.annotations import END_TAG, START_TAG, AnnotationIssue, split_lines

#: files the form offers as the requirements list
REQUIREMENTS_SUFFIXES = (".txt", ".toml", ".cfg", ".in", ".yaml", ".yml")
#: files an author may mark as context (shown to models) or annotated: code and text the parser reads
CODE_SUFFIXES = (".py",)


def paper_for_arxiv_id(*, arxiv_id: str) -> Paper | None:
    """The catalogue's paper with this arXiv id (``researchcodebench.arxiv.arxiv_id`` form), if any: the
    form fills the metadata from it, because a contribution is often a new task of a known paper."""
    if not arxiv_id:
        return None
    return Paper.objects.filter(arxiv_id=arxiv_id).order_by("pk").first()


def _text(content: bytes) -> str | None:
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        return None


def has_tags(content: bytes) -> bool:
    """Whether a file holds a paper2code start or end tag line (the parser's exact tag rule)."""
    text = _text(content)
    if text is None or "paper2code" not in text:
        return False
    return any(START_TAG.match(line) or END_TAG.match(line) for line in split_lines(text))


def tagged_files(files: Mapping[str, bytes]) -> list[str]:
    """The code files holding paper2code tags, sorted: the candidates for annotated files."""
    return sorted(rel for rel, data in files.items() if rel.endswith(CODE_SUFFIXES) and has_tags(data))


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


def _uploaded_manifest(files: Mapping[str, bytes]) -> rcb_pset.TaskManifest | None:
    """The upload's own ``task.yaml`` (an original-format task folder carries one), if it parses."""
    raw = files.get(rcb_pset.MANIFEST)
    text = _text(raw) if raw is not None else None
    if text is None:
        return None
    try:
        manifest, problems_found = rcb_pset.parse_manifest(yaml.safe_load(text))
    except yaml.YAMLError:
        return None
    return None if problems_found else manifest


def _guess_test(paths: list[str], declared: str | None, tagged: list[str]) -> str:
    """The test script: the declared or default one, else a test-named or other untagged code file; ""
    when the upload has none (an annotated file is never its own test)."""
    for candidate in (declared, MANIFEST_DEFAULTS["test_entry"]):
        if candidate and candidate in paths:
            return candidate
    code = sorted(p for p in paths if p.endswith(CODE_SUFFIXES) and p not in tagged)
    named = [p for p in code if PurePosixPath(p).name.startswith("test") or p.endswith("_test.py")]
    return (named or code or [""])[0]


def _guess_paper(paths: list[str]) -> str:
    for name in rcb_pset.PAPER_FILES:
        if name in paths:
            return name
    papers = [p for p in paths if p.endswith(PAPER_SUFFIXES) and PurePosixPath(p).name.lower() != "readme.md"]
    return papers[0] if len(papers) == 1 else ""


def manifest_guess(files: Mapping[str, bytes]) -> dict[str, Any]:
    """First declarations for a fresh upload (the author confirms or changes them in step c).

    Annotated files are the files holding tags; the test entry, oracle files and GPU need come from the
    upload's own ``task.yaml`` when it has one (``test_entry`` is "" when no code file can be the test); the paper is ``paper2code_paper.tex``/``.md`` or the one
    ``.tex``/``.md`` file; the requirements list is ``requirements.txt`` when present.
    """
    paths = sorted(files)
    tagged = tagged_files(files)
    declared = _uploaded_manifest(files)
    oracle = [p for p in (declared.oracle_files if declared else ()) if p in files and p not in tagged]
    return {
        **MANIFEST_DEFAULTS,
        "annotated_files": tagged,
        "oracle_files": oracle,
        "test_entry": _guess_test(paths, declared.test_entry if declared else None, tagged),
        "paper_file": _guess_paper(paths),
        "requirements_file": "requirements.txt" if "requirements.txt" in files else "",
        "needs_gpu": bool(declared.needs_gpu) if declared else False,
    }


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
    contents = revision_task_files(files=files, manifest=revision.manifest)
    meta = revision_meta(task_key=proposal.task_key, meta=proposal.meta, manifest=revision.manifest)
    task = rcb_pset.task_from_files(contents, meta, root=proposal.task_key)
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
