"""The proposal page's sections (``views.review.proposal_detail``): the validation report grouped by check
with each finding's anchor in the code, the validation's streamed progress, the shown revision's code with
its findings, snippet answers and comments, every revision with its diff, the paper's metadata as rows, and
why a maintainer cannot approve now. Only reads; the page polls ``is_polling`` sections with htmx."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from contributions.models import Comment, Proposal, ProposalRevision
from contributions.proposal_status import report_blocking
from contributions.selectors.code_view import RevisionCode, file_anchor, revision_code
from contributions.selectors.proposals import revision_outcome
from contributions.selectors.revision_diff import revision_diff
from researchcodebench.validation import variants_summary
from researchcodebench.variants import SnippetVariants

State = Proposal.State
VStatus = ProposalRevision.ValidationStatus

#: validation statuses that can still change (the page keeps polling while the revision is in one)
RUNNING_STATUSES = (VStatus.PENDING, VStatus.RUNNING)
#: proposal states in which a validation is still to come or under way
VALIDATING_STATES = (State.SUBMITTED, State.VALIDATING)
#: bound of each revision's diff on the page
DIFF_LINES = 2000


def is_polling(proposal: Proposal, revision: ProposalRevision | None) -> bool:
    """Whether the page keeps polling: ``revision``'s validation can still move."""
    return (
        revision is not None
        and revision.submitted_at is not None
        and proposal.state in VALIDATING_STATES
        and revision.validation_status in RUNNING_STATUSES
    )


def approve_blocked(*, proposal: Proposal, viewer: Any, report: dict[str, Any]) -> str:
    """Why the viewer cannot approve now ("" when they can, given the rubric and the override reasons)."""
    if viewer.pk == proposal.author_id:
        return "nobody approves their own proposal."
    if proposal.state != State.READY_FOR_REVIEW:
        return f"the proposal is {proposal.get_state_display().lower()}, not ready for review."
    if not report:
        return "there is no validation report."
    blocking = report_blocking(report)
    if blocking:
        return f"the validation report has {len(blocking)} error(s) no review can accept."
    return ""


