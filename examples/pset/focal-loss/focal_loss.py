"""Sigmoid focal loss for dense detection, its gradient, and the prior-probability bias init.

Our own re-implementation for the ResearchCodeBench Hub examples (numpy only).
"""

import numpy as np


def log_sigmoid(x: np.ndarray) -> np.ndarray:
    """Numerically stable log(sigmoid(x))."""
    return -np.logaddexp(0.0, -x)


def sigmoid_focal_loss(
    logits: np.ndarray,
    targets: np.ndarray,
    alpha: float = 0.25,
    gamma: float = 2.0,
    reduction: str = "normalized",
) -> np.ndarray | float:
    """Focal loss of independent per-class sigmoid logits.

    ``targets`` holds 1 (positive), 0 (negative) or -1 (ignored anchor) per logit. ``alpha < 0``
    disables class balancing. ``reduction`` is "none", "sum", "mean" (over non-ignored entries) or
    "normalized" (sum divided by the number of positive entries, at least 1).
    """
    # <paper2code name="sigmoid focal loss">
    logits = np.asarray(logits, dtype=np.float64)
    targets = np.asarray(targets, dtype=np.float64)
    # <paper2code name="ignore mask">
    valid = targets >= 0
    y = np.where(valid, targets, 0.0)
    # </paper2code name="ignore mask">
    # <paper2code name="probability of the true class">
    sign = 2.0 * y - 1.0
    log_p_t = log_sigmoid(sign * logits)
    p_t = np.exp(log_p_t)
    # </paper2code name="probability of the true class">
    # <paper2code name="alpha-balanced modulated loss">
    # <paper2code name="class balance weight">
    alpha_t = np.where(y == 1.0, alpha, 1.0 - alpha) if alpha >= 0 else np.ones_like(y)
    # </paper2code name="class balance weight">
    # <paper2code name="modulating factor">
    modulator = (1.0 - p_t) ** gamma
    # </paper2code name="modulating factor">
    loss = -alpha_t * modulator * log_p_t
    # </paper2code name="alpha-balanced modulated loss">
    loss = np.where(valid, loss, 0.0)
    # <paper2code name="reduction">
    if reduction == "none":
        return loss
    if reduction == "sum":
        return float(loss.sum())
    if reduction == "mean":
        return float(loss.sum() / max(int(valid.sum()), 1))
    if reduction == "normalized":
        # <paper2code name="normalise by positive anchors">
        num_pos = float((y[valid] == 1.0).sum())
        return float(loss.sum() / max(num_pos, 1.0))
        # </paper2code name="normalise by positive anchors">
    raise ValueError(f"unknown reduction {reduction!r}")
    # </paper2code name="reduction">
    # </paper2code name="sigmoid focal loss">


def focal_loss_grad(logits: np.ndarray, targets: np.ndarray, alpha: float = 0.25, gamma: float = 2.0) -> np.ndarray:
    """Gradient of the per-entry loss (reduction "none") with respect to the logits; 0 where ignored."""
    # <paper2code name="focal loss gradient">
    logits = np.asarray(logits, dtype=np.float64)
    targets = np.asarray(targets, dtype=np.float64)
    valid = targets >= 0
    y = np.where(valid, targets, 0.0)
    sign = 2.0 * y - 1.0
    # <paper2code name="derivative with respect to x_t">
    log_p_t = log_sigmoid(sign * logits)
    p_t = np.exp(log_p_t)
    d_xt = (1.0 - p_t) ** gamma * (gamma * p_t * log_p_t + p_t - 1.0)
    # </paper2code name="derivative with respect to x_t">
    alpha_t = np.where(y == 1.0, alpha, 1.0 - alpha) if alpha >= 0 else np.ones_like(y)
    # <paper2code name="chain rule to the raw logit">
    grad = alpha_t * sign * d_xt
    # </paper2code name="chain rule to the raw logit">
    return np.where(valid, grad, 0.0)
    # </paper2code name="focal loss gradient">


def prior_bias(pi: float = 0.01) -> float:
    """Bias of the final classification layer so that every anchor starts with foreground probability pi."""
    # <paper2code name="prior probability bias">
    return float(-np.log((1.0 - pi) / pi))
    # </paper2code name="prior probability bias">
