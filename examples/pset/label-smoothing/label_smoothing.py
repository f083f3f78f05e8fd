"""Label-smoothing regularisation (LSR) for classification.

Our own re-implementation for the ResearchCodeBench Hub examples.
"""

import torch


def smoothed_targets(labels: torch.Tensor, num_classes: int, epsilon: float) -> torch.Tensor:
    """Target distribution q'(k) = (1 - epsilon) [k == y] + epsilon / K, shape (n, K), float64."""
    # <paper2code name="smoothed label distribution">
    n = labels.shape[0]
    # <paper2code name="uniform prior mass">
    targets = torch.full((n, num_classes), epsilon / num_classes, dtype=torch.float64)
    # </paper2code name="uniform prior mass">
    # <paper2code name="true class mass">
    targets[torch.arange(n), labels] += 1.0 - epsilon
    # </paper2code name="true class mass">
    return targets
    # </paper2code name="smoothed label distribution">


def label_smoothing_loss(
    logits: torch.Tensor, labels: torch.Tensor, epsilon: float = 0.1, ignore_index: int = -100
) -> torch.Tensor:
    """Mean cross entropy between the smoothed targets and softmax(logits) over non-ignored rows.

    logits: (n, K); labels: (n,) class ids, ``ignore_index`` marks rows to skip. Returns a scalar;
    0 when every row is ignored.
    """
    # <paper2code name="label-smoothed cross entropy">
    # <paper2code name="drop ignored rows">
    keep = labels != ignore_index
    logits = logits[keep]
    labels = labels[keep]
    if labels.numel() == 0:
        return logits.sum() * 0.0
    # </paper2code name="drop ignored rows">
    log_probs = torch.log_softmax(logits, dim=-1)
    # <paper2code name="cross entropy with the true label">
    nll = -log_probs.gather(1, labels[:, None]).squeeze(1)
    # </paper2code name="cross entropy with the true label">
    # <paper2code name="cross entropy with the uniform prior">
    uniform = -log_probs.mean(dim=-1)
    # </paper2code name="cross entropy with the uniform prior">
    # <paper2code name="mix and average">
    loss = (1.0 - epsilon) * nll + epsilon * uniform
    return loss.mean()
    # </paper2code name="mix and average">
    # </paper2code name="label-smoothed cross entropy">
