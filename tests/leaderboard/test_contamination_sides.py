"""The contamination page's two sides (papers on or before a model's cutoff, and after it) are stored rows
(issue 21 item 3): they equal the split recombined from the run's paper rows, the per-release step keeps them
current when a cutoff moves or a run predates them, and the page reads them without the paper rows."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from leaderboard.models import RunScore, ScoreMode
from leaderboard.selectors.analyses import contamination_overview
from leaderboard.services import leaderboard_refresh_release, leaderboard_refresh_run
from tests.factories import LanguageModelFactory, make_benchmark, make_run

pytestmark = pytest.mark.django_db

#: what a side's score must agree on, stored or recombined (the stored row adds a bootstrap interval)
COMPARED = ("scaled_pass_at_1", "pass_at_1", "line_rates", "task_rates", "snippets", "papers")


@pytest.fixture
def board(db) -> dict:
    """The default release with three dated papers and an undated one; three models: cutoffs 2024-06 and
    2024-10, and one unknown; every run has two completions per snippet."""
    cache.clear()
    release, snippets = make_benchmark(
        {
            "old": (dt.date(2023, 3, 1), [2, 7]),
            "mid": (dt.date(2024, 9, 15), [3]),
            "new": (dt.date(2025, 2, 1), [5, 1]),
            "nodate": (None, [4]),
        },
        release="main",
    )
    release.is_default = True
    release.save()
    verdicts = {
        "JUNE": ({"old": "PP FP", "mid": "FF", "new": "PF PP", "nodate": "PP"}, dt.date(2024, 6, 1)),
        "OCTOBER": ({"old": "FF PP", "mid": "PP", "new": "F- FF", "nodate": "FP"}, dt.date(2024, 10, 1)),
        "UNKNOWN": ({"old": "PF PF", "mid": "FP", "new": "PP FF", "nodate": "FF"}, None),
    }
    runs = {}
    for key, (marks, cutoff) in verdicts.items():
        model = LanguageModelFactory(key=key, name=key.title(), knowledge_cutoff=cutoff)
        runs[key] = make_run(snippets, marks, release=release, model=model)
        leaderboard_refresh_run(run=runs[key])
    return {"release": release, "runs": runs}


def sides(overview) -> dict[str, tuple]:
    """Model key -> (before, after, papers after) with the compared fields of each side."""

    def fields(score):
        return None if score is None else tuple(getattr(score, f) for f in COMPARED)

    return {m.model.key: (fields(m.before), fields(m.after), m.papers_after) for m in overview.models}


def drop_before_rows() -> None:
    RunScore.objects.filter(mode=ScoreMode.BEFORE_CUTOFF).delete()


def test_stored_sides_equal_the_split_recombined_from_paper_rows(board):
    stored = sides(contamination_overview())
    drop_before_rows()  # every run now falls back to its paper rows
    recombined = sides(contamination_overview())
    assert stored == recombined
    june_before, june_after, june_papers_after = stored["JUNE"]
    # On or before 2024-06: "old" alone ("PP FP" over 2 + 7 lines: index 0 passes 2 of 9 lines, index 1 all
    # 9); after it: mid and new.
    assert (
        june_before[0] == pytest.approx(100 * (2 / 9 + 9 / 9) / 2) and june_after[5] == june_papers_after == 2
    )
    assert stored["OCTOBER"][1][5] == 1  # after 2024-10: "new" only
    assert stored["UNKNOWN"] == (None, None, 0)  # no cutoff: no split


def test_the_page_reads_the_stored_rows_not_the_paper_rows(board):
    with CaptureQueriesContext(connection) as queries:
        contamination_overview()
    sql = [q["sql"] for q in queries.captured_queries]
    assert not any("leaderboard_runpaperscore" in s for s in sql), sql
    assert len(sql) <= 8


def test_a_moved_cutoff_moves_both_sides_in_the_release_step(board):
    before = sides(contamination_overview())
    model = board["runs"]["JUNE"].model
    model.knowledge_cutoff = dt.date(2024, 12, 31)  # now "mid" is on or before it too
    model.save()
    refreshed = leaderboard_refresh_release(release_id=board["release"].pk)
    assert refreshed.reselected == 2  # the run's per-model and before-cutoff rows
    after = sides(contamination_overview())
    assert after["JUNE"] != before["JUNE"] and after["JUNE"][1][5] == 1  # only "new" is after
    assert {k: v for k, v in after.items() if k != "JUNE"} == {k: v for k, v in before.items() if k != "JUNE"}
    # The rows the step wrote are those a whole-run rebuild gives.
    stored = after["JUNE"]
    leaderboard_refresh_run(run=board["runs"]["JUNE"])
    assert sides(contamination_overview())["JUNE"] == stored


def test_runs_scored_before_the_mode_existed_get_their_row_from_the_release_step(board):
    expected = sides(contamination_overview())
    drop_before_rows()
    refreshed = leaderboard_refresh_release(release_id=board["release"].pk)
    assert refreshed.reselected == 3
    rows = RunScore.objects.filter(mode=ScoreMode.BEFORE_CUTOFF)
    assert rows.count() == 3 and not rows.filter(ci_low__isnull=True, line_mean__isnull=False).exists()
    assert sides(contamination_overview()) == expected
