"""Reads of the marking page (``views.marking``): a revision's code without its tags, the snippets marked on
it (the author's draft, else the revision's own tags), what a model would be shown for each, and what the
last validation said about each marked region.

Line numbers here are those of the *untagged* text, as an editor numbers them (``researchcodebench.marking``):
the author marks the code as it is, and the portal writes the tags (``services.marking``). A file whose
tags do not pair up cannot be marked until a new upload fixes it; the page says which line is at fault.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contributions.models import Comment, Proposal, ProposalRevision
from contributions.selectors.code_view import file_anchor, highlight_lines
from contributions.selectors.proposal_page import report_variants
from contributions.task_folders import TaskFolderError, blobs_read
from contributions.upload_manifest import CODE_SUFFIXES
from researchcodebench import problems
from researchcodebench.annotations import END_TAG, START_TAG, line_count, parse_file, split_lines
from researchcodebench.marking import Mark, MarkError, MarkProblem, code_lines, strip_tags, write_tags

#: where the author's unsaved marks are kept in ``Proposal.draft``
DRAFT_KEY = "marks"
#: a file over this size is listed but cannot be marked in the browser
MAX_MARK_FILE_BYTES = 256 * 1024


@dataclass(frozen=True)
class MarkBase:
    """A revision's markable files without their tags, and the marks its tags make.

    ``texts``: path -> untagged text of each markable file (UTF-8 ``.py`` files other than the test and the
    oracle files); ``marks``: path -> the revision's own marks; ``problems``: path -> why the file's tags
    cannot be read as marks (the file is then not markable); ``skipped``: path -> why a code file is not
    offered at all."""

    revision: ProposalRevision
    texts: dict[str, str]
    marks: dict[str, list[Mark]]
    problems: dict[str, list[MarkProblem]]
    skipped: dict[str, str]
    #: path -> for each line of the stored (tagged) file, the untagged line it shows as (a tag line: the
    #: line after it), so that comments on the stored lines find their place
    stored_to_untagged: dict[str, list[int]]


def markable_paths(*, files: Mapping[str, Any], manifest: Mapping[str, Any]) -> list[str]:
    """The code files an author may mark: every ``.py`` file but the test entry and the oracle files."""
    test = manifest.get("test_entry") or "paper2code_test.py"
    hidden = {test, *(manifest.get("oracle_files") or ())}
    return sorted(p for p in files if p.endswith(CODE_SUFFIXES) and p not in hidden)


def _line_map(text: str) -> list[int]:
    lines = split_lines(text)
    out: list[int] = []
    untagged = 0
    pending: list[int] = []
    for idx, line in enumerate(lines):
        if START_TAG.match(line) or END_TAG.match(line):
            pending.append(idx)
            out.append(0)
            continue
        untagged += 1
        for p in pending:
            out[p] = untagged
        pending = []
        out.append(untagged)
    for p in pending:
        out[p] = max(untagged, 1)
    return out


def revision_mark_base(*, revision: ProposalRevision) -> MarkBase:
    """``revision``'s markable files, untagged, with their marks (reads the blobs of those files only)."""
    paths = markable_paths(files=revision.files, manifest=revision.manifest or {})
    texts: dict[str, str] = {}
    marks: dict[str, list[Mark]] = {}
    found: dict[str, list[MarkProblem]] = {}
    skipped: dict[str, str] = {}
    line_maps: dict[str, list[int]] = {}
    try:
        blobs = blobs_read({p: revision.files[p] for p in paths}, owner=str(revision))
    except TaskFolderError as exc:
        return MarkBase(revision, {}, {}, {}, {p: str(exc) for p in paths}, {})
    for path in paths:
        data = blobs[path]
        if len(data) > MAX_MARK_FILE_BYTES:
            skipped[path] = (
                f"{len(data):,} bytes: too large to mark in the browser (at most {MAX_MARK_FILE_BYTES:,})"
            )
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            skipped[path] = "not UTF-8 text"
            continue
        try:
            texts[path], file_marks = strip_tags(text, path)
        except MarkError as err:
            found[path] = list(err.problems)
            continue
        line_maps[path] = _line_map(text)
        if file_marks:
            marks[path] = file_marks
    return MarkBase(revision, texts, marks, found, skipped, line_maps)


def marks_encode(marks: Mapping[str, Sequence[Mark]]) -> dict[str, list[list[Any]]]:
    return {
        path: [[m.name, m.first, m.last] for m in file_marks]
        for path, file_marks in marks.items()
        if file_marks
    }


def marks_decode(data: Any) -> dict[str, list[Mark]]:
    """Marks from their stored form (``marks_encode``); anything that does not read is dropped."""
    out: dict[str, list[Mark]] = {}
    if not isinstance(data, dict):
        return out
    for path, rows in data.items():
        if not isinstance(path, str) or not isinstance(rows, list):
            continue
        for row in rows:
            if (
                isinstance(row, list)
                and len(row) == 3
                and isinstance(row[0], str)
                and all(isinstance(n, int) and not isinstance(n, bool) for n in row[1:])
            ):
                out.setdefault(path, []).append(Mark(row[0], row[1], row[2]))
    return out


