"""What the board's pages share (``leaderboard/selectors/common.py``): a score recombined from per-paper sums
equals the core library's score of the same subset of papers, exactly."""

from __future__ import annotations

import math

import pytest

from leaderboard.models import RunPaperScore
from leaderboard.selectors.common import score_from_papers
from leaderboard.services import leaderboard_refresh_run
from researchcodebench import scoring
from tests.factories import make_benchmark, make_run, snippet_results
from tests.leaderboard.test_aggregation import PAPERS, random_verdicts

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("seed", range(6))
def test_any_subset_of_papers_recombines_exactly_from_per_paper_sums(seed):
    rel, snippets = make_benchmark(PAPERS)
    verdicts = random_verdicts(seed, n=1 + seed % 4)
    run = make_run(snippets, verdicts, release=rel)
    leaderboard_refresh_run(run=run)
    results = snippet_results(snippets, verdicts)
    expected = {(p, s.name): s.lines for p, ss in snippets.items() for s in ss}
    rows = {p.paper.key: p for p in RunPaperScore.objects.filter(run=run).select_related("paper")}
    for subset in (["a"], ["a", "c"], ["b", "c"], ["a", "b", "c"]):
        core = scoring.score_model("k", "n", results, expected=expected, papers=subset)
        mine = score_from_papers(rows[p] for p in subset)
        same_nan = lambda x, y: (x is None and math.isnan(y)) or x == y  # noqa: E731
        assert same_nan(mine.scaled_pass_at_1, core.line.mean) and same_nan(mine.pass_at_1, core.task.mean)
        assert same_nan(mine.scaled_pass_at_1_std, core.line.std)
        assert (mine.snippets, mine.lines, mine.coverage) == (core.snippets, core.lines, core.coverage)
