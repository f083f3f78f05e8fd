"""The reads of the ``contributions/selectors/`` package: the catalogue (papers, releases, task versions, the snippet
tree) and the contribution workflow (who sees a proposal, the review queue, a resubmission's diff)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from contributions import services
from contributions.models import Proposal, Release, TaskVersion
from contributions.roles import is_maintainer, maintainers
from contributions.selectors.catalogue import paper_list, snippet_tree, task_version_get
from contributions.selectors.proposals import proposal_get_for_viewer
from contributions.selectors.releases import release_get, release_list
from contributions.selectors.review_queue import proposal_review_queue, proposal_waiting
from contributions.selectors.revision_diff import revision_diff
from contributions.services import proposal_submit, proposal_validation_finish, proposal_validation_start
from tests.contributions.conftest import FLAKY, State
from tests.factories import ProposalFactory, UserFactory, example_upload
from tests.factories.builders import (
    proposal_draft,
    proposal_submitted,
    proposal_upload,
    proposal_validated,
    validation_report,
)

pytestmark = pytest.mark.django_db


# ------------------------------------------------------------------------------------------- catalogue


def test_paper_list_counts_tasks_snippets_and_lines_of_the_latest_versions(small_pset):
    root = small_pset()
    r1 = services.release_create_from_pset(path=root, name="r1")
    model = root / "alpha" / "model.py"
    model.write_text(
        model.read_text() + '\n\ndef extra():\n    # <paper2code name="extra">\n    return 1\n'
        '    # </paper2code name="extra">\n'
    )
    services.release_create_from_pset(path=root, name="r2")

    rows = {row.paper.key: row for row in paper_list()}
    assert rows["alpha"].task_count == 1 and rows["alpha"].latest_version.number == 2
    assert (rows["alpha"].snippet_count, rows["alpha"].total_lines) == (4, 5)
    assert (rows["beta"].snippet_count, rows["beta"].total_lines) == (3, 4)
    in_r1 = {row.paper.key: row for row in paper_list(release=r1)}
    assert in_r1["alpha"].latest_version.number == 1 and in_r1["alpha"].snippet_count == 3


def test_release_list_annotates_sizes_without_double_counting(small_pset):
    root = small_pset()
    services.release_create_from_pset(path=root, name="r1")
    services.release_create_from_pset(path=root, name="r2")
    sizes = {r.name: (r.task_count, r.snippet_count, r.total_lines) for r in release_list()}
    assert sizes == {"r1": (2, 6, 8), "r2": (2, 6, 8)}


def test_release_get_names_the_known_releases_when_missing(small_pset):
    services.release_create_from_pset(path=small_pset(), name="r1")
    assert release_get(name="r1").name == "r1"
    with pytest.raises(Release.DoesNotExist, match=r"no release named 'r9' \(releases: r1\)"):
        release_get(name="r9")


def test_task_version_get_returns_the_newest_or_the_numbered_version(small_pset):
    root = small_pset(ids=("alpha",))
    services.release_create_from_pset(path=root, name="r1")
    (root / "alpha" / "notes.txt").write_text("changed\n")
    services.release_create_from_pset(path=root, name="r2")
    assert task_version_get(task_key="alpha").number == 2
    assert task_version_get(task_key="alpha", number=1).number == 1
    with pytest.raises(TaskVersion.DoesNotExist, match=r"version 7 of task 'alpha' \(versions: 1, 2\)"):
        task_version_get(task_key="alpha", number=7)


def test_snippet_tree_nests_children_under_parents_in_document_order(hostile_pset):
    services.release_create_from_pset(path=hostile_pset, name="h")
    version = task_version_get(task_key="attn: v2, final=yes")

    def shape(nodes):
        return [(n.snippet.name, shape(n.children)) for n in nodes]

    assert shape(snippet_tree(task_version=version)) == [
        (
            "attention: scores, softmax = weights",
            [
                ("scores", []),
                ("softmax", [("row max", []), ("exp and normalise", [("divide", [])])]),
            ],
        )
    ]


# ------------------------------------------------------------------------------------------- proposals


def test_only_the_author_and_maintainers_see_a_proposal_and_maintainers_no_drafts(maintainer):
    proposal = proposal_draft()
    assert proposal_get_for_viewer(viewer=proposal.author, proposal_id=proposal.pk) == proposal
    for viewer in (maintainer, UserFactory()):
        with pytest.raises(Proposal.DoesNotExist):
            proposal_get_for_viewer(viewer=viewer, proposal_id=proposal.pk)
    with pytest.raises(Proposal.DoesNotExist):
        proposal_get_for_viewer(viewer=proposal.author, proposal_id="1 OR 1=1")
    proposal_upload(proposal)
    proposal_submit(proposal=proposal, by=proposal.author)
    assert proposal_get_for_viewer(viewer=maintainer, proposal_id=str(proposal.pk)) == proposal
    assert is_maintainer(maintainer) and list(maintainers()) == [maintainer]


def test_the_review_queue_lists_the_longest_waiting_first_with_filters():
    older, newer = proposal_validated(), proposal_validated()
    Proposal.objects.filter(pk=older.pk).update(state_changed_at=timezone.now() - timedelta(days=3))
    ProposalFactory()  # a draft is never listed
    assert list(proposal_review_queue()) == [Proposal.objects.get(pk=older.pk), newer]
    assert list(proposal_review_queue(waiting_longer_than=timedelta(days=1))) == [older]
    assert list(proposal_review_queue(states=[State.DRAFT])) == []
    row = proposal_review_queue(search="1910.07467").first()
    assert (row.revision_count, row.approvals) == (1, 0)
    assert proposal_waiting(Proposal.objects.get(pk=older.pk)) > timedelta(days=2)


def test_a_resubmission_is_diffed_against_the_previous_revision():
    proposal = proposal_submitted()
    first = proposal.revisions.get()
    proposal_validation_start(revision=first)
    proposal_validation_finish(revision=first, report=validation_report(FLAKY))
    code = example_upload().files["rmsnorm.py"].replace(b"self.eps = eps", b"self.eps = float(eps)")
    second = proposal_upload(proposal, **{"rmsnorm.py": code, "NOTES.md": b"new\n"})
    proposal_submit(proposal=proposal, by=proposal.author)
    diff = revision_diff(revision=second)
    assert diff.previous == first
    assert (diff.added, diff.removed, diff.changed) == (("NOTES.md",), (), ("rmsnorm.py",))
    assert "-        self.eps = eps\n+        self.eps = float(eps)\n" in diff.text
    assert "+++ r2/rmsnorm.py" in diff.text and not diff.truncated
    assert revision_diff(revision=second, max_lines=3).truncated
