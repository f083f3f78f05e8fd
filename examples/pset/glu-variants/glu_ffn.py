"""Gated linear unit (GLU) feed-forward layers for Transformers: GLU, Bilinear, ReGLU, GEGLU, SwiGLU.

Our own re-implementation for the ResearchCodeBench Hub examples.
"""

import math

import torch
from torch import nn

VARIANTS = ("glu", "bilinear", "reglu", "geglu", "swiglu")


def parameter_matched_hidden(d_ff_dense: int) -> int:
    """Hidden width of a gated layer with the same parameter count as a two-matrix FFN of width d_ff_dense."""
    # <paper2code name="parameter-matched hidden width">
    return int(round(2 * d_ff_dense / 3))
    # </paper2code name="parameter-matched hidden width">


class GatedFeedForward(nn.Module):
    """FFN(x) = (act(x W) * (x V)) W2, without biases."""

    def __init__(self, d_model: int, d_ff: int, variant: str = "swiglu", beta: float = 1.0) -> None:
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"unknown GLU variant {variant!r}; expected one of {VARIANTS}")
        self.variant = variant
        self.beta = beta
        self.w = nn.Linear(d_model, d_ff, bias=False)
        self.v = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)

    def gate(self, z: torch.Tensor) -> torch.Tensor:
        """The variant's activation applied to the gate projection z = x W."""
        # <paper2code name="gate activation">
        if self.variant == "glu":
            # <paper2code name="sigmoid gate">
            return torch.sigmoid(z)
            # </paper2code name="sigmoid gate">
        if self.variant == "bilinear":
            return z
        if self.variant == "reglu":
            # <paper2code name="relu gate">
            return torch.clamp(z, min=0.0)
            # </paper2code name="relu gate">
        if self.variant == "geglu":
            # <paper2code name="exact gelu gate">
            return 0.5 * z * (1.0 + torch.erf(z / math.sqrt(2.0)))
            # </paper2code name="exact gelu gate">
        # <paper2code name="swish gate">
        return z * torch.sigmoid(self.beta * z)
        # </paper2code name="swish gate">
        # </paper2code name="gate activation">

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (..., d_model) -> (..., d_model)."""
        # <paper2code name="gated feed-forward">
        # <paper2code name="gated hidden units">
        # <paper2code name="gate branch">
        gated = self.gate(self.w(x))
        # </paper2code name="gate branch">
        # <paper2code name="linear branch">
        linear = self.v(x)
        # </paper2code name="linear branch">
        hidden = gated * linear
        # </paper2code name="gated hidden units">
        # <paper2code name="down projection">
        return self.w2(hidden)
        # </paper2code name="down projection">
        # </paper2code name="gated feed-forward">
