"""Reference copy (untagged) of rmsnorm.py. RMSNorm: layer normalisation by the root mean square only (no re-centring).

Our own re-implementation for the ResearchCodeBench Hub examples.
"""

import torch
from torch import nn


class RMSNorm(nn.Module):
    """Normalise the last dimension of the input by its root mean square.

    ``p`` in (0, 1) selects partial RMSNorm (pRMSNorm): the RMS is estimated from the
    first ``int(dim * p)`` features only; any other value uses all features.
    """

    def __init__(self, dim: int, eps: float = 1e-8, p: float = -1.0, bias: bool = False) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps
        self.p = p
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim)) if bias else None

    def root_mean_square(self, x: torch.Tensor) -> torch.Tensor:
        """Return the RMS of ``x`` over its last dimension, shape ``(..., 1)``."""
        if 0.0 < self.p < 1.0:
            k = int(self.dim * self.p)
            squared_norm = x[..., :k].pow(2).sum(dim=-1, keepdim=True)
            count = k
        else:
            squared_norm = x.pow(2).sum(dim=-1, keepdim=True)
            count = self.dim
        return torch.sqrt(squared_norm / count)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Apply RMSNorm to ``x`` of shape ``(..., dim)``."""
        rms = self.root_mean_square(x)
        x_hat = x / (rms + self.eps)
        out = self.weight * x_hat
        if self.bias is not None:
            out = out + self.bias
        return out
