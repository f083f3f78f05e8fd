"""The catalogue's write services other apps call (``contributions/services/catalogue.py``): papers,
tasks, metadata-only versions and the task row lock that numbers versions."""

from __future__ import annotations

import threading

import pytest
from django.db import DatabaseError, connection, transaction

from contributions import services
from contributions.models import Task, TaskVersion
from researchcodebench.pset import PaperMeta, read_pset
from tests.contributions.conftest import META

pytestmark = pytest.mark.django_db


def _task(key: str = "alpha") -> Task:
    paper, _ = services.paper_get_or_create(meta=PaperMeta(id=key))
    task, _ = services.task_get_or_create(key=key, paper=paper)
    return task


def test_paper_is_created_once_with_the_parsed_arxiv_id():
    paper, created = services.paper_get_or_create(meta=META)
    again, created_again = services.paper_get_or_create(meta=PaperMeta(id="alpha", title="Other"))

    assert (created, created_again) == (True, False)
    assert again.pk == paper.pk and again.title == "Alpha" and again.arxiv_id == "2401.00001"


def test_paper_update_only_empty_fills_gaps_and_keeps_what_is_set():
    paper, _ = services.paper_get_or_create(meta=META)
    richer = PaperMeta(id="alpha", title="Renamed", venue="ICML", first_commit_date="2024-01-02")

    assert services.paper_update(paper=paper, meta=richer, only_empty=True)
    paper.refresh_from_db()
    assert (paper.title, paper.venue, str(paper.first_commit_date)) == ("Alpha", "ICML", "2024-01-02")
    assert not services.paper_update(paper=paper, meta=richer, only_empty=True)

    assert services.paper_update(paper=paper, meta=richer)
    paper.refresh_from_db()
    assert paper.title == "Renamed" and paper.arxiv_id == ""


def test_metadata_only_version_is_numbered_after_imported_ones_and_idempotent(small_pset):
    imported = services.task_version_import(task=read_pset(small_pset()).task("alpha"))

    version, created = services.task_version_create_metadata_only(
        task=imported.task,
        content_hash="h" * 64,
        meta=META,
        snippets=[("a", 3), ("b", 0)],
        snippet_file="m.py",
    )
    again, created_again = services.task_version_create_metadata_only(
        task=imported.task, content_hash="h" * 64, meta=META, snippets=[("a", 3), ("b", 0)]
    )

    assert (imported.number, version.number, created, created_again) == (1, 2, True, False)
    assert again.pk == version.pk and not version.has_files and version.origin == "published"
    assert list(version.snippets.values_list("name", "lines", "file")) == [("a", 3, "m.py"), ("b", 0, "m.py")]
    # The one metadata encoding: the same as a version imported from a folder.
    assert version.meta == services.meta_to_json(META) and "extra_order" in version.meta
    assert services.meta_from_json(version.meta) == META


@pytest.mark.parametrize(
    ("snippets", "message"),
    [([("a", 1), ("a", 2)], "duplicate snippet names: 'a'"), ([("a", -1)], "negative line count for 'a'")],
)
def test_metadata_only_version_refuses_bad_snippets_naming_them(snippets, message):
    task = _task()

    with pytest.raises(services.CatalogueError, match=message):
        services.task_version_create_metadata_only(
            task=task, content_hash="x" * 64, meta=META, snippets=snippets
        )
    assert not TaskVersion.objects.exists()


@pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks need PostgreSQL")
@pytest.mark.django_db(transaction=True)
def test_creating_a_version_holds_the_task_row_lock_until_commit():
    task = _task()
    outcome: list[str] = []

    def try_lock() -> None:
        try:
            with transaction.atomic():
                Task.objects.select_for_update(nowait=True).get(pk=task.pk)
            outcome.append("acquired")
        except DatabaseError:
            outcome.append("locked")
        finally:
            connection.close()

    with transaction.atomic():
        services.task_version_create_metadata_only(task=task, content_hash="l" * 64, meta=META, snippets=[])
        other = threading.Thread(target=try_lock)
        other.start()
        other.join()
    after = threading.Thread(target=try_lock)
    after.start()
    after.join()

    assert outcome == ["locked", "acquired"]
