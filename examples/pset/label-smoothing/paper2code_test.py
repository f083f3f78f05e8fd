"""Test for the label-smoothing task: smoothed targets by hand, the loss against the full
cross entropy with the smoothed distribution and against torch's built-in label smoothing."""

import unittest

import torch
import torch.nn.functional as F

import label_smoothing


def assert_close(got: torch.Tensor, want: torch.Tensor, rtol: float = 1e-7, atol: float = 1e-9) -> None:
    """Tolerance comparison (cheaper to start than torch.testing.assert_close)."""
    assert got.shape == want.shape, f"shape {tuple(got.shape)} != {tuple(want.shape)}"
    assert torch.allclose(got, want, rtol=rtol, atol=atol), f"{got} != {want}"


class LabelSmoothingTest(unittest.TestCase):
    def setUp(self) -> None:
        torch.manual_seed(2016)
        self.logits = torch.randn(9, 5, dtype=torch.float64) * 2.0
        self.labels = torch.tensor([0, 4, 2, 2, 1, 3, 0, 4, 1])

    def test_smoothed_targets(self) -> None:
        q = label_smoothing.smoothed_targets(torch.tensor([1, 0]), 4, 0.2)
        want = torch.tensor([[0.05, 0.85, 0.05, 0.05], [0.85, 0.05, 0.05, 0.05]], dtype=torch.float64)
        assert_close(q, want, rtol=1e-12, atol=1e-12)
        q = label_smoothing.smoothed_targets(self.labels, 5, 0.1)
        assert_close(q.sum(-1), torch.ones(9, dtype=torch.float64))

    def test_loss_equals_cross_entropy_with_smoothed_targets(self) -> None:
        for eps in (0.0, 0.1, 0.35):
            q = label_smoothing.smoothed_targets(self.labels, 5, eps)
            want = -(q * torch.log_softmax(self.logits, -1)).sum(-1).mean()
            got = label_smoothing.label_smoothing_loss(self.logits, self.labels, eps)
            assert_close(got, want, rtol=1e-10, atol=1e-12)

    def test_matches_torch_builtin_with_ignored_rows(self) -> None:
        labels = self.labels.clone()
        labels[[2, 5]] = -100
        got = label_smoothing.label_smoothing_loss(self.logits, labels, 0.2)
        want = F.cross_entropy(self.logits, labels, ignore_index=-100, label_smoothing=0.2)
        assert_close(got, want, rtol=1e-10, atol=1e-12)
        labels = self.labels.clone()
        labels[0] = 7
        got = label_smoothing.label_smoothing_loss(self.logits, labels, 0.2, ignore_index=7)
        want = F.cross_entropy(self.logits[1:], labels[1:], label_smoothing=0.2)
        assert_close(got, want, rtol=1e-10, atol=1e-12)

    def test_all_rows_ignored_gives_zero(self) -> None:
        logits = self.logits.clone().requires_grad_(True)
        got = label_smoothing.label_smoothing_loss(logits, torch.full((9,), -100), 0.1)
        self.assertAlmostEqual(float(got.detach()), 0.0, places=12)
        got.backward()
        self.assertEqual(float(logits.grad.abs().sum()), 0.0)

    def test_penalises_overconfidence(self) -> None:
        labels = torch.tensor([0])
        moderate = label_smoothing.label_smoothing_loss(torch.tensor([[3.0, 0.0, 0.0]], dtype=torch.float64), labels, 0.3)
        extreme = label_smoothing.label_smoothing_loss(torch.tensor([[30.0, 0.0, 0.0]], dtype=torch.float64), labels, 0.3)
        self.assertGreater(float(extreme), float(moderate))


if __name__ == "__main__":
    unittest.main()
