"""The catalogue's write services: ``catalogue`` (papers, tasks, task versions, snippets, file blobs) and
``releases`` (releases, their entries, export). Only these modules create or change catalogue rows
(``tests/test_architecture.py`` checks that no other app does). The contribution workflow, by stage: ``proposal_state`` (the
state machine: its states and moves, the lock and the transition every move makes), ``proposals`` (creating,
editing, withdrawing a proposal, and comments), ``revisions`` (uploads), ``proposal_validation`` (submit and the
validation's life cycle), ``review`` (maintainers' reviews), ``publishing`` and ``notifications`` (in-app
notifications and emails). Reads are in ``contributions.selectors`` (one module per page family)."""

from contributions.errors import CatalogueError
from contributions.services.catalogue import (
    EnvironmentOutcome,
    environment_sources,
    file_blobs_store,
    paper_get_or_create,
    paper_update,
    snippet_mark_unchecked,
    snippets_mark_unchecked,
    task_get_or_create,
    task_version_create_metadata_only,
    task_version_import,
    task_version_lock_environment,
    task_version_store_variants,
)
from contributions.services.notifications import notifications_mark_read
from contributions.services.proposal_state import ProposalError
from contributions.services.proposal_validation import (
    proposal_submit,
    proposal_validation_fail,
    proposal_validation_finish,
    proposal_validation_progress,
    proposal_validation_start,
    proposal_validation_watchdog,
    validation_job_limits,
)
from contributions.services.proposals import (
    RUBRIC,
    comment_add,
    proposal_create,
    proposal_mark_published,
    proposal_save_draft,
    proposal_update_meta,
    proposal_withdraw,
)
from contributions.services.releases import (
    release_create_from_pset,
    release_entry_get_or_create,
    release_get_or_create,
    release_set_default,
    release_set_default_if_none,
)
from contributions.services.review import proposal_review
from contributions.services.revisions import revision_create, revision_update_manifest, revision_upload
from contributions.task_folders import version_file_bytes
from contributions.task_meta import meta_from_json, meta_to_json

__all__ = [
    "EnvironmentOutcome",
    "environment_sources",
    "task_version_lock_environment",
    "RUBRIC",
    "CatalogueError",
    "ProposalError",
    "comment_add",
    "file_blobs_store",
    "meta_from_json",
    "meta_to_json",
    "notifications_mark_read",
    "paper_get_or_create",
    "paper_update",
    "snippet_mark_unchecked",
    "snippets_mark_unchecked",
    "proposal_create",
    "proposal_mark_published",
    "proposal_review",
    "proposal_save_draft",
    "proposal_submit",
    "proposal_update_meta",
    "proposal_validation_fail",
    "proposal_validation_finish",
    "proposal_validation_progress",
    "proposal_validation_start",
    "proposal_validation_watchdog",
    "validation_job_limits",
    "proposal_withdraw",
    "release_create_from_pset",
    "release_entry_get_or_create",
    "release_get_or_create",
    "release_set_default",
    "release_set_default_if_none",
    "revision_create",
    "revision_update_manifest",
    "revision_upload",
    "task_get_or_create",
    "task_version_create_metadata_only",
    "task_version_import",
    "task_version_store_variants",
    "version_file_bytes",
]
