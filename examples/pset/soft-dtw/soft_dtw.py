"""Soft-DTW: a differentiable dynamic-time-warping discrepancy between two time series, computed by a
dynamic programme over a tensor filled cell by cell.

Our own re-implementation for the ResearchCodeBench Hub examples.
"""

import torch


def pairwise_squared_distances(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``D[i, j] = ||x_i - y_j||^2`` for series ``x`` of shape (n, d) and ``y`` of shape (m, d)."""
    # <paper2code name="pairwise squared distances">
    diff = x.unsqueeze(1) - y.unsqueeze(0)
    return (diff * diff).sum(dim=-1)
    # </paper2code name="pairwise squared distances">


def soft_min(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, gamma: float) -> torch.Tensor:
    """The smoothed minimum ``-gamma * log(exp(-a/gamma) + exp(-b/gamma) + exp(-c/gamma))`` (``gamma > 0``),
    computed stably."""
    # <paper2code name="soft minimum">
    values = torch.stack([a, b, c]) / -gamma
    return -gamma * torch.logsumexp(values, dim=0)
    # </paper2code name="soft minimum">


def soft_dtw(x: torch.Tensor, y: torch.Tensor, gamma: float = 1.0) -> torch.Tensor:
    """The soft-DTW discrepancy between ``x`` (n, d) and ``y`` (m, d), differentiable in both."""
    distances = pairwise_squared_distances(x, y)
    n, m = distances.shape
    # <paper2code name="dynamic programme">
    # <paper2code name="boundary conditions">
    table = torch.full((n + 1, m + 1), float("inf"), dtype=distances.dtype)
    table[0, 0] = 0.0
    rows = [list(row) for row in table]
    # </paper2code name="boundary conditions">
    # <paper2code name="fill the table">
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            best = soft_min(rows[i - 1][j - 1], rows[i - 1][j], rows[i][j - 1], gamma)
            rows[i][j] = distances[i - 1, j - 1] + best
    # </paper2code name="fill the table">
    return rows[n][m]
    # </paper2code name="dynamic programme">


def soft_dtw_alignment_table(x: torch.Tensor, y: torch.Tensor, gamma: float = 1.0) -> torch.Tensor:
    """The whole accumulated-cost table ``R`` (shape (n + 1, m + 1)), filled by index, without gradients."""
    distances = pairwise_squared_distances(x, y).detach()
    n, m = distances.shape
    # <paper2code name="table filled by index">
    table = torch.full((n + 1, m + 1), float("inf"), dtype=distances.dtype)
    table[0][0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            cost = distances[i - 1, j - 1] + soft_min(table[i - 1][j - 1], table[i - 1][j], table[i][j - 1], gamma)
            table[i][j] = cost
    return table
    # </paper2code name="table filled by index">
