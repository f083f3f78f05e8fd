"""The read API of runs and their results (evaluation/api.py): filters, pagination, 404s that name the run,
and CSV with a header row."""

from __future__ import annotations

import csv
import datetime as dt
import io

import pytest

from evaluation.models import TestResult
from tests.factories import LanguageModelFactory, make_benchmark, make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def runs(db):
    release, snippets = make_benchmark(
        {"old": (dt.date(2024, 1, 1), [2, 4]), "new": (None, [3])}, release="r1"
    )
    gpt = LanguageModelFactory(key="GPT")
    return [
        make_run(snippets, {"old": "P F", "new": "F"}, model=gpt, release=release),
        make_run(
            snippets, {"old": "P P", "new": "P"}, model=LanguageModelFactory(key="LLAMA"), release=release
        ),
    ]


def test_run_list_filters_and_pages_newest_first(client, runs):
    body = client.get("/api/v1/runs/?limit=1").json()
    assert body["count"] == 2 and [r["id"] for r in body["results"]] == [runs[1].pk] and body["next"]
    assert [r["model"]["key"] for r in client.get("/api/v1/runs/?model=GPT").json()["results"]] == ["GPT"]
    assert client.get("/api/v1/runs/?release=r9").json()["count"] == 0
    bad = client.get("/api/v1/runs/?source=guess")
    assert bad.status_code == 400 and list(bad.json()) == ["source"]


def test_a_missing_run_is_a_404_naming_it(client, runs):
    for url in ("/api/v1/runs/999999/", "/api/v1/runs/999999/results/?outcome=nonsense"):
        response = client.get(url)
        assert response.status_code == 404 and response.json() == {"detail": "no run 999999."}, url


def test_run_results_filter_by_outcome_and_paper_and_export_csv(client, runs):
    url = f"/api/v1/runs/{runs[0].pk}/results/"
    assert client.get(url).json()["count"] == 3
    failed = client.get(f"{url}?outcome=failed").json()["results"]
    assert sorted((r["paper_key"], r["passed"]) for r in failed) == [("new", False), ("old", False)]
    assert client.get(f"{url}?paper=new").json()["count"] == 1
    response = client.get(f"{url}?format=csv")
    assert response["Content-Disposition"] == 'attachment; filename="run-results.csv"'
    records = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert len(records) == 3 and records[0]["completion_id"] and "outcome" in records[0]
    detail = client.get(f"/api/v1/runs/{runs[0].pk}/").json()
    assert detail["model"]["key"] == "GPT" and detail["release"] == "r1"


def test_a_page_of_run_results_reads_its_verdicts_in_one_more_query_whatever_its_size(
    client, runs, django_assert_num_queries, settings
):
    """The verdicts of a page's completions come in one query after the page (joined to every verdict,
    PostgreSQL hashed the whole table to find a page's hundred); an untested completion has none."""
    settings.RCB_LIVE_FRESH_S = 0  # what building the answer costs, not a visitor's shared copy
    url = f"/api/v1/runs/{runs[0].pk}/results/"
    expected = client.get(url).json()["results"]
    TestResult.objects.filter(
        completion__run=runs[0], completion__snippet__task_version__task__key="new"
    ).delete()
    with django_assert_num_queries(4):  # the run, the count, the page, its verdicts
        again = client.get(url).json()["results"]
    untested = [r for r in again if r["task_key"] == "new"]
    assert untested and all(r["outcome"] is None and r["passed"] is None for r in untested)
    tested = [r for r in again if r["task_key"] != "new"]
    assert tested == [r for r in expected if r["task_key"] != "new"] and tested[0]["outcome"]
