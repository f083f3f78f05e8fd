"""What a resubmission changed: a revision's files and unified diff against the previous submitted
revision (``revision_diff``), read from the blob store."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from contributions.models import (
    ProposalRevision,
)
from contributions.task_folders import blobs_read


def revision_previous(*, revision: ProposalRevision) -> ProposalRevision | None:
    """The submitted revision before ``revision`` (the one a resubmission is compared with)."""
    return (
        ProposalRevision.objects.filter(
            proposal_id=revision.proposal_id, number__lt=revision.number, submitted_at__isnull=False
        )
        .order_by("-number")
        .first()
    )


@dataclass(frozen=True)
class RevisionDiff:
    """What changed from ``previous`` to a revision: files added, removed and changed, and a unified diff
    of the text files (``truncated`` when it was cut at the bound)."""

    previous: ProposalRevision | None
    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]
    text: str
    truncated: bool
    manifest_changed: bool


def revision_diff(*, revision: ProposalRevision, max_lines: int = 5000) -> RevisionDiff:
    """The unified diff of ``revision`` against the previous submitted revision (from the blob store).

    At most ``max_lines`` diff lines; a file that is not UTF-8 text shows as one line saying it differs.
    With no previous revision every file counts as added and the text is empty.
    """
    previous = revision_previous(revision=revision)
    new_files: dict[str, str] = revision.files or {}
    old_files: dict[str, str] = previous.files if previous is not None else {}
    if previous is None:
        return RevisionDiff(None, tuple(sorted(new_files)), (), (), "", False, False)
    added = tuple(sorted(set(new_files) - set(old_files)))
    removed = tuple(sorted(set(old_files) - set(new_files)))
    changed = tuple(sorted(r for r in set(new_files) & set(old_files) if new_files[r] != old_files[r]))
    wanted_new = {r: new_files[r] for r in (*added, *changed)}
    wanted_old = {r: old_files[r] for r in (*removed, *changed)}
    new_bytes = blobs_read(wanted_new, owner=str(revision))
    old_bytes = blobs_read(wanted_old, owner=str(previous))
    lines: list[str] = []
    truncated = False
    for rel in sorted({*added, *removed, *changed}):
        before, after = old_bytes.get(rel), new_bytes.get(rel)
        try:
            a = before.decode("utf-8").splitlines(keepends=True) if before is not None else []
            b = after.decode("utf-8").splitlines(keepends=True) if after is not None else []
        except UnicodeDecodeError:
            chunk = [f"Binary file {rel} differs\n"]
        else:
            chunk = [
                line if line.endswith("\n") else line + "\n"
                for line in difflib.unified_diff(
                    a,
                    b,
                    fromfile=f"r{previous.number}/{rel}" if before is not None else "/dev/null",
                    tofile=f"r{revision.number}/{rel}" if after is not None else "/dev/null",
                )
            ]
        if len(lines) + len(chunk) > max_lines:
            lines.extend(chunk[: max(0, max_lines - len(lines))])
            truncated = True
            break
        lines.extend(chunk)
    return RevisionDiff(
        previous=previous,
        added=added,
        removed=removed,
        changed=changed,
        text="".join(lines),
        truncated=truncated,
        manifest_changed=(previous.manifest or {}) != (revision.manifest or {}),
    )
