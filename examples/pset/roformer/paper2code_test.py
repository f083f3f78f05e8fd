"""Test for the RoFormer task: checks rope.py against an independent complex-number formulation,
the explicit block-diagonal rotation matrix, and the relative-position property."""

import math
import unittest

import torch

import rope
from attention import merge_heads, scaled_dot_product, split_heads


def assert_close(got: torch.Tensor, want: torch.Tensor, rtol: float = 1e-7, atol: float = 1e-9) -> None:
    """Tolerance comparison (cheaper to start than torch.testing.assert_close)."""
    assert got.shape == want.shape, f"shape {tuple(got.shape)} != {tuple(want.shape)}"
    assert torch.allclose(got, want, rtol=rtol, atol=atol), f"{got} != {want}"


def complex_rotary(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Reference: view each feature pair as a complex number and multiply by exp(i * m * theta_j)."""
    d = x.shape[-1]
    theta = torch.tensor([base ** (-2.0 * j / d) for j in range(d // 2)], dtype=torch.float64)
    angle = positions.to(torch.float64)[:, None] * theta[None, :]
    z = torch.complex(x[..., 0::2].double(), x[..., 1::2].double())
    rotated = z * torch.polar(torch.ones_like(angle), angle)
    return torch.stack((rotated.real, rotated.imag), dim=-1).flatten(-2).to(x.dtype)


def rotation_matrix(m: int, d: int, base: float = 10000.0) -> torch.Tensor:
    r = torch.zeros(d, d, dtype=torch.float64)
    for j in range(d // 2):
        a = m * base ** (-2.0 * j / d)
        r[2 * j, 2 * j], r[2 * j, 2 * j + 1] = math.cos(a), -math.sin(a)
        r[2 * j + 1, 2 * j], r[2 * j + 1, 2 * j + 1] = math.sin(a), math.cos(a)
    return r


class RotaryTest(unittest.TestCase):
    def setUp(self) -> None:
        torch.manual_seed(7)

    def test_frequencies(self) -> None:
        theta = rope.rotary_frequencies(8, base=100.0)
        expected = torch.tensor([1.0, 100.0 ** -0.25, 100.0 ** -0.5, 100.0 ** -0.75], dtype=torch.float64)
        assert_close(theta, expected, rtol=1e-12, atol=1e-12)
        with self.assertRaises(ValueError):
            rope.rotary_frequencies(7)

    def test_angles(self) -> None:
        theta = torch.tensor([1.0, 0.5], dtype=torch.float64)
        cos, sin = rope.rotation_angles(torch.tensor([0, 3]), theta)
        assert_close(cos, torch.tensor([[1.0, 1.0], [math.cos(3.0), math.cos(1.5)]], dtype=torch.float64))
        assert_close(sin, torch.tensor([[0.0, 0.0], [math.sin(3.0), math.sin(1.5)]], dtype=torch.float64))

    def test_matches_explicit_rotation_matrix(self) -> None:
        d, seq = 8, 6
        x = torch.randn(seq, d, dtype=torch.float64)
        positions = torch.arange(seq) * 3 + 1
        cos, sin = rope.rotation_angles(positions, rope.rotary_frequencies(d))
        out = rope.apply_rotary(x, cos, sin)
        for i in range(seq):
            expected = rotation_matrix(int(positions[i]), d) @ x[i]
            assert_close(out[i], expected, rtol=1e-10, atol=1e-10)

    def test_matches_complex_form_and_keeps_dtype(self) -> None:
        x = torch.randn(2, 3, 5, 16)
        positions = torch.tensor([0, 4, 9, 10, 31])
        cos, sin = rope.rotation_angles(positions, rope.rotary_frequencies(16))
        out = rope.apply_rotary(x, cos, sin)
        self.assertEqual(out.dtype, torch.float32)
        assert_close(out, complex_rotary(x, positions), rtol=1e-5, atol=1e-5)

    def test_scores_depend_only_on_relative_position(self) -> None:
        d = 16
        q, k = torch.randn(d, dtype=torch.float64), torch.randn(d, dtype=torch.float64)
        theta = rope.rotary_frequencies(d)

        def score(m: int, n: int) -> float:
            cq, sq = rope.rotation_angles(torch.tensor([m]), theta)
            ck, sk = rope.rotation_angles(torch.tensor([n]), theta)
            return float(rope.apply_rotary(q[None], cq, sq) @ rope.apply_rotary(k[None], ck, sk).T)

        self.assertAlmostEqual(score(5, 2), score(13, 10), places=9)
        self.assertAlmostEqual(score(0, 7), score(20, 27), places=9)
        self.assertNotAlmostEqual(score(5, 2), score(5, 3), places=3)

    def _manual_attention(self, layer: rope.RotarySelfAttention, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        q = split_heads(layer.q_proj(x), layer.num_heads)
        k = split_heads(layer.k_proj(x), layer.num_heads)
        v = split_heads(layer.v_proj(x), layer.num_heads)
        q, k = complex_rotary(q, positions), complex_rotary(k, positions)
        return layer.out_proj(merge_heads(scaled_dot_product(q, k, v, causal=layer.causal)))

    def test_attention_layer_default_positions_causal(self) -> None:
        layer = rope.RotarySelfAttention(dim=16, num_heads=2, causal=True).double()
        x = torch.randn(2, 7, 16, dtype=torch.float64)
        with torch.no_grad():
            out = layer(x)
            expected = self._manual_attention(layer, x, torch.arange(7))
        assert_close(out, expected, rtol=1e-9, atol=1e-9)

    def test_attention_layer_explicit_positions(self) -> None:
        layer = rope.RotarySelfAttention(dim=24, num_heads=3).double()
        x = torch.randn(1, 5, 24, dtype=torch.float64)
        positions = torch.tensor([3, 8, 9, 20, 21])
        with torch.no_grad():
            out = layer(x, positions)
            expected = self._manual_attention(layer, x, positions)
            shifted = layer(x, positions + 11)
        assert_close(out, expected, rtol=1e-9, atol=1e-9)
        # a common shift of all positions leaves non-causal attention unchanged
        assert_close(shifted, out, rtol=1e-8, atol=1e-8)


if __name__ == "__main__":
    unittest.main()