def report_groups(report: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    """A report's findings by check: errors first inside each check, the checks with errors first."""
    groups: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()
    for finding in report.get("findings") or []:
        if isinstance(finding, dict):
            groups.setdefault(str(finding.get("check") or "other"), []).append(finding)
    # Errors first inside each check, then the checks with errors first.
    for rows in groups.values():
        rows.sort(key=lambda f: f.get("severity") != "error")
    return sorted(groups.items(), key=lambda item: not any(f.get("severity") == "error" for f in item[1]))


def finding_anchors(findings: list[dict[str, Any]]) -> None:
    """Give each finding (copies: it changes them) that names a file its ``anchor`` in the code section and
    its ``location`` in words (``model.py:12``)."""
    for finding in findings:
        if finding.get("file"):
            anchor = file_anchor(str(finding["file"]))
            line = finding.get("line")
            finding["anchor"] = f"{anchor}-L{line}" if isinstance(line, int) and line > 0 else anchor
            finding["location"] = (
                f"{finding['file']}:{line}" if isinstance(line, int) and line > 0 else str(finding["file"])
            )


def validation_section(proposal: Proposal, revision: ProposalRevision | None) -> dict[str, Any]:
    """The validation section of the page (and of its htmx poll) for ``revision``, the one under review."""
    report = dict(revision.validation_report or {}) if revision is not None else {}
    findings = [dict(f) for f in report.get("findings") or [] if isinstance(f, dict)]
    finding_anchors(findings)
    report["findings"] = findings
    return {
        "proposal": proposal,
        "vrev": revision,
        "report": report,
        "report_groups": report_groups(report),
        "outcome": revision_outcome(revision),
        "polling": is_polling(proposal, revision),
        "progress": [progress_row(e) for e in revision.validation_progress or [] if isinstance(e, dict)]
        if revision is not None
        else [],
    }


def progress_row(entry: dict[str, Any]) -> dict[str, Any]:
    """One streamed validation stage as the page shows it: its name, time and a one-line summary of its
    data (counts, not the raw records: the full results are in the report below)."""
    data = entry.get("data") if isinstance(entry.get("data"), dict) else {}
    parts = []
    runs = data.get("runs")
    if isinstance(runs, list):
        passed = sum(1 for r in runs if isinstance(r, dict) and r.get("passed"))
        parts.append(f"{passed} of {len(runs)} reference runs passed")
    if isinstance(data.get("timeout_s"), int | float):
        parts.append(f"timeout {data['timeout_s']:.1f} s")
    found = data.get("variants")
    if isinstance(found, dict) and found.get("snippet"):
        count = found.get("count")
        if isinstance(count, int) and count > 0:
            what = f"{count} impossible variant{'s' if count != 1 else ''}"
        elif isinstance(count, int):
            what = "NO impossible variant"
        else:
            what = "variants not derived"
        parts.append(f"snippet {str(found['snippet'])[:200]!r}: {what}")
    snippet = data.get("snippet")
    if isinstance(snippet, dict) and snippet.get("name"):
        checked = {True: "checked by the test", False: "NOT checked by the test"}.get(
            snippet.get("checked"), "not decided"
        )
        score = snippet.get("mutation_score")
        if (
            isinstance(score, dict)
            and isinstance(score.get("killed"), int)
            and isinstance(score.get("total"), int)
        ):
            checked += f" (mutation score {score['killed']}/{score['total']})"
        parts.append(f"snippet {str(snippet['name'])[:200]!r}: {checked}")
    findings = data.get("findings")
    if isinstance(findings, list):
        parts.append(f"{len(findings)} finding{'s' if len(findings) != 1 else ''}")
    return {
        "stage": str(entry.get("stage", ""))[:200],
        "at": str(entry.get("at", "")),
        "summary": "; ".join(parts),
    }


def shown_code(shown: ProposalRevision, *, comments: list[Comment]) -> RevisionCode:
    """The shown revision's code with its own report's findings and snippet answers (the mutation check's,
    the mutation score and the impossible variants) and the comments anchored to its lines."""
    anchored = [c for c in comments if c.file and c.revision_id == shown.pk]
    report = dict(shown.validation_report or {})
    findings = [dict(f) for f in report.get("findings") or [] if isinstance(f, dict)]
    rows = [s for s in report.get("snippets") or [] if isinstance(s, dict)]
    checked = {str(s.get("name")): s.get("checked") for s in rows}
    mutation = {
        str(s.get("name")): s["mutation_score"]
        for s in rows
        if isinstance(s.get("mutation_score"), dict)
        and all(isinstance(s["mutation_score"].get(k), int) for k in ("killed", "total"))
    }
    return revision_code(
        revision=shown,
        findings=findings,
        comments=anchored,
        checked=checked,
        mutation=mutation,
        variants=report_variants(report),
    )


def report_variants(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Snippet name -> the summary of its impossible variants (count, each one's description, why there is
    none), from a validation report's ``variants``; a set that does not read is left out."""
    out: dict[str, dict[str, Any]] = {}
    stored = report.get("variants")
    for name, data in (stored if isinstance(stored, dict) else {}).items():
        try:
            out[str(name)] = variants_summary(SnippetVariants.from_dict(data))
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
    return out


def revisions_with_diffs(revisions: list[ProposalRevision]) -> list[tuple[ProposalRevision, Any]]:
    """Each revision with its diff against the previous one (submitted revisions after the first only)."""
    return [
        (r, revision_diff(revision=r, max_lines=DIFF_LINES))
        if r.submitted_at is not None and r.number > 1
        else (r, None)
        for r in revisions
    ]


def comment_line_url(comment: Comment, shown: ProposalRevision | None) -> str:
    """Where a comment's file and line are shown: its line's anchor in the code section, with
    ``?revision=N`` when the page shows another revision; "" for a general comment."""
    if not comment.file:
        return ""
    anchor = "#" + file_anchor(comment.file) + (f"-L{comment.line}" if comment.line else "")
    if comment.revision is None or (shown is not None and comment.revision_id == shown.pk):
        return anchor
    return f"?revision={comment.revision.number}{anchor}"


META_FIELDS = (
    ("title", "Title"),
    ("arxiv_abs", "arXiv"),
    ("venue", "Venue"),
    ("arxiv_v1_date", "arXiv v1 date"),
    ("arxiv_date", "arXiv date"),
    ("license", "License"),
    ("github_url", "Code repository"),
    ("commit", "Commit"),
    ("code_commit", "Commit"),
    ("first_commit_date", "First commit"),
    ("last_commit_date", "Last commit"),
)


#: keys shown elsewhere on the page or not meant for people
META_HIDDEN = frozenset(
    {"id", "annotated_file_paths", "context_file_paths", "extra", "extra_order", "license_text"}
)


def meta_text(value: Any) -> str:
    """A metadata value as words: a list as its items, anything else as text (at most 500 characters)."""
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)[:500]
    return str(value)[:500]


def license_text(meta: dict[str, Any], *, licenses: Mapping[str, str]) -> str:
    """The license's name (``licenses``: id -> name, the form's choices), or the text given for "other"."""
    license_id = str(meta.get("license") or "")
    if license_id == "other":
        return str(meta.get("license_text") or "other")[:500]
    return licenses.get(license_id, license_id)


def meta_rows(proposal: Proposal, *, licenses: Mapping[str, str]) -> list[tuple[str, str, bool]]:
    """(label, value, is_link) for the metadata the proposal has, the registry entry's ``extra`` keys (the
    license, the code's commit) as rows of their own; links only for http(s) URLs. No dict is ever shown
    as Python text: an unknown key with a mapping value is left out."""
    stored = proposal.meta or {}
    extra = stored.get("extra") if isinstance(stored.get("extra"), dict) else {}
    meta = {**extra, **{k: v for k, v in stored.items() if v not in (None, "", [], {})}}
    rows = []
    for key, label in META_FIELDS:
        value = meta.get(key)
        if value in (None, "", []) or (key == "code_commit" and meta.get("commit")):
            continue
        text = license_text(meta, licenses=licenses) if key == "license" else meta_text(value)
        rows.append((label, text, text.startswith(("https://", "http://"))))
    known = {key for key, _ in META_FIELDS} | META_HIDDEN
    for key in sorted(set(meta) - known):
        value = meta[key]
        if value not in (None, "", [], {}) and not isinstance(value, dict):
            rows.append((key.replace("_", " ").capitalize(), meta_text(value), False))
    return rows
