"""Reading the paper's published results and re-encoding them (evaluation/published_source.py): the
original's overall_stats.json and our fixture describe the same results, the shipped fixture is what the
exporter makes, and a bad source is refused naming its file and field."""

from __future__ import annotations

import datetime as dt
import gzip
import json

import pytest
import yaml

from contributions.models import Paper
from evaluation.models import LanguageModel
from evaluation.published_source import (
    FIXTURE_FORMAT,
    PublishedSourceError,
    published_fixture_write,
    published_source_read,
)
from evaluation.services.published import published_import
from tests.evaluation.published_helpers import FIXTURE, ORIGINAL, REGISTRY, needs_original, small_fixture

pytestmark = pytest.mark.django_db


def test_shipped_fixture_is_small_and_in_our_format():
    assert FIXTURE.stat().st_size < 300_000
    document = json.loads(gzip.decompress(FIXTURE.read_bytes()))
    assert document["format"] == FIXTURE_FORMAT
    assert "arXiv:2506.02314" in document["source"]
    assert {"results", "overall_scores"}.isdisjoint(document)


@needs_original
def test_shipped_fixture_is_what_the_exporter_makes_from_the_original(tmp_path):
    out = published_fixture_write(source=ORIGINAL, out=tmp_path / "fixture.json.gz", papers=REGISTRY)

    assert out.read_bytes() == FIXTURE.read_bytes()


@needs_original
def test_fixture_and_original_describe_the_same_results():
    original = published_source_read(ORIGINAL, papers=REGISTRY)
    fixture = published_source_read(FIXTURE)

    assert fixture.models == original.models
    assert fixture.papers == original.papers
    assert fixture.snippets == original.snippets
    assert fixture.records == original.records
    assert fixture.scores == original.scores


@needs_original
def test_registry_dates_override_the_result_files_paper_metadata():
    published_import(source=ORIGINAL, papers=REGISTRY)

    minp = Paper.objects.get(key="minp")
    raw = json.loads(ORIGINAL.read_text())["results"]["minp"]["paper_metadata"]
    registry = {e["id"]: e for e in yaml.safe_load(REGISTRY.read_text())}["minp"]
    assert str(registry["first_commit_date"]) != raw["first_commit_date"]
    assert minp.first_commit_date.isoformat() == str(registry["first_commit_date"])
    assert minp.arxiv_id == "2407.01082"


def test_rejects_a_verdict_string_of_the_wrong_length_naming_the_field(tmp_path):
    bad = small_fixture(tmp_path, verdicts={"OTHER": ["PP"]})

    with pytest.raises(PublishedSourceError, match=r"verdicts\['OTHER'\]\[0\]: 2 verdicts for 3 snippets"):
        published_import(source=bad)
    assert LanguageModel.objects.count() == 0


def test_rejects_an_unknown_format_and_a_non_results_file(tmp_path):
    with pytest.raises(PublishedSourceError, match="this version reads"):
        published_import(source=small_fixture(tmp_path, format="rcb-hub-published/9"))
    other = tmp_path / "other.json"
    other.write_text("[1, 2]")
    with pytest.raises(PublishedSourceError, match="neither the original's overall_stats.json"):
        published_import(source=other)


def test_rejects_a_bad_registry_date_naming_file_paper_and_field(tmp_path):
    registry = tmp_path / "papers.yaml"
    registry.write_text("- id: alpha\n  first_commit_date: 2024-13-45\n")

    with pytest.raises(PublishedSourceError, match=r"papers.yaml: paper 'alpha': field 'first_commit_date'"):
        published_import(source=small_fixture(tmp_path), papers=registry)


def test_registry_values_override_and_null_strings_are_none(tmp_path):
    registry = tmp_path / "papers.yaml"
    registry.write_text("- id: beta\n  first_commit_date: 2025-01-02\n  venue: 'null'\n  title: Beta paper\n")

    published_import(source=small_fixture(tmp_path), papers=registry)

    beta = Paper.objects.get(key="beta")
    assert (beta.first_commit_date, beta.venue, beta.title) == (dt.date(2025, 1, 2), "", "Beta paper")
