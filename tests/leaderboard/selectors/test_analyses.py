"""The analysis pages' selectors (``leaderboard/selectors/analyses.py``) on a board of growing size."""

from __future__ import annotations

import pytest

from leaderboard.selectors.analyses import ablation_pairs
from tests.leaderboard.selectors.test_query_counts import Board

pytestmark = pytest.mark.django_db


def test_ablation_pairs_with_and_without_paper_runs_of_one_model():
    Board().grow(10)
    ablation = ablation_pairs()
    assert len(ablation.pairs) == 2  # models 4 and 9 also have a run without the paper
    assert all(p.delta is not None and p.delta > 0 for p in ablation.pairs)
    assert ablation.snippets and all(s.without_paper_solve_rate is not None for s in ablation.snippets)
