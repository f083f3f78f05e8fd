"""Direct preference optimisation (DPO) loss for a causal language model.

Our own re-implementation for the ResearchCodeBench Hub examples.
"""

import torch
import torch.nn.functional as F


def sequence_log_probs(logits: torch.Tensor, labels: torch.Tensor, loss_mask: torch.Tensor) -> torch.Tensor:
    """Sum of log pi(y_t | x, y_<t) over response tokens.

    logits: (batch, seq, vocab), position t predicts token t + 1; labels: (batch, seq) token ids;
    loss_mask: (batch, seq), 1 where the token belongs to the response, 0 for prompt and padding.
    Returns (batch,).
    """
    # <paper2code name="response log-likelihood">
    # <paper2code name="align predictions with next tokens">
    logits = logits[:, :-1, :]
    labels = labels[:, 1:]
    mask = loss_mask[:, 1:].to(logits.dtype)
    # </paper2code name="align predictions with next tokens">
    # <paper2code name="per-token log-probabilities">
    log_probs = torch.log_softmax(logits, dim=-1)
    token_log_probs = torch.gather(log_probs, 2, labels.unsqueeze(-1)).squeeze(-1)
    # </paper2code name="per-token log-probabilities">
    return (token_log_probs * mask).sum(dim=-1)
    # </paper2code name="response log-likelihood">


def dpo_loss(
    policy_chosen: torch.Tensor,
    policy_rejected: torch.Tensor,
    ref_chosen: torch.Tensor,
    ref_rejected: torch.Tensor,
    beta: float = 0.1,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-pair DPO losses and the (detached) implicit rewards of the chosen and rejected responses."""
    # <paper2code name="dpo objective">
    # <paper2code name="implicit reward margin">
    chosen_log_ratio = policy_chosen - ref_chosen
    rejected_log_ratio = policy_rejected - ref_rejected
    margin = beta * (chosen_log_ratio - rejected_log_ratio)
    # </paper2code name="implicit reward margin">
    # <paper2code name="bradley-terry negative log-likelihood">
    losses = -F.logsigmoid(margin)
    # </paper2code name="bradley-terry negative log-likelihood">
    # <paper2code name="detached implicit rewards">
    chosen_rewards = beta * chosen_log_ratio.detach()
    rejected_rewards = beta * rejected_log_ratio.detach()
    # </paper2code name="detached implicit rewards">
    return losses, chosen_rewards, rejected_rewards
    # </paper2code name="dpo objective">


def dpo_batch_loss(
    policy_logits: torch.Tensor,
    ref_logits: torch.Tensor,
    labels: torch.Tensor,
    loss_mask: torch.Tensor,
    beta: float = 0.1,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean DPO loss and reward accuracy of a batch laid out as [chosen_0..chosen_n-1, rejected_0..rejected_n-1]."""
    # <paper2code name="batched dpo step">
    # <paper2code name="sequence scores of both models">
    policy_logps = sequence_log_probs(policy_logits, labels, loss_mask)
    with torch.no_grad():
        ref_logps = sequence_log_probs(ref_logits, labels, loss_mask)
    # </paper2code name="sequence scores of both models">
    # <paper2code name="split chosen and rejected halves">
    n = labels.shape[0] // 2
    losses, chosen_rewards, rejected_rewards = dpo_loss(
        policy_logps[:n], policy_logps[n:], ref_logps[:n], ref_logps[n:], beta
    )
    # </paper2code name="split chosen and rejected halves">
    # <paper2code name="reward accuracy">
    accuracy = (chosen_rewards > rejected_rewards).to(policy_logps.dtype).mean()
    # </paper2code name="reward accuracy">
    return losses.mean(), accuracy
    # </paper2code name="batched dpo step">
