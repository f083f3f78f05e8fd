"""The shared copies of a run's page and the runs API (``evaluation.live_cache``, issue 21), over HTTP with
real PostgreSQL: who gets a copy, how old it may be, when it is rebuilt and by whom, what it never holds."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client, RequestFactory
from django.test.utils import CaptureQueriesContext

from evaluation import live_cache
from evaluation.models import EvaluationRun, TestResult
from tests.factories import LanguageModelFactory, MaintainerFactory, make_benchmark, make_run
from tests.factories.builders import token_api

pytestmark = pytest.mark.django_db


class Clock:
    """The copies' clock, moved by the test instead of waiting."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch, settings) -> Clock:
    settings.RCB_LIVE_FRESH_S, settings.RCB_LIVE_STALE_S = 2.0, 4.0
    clock = Clock()
    monkeypatch.setattr(live_cache, "clock", clock)
    return clock


@pytest.fixture
def run(db) -> EvaluationRun:
    release, snippets = make_benchmark({"p": (dt.date(2024, 1, 1), [2, 3])}, release="r1")
    return make_run(
        snippets, {"p": "PF FP"}, model=LanguageModelFactory(key="GPT"), release=release,
        source=EvaluationRun.Source.GENERATED,
    )  # fmt: skip


def fetch(client: Client, url: str, **headers: str):
    """(response, number of queries it made)."""
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url, **headers)
    assert response.status_code == 200, response.content[:300]
    return response, len(queries)


def lose_a_pass(run: EvaluationRun) -> None:
    """A change the run's page and results show: one pass turns into a failure."""
    first = TestResult.objects.filter(completion__run=run, passed=True).order_by("id")[0]
    TestResult.objects.filter(pk=first.pk).update(passed=False, outcome=TestResult.Outcome.FAILED)


def passes(response) -> int:
    return sum(r["passed"] is True for r in response.json()["results"])


URLS = ("/runs/{}/", "/api/v1/runs/{}/", "/api/v1/runs/{}/results/", "/api/v1/runs/")


@pytest.mark.parametrize("url", URLS)
def test_a_plain_visitor_shares_one_copy_that_says_its_age_and_sets_no_cookie(client, clock, run, url):
    url = url.format(run.pk)
    first, built = fetch(client, url)
    clock.now += 1.5
    again, queries = fetch(client, url)
    assert built > 0 and queries == 0
    assert again.content == first.content
    assert (
        again["Age"] == "1" and "public" in again["Cache-Control"] and "max-age=2" in again["Cache-Control"]
    )
    assert {"Cookie", "Authorization"} <= {v.strip() for v in again["Vary"].split(",")}
    assert not again.cookies and b"csrf" not in again.content.lower()


def test_a_change_shows_within_the_freshness_and_one_rebuild_after_a_response(client, clock, run):
    url = f"/api/v1/runs/{run.pk}/results/"
    before = passes(fetch(client, url)[0])
    lose_a_pass(run)
    clock.now += 1.9
    assert passes(fetch(client, url)[0]) == before  # fresh: the copy, as stated by max-age
    clock.now += 0.2
    stale, queries = fetch(client, url)
    # Past its freshness the copy is still served at once (Age over max-age: nobody downstream keeps it), and
    # the process that served it built the next one after the response (the test client sends
    # request_finished as a server does): the queries counted are that build's.
    assert passes(stale) == before and stale["Age"] == "2" and queries > 0
    fresh, queries = fetch(client, url)
    assert passes(fresh) == before - 1 and fresh["Age"] == "0" and queries == 0


def test_a_copy_past_its_stale_bound_is_never_served(client, clock, run, settings):
    url = f"/api/v1/runs/{run.pk}/results/"
    before = passes(fetch(client, url)[0])
    lose_a_pass(run)
    clock.now += settings.RCB_LIVE_FRESH_S + settings.RCB_LIVE_STALE_S
    response, queries = fetch(client, url)
    assert passes(response) == before - 1 and response["Age"] == "0" and queries > 0


def test_while_another_process_rebuilds_a_stale_copy_it_is_served_and_not_built_twice(client, clock, run):
    url = f"/runs/{run.pk}/"
    first, _ = fetch(client, url)
    clock.now += 3
    lose_a_pass(run)
    # Another process holds the rebuild: this one serves the copy and builds nothing.
    request = RequestFactory().get(url)
    key = live_cache.copy_key(request, endpoint="run-page", args=(run.pk,), query="", variant="")
    assert cache.add(live_cache.lock_key(key), 1, 30)
    stale, queries = fetch(client, url)
    assert queries == 0 and stale["Age"] == "3" and stale.content == first.content
    # Its build done (the lock freed), the next request past the freshness rebuilds.
    cache.delete(live_cache.lock_key(key))
    assert fetch(client, url)[1] > 0 and fetch(client, url)[0].content != first.content


