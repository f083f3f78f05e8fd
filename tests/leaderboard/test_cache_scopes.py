"""Issue 21, items 2 and 5: stored pages keyed by what they show (a release, a model, the catalogue).

A write moves the versions of the scopes it changes, in its own transaction: the pages that show it change
their ETag and content at once, every other release's and model's pages stay stored (same ETag, served in
one query, nothing rebuilt). Every kind of write is listed with the pages it must move, so a writer that
forgets its scope fails here. The papers list and snippet pages join the same layer; entries are shared
between processes through Redis in production.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext, override_settings

from contributions.models import Paper
from contributions.services.releases import release_set_default
from contributions.signals import bulk_write_finished
from evaluation.models import LanguageModel
from evaluation.services.runs import run_rerun
from evaluation.services.verdicts import test_result_record
from leaderboard import caching
from leaderboard.scopes import Scope
from leaderboard.services import leaderboard_refresh_release, leaderboard_refresh_runs
from researchcodebench.runner import Verdict
from tests.factories import CompletionFactory, LanguageModelFactory, ReleaseFactory, make_benchmark, make_run

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_cache")]

REPO = Path(__file__).resolve().parents[2]
PAPERS_A = {"pa": (dt.date(2024, 1, 1), [3, 2]), "pb": (dt.date(2025, 3, 1), [1, 4])}
PAPERS_B = {"pc": (dt.date(2024, 6, 1), [2, 5])}
PASS = Verdict(outcome="passed", category="passed", tier="none")


class World:
    """Two releases: A (the default) with models X and Y, B with model Z. X's run lacks one result (the
    first snippet of paper ``pa`` at index 1), which a test records as a verdict."""

    def __init__(self) -> None:
        self.a, self.snippets_a = make_benchmark(PAPERS_A, release="rel-a")
        self.b, self.snippets_b = make_benchmark(PAPERS_B, release="rel-b")
        release_set_default(release=self.a)
        self.models = {k: LanguageModelFactory(key=k, name=f"Model {k}", developer="Meta") for k in "XYZ"}
        self.runs = {
            "X": make_run(
                self.snippets_a, {"pa": "P- PF", "pb": "FF PP"}, model=self.models["X"], release=self.a
            ),
            "Y": make_run(
                self.snippets_a, {"pa": "PP PP", "pb": "FF FF"}, model=self.models["Y"], release=self.a
            ),
            "Z": make_run(self.snippets_b, {"pc": "PF FF"}, model=self.models["Z"], release=self.b),
        }
        leaderboard_refresh_runs(runs=list(self.runs.values()))

    def record_missing_verdict(self) -> None:
        """The real verdict writer (a worker's): X's missing result, a pass."""
        completion = CompletionFactory(run=self.runs["X"], snippet=self.snippets_a["pa"][0], completion_idx=1)
        assert test_result_record(completion_id=completion.pk, verdict=PASS, worker_host="w", attempt=1)


PAGES = {
    "board": "/",
    "board A": "/?release=rel-a",
    "board B": "/?release=rel-b",
    "errors B": "/errors/?release=rel-b",
    "model X": "/models/X/",
    "model Y": "/models/Y/",
    "model Z": "/models/Z/",
    "compare Y Z": "/compare/?models=Y&models=Z",
    "paper pa": "/papers/pa/",
    "paper pc": "/papers/pc/",
    "snippet pa/s0": "/papers/pa/snippets/s0/",
    "papers": "/papers/",
    "api board B": "/api/v1/leaderboard/?release=rel-b",
    "api model X": "/api/v1/models/X/",
}


def etags(client: Client) -> dict[str, str]:
    out = {}
    for name, url in PAGES.items():
        response = client.get(url)
        assert response.status_code == 200, name
        out[name] = response["ETag"]
    return out


def moved(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {name for name in before if before[name] != after[name]}


def hits_in_one_query(client: Client, names: set[str]) -> None:
    """Each of these pages is served from the store: one query (the versions), nothing rebuilt."""
    for name in sorted(names):
        with CaptureQueriesContext(connection) as ctx:
            assert client.get(PAGES[name]).status_code == 200
        assert len(ctx.captured_queries) == 1, name


def test_a_verdict_moves_its_release_and_model_and_leaves_every_other_page_stored(client):
    world = World()
    before = etags(client)
    x_before = client.get("/?release=rel-a").content.decode()

    world.record_missing_verdict()

    after = etags(client)
    # Release A's pages, model X's, and the pages of the paper it judged (release B's paper pc stays stored).
    assert moved(before, after) == {"board", "board A", "model X", "paper pa", "snippet pa/s0", "api model X"}
    hits_in_one_query(client, set(PAGES) - moved(before, after))
    assert client.get("/?release=rel-a").content.decode() != x_before  # visible at once, no task ran
    attempts = client.get("/papers/pa/snippets/s0/").content.decode()
    assert f"run #{world.runs['X'].pk} · completion 1" in attempts


def run_writes() -> dict[str, tuple[Callable[[World], object], set[str]]]:
    """Each kind of write -> the pages it must move (the others must stay stored)."""
    paper_a = {"paper pa", "snippet pa/s0"}  # a paper release A holds
    catalogue = set(PAGES)
    return {
        "verdict": (World.record_missing_verdict, {"board", "board A", "model X", "api model X", *paper_a}),
        "re-run": (
            lambda w: run_rerun(run=w.runs["X"], outcomes=["failed"], by="test"),
            {"board", "board A", "model X", "api model X", *paper_a},
        ),
        "repair rebuild": (
            lambda w: call_command("leaderboard_rebuild", "--run", str(w.runs["Z"].pk)),
            {"board B", "errors B", "model Z", "compare Y Z", "api board B", "paper pc"},
        ),
        "release step": (
            lambda w: leaderboard_refresh_release(release_id=w.b.pk),
            {"board B", "errors B", "api board B", "paper pc"},
        ),
        "run deleted": (lambda w: w.runs["Y"].delete(), catalogue),
        "model edited": (lambda w: LanguageModel.objects.get(key="Y").save(), catalogue),
        "paper edited": (lambda w: Paper.objects.get(key="pc").save(), catalogue),
        "release created": (lambda w: ReleaseFactory(name="rel-c"), catalogue),
        "default release switched": (lambda w: release_set_default(release=w.b), catalogue),
        "import finished": (lambda w: bulk_write_finished.send(sender=World, source="test"), catalogue),
    }


@pytest.mark.parametrize("write", sorted(run_writes()))
def test_every_kind_of_write_moves_exactly_the_pages_that_show_it(client, write):
    world = World()
    action, expected = run_writes()[write]
    before = etags(client)
    action(world)
    after = etags(client)
    assert moved(before, after) == expected
    hits_in_one_query(client, set(PAGES) - expected)


def test_a_run_joining_the_board_moves_every_page_only_when_it_brings_a_new_filter_choice(client):
    """A run's first scores move its release's and model's pages; the catalogue (every page) only when its
    developer or template is new to the filters, which an upload of a known lab's model never is."""
    world = World()
    known = LanguageModelFactory(key="W", name="Model W", developer="Meta")
    new_lab = LanguageModelFactory(key="V", name="Model V", developer="A New Lab")  # a model: the catalogue
    before = etags(client)
    leaderboard_refresh_runs(runs=[make_run(world.snippets_b, {"pc": "PP PF"}, model=known, release=world.b)])
    after = etags(client)
    assert moved(before, after) == {"board B", "errors B", "api board B", "paper pc"}
    hits_in_one_query(client, set(PAGES) - moved(before, after))
    leaderboard_refresh_runs(
        runs=[make_run(world.snippets_b, {"pc": "FF PF"}, model=new_lab, release=world.b)]
    )
    assert moved(after, etags(client)) == set(PAGES)
    assert "A New Lab" in client.get("/?release=rel-b").content.decode()


def test_what_a_write_changes_shows_on_the_pages_it_moved(client):
    world = World()
    pages = {name: client.get(url).content.decode() for name, url in PAGES.items()}
    model = world.models["Y"]
    model.name = "Renamed Y"
    model.save()
    assert (
        "Renamed Y" in client.get("/").content.decode()
        and "Renamed Y" in client.get("/models/Y/").content.decode()
    )
    paper = Paper.objects.get(key="pc")
    paper.title = "A new title"
    paper.save()
    assert "A new title" in client.get("/papers/").content.decode()
    release_set_default(release=world.b)
    assert "Model Z" in client.get("/").content.decode() and "Model Z" not in pages["board"]
    run_rerun(run=world.runs["X"], outcomes=["failed"], by="test")  # X leaves the board until re-tested
    assert "Model X" not in client.get("/?release=rel-a").content.decode() and "Model X" in pages["board A"]


def test_the_papers_list_and_snippet_pages_are_stored_and_conditional(client):
    World()
    for url in (
        "/papers/",
        "/papers/?release=rel-b",
        "/papers/pa/snippets/s0/",
        "/papers/pa/snippets/s0/?run=1",
    ):
        first = client.get(url)
        assert first.status_code == 200 and first["Cache-Control"] == "public, max-age=5, s-maxage=5"
        with CaptureQueriesContext(connection) as ctx:
            again = client.get(url)
        assert len(ctx.captured_queries) == 1 and again.content == first.content, url
        assert client.get(url, HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304
    assert client.get("/papers/?release=nope").status_code == 404  # a failure is never stored
    assert client.get("/papers/pa/snippets/nope/").status_code == 404


def test_a_scope_version_is_one_query_and_an_unknown_release_stands_for_the_default():
    world = World()
    with CaptureQueriesContext(connection) as ctx:
        Scope(all_releases=True, models=("X", "Z")).version()
    assert len(ctx.captured_queries) == 1
    assert Scope.board("nope").version() == Scope.board("").version() == Scope.board("rel-a").version()
    assert Scope.board("rel-b").version() != Scope.board("rel-a").version()
    before = Scope.board("nope").version()
    snippet_a, snippet_b = world.snippets_a["pa"][0].pk, world.snippets_b["pc"][0].pk
    by_snippet = {sid: Scope(snippet=sid).version() for sid in (snippet_a, snippet_b)}
    world.record_missing_verdict()  # release A, the default: the page an unknown name shows moved
    assert Scope.board("nope").version() != before
    # A snippet's scope is its paper's releases': release B's snippet did not move.
    assert Scope(snippet=snippet_a).version() != by_snippet[snippet_a]
    assert Scope(snippet=snippet_b).version() == by_snippet[snippet_b]
    assert Scope(snippet=snippet_b).version() == Scope(paper="pc").version()


def test_web_processes_share_stored_bodies_through_redis(client, redis_url, shared_store):
    World()
    prefix = shared_store
    page = client.get("/?release=rel-b")
    key = caching._key(page["ETag"].removeprefix('W/"').removesuffix('"'))
    # Another web process (no database: it could not build the page) finds the body stored.
    script = (
        "import django, hashlib; django.setup()\n"
        "from django.core.cache.backends.redis import RedisCache\n"
        f"body = RedisCache({redis_url!r}, {{'KEY_PREFIX': {prefix!r}}}).get({key!r})\n"
        "print(hashlib.sha256(body.content).hexdigest(), body.title)"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    found = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert found.returncode == 0, found.stderr
    html = page.content.decode()
    body = html[html.index("<h1>") : html.index("</main>")].strip()
    digest, title = found.stdout.split(maxsplit=1)
    assert title.strip() == "Leaderboard" and body.startswith("<h1>Leaderboard</h1>")
    stored = cache.get(key)
    assert hashlib.sha256(stored.content).hexdigest() == digest and stored.frame is not None
    # And this process serves what is stored there: one query (the versions), no rendering.
    with CaptureQueriesContext(connection) as ctx:
        assert Client().get("/?release=rel-b").content == page.content
    assert len(ctx.captured_queries) == 1


def test_each_process_keeps_the_bodies_it_served_and_a_write_still_moves_them(client, shared_store):
    """With a shared store, a process serves a body from its own memory (the Redis copy gone, nothing is
    read or rebuilt); a verdict moves the version, so the memory's copy is never served for the new one."""
    world = World()
    url = "/api/v1/leaderboard/?release=rel-a"
    with override_settings(RCB_PAGE_MEMORY_MB=1):
        first = client.get(url)
        key = caching._key(first["ETag"].strip('"'))
        assert cache.get(key) is not None
        cache.delete(key)
        with CaptureQueriesContext(connection) as ctx:
            again = client.get(url)
        assert again.content == first.content and len(ctx.captured_queries) == 1
        assert cache.get(key) is None  # served from this process's memory: not rebuilt, not stored again

        world.record_missing_verdict()
        moved_on = client.get(url)
        assert moved_on["ETag"] != first["ETag"] and moved_on.content != first.content


def test_the_process_memory_is_bounded_and_drops_the_least_recently_used():
    memory = caching._Memory(max_bytes=1000)
    bodies = {name: caching.Body(content=name.encode() * 400) for name in "abc"}  # 400 bytes each
    memory.put("a", bodies["a"])
    memory.put("b", bodies["b"])
    assert memory.get("a") is bodies["a"]  # a is now the most recently used
    memory.put("c", bodies["c"])
    assert memory.get("b") is None and memory.get("a") is bodies["a"] and memory.get("c") is bodies["c"]
    memory.put("huge", caching.Body(content=b"x" * 1001))  # larger than the whole memory: not kept
    assert memory.get("huge") is None and memory.get("a") is bodies["a"]
    off = caching._Memory(max_bytes=0)
    off.put("a", bodies["a"])
    assert off.get("a") is None
