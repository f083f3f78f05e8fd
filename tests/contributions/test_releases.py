"""Releases and their entries (``contributions/services/releases.py``): names, the default release, one
version per task. Importing psets as releases and exporting them back is test_import_export.py."""

from __future__ import annotations

import pytest

from contributions import services
from contributions.models import Paper, Release
from researchcodebench.pset import read_pset
from tests.contributions.conftest import META

pytestmark = pytest.mark.django_db


def test_release_get_or_create_refuses_a_name_that_is_not_a_slug():
    with pytest.raises(services.CatalogueError, match="release name 'a b' is not valid"):
        services.release_get_or_create(name="a b")
    assert not Release.objects.exists()


def test_release_becomes_the_default_only_when_there_is_none():
    first, created = services.release_get_or_create(name="first", title="First", description="d")
    second, _ = services.release_get_or_create(name="second")

    assert created and (first.title, first.description) == ("First", "d")
    assert services.release_set_default_if_none(release=first)
    assert not services.release_set_default_if_none(release=second)
    assert list(Release.objects.filter(is_default=True).values_list("name", flat=True)) == ["first"]


def test_release_entry_keeps_the_version_a_release_already_holds_for_a_task(small_pset):
    imported = services.task_version_import(task=read_pset(small_pset()).task("alpha"))
    other, _ = services.task_version_create_metadata_only(
        task=imported.task, content_hash="o" * 64, meta=META, snippets=[]
    )
    release, _ = services.release_get_or_create(name="r")

    _entry, created = services.release_entry_get_or_create(release=release, task_version=imported, position=0)
    entry, created_again = services.release_entry_get_or_create(
        release=release, task_version=other, position=1
    )

    assert (created, created_again) == (True, False)
    assert entry.task_version_id == imported.pk and Paper.objects.count() == 1
