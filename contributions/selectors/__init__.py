"""Reads of contributions: every page, export, command and API of the catalogue and of the contribution
workflow gets its data here, one module per page family (the writes are ``contributions.services``).

- ``catalogue``: the papers with their sizes and the papers page (``paper_catalogue``), task versions (the
  published benchmark, ``task_versions_current``), snippet trees and each paper's contributors;
- ``releases``: the release list, one release and its page, the default release, the runnable ones;
- ``release_export``: a release written back as an original-format pset folder or archive;
- ``accounts``: a user's profile and API tokens, and the name the portal credits them with;
- ``notifications``: a user's notifications and the unread count;
- ``proposals``: the one access guard of proposals (``proposal_get_for_viewer``), a proposal's revisions,
  status words and history, and the approval record of a published version;
- ``contribute``: the contribution form's reads (file choices, the preview, the problem a model sees);
- ``proposal_page``: the proposal page's sections (the validation report, its progress, the metadata);
- ``code_view``: a revision's code as the proposal page shows it (highlighted lines, regions, findings);
- ``revision_diff``: what a resubmission changed;
- ``review_queue``: the maintainers' review queue.

Callers import from the module of the page they serve (``from contributions.selectors.proposals import
proposal_status``); this package re-exports nothing.
"""
