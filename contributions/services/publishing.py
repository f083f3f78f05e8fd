"""Publishing: an approved proposal becomes an immutable task version of the benchmark.

``proposal_publish`` (approved -> published) builds the ``TaskVersion`` from the approved revision's task
folder, read in memory (``task_folders.revision_task_read``: the uploaded files, ``task.yaml`` from the
declared manifest, the paper under its canonical name), and the proposal's paper metadata, created by the
contributor. After the
transaction commits, the benchmark git repository gets the version as one commit authored by the
contributor with the approvers in the message (``benchmark_repo.sync``), and ``task_version_published`` is
sent, which the evaluation app answers by queueing the active portal-run models on the new version.

Approval publishes at once: ``proposal_review`` schedules ``proposal_publish_approved`` after the approval
commits. Publishing runs in its own transaction, so a failure there (a corrupt blob, a full disk) leaves the
approval recorded and the proposal approved, and publishing can be retried with ``proposal_publish``.

Imported tasks get the same approval record (``task_version_record_import``): a published proposal
authored by the operator, so every published version has one and the repository's history names who added
each version.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from contributions.models import Paper, Proposal, ProposalEvent, Review, TaskVersion, UncheckedReason
from contributions.proposal_status import status_of
from contributions.selectors.proposals import latest_submitted_revision
from contributions.services.catalogue import snippets_mark_unchecked, task_version_import
from contributions.services.proposal_state import ProposalError
from contributions.services.proposals import proposal_mark_published
from contributions.signals import task_version_published
from contributions.task_folders import revision_task_read
from researchcodebench.arxiv import arxiv_id as parse_arxiv_id

logger = logging.getLogger(__name__)

#: the user name of the system account imports are recorded under when the operator names nobody
OPERATOR_USERNAME = "operator"


@transaction.atomic
def proposal_publish(*, proposal: Proposal, by: Any) -> TaskVersion:
    """approved -> published: create the task version of the approved revision and publish it.

    The version is the approved (newest submitted) revision's task folder with the proposal's registry
    entry, origin ``contributed``, created by the proposal's author, holding the impossible variants its
    validation derived (and the environment they hold in); a folder whose content is already a version of
    the task reuses it. ``by`` is the maintainer publishing (the approver whose approval
    completed it). Raises ``ProposalError`` when the proposal is not approved, and ``CatalogueError`` when
    the revision's files cannot become a version (nothing is changed then).
    """
    locked = Proposal.objects.select_for_update().get(pk=proposal.pk)
    if locked.state != Proposal.State.APPROVED:
        raise ProposalError(
            f"cannot publish a proposal that is {Proposal.State(locked.state).label.lower()} "
            "(only one that is approved)"
        )
    revision = latest_submitted_revision(locked)
    if revision is None:
        raise ProposalError("cannot publish a proposal without a submitted revision")
    task = revision_task_read(revision=revision)
    report = revision.validation_report if isinstance(revision.validation_report, dict) else {}
    version = task_version_import(
        task=task,
        origin=TaskVersion.Origin.CONTRIBUTED,
        by=locked.author,
        variants=report.get("variants") if isinstance(report.get("variants"), dict) else None,
        variants_environment=str(report.get("variants_environment") or ""),
    )
    snippets_mark_unchecked(task_version=version, accepted=accepted_unchecked(revision=revision))
    proposal_mark_published(proposal=locked, by=by, task_version=version)
    proposal.state, proposal.published_version = locked.state, version
    # The paper's pages are cached by the papers' last change: the new version and its credit show at once.
    Paper.objects.filter(pk=version.task.paper_id).update(updated_at=timezone.now())

    from contributions import benchmark_repo  # the repository module builds on the services

    transaction.on_commit(benchmark_repo.sync_recorded)
    transaction.on_commit(
        functools.partial(
            task_version_published.send,
            sender=TaskVersion,
            task_version_id=version.pk,
            by_user_id=getattr(by, "pk", None),
        )
    )
    return version


def accepted_unchecked(*, revision: Any) -> dict[str, dict[str, str]]:
    """snippet name -> {"reason", "explanation"} the approvals of ``revision`` accepted although its test does
    not check the snippet (the last approval's words when several gave them)."""
    accepted: dict[str, dict[str, str]] = {}
    for review in revision.reviews.filter(decision=Review.Decision.APPROVE).order_by("created_at", "pk"):
        for name, given in (review.snippet_overrides or {}).items():
            if isinstance(given, dict):
                accepted[name] = {
                    "reason": str(given.get("reason", "")),
                    "explanation": str(given.get("explanation", "")),
                }
            elif isinstance(given, str):
                accepted[name] = {"reason": UncheckedReason.OTHER, "explanation": given}
    return accepted


def proposal_publish_approved(*, proposal_id: int, by_id: int | None) -> TaskVersion | None:
    """``proposal_publish`` for the after-commit hook of an approval: a proposal no longer approved (published
    meanwhile) is skipped, and a failure is logged, leaving the proposal approved for a retry."""
    proposal = Proposal.objects.filter(pk=proposal_id, state=Proposal.State.APPROVED).first()
    if proposal is None:
        return None
    by = get_user_model().objects.filter(pk=by_id).first() if by_id is not None else None
    try:
        return proposal_publish(proposal=proposal, by=by)
    except Exception:  # the approval has committed: any failure (files, disk) is logged, never a 500 after it
        logger.exception("publishing approved proposal %s failed; it stays approved", proposal_id)
        return None


def operator_get_or_create() -> Any:
    """The system account imports are recorded under when the operator names no user: ``operator``,
    created inactive and without a usable password (nobody signs in as it)."""
    user, created = get_user_model().objects.get_or_create(
        username=OPERATOR_USERNAME, defaults={"is_active": False}
    )
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


@transaction.atomic
def task_version_record_import(*, task_version: TaskVersion, by: Any, release_name: str = "") -> Proposal:
    """The approval record of an imported version: a published proposal authored by the operator ``by``
    with one history row "imported by the operator". A version that has a record keeps it (repeating an
    import adds nothing)."""
    existing = Proposal.objects.filter(published_version=task_version).order_by("pk").first()
    if existing is not None:
        return existing
    meta = dict(task_version.meta or {})
    title = str(meta.get("title") or "")[:500]
    record = Proposal.objects.create(
        author=by,
        state=Proposal.State.PUBLISHED,
        task_key=task_version.task.key[:100],
        meta=meta,
        title=title,
        arxiv_id=parse_arxiv_id(str(meta.get("arxiv_abs") or ""))[:32],
        published_version=task_version,
    )
    where = f" (release {release_name})" if release_name else ""
    status = status_of(state=Proposal.State.PUBLISHED, validation_status=None, report=None)
    ProposalEvent.objects.create(
        proposal=record,
        actor=by,
        from_state="",
        to_state=Proposal.State.PUBLISHED,
        status=status.key,
        status_label=status.label,
        reason=f"imported by the operator as {task_version}{where}",
    )
    return record
