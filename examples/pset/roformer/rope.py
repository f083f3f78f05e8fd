"""Rotary position embedding (RoPE) and a self-attention layer that uses it.

Our own re-implementation for the ResearchCodeBench Hub examples. Features are rotated in
consecutive pairs (x[2i], x[2i + 1]).
"""

import torch
from torch import nn

from attention import merge_heads, scaled_dot_product, split_heads


def rotary_frequencies(head_dim: int, base: float = 10000.0) -> torch.Tensor:
    """Return the head_dim // 2 rotation frequencies theta_i (float64)."""
    # <paper2code name="rotation frequencies">
    if head_dim % 2 != 0:
        raise ValueError(f"head_dim must be even for rotary embeddings, got {head_dim}")
    exponents = torch.arange(0, head_dim // 2, dtype=torch.float64) * 2.0 / head_dim
    return base ** (-exponents)
    # </paper2code name="rotation frequencies">


def rotation_angles(positions: torch.Tensor, theta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Return cos and sin of m * theta_i, each of shape (len(positions), len(theta))."""
    # <paper2code name="position times frequency angles">
    angles = positions.to(torch.float64)[:, None] * theta[None, :]
    return torch.cos(angles), torch.sin(angles)
    # </paper2code name="position times frequency angles">


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate x of shape (..., seq, head_dim) pair by pair by the angles in cos/sin (seq, head_dim // 2)."""
    # <paper2code name="apply rotary embedding">
    # <paper2code name="split even and odd features">
    x_even = x[..., 0::2]
    x_odd = x[..., 1::2]
    # </paper2code name="split even and odd features">
    cos = cos.to(x.dtype)
    sin = sin.to(x.dtype)
    # <paper2code name="rotate each pair">
    rot_even = x_even * cos - x_odd * sin
    rot_odd = x_even * sin + x_odd * cos
    # </paper2code name="rotate each pair">
    # <paper2code name="interleave rotated pairs">
    return torch.stack((rot_even, rot_odd), dim=-1).flatten(-2)
    # </paper2code name="interleave rotated pairs">
    # </paper2code name="apply rotary embedding">


class RotarySelfAttention(nn.Module):
    """Multi-head self-attention whose queries and keys carry rotary position information."""

    def __init__(self, dim: int, num_heads: int, causal: bool = False, base: float = 10000.0) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.causal = causal
        self.q_proj = nn.Linear(dim, dim, bias=False)
        self.k_proj = nn.Linear(dim, dim, bias=False)
        self.v_proj = nn.Linear(dim, dim, bias=False)
        self.out_proj = nn.Linear(dim, dim, bias=False)
        self.register_buffer("theta", rotary_frequencies(dim // num_heads, base), persistent=False)

    def forward(self, x: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        """x: (batch, seq, dim); positions: (seq,) integer positions, default 0..seq-1."""
        # <paper2code name="rotary self-attention forward">
        q = split_heads(self.q_proj(x), self.num_heads)
        k = split_heads(self.k_proj(x), self.num_heads)
        v = split_heads(self.v_proj(x), self.num_heads)
        # <paper2code name="default positions">
        if positions is None:
            positions = torch.arange(x.shape[1], device=x.device)
        # </paper2code name="default positions">
        # <paper2code name="rotate queries and keys">
        # <paper2code name="angles for these positions">
        cos, sin = rotation_angles(positions, self.theta)
        # </paper2code name="angles for these positions">
        q = apply_rotary(q, cos, sin)
        k = apply_rotary(k, cos, sin)
        # </paper2code name="rotate queries and keys">
        out = scaled_dot_product(q, k, v, causal=self.causal)
        return self.out_proj(merge_heads(out))
        # </paper2code name="rotary self-attention forward">
