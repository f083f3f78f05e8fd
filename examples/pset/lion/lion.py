"""Lion ("evolved sign momentum"): an optimizer that updates every weight by the sign of an interpolation
between its gradient and a momentum, as a ``torch.optim.Optimizer``.

Our own re-implementation for the ResearchCodeBench Hub examples.
"""

from collections.abc import Callable, Iterable

import torch
from torch.optim import Optimizer


class Lion(Optimizer):
    """Lion with decoupled weight decay.

    ``betas = (beta1, beta2)``: ``beta1`` interpolates the update direction, ``beta2`` the momentum that is
    kept between steps. Parameters without a gradient are skipped.
    """

    def __init__(
        self,
        params: Iterable[torch.Tensor] | Iterable[dict],
        lr: float = 1e-4,
        betas: tuple[float, float] = (0.9, 0.99),
        weight_decay: float = 0.0,
    ) -> None:
        if lr <= 0.0:
            raise ValueError(f"invalid learning rate: {lr}")
        if not all(0.0 <= beta < 1.0 for beta in betas):
            raise ValueError(f"invalid betas: {betas}")
        if weight_decay < 0.0:
            raise ValueError(f"invalid weight decay: {weight_decay}")
        defaults = {"lr": lr, "betas": betas, "weight_decay": weight_decay}
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure: Callable[[], torch.Tensor] | None = None) -> torch.Tensor | None:
        """One optimisation step; ``closure`` re-evaluates the loss (its value is returned)."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            lr = group["lr"]
            beta1, beta2 = group["betas"]
            for param in group["params"]:
                if param.grad is None:
                    continue
                grad = param.grad
                # <paper2code name="lion step for one parameter">
                # <paper2code name="lazy state initialisation">
                state = self.state[param]
                if len(state) == 0:
                    state["exp_avg"] = torch.zeros_like(param)
                exp_avg = state["exp_avg"]
                # </paper2code name="lazy state initialisation">
                # <paper2code name="decoupled weight decay">
                param.mul_(1.0 - lr * group["weight_decay"])
                # </paper2code name="decoupled weight decay">
                # <paper2code name="sign of the interpolated update">
                update = exp_avg.mul(beta1).add(grad, alpha=1.0 - beta1).sign_()
                param.add_(update, alpha=-lr)
                # </paper2code name="sign of the interpolated update">
                # <paper2code name="momentum update">
                exp_avg.mul_(beta2).add_(grad, alpha=1.0 - beta2)
                # </paper2code name="momentum update">
                # </paper2code name="lion step for one parameter">
        return loss