def test_signed_in_visitors_and_token_clients_get_their_own_answers_and_never_the_copy(client, clock, run):
    """The requester and maintainers see what a plain visitor does not; they are built for, and what is built
    for them is never kept for anyone."""
    maintainer = Client()
    maintainer.force_login(MaintainerFactory())
    page = f"/runs/{run.pk}/"
    theirs, queries = fetch(maintainer, page)
    assert queries > 0 and "Age" not in theirs and "Cancel run" not in theirs.content.decode()  # finished
    assert 'hx-headers=\'{"X-CSRFToken"' in theirs.content.decode()
    plain, queries = fetch(client, page)
    assert queries > 0 and "X-CSRFToken" not in plain.content.decode()
    again, queries = fetch(maintainer, page)
    assert queries > 0 and "Age" not in again
    api = token_api(MaintainerFactory())
    response = api.get(f"/api/v1/runs/{run.pk}/results/")
    assert response.status_code == 200 and "Age" not in response
    assert "Age" not in api.get(f"/api/v1/runs/{run.pk}/results/")


def test_the_page_and_its_htmx_parts_are_copies_of_their_own(client, clock, run):
    page, _ = fetch(client, f"/runs/{run.pk}/")
    part, built = fetch(client, f"/runs/{run.pk}/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="run-progress")
    assert built > 0 and len(part.content) < len(page.content) and b"<html" not in part.content
    again, queries = fetch(client, f"/runs/{run.pk}/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="run-progress")
    assert queries == 0 and again.content == part.content
    assert {"HX-Request", "HX-Target"} <= {v.strip() for v in again["Vary"].split(",")}


def test_the_query_parameters_an_endpoint_takes_key_the_copy_and_others_do_not(client, clock, run):
    url = f"/api/v1/runs/{run.pk}/results/"
    fetch(client, url)
    assert fetch(client, f"{url}?utm_source=x&_=17")[1] == 0
    failed, built = fetch(client, f"{url}?outcome=failed")
    assert built > 0 and {r["outcome"] for r in failed.json()["results"]} == {"failed"}
    assert fetch(client, f"{url}?limit=1")[1] > 0
    csv, built = fetch(client, f"{url}?format=csv")
    assert built > 0 and csv["Content-Type"].startswith("text/csv")
    assert csv["Content-Disposition"] == fetch(client, f"{url}?format=csv")[0]["Content-Disposition"]


def test_the_browsable_api_is_built_for_each_visitor(client, clock, run):
    url = f"/api/v1/runs/{run.pk}/results/?format=api"
    assert fetch(client, url)[1] > 0 and fetch(client, url)[1] > 0


def test_a_run_deleted_behind_a_copy_drops_it_and_the_next_request_answers_404(client, clock, run):
    url = f"/api/v1/runs/{run.pk}/"
    fetch(client, url)
    clock.now += 2.5
    EvaluationRun.objects.filter(pk=run.pk).delete()
    assert client.get(url).status_code == 200  # the stale copy, whose rebuild found no run and dropped it
    gone = client.get(url)
    assert gone.status_code == 404 and gone.json() == {"detail": f"no run {run.pk}."}


def test_a_404_is_never_kept(client, clock, run):
    for _ in range(2):
        with CaptureQueriesContext(connection) as queries:
            assert client.get("/api/v1/runs/999999/").status_code == 404
        assert len(queries) > 0


def test_with_the_copies_off_every_request_builds(client, clock, run, settings):
    settings.RCB_LIVE_FRESH_S = 0
    url = f"/runs/{run.pk}/"
    assert fetch(client, url)[1] > 0 and fetch(client, url)[1] > 0


def test_web_processes_share_a_copy_through_redis(client, clock, run, shared_store):
    url = f"/api/v1/runs/{run.pk}/results/"
    first, _ = fetch(client, url)
    # Another web process (a client of its own, the same store) is served the copy without a query.
    other, queries = fetch(Client(), url)
    assert queries == 0 and other.content == first.content and other["Content-Type"] == first["Content-Type"]
