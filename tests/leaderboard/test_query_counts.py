"""Every selector (and the API leaderboard) runs a constant number of queries: 5 models cost what 50 do."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import pytest

from leaderboard import selectors
from leaderboard.selectors import LeaderboardFilters
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


CASES: dict[str, Callable[[dict], object]] = {
    "rows": lambda ctx: selectors.leaderboard_rows(),
    "rows_global_filtered": lambda ctx: selectors.leaderboard_rows(
        filters=LeaderboardFilters(contamination="global", developer="OpenAI")
    ),
    "rows_per_model": lambda ctx: selectors.leaderboard_rows(
        filters=LeaderboardFilters(contamination="per-model")
    ),
    "model_detail": lambda ctx: selectors.model_detail(key=ctx["model"]),
    "paper_detail": lambda ctx: selectors.paper_detail(key=ctx["paper"]),
    "snippet_detail": lambda ctx: selectors.snippet_detail(snippet_id=ctx["snippet"]),
    "error_breakdown": lambda ctx: selectors.error_breakdown(),
    "contamination_overview": lambda ctx: selectors.contamination_overview(),
    "ablation_pairs": lambda ctx: selectors.ablation_pairs(),
    "paper_scores_table": lambda ctx: selectors.paper_scores_table(),
    "snippet_stats_table": lambda ctx: selectors.snippet_stats_table(),
    "filter_choices": lambda ctx: selectors.filter_choices(),
}


def count_queries(fn: Callable[[], object]) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        fn()
    return len(ctx.captured_queries)


@pytest.mark.parametrize("name", sorted(CASES))
def test_selector_queries_do_not_grow_with_the_number_of_models(name, django_assert_max_num_queries):
    board = Board()
    small = board.grow(5)
    baseline = count_queries(lambda: CASES[name](small))
    board.grow(50)
    large = small
    with django_assert_max_num_queries(baseline):
        CASES[name](large)
    assert baseline <= 8


def test_api_leaderboard_queries_do_not_grow_with_the_number_of_models(client, django_assert_max_num_queries):
    board = Board()
    board.grow(5)
    baseline = count_queries(lambda: client.get("/api/v1/leaderboard/?contamination=global&weights=closed"))
    board.grow(50)
    with django_assert_max_num_queries(baseline):
        response = client.get("/api/v1/leaderboard/?contamination=global&weights=closed")
    assert response.status_code == 200 and len(response.json()["results"]) > 5


def test_ablation_pairs_with_and_without_paper_runs_of_one_model():
    Board().grow(10)
    ablation = selectors.ablation_pairs()
    assert len(ablation.pairs) == 2  # models 4 and 9 also have a run without the paper
    assert all(p.delta is not None and p.delta > 0 for p in ablation.pairs)
    assert ablation.snippets and all(s.without_paper_solve_rate is not None for s in ablation.snippets)
