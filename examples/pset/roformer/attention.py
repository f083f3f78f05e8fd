"""Multi-head attention helpers shared by the RoFormer task (context file, never masked)."""

import math

import torch


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """(batch, seq, heads * head_dim) -> (batch, heads, seq, head_dim)."""
    batch, seq, width = x.shape
    return x.view(batch, seq, num_heads, width // num_heads).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(batch, heads, seq, head_dim) -> (batch, seq, heads * head_dim)."""
    batch, heads, seq, head_dim = x.shape
    return x.transpose(1, 2).reshape(batch, seq, heads * head_dim)


def scaled_dot_product(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """Softmax attention over the sequence axis; inputs are (batch, heads, seq, head_dim)."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        seq_q, seq_k = scores.shape[-2], scores.shape[-1]
        mask = torch.ones(seq_q, seq_k, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    return scores.softmax(dim=-1) @ v
