"""Reads of the catalogue and the papers page."""

from __future__ import annotations

import pytest

from contributions import selectors, services
from contributions.models import Release, TaskVersion

pytestmark = pytest.mark.django_db


def test_paper_list_counts_tasks_snippets_and_lines_of_the_latest_versions(small_pset):
    root = small_pset()
    r1 = services.release_create_from_pset(path=root, name="r1")
    model = root / "alpha" / "model.py"
    model.write_text(
        model.read_text() + '\n\ndef extra():\n    # <paper2code name="extra">\n    return 1\n'
        '    # </paper2code name="extra">\n'
    )
    services.release_create_from_pset(path=root, name="r2")

    rows = {row.paper.key: row for row in selectors.paper_list()}
    assert rows["alpha"].task_count == 1 and rows["alpha"].latest_version.number == 2
    assert (rows["alpha"].snippet_count, rows["alpha"].total_lines) == (4, 5)
    assert (rows["beta"].snippet_count, rows["beta"].total_lines) == (3, 4)
    in_r1 = {row.paper.key: row for row in selectors.paper_list(release=r1)}
    assert in_r1["alpha"].latest_version.number == 1 and in_r1["alpha"].snippet_count == 3


def test_release_list_annotates_sizes_without_double_counting(small_pset):
    root = small_pset()
    services.release_create_from_pset(path=root, name="r1")
    services.release_create_from_pset(path=root, name="r2")
    sizes = {r.name: (r.task_count, r.snippet_count, r.total_lines) for r in selectors.release_list()}
    assert sizes == {"r1": (2, 6, 8), "r2": (2, 6, 8)}


def test_release_get_names_the_known_releases_when_missing(small_pset):
    services.release_create_from_pset(path=small_pset(), name="r1")
    assert selectors.release_get(name="r1").name == "r1"
    with pytest.raises(Release.DoesNotExist, match=r"no release named 'r9' \(releases: r1\)"):
        selectors.release_get(name="r9")


def test_task_version_get_returns_the_newest_or_the_numbered_version(small_pset):
    root = small_pset(ids=("alpha",))
    services.release_create_from_pset(path=root, name="r1")
    (root / "alpha" / "notes.txt").write_text("changed\n")
    services.release_create_from_pset(path=root, name="r2")
    assert selectors.task_version_get(task_key="alpha").number == 2
    assert selectors.task_version_get(task_key="alpha", number=1).number == 1
    with pytest.raises(TaskVersion.DoesNotExist, match=r"version 7 of task 'alpha' \(versions: 1, 2\)"):
        selectors.task_version_get(task_key="alpha", number=7)


def test_snippet_tree_nests_children_under_parents_in_document_order(hostile_pset):
    services.release_create_from_pset(path=hostile_pset, name="h")
    version = selectors.task_version_get(task_key="attn: v2, final=yes")

    def shape(nodes):
        return [(n.snippet.name, shape(n.children)) for n in nodes]

    assert shape(selectors.snippet_tree(task_version=version)) == [
        (
            "attention: scores, softmax = weights",
            [
                ("scores", []),
                ("softmax", [("row max", []), ("exp and normalise", [("divide", [])])]),
            ],
        )
    ]


def test_papers_page_shows_an_empty_state_before_any_import(client):
    html = client.get("/papers/").content.decode()
    assert "No papers yet" in html and "import_pset" in html
    assert "papers-table" not in html


def test_papers_page_lists_papers_with_arxiv_and_code_links(client, small_pset):
    services.release_create_from_pset(path=small_pset(), name="r1")
    response = client.get("/papers/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "No papers yet" not in html
    assert '<a href="https://arxiv.org/abs/2501.00000v2" rel="noopener">Paper alpha</a>' in html
    assert '<a href="https://github.com/example/beta" rel="noopener">code</a>' in html
    assert "<code>alpha</code>" in html and "ICLR2025" in html and "2025-01-07" in html
    assert '<td class="num">3</td>' in html and '<td class="num">4</td>' in html
