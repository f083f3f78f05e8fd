"""A linear layer with a low-rank adapter (LoRA): y = x W0^T + (alpha / r) * x A^T B^T.

Our own re-implementation for the ResearchCodeBench Hub examples.
"""

import torch
from torch import nn


class LoRALinear(nn.Module):
    """Wraps a frozen ``nn.Linear`` and adds a trainable rank-``r`` update B A scaled by alpha / r."""

    def __init__(self, base: nn.Linear, r: int, alpha: float, dropout: float = 0.0) -> None:
        super().__init__()
        # <paper2code name="lora setup">
        if r <= 0:
            raise ValueError(f"LoRA rank must be positive, got {r}")
        self.base = base
        self.r = r
        # <paper2code name="scaling factor">
        self.scaling = alpha / r
        # </paper2code name="scaling factor">
        # <paper2code name="freeze pretrained weights">
        for param in self.base.parameters():
            param.requires_grad_(False)
        # </paper2code name="freeze pretrained weights">
        # <paper2code name="low-rank factors">
        like = {"dtype": base.weight.dtype, "device": base.weight.device}
        self.lora_A = nn.Parameter(torch.randn(r, base.in_features, **like) / r)
        self.lora_B = nn.Parameter(torch.zeros(base.out_features, r, **like))
        # </paper2code name="low-rank factors">
        # </paper2code name="lora setup">
        self.dropout = nn.Dropout(dropout)
        self.merged = False

    def delta_weight(self) -> torch.Tensor:
        """The weight update (alpha / r) * B A, shaped like the base weight."""
        # <paper2code name="delta weight">
        return self.scaling * (self.lora_B @ self.lora_A)
        # </paper2code name="delta weight">

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (..., in_features) -> (..., out_features)."""
        # <paper2code name="lora forward">
        result = self.base(x)
        if not self.merged:
            # <paper2code name="low-rank path">
            update = self.dropout(x) @ self.lora_A.T @ self.lora_B.T
            result = result + self.scaling * update
            # </paper2code name="low-rank path">
        return result
        # </paper2code name="lora forward">

    def merge(self) -> None:
        """Fold the update into the base weight so inference costs nothing extra."""
        # <paper2code name="merge update into base weight">
        if not self.merged:
            with torch.no_grad():
                self.base.weight += self.delta_weight()
            self.merged = True
        # </paper2code name="merge update into base weight">

    def unmerge(self) -> None:
        """Subtract the update again, restoring the pretrained weight (e.g. to switch tasks)."""
        # <paper2code name="unmerge update from base weight">
        if self.merged:
            with torch.no_grad():
                self.base.weight -= self.delta_weight()
            self.merged = False
        # </paper2code name="unmerge update from base weight">
