"""The catalogue's write services: ``catalogue`` (papers, tasks, task versions, snippets, file blobs) and
``releases`` (releases, their entries, export). Only these modules create or change catalogue rows
(``tests/test_architecture.py`` checks that no other app does)."""

from contributions.errors import CatalogueError
from contributions.services.catalogue import (
    file_blobs_store,
    paper_get_or_create,
    paper_update,
    task_get_or_create,
    task_version_create_metadata_only,
    task_version_import,
)
from contributions.services.releases import (
    release_create_from_pset,
    release_entry_get_or_create,
    release_export,
    release_get_or_create,
    release_set_default,
    release_set_default_if_none,
)
from contributions.task_folders import version_file_bytes
from contributions.task_meta import meta_from_json, meta_to_json

__all__ = [
    "CatalogueError",
    "file_blobs_store",
    "meta_from_json",
    "meta_to_json",
    "paper_get_or_create",
    "paper_update",
    "release_create_from_pset",
    "release_entry_get_or_create",
    "release_export",
    "release_get_or_create",
    "release_set_default",
    "release_set_default_if_none",
    "task_get_or_create",
    "task_version_create_metadata_only",
    "task_version_import",
    "version_file_bytes",
]