def marks_draft(*, proposal: Proposal, base: MarkBase) -> tuple[dict[str, list[Mark]], bool]:
    """The marks the page shows: the author's unsaved draft when it was made on this revision, else the
    revision's own; and whether they are a draft that differs from the revision."""
    saved = (proposal.draft or {}).get(DRAFT_KEY)
    if isinstance(saved, dict) and saved.get("content_hash") == base.revision.content_hash:
        marks = {p: m for p, m in marks_decode(saved.get("marks")).items() if p in base.texts}
        return marks, _key(marks) != _key(base.marks)
    return {p: list(m) for p, m in base.marks.items()}, False


def _key(marks: Mapping[str, Sequence[Mark]]) -> set[tuple[str, str, int, int]]:
    return {(p, m.name, m.first, m.last) for p, ms in marks.items() for m in ms}


# ------------------------------------------------------------------------------------------- the page


@dataclass
class MarkLine:
    number: int
    html: str
    #: the marks covering the line, outermost first
    names: list[str] = field(default_factory=list)
    #: names of the marks that start on this line
    starts: list[str] = field(default_factory=list)
    comments: list[Comment] = field(default_factory=list)


@dataclass(frozen=True)
class MarkResult:
    """What the last validation said of a marked region: ``same`` when it judged exactly these lines."""

    revision: int
    status: str
    same: bool
    checked: bool | None
    killed: int | None = None
    total: int | None = None
    reference_passed: bool | None = None
    blank_failed: bool | None = None
    variants: int | None = None

    @property
    def words(self) -> str:
        if self.status in ("pending", "running"):
            return f"revision {self.revision} is being validated"
        if not self.same:
            return f"changed since revision {self.revision} was validated: validate again"
        parts = []
        if self.reference_passed is not None:
            parts.append("reference passes" if self.reference_passed else "reference FAILS")
        if self.blank_failed is not None:
            parts.append("blank fails" if self.blank_failed else "blank PASSES")
        if self.killed is not None and self.total:
            parts.append(f"mutation score {self.killed}/{self.total}")
        parts.append(
            {True: "checked by its test", False: "not checked by its test"}.get(
                self.checked, "check not decided"
            )
        )
        return ", ".join(parts)


@dataclass
class MarkRow:
    file: str
    mark: Mark
    depth: int
    #: N: the lines that will be scored (non-blank, non-comment)
    scored: int
    result: MarkResult | None = None


@dataclass
class MarkFile:
    path: str
    anchor: str
    lines: list[MarkLine] | None
    marks: int
    note: str = ""
    problems: list[MarkProblem] = field(default_factory=list)


@dataclass
class MarkingPage:
    base: MarkBase
    marks: dict[str, list[Mark]]
    is_draft: bool
    files: list[MarkFile]
    rows: list[MarkRow]
    shown: str
    preview: str = ""
    preview_name: str = ""
    preview_error: str = ""
    #: the submitted revision whose validation the results come from
    validated: ProposalRevision | None = None

    @property
    def scored_total(self) -> int:
        return sum(r.scored for r in self.rows)


def _depths(marks: Sequence[Mark]) -> dict[str, int]:
    out: dict[str, int] = {}
    for mark in marks:
        out[mark.name] = sum(
            1
            for o in marks
            if o is not mark
            and o.first <= mark.first
            and mark.last <= o.last
            and (o.first, -o.last) < (mark.first, -mark.last)
        )
    return out


def _results(
    *, validated: ProposalRevision | None, marks: Mapping[str, Sequence[Mark]], shown: MarkBase
) -> dict[tuple[str, str], MarkResult]:
    """(file, name) -> what ``validated``'s report says of the snippet of that name, when one is marked;
    ``shown`` is the page's own revision's base, reused when it is the validated revision."""
    if validated is None:
        return {}
    report = validated.validation_report or {}
    status = validated.validation_status
    rows = {str(s.get("name")): s for s in report.get("snippets") or [] if isinstance(s, dict)}
    variants = report_variants(report) if isinstance(report, dict) else {}
    old = shown if shown.revision.pk == validated.pk else revision_mark_base(revision=validated)
    old_key = {(p, m.name): (m.first, m.last) for p, ms in old.marks.items() for m in ms}
    reference = _reference_passed(report) if status in ("passed", "failed") else None
    out: dict[tuple[str, str], MarkResult] = {}
    for path, file_marks in marks.items():
        for mark in file_marks:
            was = old_key.get((path, mark.name))
            if was is None:
                continue
            row = rows.get(mark.name, {})
            score = row.get("mutation_score") if isinstance(row.get("mutation_score"), dict) else {}
            found = variants.get(mark.name) or {}
            out[(path, mark.name)] = MarkResult(
                revision=validated.number,
                status=status,
                same=was == (mark.first, mark.last),
                checked=row.get("checked") if isinstance(row.get("checked"), bool) else None,
                killed=score.get("killed") if isinstance(score.get("killed"), int) else None,
                total=score.get("total") if isinstance(score.get("total"), int) else None,
                reference_passed=reference,
                blank_failed=_blank_failed(row),
                variants=found.get("count") if isinstance(found.get("count"), int) else None,
            )
    return out


