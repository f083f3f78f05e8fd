"""Reference copy (untagged) of mean_teacher.py. Mean Teacher: a teacher whose weights are an exponential moving average of the student's, and a
consistency cost between their predictions, weighted by a ramp-up.

Our own re-implementation for the ResearchCodeBench Hub examples. Laid out as research code often is: the
helpers the training loop and the test import are defined below the methods that use them.
"""

import math

import torch
import torch.nn.functional as F


def consistency_weight(epoch: float, max_weight: float, rampup_epochs: float) -> float:
    """The weight of the consistency cost at ``epoch``: ``max_weight`` times the sigmoid-shaped ramp-up."""
    return max_weight * sigmoid_rampup(epoch, rampup_epochs)


@torch.no_grad()
def update_teacher(student: torch.nn.Module, teacher: torch.nn.Module, alpha: float, step: int) -> float:
    """Move the teacher's parameters towards the student's (exponential moving average) and copy the
    student's buffers. Returns the decay used at this step."""
    decay = ema_decay(alpha, step)
    for teacher_param, student_param in zip(teacher.parameters(), student.parameters()):
        teacher_param.mul_(decay).add_(student_param, alpha=1.0 - decay)
    for teacher_buffer, student_buffer in zip(teacher.buffers(), student.buffers()):
        teacher_buffer.copy_(student_buffer)
    return decay


def consistency_loss(student_logits: torch.Tensor, teacher_logits: torch.Tensor) -> torch.Tensor:
    """Mean squared difference of the two softmax distributions; no gradient reaches the teacher."""
    student_probs = F.softmax(student_logits, dim=-1)
    teacher_probs = F.softmax(teacher_logits.detach(), dim=-1)
    return ((student_probs - teacher_probs) ** 2).sum(dim=-1).mean() / student_logits.shape[-1]


def sigmoid_rampup(epoch: float, rampup_epochs: float) -> float:
    """exp(-5 (1 - t)^2) for t = epoch / rampup_epochs clipped to [0, 1]; 1 when there is no ramp-up."""
    if rampup_epochs == 0:
        return 1.0
    phase = 1.0 - min(max(epoch, 0.0), rampup_epochs) / rampup_epochs
    return float(math.exp(-5.0 * phase * phase))


def ema_decay(alpha: float, step: int) -> float:
    """The decay at ``step``: the true average of the weights seen so far while that is smaller than ``alpha``."""
    return min(1.0 - 1.0 / (step + 1), alpha)
