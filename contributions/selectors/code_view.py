"""A proposal revision's code as the proposal page shows it: highlighted, numbered lines with the snippet
regions, the validation findings and the review comments of each line, and the snippet tree.

Only reads. The snippets come from parsing the revision in memory exactly as validation and publishing do
(``task_folders.revision_task_parse``),
so the regions the page marks are the regions the benchmark will hold. Highlighting is Pygments' own HTML
formatter (``nowrap``: it closes its spans at every line end, so each line is balanced HTML on its own);
the CSS scope is ``.hl``, as on the leaderboard's snippet pages (the rules are in ``static/css/review.css``).

Every size is bounded: files over ``MAX_FILE_BYTES`` or ``MAX_FILE_LINES`` and files that are not UTF-8
are listed but not shown, and the page shows at most ``MAX_TOTAL_LINES`` lines in all.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.utils.safestring import SafeString, mark_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import TextLexer, get_lexer_for_filename
from pygments.util import ClassNotFound

from contributions.models import Comment, ProposalRevision
from contributions.task_folders import TaskFolderError, blobs_read, revision_task_parse
from researchcodebench import pset as rcb_pset
from researchcodebench.annotations import Snippet

MAX_FILE_BYTES = 256 * 1024
MAX_FILE_LINES = 5000
MAX_TOTAL_LINES = 20_000

_ANCHOR_UNSAFE = re.compile(r"[^A-Za-z0-9._/-]")


def file_anchor(path: str) -> str:
    """The element id of a file's block; its lines are ``<anchor>-L<n>`` (``#f-model.py-L12``)."""
    return "f-" + _ANCHOR_UNSAFE.sub("_", path)


@dataclass
class CodeLine:
    number: int
    html: SafeString
    anchor: str
    #: the innermost snippet whose region (tags included) holds the line, "" for none
    snippet: str = ""
    is_tag: bool = False
    findings: list[dict[str, Any]] = field(default_factory=list)
    comments: list[Comment] = field(default_factory=list)


@dataclass
class CodeFile:
    path: str
    anchor: str
    role: str
    lines: list[CodeLine] | None
    #: why the file is not shown ("" when it is)
    note: str = ""
    #: findings on the file as a whole (no line) or on a line it does not have
    findings: list[dict[str, Any]] = field(default_factory=list)
    comments: list[Comment] = field(default_factory=list)


@dataclass
class SnippetNode:
    name: str
    file: str
    start_line: int
    end_line: int
    lines: int
    anchor: str
    #: the mutation check's answer: True (checked), False (not checked by the test), None (unknown)
    checked: bool | None
    children: list[SnippetNode] = field(default_factory=list)
    #: the mutants of its reference the validation drew: {"killed", "total"}, None when none was judged
    mutation: Mapping[str, int] | None = None
    #: its impossible variants (``researchcodebench.validation.variants_summary``: ``count``, ``described``,
    #: ``note``), None when the validation derived none
    variants: Mapping[str, Any] | None = None


@dataclass
class RevisionCode:
    files: list[CodeFile]
    snippet_tree: list[SnippetNode]
    snippet_count: int
    #: annotation problems the parser found (``AnnotationIssue.to_dict()``), each with its file:line
    issues: list[dict[str, Any]]
    #: why the snippets could not be read ("" when they were)
    parse_error: str = ""


def _role(path: str, manifest: Mapping[str, Any]) -> str:
    if path in (manifest.get("annotated_files") or ()):
        return "annotated"
    if path == (manifest.get("test_entry") or "paper2code_test.py"):
        return "test"
    if path in (manifest.get("oracle_files") or ()):
        return "oracle"
    if path in (manifest.get("context_files") or ()):
        return "context"
    if path == manifest.get("paper_file"):
        return "paper"
    if path == manifest.get("requirements_file"):
        return "requirements"
    return "other"


_ROLE_ORDER = ("annotated", "test", "oracle", "context", "requirements", "other", "paper")


def highlight_lines(path: str, text: str) -> list[SafeString]:
    try:
        lexer = get_lexer_for_filename(path, stripnl=False, stripall=False, ensurenl=False)
    except ClassNotFound:
        lexer = TextLexer(stripnl=False, ensurenl=False)
    html = highlight(text, lexer, HtmlFormatter(nowrap=True))
    rows = html.split("\n")
    expected = len(text.split("\n"))
    # The lexer may add or drop a final newline; keep exactly one row per line of the file.
    rows = (rows + [""] * expected)[:expected]
    return [mark_safe(row) for row in rows]  # noqa: S308 - Pygments escapes every token


