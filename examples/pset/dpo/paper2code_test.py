"""Test for the DPO task: sequence log-likelihoods by explicit loops, the DPO loss and rewards by
hand, the gradient's closed form, and the batched step."""

import math
import unittest

import torch

import dpo


def assert_close(got: torch.Tensor, want: torch.Tensor, rtol: float = 1e-7, atol: float = 1e-9) -> None:
    """Tolerance comparison (cheaper to start than torch.testing.assert_close)."""
    assert got.shape == want.shape, f"shape {tuple(got.shape)} != {tuple(want.shape)}"
    assert torch.allclose(got, want, rtol=rtol, atol=atol), f"{got} != {want}"


def loop_log_probs(logits: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    out = torch.zeros(logits.shape[0], dtype=torch.float64)
    for b in range(logits.shape[0]):
        for t in range(1, logits.shape[1]):
            if mask[b, t]:
                row = logits[b, t - 1].double()
                out[b] += row[labels[b, t]] - torch.logsumexp(row, dim=0)
    return out


class DPOTest(unittest.TestCase):
    def setUp(self) -> None:
        torch.manual_seed(2023)
        self.batch, self.seq, self.vocab = 4, 7, 11
        self.labels = torch.randint(0, self.vocab, (self.batch, self.seq))
        self.mask = torch.zeros(self.batch, self.seq, dtype=torch.long)
        self.mask[0, 3:] = 1
        self.mask[1, 2:6] = 1
        self.mask[2, 4:] = 1
        self.mask[3, 1:5] = 1
        self.policy_logits = torch.randn(self.batch, self.seq, self.vocab, dtype=torch.float64)
        self.ref_logits = torch.randn(self.batch, self.seq, self.vocab, dtype=torch.float64)

    def test_sequence_log_probs_match_loops(self) -> None:
        got = dpo.sequence_log_probs(self.policy_logits, self.labels, self.mask)
        self.assertEqual(tuple(got.shape), (self.batch,))
        assert_close(got, loop_log_probs(self.policy_logits, self.labels, self.mask), rtol=1e-10, atol=1e-10)

    def test_loss_and_rewards_by_hand(self) -> None:
        pc = torch.tensor([-3.0, -10.0], dtype=torch.float64)
        pr = torch.tensor([-5.0, -4.0], dtype=torch.float64)
        rc = torch.tensor([-4.0, -9.0], dtype=torch.float64)
        rr = torch.tensor([-4.5, -6.0], dtype=torch.float64)
        losses, cr, rj = dpo.dpo_loss(pc, pr, rc, rr, beta=0.5)
        # margins: 0.5 * ((1) - (-0.5)) = 0.75 and 0.5 * ((-1) - (2)) = -1.5
        want = torch.tensor([math.log1p(math.exp(-0.75)), math.log1p(math.exp(1.5))], dtype=torch.float64)
        assert_close(losses, want, rtol=1e-12, atol=1e-12)
        assert_close(cr, torch.tensor([0.5, -0.5], dtype=torch.float64))
        assert_close(rj, torch.tensor([-0.25, 1.0], dtype=torch.float64))

    def test_gradient_closed_form_and_detached_rewards(self) -> None:
        pc = torch.tensor([-2.0, -7.0, -1.0], dtype=torch.float64, requires_grad=True)
        pr = torch.tensor([-3.0, -2.0, -1.5], dtype=torch.float64, requires_grad=True)
        rc = torch.tensor([-2.5, -6.0, -2.0], dtype=torch.float64)
        rr = torch.tensor([-2.0, -3.0, -1.0], dtype=torch.float64)
        beta = 0.3
        losses, cr, rj = dpo.dpo_loss(pc, pr, rc, rr, beta=beta)
        self.assertFalse(cr.requires_grad or rj.requires_grad)
        losses.sum().backward()
        r_c = beta * (pc.detach() - rc)
        r_r = beta * (pr.detach() - rr)
        weight = torch.sigmoid(r_r - r_c)
        assert_close(pc.grad, -beta * weight, rtol=1e-10, atol=1e-12)
        assert_close(pr.grad, beta * weight, rtol=1e-10, atol=1e-12)

    def test_large_margins_are_stable(self) -> None:
        big = torch.tensor([400.0, -400.0], dtype=torch.float64)
        zero = torch.zeros(2, dtype=torch.float64)
        losses, _, _ = dpo.dpo_loss(big, zero, zero, zero, beta=1.0)
        self.assertTrue(torch.all(torch.isfinite(losses)))
        assert_close(losses, torch.tensor([0.0, 400.0], dtype=torch.float64), rtol=1e-9, atol=1e-9)

    def test_batched_step(self) -> None:
        policy_logits = self.policy_logits.clone().requires_grad_(True)
        loss, accuracy = dpo.dpo_batch_loss(policy_logits, self.ref_logits, self.labels, self.mask, beta=0.2)
        logp = loop_log_probs(self.policy_logits, self.labels, self.mask)
        ref = loop_log_probs(self.ref_logits, self.labels, self.mask)
        r_c = 0.2 * (logp[:2] - ref[:2])
        r_r = 0.2 * (logp[2:] - ref[2:])
        want = torch.nn.functional.softplus(-(r_c - r_r)).mean()
        self.assertAlmostEqual(float(loss.detach()), float(want), places=9)
        self.assertAlmostEqual(float(accuracy), float((r_c > r_r).double().mean()), places=9)
        loss.backward()
        self.assertGreater(float(policy_logits.grad.abs().sum()), 0.0)

    def test_reward_accuracy_counts_pairs(self) -> None:
        # craft logits so the policy clearly prefers the chosen answers for 1 of 2 pairs
        logits = torch.zeros(4, 3, 5, dtype=torch.float64)
        labels = torch.tensor([[0, 1, 2], [0, 3, 3], [0, 4, 4], [0, 2, 1]])
        mask = torch.tensor([[0, 1, 1]] * 4)
        logits[0, 0, 1] = logits[0, 1, 2] = 4.0  # chosen pair 0 likely
        logits[3, 0, 2] = logits[3, 1, 1] = 4.0  # rejected pair 1 likely
        loss, accuracy = dpo.dpo_batch_loss(logits, torch.zeros_like(logits), labels, mask, beta=1.0)
        self.assertAlmostEqual(float(accuracy), 0.5, places=9)
        self.assertGreater(float(loss), 0.0)
        # identical policy and reference: every reward is 0, ties do not count as correct
        loss, accuracy = dpo.dpo_batch_loss(logits, logits.clone(), labels, mask, beta=1.0)
        self.assertAlmostEqual(float(accuracy), 0.0, places=9)
        self.assertAlmostEqual(float(loss), math.log(2.0), places=9)


if __name__ == "__main__":
    unittest.main()
