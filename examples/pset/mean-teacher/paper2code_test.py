"""Test for the Mean Teacher task: the ramp-up and the consistency weight by hand, the teacher's moving
average against hand-computed values and the untagged reference, and the consistency cost's value and
gradients. As in real papers' tests, the functions are imported into this module by name (some of them are
defined below the masked regions of the same file)."""

import math
import unittest

import torch

import mean_teacher_ref
from mean_teacher import consistency_loss, consistency_weight, ema_decay, sigmoid_rampup, update_teacher


def assert_close(got: torch.Tensor, want: torch.Tensor, rtol: float = 1e-7, atol: float = 1e-9) -> None:
    assert got.shape == want.shape, f"shape {tuple(got.shape)} != {tuple(want.shape)}"
    assert torch.allclose(got, want, rtol=rtol, atol=atol), f"{got} != {want}"


def _pair() -> tuple[torch.nn.Module, torch.nn.Module]:
    torch.manual_seed(11)
    student = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3)).double()
    teacher = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3)).double()
    return student, teacher


class MeanTeacherTest(unittest.TestCase):
    def test_rampup_by_hand(self) -> None:
        self.assertAlmostEqual(sigmoid_rampup(0.0, 10.0), math.exp(-5.0), places=12)
        self.assertAlmostEqual(sigmoid_rampup(5.0, 10.0), math.exp(-1.25), places=12)
        self.assertAlmostEqual(sigmoid_rampup(10.0, 10.0), 1.0, places=12)
        self.assertAlmostEqual(sigmoid_rampup(25.0, 10.0), 1.0, places=12)
        self.assertAlmostEqual(sigmoid_rampup(-3.0, 10.0), math.exp(-5.0), places=12)
        self.assertEqual(sigmoid_rampup(3.0, 0.0), 1.0)

    def test_consistency_weight_follows_the_rampup(self) -> None:
        self.assertAlmostEqual(consistency_weight(4.0, 8.0, 10.0), 8.0 * math.exp(-5.0 * 0.36), places=12)
        self.assertAlmostEqual(consistency_weight(30.0, 8.0, 10.0), 8.0, places=12)
        self.assertAlmostEqual(consistency_weight(2.0, 3.0, 0.0), 3.0, places=12)

    def test_teacher_average_by_hand(self) -> None:
        student = torch.nn.Linear(2, 1, bias=False).double()
        teacher = torch.nn.Linear(2, 1, bias=False).double()
        with torch.no_grad():
            student.weight.copy_(torch.tensor([[1.0, -2.0]], dtype=torch.float64))
            teacher.weight.copy_(torch.tensor([[3.0, 4.0]], dtype=torch.float64))
        # step 3: the true average's decay 1 - 1/4 = 0.75 is below alpha = 0.99
        decay = update_teacher(student, teacher, 0.99, 3)
        self.assertAlmostEqual(decay, 0.75, places=12)
        assert_close(teacher.weight.detach(), torch.tensor([[2.5, 2.5]], dtype=torch.float64))
        # late in training alpha caps the decay
        decay = update_teacher(student, teacher, 0.9, 1000)
        self.assertAlmostEqual(decay, ema_decay(0.9, 1000), places=12)
        assert_close(teacher.weight.detach(), torch.tensor([[2.35, 2.05]], dtype=torch.float64))

    def test_teacher_matches_reference_and_copies_buffers(self) -> None:
        student, teacher = _pair()
        ref_student, ref_teacher = _pair()
        for step in range(5):
            with torch.no_grad():
                for param in list(student.parameters()) + list(ref_student.parameters()):
                    param.add_(0.1 * (step + 1))
            student.train()(torch.randn(6, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(step)))
            ref_student.train()(torch.randn(6, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(step)))
            update_teacher(student, teacher, 0.95, step)
            mean_teacher_ref.update_teacher(ref_student, ref_teacher, 0.95, step)
        for got, want in zip(teacher.parameters(), ref_teacher.parameters()):
            assert_close(got.detach(), want.detach(), rtol=1e-12, atol=1e-12)
        assert_close(teacher[1].running_mean, student[1].running_mean, rtol=0.0, atol=0.0)
        assert_close(teacher[1].running_var, ref_teacher[1].running_var, rtol=1e-12, atol=1e-12)

    def test_consistency_cost_value_and_gradients(self) -> None:
        torch.manual_seed(5)
        student = torch.randn(8, 5, dtype=torch.float64, requires_grad=True)
        teacher = torch.randn(8, 5, dtype=torch.float64, requires_grad=True)
        loss = consistency_loss(student, teacher)
        want = mean_teacher_ref.consistency_loss(student.detach(), teacher.detach())
        assert_close(loss.detach(), want, rtol=1e-12, atol=1e-14)
        by_hand = ((student.softmax(-1) - teacher.softmax(-1)) ** 2).mean()
        assert_close(loss.detach(), by_hand.detach(), rtol=1e-12, atol=1e-14)
        loss.backward()
        self.assertIsNone(teacher.grad)
        self.assertGreater(float(student.grad.abs().sum()), 0.0)
        same = consistency_loss(teacher.detach(), teacher.detach())
        self.assertAlmostEqual(float(same), 0.0, places=14)


if __name__ == "__main__":
    unittest.main()