def revision_code(
    *,
    revision: ProposalRevision,
    findings: Iterable[Mapping[str, Any]] = (),
    comments: Iterable[Comment] = (),
    checked: Mapping[str, bool | None] | None = None,
    mutation: Mapping[str, Mapping[str, int] | None] | None = None,
    variants: Mapping[str, Mapping[str, Any]] | None = None,
) -> RevisionCode:
    """The revision's files and snippet tree with ``findings`` (validation report findings) and
    ``comments`` (anchored ones) placed on their lines; ``checked`` is snippet name -> the mutation check's
    answer and ``mutation`` snippet name -> its mutation score (both from the report's ``snippets``);
    ``variants`` snippet name -> the summary of its impossible variants (from the report's ``variants``)."""
    owner = f"proposal {revision.proposal.task_key} r{revision.number}"
    try:
        contents = blobs_read(revision.files or {}, owner=owner)
    except TaskFolderError as exc:
        return RevisionCode([], [], 0, [], parse_error=str(exc))
    snippets, issues, parse_error = _snippets_and_issues(revision, contents)
    comments_by_file: dict[str, list[Comment]] = {}
    for comment in comments:
        if comment.file:
            comments_by_file.setdefault(comment.file, []).append(comment)
    files = _code_files(
        contents,
        manifest=revision.manifest or {},
        snippets=snippets,
        findings=_findings_by_file(findings, issues=issues),
        comments=comments_by_file,
    )
    for issue in issues:
        issue["location"] = f"{issue['file']}:{issue['line']}" if issue["line"] else issue["file"]
        issue["anchor"] = file_anchor(issue["file"]) + (f"-L{issue['line']}" if issue["line"] else "")
    return RevisionCode(
        files=files,
        snippet_tree=_snippet_tree(
            snippets, files=files, checked=checked or {}, mutation=mutation or {}, variants=variants or {}
        ),
        snippet_count=len(snippets),
        issues=issues,
        parse_error=parse_error,
    )


def _snippets_and_issues(
    revision: ProposalRevision, contents: Mapping[str, bytes]
) -> tuple[list[Snippet], list[dict[str, Any]], str]:
    """The revision's snippets and the parser's issues (``AnnotationIssue.to_dict()``), or none and why."""
    try:
        task = revision_task_parse(
            revision=revision, files=contents, root=f"{revision.proposal.task_key}@r{revision.number}"
        )
    except (rcb_pset.PsetError, TaskFolderError, ValueError, UnicodeDecodeError) as exc:
        return [], [], f"the snippets could not be read: {exc}"
    return list(task.snippets), [i.to_dict() for i in task.issues], ""


def _findings_by_file(
    findings: Iterable[Mapping[str, Any]], *, issues: list[dict[str, Any]]
) -> dict[str, list[dict[str, Any]]]:
    """File -> the findings on it, each with its ``location`` (file:line) and ``anchor``."""
    findings = [dict(f) for f in findings]
    if not any(f.get("check") == "annotations" for f in findings):
        # Before validation has reported (or when it stopped early) the parser's own problems are the
        # annotation findings: the author sees them next to the code at once.
        findings += [
            {
                "check": "annotations",
                "severity": i["severity"],
                "message": i["message"],
                "file": i["file"],
                "line": i["line"] or None,
                "detail": i.get("hint", ""),
            }
            for i in issues
        ]
    by_file: dict[str, list[dict[str, Any]]] = {}
    for finding in findings:
        if finding.get("file"):
            line = finding.get("line")
            has_line = isinstance(line, int) and line > 0
            finding["location"] = f"{finding['file']}:{line}" if has_line else str(finding["file"])
            finding["anchor"] = file_anchor(str(finding["file"])) + (f"-L{line}" if has_line else "")
            by_file.setdefault(str(finding["file"]), []).append(dict(finding))
    return by_file


