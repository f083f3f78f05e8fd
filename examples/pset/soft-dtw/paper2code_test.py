"""Test for the Soft-DTW task: distances and the smoothed minimum by hand, the discrepancy against the
untagged reference (a different sweep order), its limit as gamma -> 0 (classical DTW, computed here by its
own dynamic programme), gradients, and the accumulated-cost table."""

import math
import unittest

import torch

import soft_dtw
import soft_dtw_ref


def assert_close(got: torch.Tensor, want: torch.Tensor, rtol: float = 1e-7, atol: float = 1e-9) -> None:
    assert got.shape == want.shape, f"shape {tuple(got.shape)} != {tuple(want.shape)}"
    assert torch.allclose(got, want, rtol=rtol, atol=atol), f"{got} != {want}"


def classical_dtw(x: torch.Tensor, y: torch.Tensor) -> float:
    n, m = len(x), len(y)
    cost = [[math.inf] * (m + 1) for _ in range(n + 1)]
    cost[0][0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            d = float(((x[i - 1] - y[j - 1]) ** 2).sum())
            cost[i][j] = d + min(cost[i - 1][j - 1], cost[i - 1][j], cost[i][j - 1])
    return cost[n][m]


class SoftDTWTest(unittest.TestCase):
    def setUp(self) -> None:
        torch.manual_seed(17)
        self.x = torch.randn(6, 2, dtype=torch.float64)
        self.y = torch.randn(4, 2, dtype=torch.float64)

    def test_pairwise_squared_distances(self) -> None:
        x = torch.tensor([[0.0, 0.0], [1.0, 2.0]], dtype=torch.float64)
        y = torch.tensor([[1.0, 0.0], [0.0, -1.0], [3.0, 3.0]], dtype=torch.float64)
        want = torch.tensor([[1.0, 1.0, 18.0], [4.0, 10.0, 5.0]], dtype=torch.float64)
        assert_close(soft_dtw.pairwise_squared_distances(x, y), want)

    def test_soft_minimum_by_hand_and_its_limits(self) -> None:
        a, b, c = (torch.tensor(v, dtype=torch.float64) for v in (1.0, 2.0, 4.0))
        want = -0.5 * math.log(math.exp(-2.0) + math.exp(-4.0) + math.exp(-8.0))
        self.assertAlmostEqual(float(soft_dtw.soft_min(a, b, c, 0.5)), want, places=12)
        self.assertAlmostEqual(float(soft_dtw.soft_min(a, b, c, 1e-4)), 1.0, places=6)
        big = torch.tensor(1e4, dtype=torch.float64)
        self.assertAlmostEqual(float(soft_dtw.soft_min(big, big + 1, big + 2, 1.0)), 1e4 - math.log(1 + math.exp(-1) + math.exp(-2)), places=8)
        inf = torch.tensor(float("inf"), dtype=torch.float64)
        self.assertAlmostEqual(float(soft_dtw.soft_min(a, inf, inf, 1.0)), 1.0, places=12)

    def test_matches_reference(self) -> None:
        for gamma in (0.1, 1.0, 3.0):
            got = soft_dtw.soft_dtw(self.x, self.y, gamma)
            want = soft_dtw_ref.soft_dtw(self.x, self.y, gamma)
            self.assertAlmostEqual(float(got), float(want), places=10)

    def test_small_gamma_gives_classical_dtw(self) -> None:
        got = float(soft_dtw.soft_dtw(self.x, self.y, 1e-5))
        self.assertAlmostEqual(got, classical_dtw(self.x, self.y), places=3)
        self.assertLess(float(soft_dtw.soft_dtw(self.x, self.y, 1.0)), classical_dtw(self.x, self.y))

    def test_gradients_match_finite_differences(self) -> None:
        x = self.x.clone().requires_grad_(True)
        value = soft_dtw.soft_dtw(x, self.y, 0.7)
        (grad,) = torch.autograd.grad(value, x)
        step = 1e-6
        for i, k in ((0, 0), (3, 1), (5, 0)):
            bumped = self.x.clone()
            bumped[i, k] += step
            lowered = self.x.clone()
            lowered[i, k] -= step
            numeric = (soft_dtw_ref.soft_dtw(bumped, self.y, 0.7) - soft_dtw_ref.soft_dtw(lowered, self.y, 0.7)) / (2 * step)
            self.assertAlmostEqual(float(grad[i, k]), float(numeric), places=5)

    def test_accumulated_cost_table(self) -> None:
        table = soft_dtw.soft_dtw_alignment_table(self.x, self.y, 1.0)
        self.assertEqual(tuple(table.shape), (7, 5))
        self.assertEqual(float(table[0, 0]), 0.0)
        self.assertTrue(torch.isinf(table[0, 1:]).all() and torch.isinf(table[1:, 0]).all())
        self.assertAlmostEqual(float(table[6, 4]), float(soft_dtw_ref.soft_dtw(self.x, self.y, 1.0)), places=10)
        distances = soft_dtw.pairwise_squared_distances(self.x, self.y)
        self.assertAlmostEqual(float(table[1, 1]), float(distances[0, 0]), places=12)


if __name__ == "__main__":
    unittest.main()
