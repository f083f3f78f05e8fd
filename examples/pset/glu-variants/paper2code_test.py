"""Test for the GLU-variants task: each variant's output against a hand-written formula,
the component-wise gating, and the parameter-matched width."""

import math
import unittest

import torch

import glu_ffn


def assert_close(got: torch.Tensor, want: torch.Tensor, rtol: float = 1e-7, atol: float = 1e-9) -> None:
    """Tolerance comparison (cheaper to start than torch.testing.assert_close)."""
    assert got.shape == want.shape, f"shape {tuple(got.shape)} != {tuple(want.shape)}"
    assert torch.allclose(got, want, rtol=rtol, atol=atol), f"{got} != {want}"


def expected_output(layer: glu_ffn.GatedFeedForward, x: torch.Tensor) -> torch.Tensor:
    a = x @ layer.w.weight.T
    b = x @ layer.v.weight.T
    if layer.variant == "glu":
        g = 1.0 / (1.0 + torch.exp(-a))
    elif layer.variant == "bilinear":
        g = a
    elif layer.variant == "reglu":
        g = torch.where(a > 0, a, torch.zeros_like(a))
    elif layer.variant == "geglu":
        g = a * 0.5 * (1.0 + torch.special.erf(a / math.sqrt(2.0)))
    else:
        g = a / (1.0 + torch.exp(-layer.beta * a))
    return (g * b) @ layer.w2.weight.T


class GatedFeedForwardTest(unittest.TestCase):
    def setUp(self) -> None:
        torch.manual_seed(2020)
        self.x = torch.randn(2, 5, 12, dtype=torch.float64) * 1.5

    def test_every_variant_matches_formula(self) -> None:
        for variant in glu_ffn.VARIANTS:
            with self.subTest(variant=variant):
                torch.manual_seed(3)
                layer = glu_ffn.GatedFeedForward(12, 20, variant=variant).double()
                with torch.no_grad():
                    got = layer(self.x)
                    want = expected_output(layer, self.x)
                self.assertEqual(tuple(got.shape), (2, 5, 12))
                assert_close(got, want, rtol=1e-10, atol=1e-10)

    def test_swish_beta(self) -> None:
        torch.manual_seed(4)
        layer = glu_ffn.GatedFeedForward(12, 8, variant="swiglu", beta=1.7).double()
        z = torch.linspace(-4, 4, 9, dtype=torch.float64)
        assert_close(layer.gate(z), z * torch.sigmoid(1.7 * z), rtol=1e-12, atol=1e-12)
        with torch.no_grad():
            assert_close(layer(self.x), expected_output(layer, self.x), rtol=1e-10, atol=1e-10)

    def test_gate_values(self) -> None:
        z = torch.tensor([-2.0, -0.5, 0.0, 1.0, 3.0], dtype=torch.float64)
        cases = {
            "glu": torch.sigmoid(z),
            "bilinear": z,
            "reglu": torch.tensor([0.0, 0.0, 0.0, 1.0, 3.0], dtype=torch.float64),
            "geglu": torch.nn.functional.gelu(z),
            "swiglu": torch.nn.functional.silu(z),
        }
        for variant, want in cases.items():
            layer = glu_ffn.GatedFeedForward(4, 4, variant=variant)
            assert_close(layer.gate(z), want, rtol=1e-10, atol=1e-10)

    def test_gating_is_componentwise_product(self) -> None:
        layer = glu_ffn.GatedFeedForward(3, 2, variant="bilinear").double()
        with torch.no_grad():
            layer.w.weight.copy_(torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]))
            layer.v.weight.copy_(torch.tensor([[0.0, 0.0, 2.0], [0.0, 0.0, -1.0]]))
            layer.w2.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))
            out = layer(torch.tensor([[3.0, 5.0, 2.0]], dtype=torch.float64))
        # hidden = (3 * 4, 5 * -2) = (12, -10)
        assert_close(out, torch.tensor([[12.0, -10.0, 2.0]], dtype=torch.float64))

    def test_parameter_matched_width(self) -> None:
        self.assertEqual(glu_ffn.parameter_matched_hidden(3072), 2048)
        self.assertEqual(glu_ffn.parameter_matched_hidden(300), 200)
        dense_params = 2 * 48 * 96
        layer = glu_ffn.GatedFeedForward(48, glu_ffn.parameter_matched_hidden(96))
        self.assertEqual(sum(p.numel() for p in layer.parameters()), dense_params)

    def test_unknown_variant(self) -> None:
        with self.assertRaises(ValueError):
            glu_ffn.GatedFeedForward(4, 4, variant="tanhglu")


if __name__ == "__main__":
    unittest.main()