def _code_files(
    contents: Mapping[str, bytes],
    *,
    manifest: Mapping[str, Any],
    snippets: list[Snippet],
    findings: Mapping[str, list[dict[str, Any]]],
    comments: Mapping[str, list[Comment]],
) -> list[CodeFile]:
    """Every file in role order: highlighted with its snippet regions and its findings and comments on
    their lines while the page's bounds allow, else listed with the reason and its notes on the file."""
    files: list[CodeFile] = []
    shown = 0
    used_anchors: set[str] = set()
    order = sorted(contents, key=lambda p: (_ROLE_ORDER.index(_role(p, manifest)), p))
    for path in order:
        anchor = file_anchor(path)
        while anchor in used_anchors:  # two names that differ only in unsafe characters
            anchor += "_"
        used_anchors.add(anchor)
        data = contents[path]
        code_file = CodeFile(path=path, anchor=anchor, role=_role(path, manifest), lines=None)
        text: str | None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        count = len(text.split("\n")) if text is not None else 0
        code_file.note = _why_not_shown(data, text=text, count=count, shown=shown)
        if text is not None and not code_file.note:
            shown += count
            code_file.lines = _code_lines(path, text, anchor=anchor, snippets=snippets)
            _place_notes(code_file, findings=findings.get(path, []), comments=comments.get(path, []))
        else:
            code_file.findings = findings.get(path, [])
            code_file.comments = comments.get(path, [])
        files.append(code_file)
    return files


def _why_not_shown(data: bytes, *, text: str | None, count: int, shown: int) -> str:
    """Why a file of ``count`` lines is not shown when the page already shows ``shown`` ("" if it is)."""
    if text is None:
        return "not UTF-8 text"
    if len(data) > MAX_FILE_BYTES or count > MAX_FILE_LINES:
        return f"too large to show ({len(data)} bytes, {count} lines)"
    if shown + count > MAX_TOTAL_LINES:
        return f"not shown: the page already shows {shown} lines"
    return ""


def _code_lines(path: str, text: str, *, anchor: str, snippets: list[Snippet]) -> list[CodeLine]:
    """The highlighted lines of a file, each marked with the innermost snippet region holding it."""
    regions = sorted((s for s in snippets if s.file == path), key=lambda s: s.end_line - s.start_line)
    lines = []
    for number, html in enumerate(highlight_lines(path, text), start=1):
        inner = next((s for s in regions if s.start_line <= number <= s.end_line), None)
        lines.append(
            CodeLine(
                number=number,
                html=html,
                anchor=f"{anchor}-L{number}",
                snippet=inner.name if inner else "",
                is_tag=any(number in (s.start_line, s.end_line) for s in regions),
            )
        )
    return lines


def _place_notes(code_file: CodeFile, *, findings: list[dict[str, Any]], comments: list[Comment]) -> None:
    """Put each finding and comment on its line of the shown file, or on the file when it names none."""
    lines = code_file.lines or []
    for finding in findings:
        line = finding.get("line")
        if isinstance(line, int) and 1 <= line <= len(lines):
            lines[line - 1].findings.append(finding)
        else:
            code_file.findings.append(finding)
    for comment in comments:
        if comment.line and 1 <= comment.line <= len(lines):
            lines[comment.line - 1].comments.append(comment)
        else:
            code_file.comments.append(comment)


def _snippet_tree(
    snippets: list[Snippet],
    *,
    files: list[CodeFile],
    checked: Mapping[str, bool | None],
    mutation: Mapping[str, Mapping[str, int] | None],
    variants: Mapping[str, Mapping[str, Any]],
) -> list[SnippetNode]:
    """The snippets nested under their parents, in document order, each linked to its first line."""
    anchors = {f.path: f.anchor for f in files}
    nodes = {
        s.name: SnippetNode(
            name=s.name,
            file=s.file,
            start_line=s.start_line,
            end_line=s.end_line,
            lines=s.lines,
            anchor=f"{anchors.get(s.file, file_anchor(s.file))}-L{s.start_line}",
            checked=checked.get(s.name),
            mutation=mutation.get(s.name),
            variants=variants.get(s.name),
        )
        for s in snippets
    }
    roots: list[SnippetNode] = []
    for s in snippets:
        parent = nodes.get(s.parent) if s.parent else None
        if parent is nodes[s.name]:  # a duplicate name (an annotation error of its own) nests in itself
            parent = None
        (parent.children if parent is not None else roots).append(nodes[s.name])
    return roots