def _reference_passed(report: Mapping[str, Any]) -> bool | None:
    """Whether the task's reference passed its test in the validation (every run), None when unknown."""
    findings = [f for f in report.get("findings") or [] if isinstance(f, dict)]
    if any(f.get("check") == "reference" and f.get("severity") == "error" for f in findings):
        return False
    return True if report.get("reference_durations_s") else None


def _blank_failed(row: Mapping[str, Any]) -> bool | None:
    """Whether every blank and trivial fill (placeholder, ``pass``...) the validation ran failed the test."""
    fills = [f for f in row.get("fills") or [] if isinstance(f, dict) and f.get("code") is not None]
    judged = [f for f in fills if f.get("outcome") != "not_run"]
    if not judged:
        return None
    return not any(f.get("passed") for f in judged)


def masked_preview(*, text: str, marks: Sequence[Mark], name: str, path: str) -> tuple[str, str]:
    """The file ``path`` as a model is shown it for the snippet ``name``: (masked text, "") or ("", why not)."""
    try:
        tagged = write_tags(text, marks, path)
    except MarkError as err:
        return "", str(err)
    snippets, _issues = parse_file(tagged, path)
    snippet = next((s for s in snippets if s.name == name), None)
    if snippet is None:
        return "", f'no snippet "{name}" is marked in {path}'
    try:
        return problems.mask_file(tagged, snippet), ""
    except ValueError as exc:
        return "", str(exc)


def marking_page(
    *,
    proposal: Proposal,
    revision: ProposalRevision,
    validated: ProposalRevision | None,
    shown: str = "",
    preview: str = "",
    comments: Sequence[Comment] = (),
) -> MarkingPage:
    """The marking page of ``revision`` (the proposal's newest): its markable files, the file ``shown``
    (default: the first with marks, else the first) with numbered lines and the marks on them, every mark
    with its line count and ``validated``'s result, and the masked file of the mark named ``preview``.
    ``comments`` anchored to the revision's files are placed on the untagged lines they concern."""
    base = revision_mark_base(revision=revision)
    marks, is_draft = marks_draft(proposal=proposal, base=base)
    paths = sorted({*base.texts, *base.problems, *base.skipped})
    if shown not in base.texts:
        shown = next((p for p in paths if marks.get(p)), next(iter(sorted(base.texts)), ""))
    results = _results(validated=validated, marks=marks, shown=base)
    rows: list[MarkRow] = []
    for path in sorted(marks):
        file_marks = sorted(marks[path], key=lambda m: (m.first, -m.last))
        depths = _depths(file_marks)
        lines = code_lines(base.texts[path])
        for mark in file_marks:
            body = "\n".join(lines[mark.first - 1 : mark.last])
            rows.append(
                MarkRow(path, mark, depths[mark.name], line_count(body), results.get((path, mark.name)))
            )
    files = []
    for path in paths:
        if path in base.problems:
            files.append(
                MarkFile(path, file_anchor(path), None, 0, "its tags do not pair up", base.problems[path])
            )
        elif path in base.skipped:
            files.append(MarkFile(path, file_anchor(path), None, 0, base.skipped[path]))
        else:
            files.append(MarkFile(path, file_anchor(path), None, len(marks.get(path, ()))))
    for mark_file in files:
        if mark_file.path == shown:
            mark_file.lines = _lines(
                shown,
                base.texts[shown],
                marks.get(shown, []),
                [c for c in comments if c.file == shown],
                base.stored_to_untagged.get(shown, []),
            )
    page = MarkingPage(base, marks, is_draft, files, rows, shown, validated=validated)
    row = next((r for r in rows if r.mark.name == preview), None) if preview else None
    if row is not None:
        page.preview_name = row.mark.name
        page.preview, page.preview_error = masked_preview(
            text=base.texts[row.file], marks=marks[row.file], name=row.mark.name, path=row.file
        )
    return page


def _lines(
    path: str, text: str, marks: Sequence[Mark], comments: Sequence[Comment], line_map: Sequence[int]
) -> list[MarkLine]:
    lines = code_lines(text)
    html = highlight_lines(path, text)
    ordered = sorted(marks, key=lambda m: (m.first, -m.last))
    out = [
        MarkLine(
            number=n,
            html=html[n - 1] if n - 1 < len(html) else "",
            names=[m.name for m in ordered if m.first <= n <= m.last],
            starts=[m.name for m in ordered if m.first == n],
        )
        for n in range(1, len(lines) + 1)
    ]
    for comment in comments:
        stored = comment.line or 0
        if 0 < stored <= len(line_map):
            untagged = line_map[stored - 1]
            if 0 < untagged <= len(out):
                out[untagged - 1].comments.append(comment)
    return out
