"""Test for the focal-loss task (numpy only): direct evaluation of the focal-loss formula,
finite-difference gradients, reductions, ignored anchors and the prior bias."""

import unittest

import numpy as np

import focal_loss


def direct_focal(x: np.ndarray, y: np.ndarray, alpha: float, gamma: float) -> np.ndarray:
    """Reference written straight from the definition with p = sigmoid(x)."""
    p = 1.0 / (1.0 + np.exp(-x))
    p_t = np.where(y == 1, p, 1.0 - p)
    a_t = np.where(y == 1, alpha, 1.0 - alpha) if alpha >= 0 else np.ones_like(p)
    return -a_t * (1.0 - p_t) ** gamma * np.log(p_t)


class FocalLossTest(unittest.TestCase):
    def setUp(self) -> None:
        rng = np.random.default_rng(2017)
        self.x = rng.normal(0.0, 2.0, size=(40, 3))
        self.y = (rng.random((40, 3)) < 0.2).astype(np.float64)

    def test_elementwise_matches_definition(self) -> None:
        for alpha, gamma in [(0.25, 2.0), (0.75, 0.5), (-1.0, 1.0), (0.5, 0.0)]:
            got = focal_loss.sigmoid_focal_loss(self.x, self.y, alpha, gamma, reduction="none")
            np.testing.assert_allclose(got, direct_focal(self.x, self.y, alpha, gamma), rtol=1e-10, atol=1e-12)

    def test_hand_values(self) -> None:
        # positive with p = 0.9 (logit log 9), gamma = 2, alpha = 0.25: 0.25 * 0.01 * -log(0.9)
        got = focal_loss.sigmoid_focal_loss(np.array([np.log(9.0)]), np.array([1.0]), reduction="none")
        np.testing.assert_allclose(got, [0.25 * 0.01 * -np.log(0.9)], rtol=1e-10)
        # negative with p = 0.9: weight 0.75, modulator 0.81, -log(0.1)
        got = focal_loss.sigmoid_focal_loss(np.array([np.log(9.0)]), np.array([0.0]), reduction="none")
        np.testing.assert_allclose(got, [0.75 * 0.81 * -np.log(0.1)], rtol=1e-10)

    def test_gamma_zero_is_weighted_cross_entropy(self) -> None:
        got = focal_loss.sigmoid_focal_loss(self.x, self.y, alpha=-1.0, gamma=0.0, reduction="sum")
        p = 1.0 / (1.0 + np.exp(-self.x))
        bce = -(self.y * np.log(p) + (1.0 - self.y) * np.log(1.0 - p)).sum()
        self.assertAlmostEqual(got, bce, places=8)

    def test_reductions_and_ignored_anchors(self) -> None:
        y = self.y.copy()
        y[:5] = -1.0
        per = direct_focal(self.x, np.where(y < 0, 0.0, y), 0.25, 2.0) * (y >= 0)
        none = focal_loss.sigmoid_focal_loss(self.x, y, reduction="none")
        np.testing.assert_allclose(none, per, rtol=1e-10, atol=1e-12)
        self.assertTrue(np.all(none[:5] == 0.0))
        self.assertAlmostEqual(focal_loss.sigmoid_focal_loss(self.x, y, reduction="sum"), per.sum(), places=10)
        self.assertAlmostEqual(focal_loss.sigmoid_focal_loss(self.x, y, reduction="mean"), per.sum() / 105, places=10)
        num_pos = float((y == 1).sum())
        self.assertAlmostEqual(focal_loss.sigmoid_focal_loss(self.x, y), per.sum() / num_pos, places=10)
        # no positives at all: normalise by 1
        negatives = np.zeros(4)
        expected = direct_focal(self.x[0, :1].repeat(4), negatives, 0.25, 2.0).sum()
        self.assertAlmostEqual(focal_loss.sigmoid_focal_loss(self.x[0, :1].repeat(4), negatives), expected, places=10)
        # a single non-ignored entry: the mean is that entry's loss
        one = np.array([0.0, -1.0, -1.0])
        expected = direct_focal(self.x[1], np.zeros(3), 0.25, 2.0)[0]
        self.assertAlmostEqual(focal_loss.sigmoid_focal_loss(self.x[1], one, reduction="mean"), expected, places=10)
        with self.assertRaises(ValueError):
            focal_loss.sigmoid_focal_loss(self.x, y, reduction="average")

    def test_stable_for_large_logits(self) -> None:
        x = np.array([60.0, -60.0, 60.0, -60.0])
        y = np.array([0.0, 1.0, 1.0, 0.0])
        got = focal_loss.sigmoid_focal_loss(x, y, reduction="none")
        self.assertTrue(np.all(np.isfinite(got)))
        np.testing.assert_allclose(got[:2], [0.75 * 60.0, 0.25 * 60.0], rtol=1e-9)
        self.assertLess(got[2:].max(), 1e-20)

    def test_gradient_matches_finite_differences(self) -> None:
        y = self.y.copy()
        y[0] = -1.0
        for alpha, gamma in [(0.25, 2.0), (-1.0, 0.7), (0.6, 0.0)]:
            grad = focal_loss.focal_loss_grad(self.x, y, alpha, gamma)
            h = 1e-6
            plus = focal_loss.sigmoid_focal_loss(self.x + h, y, alpha, gamma, reduction="none")
            minus = focal_loss.sigmoid_focal_loss(self.x - h, y, alpha, gamma, reduction="none")
            np.testing.assert_allclose(grad, (plus - minus) / (2 * h), rtol=1e-5, atol=1e-8)
            self.assertTrue(np.all(grad[0] == 0.0))

    def test_prior_bias(self) -> None:
        b = focal_loss.prior_bias(0.01)
        self.assertAlmostEqual(b, -np.log(99.0), places=10)
        self.assertAlmostEqual(1.0 / (1.0 + np.exp(-focal_loss.prior_bias(0.2))), 0.2, places=10)


if __name__ == "__main__":
    unittest.main()
