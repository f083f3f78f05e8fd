"""Test for the RMSNorm task: compares rmsnorm.RMSNorm with the untagged reference copy
and with values computed by hand from the method's equations."""

import unittest

import torch

import rmsnorm
import rmsnorm_ref


def assert_close(got: torch.Tensor, want: torch.Tensor, rtol: float = 1e-7, atol: float = 1e-9) -> None:
    """Tolerance comparison (cheaper to start than torch.testing.assert_close)."""
    assert got.shape == want.shape, f"shape {tuple(got.shape)} != {tuple(want.shape)}"
    assert torch.allclose(got, want, rtol=rtol, atol=atol), f"{got} != {want}"


def _pair(dim: int, **kwargs: object) -> tuple[torch.nn.Module, torch.nn.Module]:
    torch.manual_seed(0)
    candidate = rmsnorm.RMSNorm(dim, **kwargs)
    reference = rmsnorm_ref.RMSNorm(dim, **kwargs)
    with torch.no_grad():
        gain = torch.randn(dim) * 0.5 + 1.0
        candidate.weight.copy_(gain)
        reference.weight.copy_(gain)
        if candidate.bias is not None:
            shift = torch.randn(dim)
            candidate.bias.copy_(shift)
            reference.bias.copy_(shift)
    return candidate, reference


class RMSNormTest(unittest.TestCase):
    def setUp(self) -> None:
        torch.manual_seed(1234)
        self.x = torch.randn(3, 5, 16, dtype=torch.float64) * 3.0 + 0.7

    def test_matches_reference_full_rms(self) -> None:
        cand, ref = _pair(16, eps=0.25)
        cand, ref = cand.double(), ref.double()
        assert_close(cand(self.x), ref(self.x), rtol=1e-10, atol=1e-10)

    def test_matches_reference_partial_rms_with_bias(self) -> None:
        cand, ref = _pair(16, eps=0.1, p=0.25, bias=True)
        cand, ref = cand.double(), ref.double()
        assert_close(cand(self.x), ref(self.x), rtol=1e-10, atol=1e-10)

    def test_hand_computed_values(self) -> None:
        layer = rmsnorm.RMSNorm(4, eps=0.5).double()
        x = torch.tensor([[1.0, -2.0, 2.0, 4.0]], dtype=torch.float64)
        rms = (x.pow(2).mean()).sqrt()  # sqrt(25/4) = 2.5
        expected = x / (rms + 0.5)
        assert_close(layer(x), expected, rtol=1e-12, atol=1e-12)
        self.assertAlmostEqual(float(layer.root_mean_square(x)), 2.5, places=10)

    def test_partial_rms_uses_first_features_only(self) -> None:
        layer = rmsnorm.RMSNorm(8, eps=0.0, p=0.5).double()
        x = torch.tensor([[3.0, 4.0, 0.0, 0.0, 100.0, -50.0, 7.0, 9.0]], dtype=torch.float64)
        # first k = 4 features: sqrt((9 + 16) / 4) = 2.5
        self.assertAlmostEqual(float(layer.root_mean_square(x)), 2.5, places=10)
        assert_close(layer(x), x / 2.5, rtol=1e-12, atol=1e-12)

    def test_rescaling_invariance_and_no_recentring(self) -> None:
        layer = rmsnorm.RMSNorm(16, eps=1e-12).double()
        with torch.no_grad():
            out = layer(self.x)
            scaled = layer(self.x * 7.5)
        assert_close(scaled, out, rtol=1e-9, atol=1e-9)
        # unit RMS after normalisation with unit gain; the mean is not removed
        assert_close(out.pow(2).mean(-1), torch.ones(3, 5, dtype=torch.float64), rtol=1e-9, atol=1e-9)
        self.assertGreater(float(out.mean().abs()), 1e-3)

    def test_bias_is_added_after_gain(self) -> None:
        layer = rmsnorm.RMSNorm(4, eps=0.0, bias=True).double()
        with torch.no_grad():
            layer.weight.fill_(2.0)
            layer.bias.copy_(torch.tensor([1.0, 0.0, -1.0, 3.0]))
        x = torch.tensor([[2.0, 2.0, 2.0, 2.0]], dtype=torch.float64)
        assert_close(layer(x), torch.tensor([[3.0, 2.0, 1.0, 5.0]], dtype=torch.float64))

    def test_gradients_flow_to_gain(self) -> None:
        layer = rmsnorm.RMSNorm(16).double()
        layer(self.x).sum().backward()
        self.assertIsNotNone(layer.weight.grad)
        self.assertEqual(tuple(layer.weight.grad.shape), (16,))


if __name__ == "__main__":
    unittest.main()
