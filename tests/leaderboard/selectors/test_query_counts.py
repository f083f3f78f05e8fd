"""Every selector (and the API leaderboard) runs a constant number of queries: 5 models cost what 50 do."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator

import pytest
from django.db import transaction
from django.test import Client

from leaderboard.selectors.analyses import (
    ablation_pairs,
    contamination_overview,
    error_breakdown,
    paper_scores_table,
    snippet_stats_table,
)
from leaderboard.selectors.board import LeaderboardFilters, filter_choices, leaderboard_rows
from leaderboard.selectors.models import model_detail, run_verbatim_shares
from leaderboard.selectors.papers import paper_detail
from leaderboard.selectors.snippets import snippet_detail
from leaderboard.services import leaderboard_refresh_runs
from tests.factories import LanguageModelFactory, make_benchmark, make_run

pytestmark = pytest.mark.django_db

PAPERS = {"a": (dt.date(2024, 1, 1), [3, 2]), "b": (dt.date(2025, 3, 1), [1, 4, 2])}


class Board:
    """One benchmark; ``grow(n)`` adds models until there are ``n`` (every fifth also gets a run without
    the paper), aggregated like the task would."""

    def __init__(self) -> None:
        self.release, self.snippets = make_benchmark(PAPERS)
        self.models = 0

    def grow(self, n_models: int) -> dict:
        runs = []
        for i in range(self.models, n_models):
            cutoff = dt.date(2023 + i % 3, 1 + i % 12, 1)
            model = LanguageModelFactory(knowledge_cutoff=cutoff, developer="OpenAI" if i % 2 else "Meta")
            verdicts = {"a": "PF F" if i % 2 else "PP P", "b": "F P F" if i % 3 else "P P P"}
            runs.append(make_run(self.snippets, verdicts, model=model, release=self.release))
            if i % 5 == 4:
                runs.append(
                    make_run(
                        self.snippets,
                        {"a": "F F", "b": "F F P"},
                        model=model,
                        release=self.release,
                        with_paper=False,
                    )
                )
        self.models = n_models
        leaderboard_refresh_runs(runs=runs)
        first = runs[0] if runs else None
        return {"model": first.model.key if first else "", "paper": "b", "snippet": self.snippets["b"][0].pk}


API = "/api/v1/leaderboard/?contamination=global&weights=closed"

CASES: dict[str, Callable[[dict], object]] = {
    "rows": lambda ctx: leaderboard_rows(),
    "rows_global_filtered": lambda ctx: leaderboard_rows(
        filters=LeaderboardFilters(contamination="global", developer="OpenAI")
    ),
    "rows_per_model": lambda ctx: leaderboard_rows(filters=LeaderboardFilters(contamination="per-model")),
    "model_detail": lambda ctx: model_detail(key=ctx["model"]),
    "paper_detail": lambda ctx: paper_detail(key=ctx["paper"]),
    "snippet_detail": lambda ctx: snippet_detail(snippet_id=ctx["snippet"]),
    "error_breakdown": lambda ctx: error_breakdown(),
    "contamination_overview": lambda ctx: contamination_overview(),
    "ablation_pairs": lambda ctx: ablation_pairs(),
    "paper_scores_table": lambda ctx: paper_scores_table(),
    "snippet_stats_table": lambda ctx: snippet_stats_table(),
    "filter_choices": lambda ctx: filter_choices(),
    "run_verbatim_shares": lambda ctx: run_verbatim_shares(run_ids=[r.run_id for r in leaderboard_rows()]),
}


def count_queries(fn: Callable[[], object]) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        fn()
    return len(ctx.captured_queries)


@pytest.fixture(scope="module")
def grown_board(django_db_setup, django_db_blocker) -> Iterator[tuple[dict, dict[str, int]]]:
    """One board for every selector case and for the API's leaderboard, built once per module and rolled back
    afterwards: the query count of each on 5 models (measured before the board grows), then the board grown to
    50 models. The selectors only read, so measuring them one after another on one board is what each measures
    on a board of its own (a board of 50 models cost about 6 s to build, once per case before)."""
    with django_db_blocker.unblock(), transaction.atomic():
        board = Board()
        small = board.grow(5)
        baselines = {name: count_queries(lambda case=case: case(small)) for name, case in CASES.items()}
        baselines[API] = count_queries(lambda: Client().get(API))
        board.grow(50)
        yield small, baselines
        transaction.set_rollback(True)


@pytest.mark.parametrize("name", sorted(CASES))
def test_selector_queries_do_not_grow_with_the_number_of_models(
    name, grown_board, django_assert_max_num_queries
):
    large, baselines = grown_board
    baseline = baselines[name]
    with django_assert_max_num_queries(baseline):
        CASES[name](large)
    assert baseline <= 8


def test_api_leaderboard_queries_do_not_grow_with_the_number_of_models(
    client, grown_board, django_assert_max_num_queries
):
    _large, baselines = grown_board
    with django_assert_max_num_queries(baselines[API]):
        response = client.get(API)
    assert response.status_code == 200 and len(response.json()["results"]) > 5
