"""Test for the Lion task: steps against the untagged reference and against values computed by hand from
the update rule, the optimizer machinery (parameter groups, closures, state_dict round trips, skipped
parameters) and a small training run."""

import unittest

import torch

import lion
import lion_ref


def assert_close(got: torch.Tensor, want: torch.Tensor, rtol: float = 1e-7, atol: float = 1e-9) -> None:
    assert got.shape == want.shape, f"shape {tuple(got.shape)} != {tuple(want.shape)}"
    assert torch.allclose(got, want, rtol=rtol, atol=atol), f"{got} != {want}"


def quadratic(weight: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return ((weight - target) ** 2).sum() + 0.1 * weight.abs().sum()


class LionTest(unittest.TestCase):
    def setUp(self) -> None:
        torch.manual_seed(7)
        self.start = torch.randn(5, 3, dtype=torch.float64)
        self.target = torch.randn(5, 3, dtype=torch.float64)

    def _run(self, module, steps: int, **kwargs) -> tuple[torch.Tensor, dict]:
        weight = torch.nn.Parameter(self.start.clone())
        optimizer = module.Lion([weight], **kwargs)
        for _ in range(steps):
            optimizer.zero_grad()
            quadratic(weight, self.target).backward()
            optimizer.step()
        return weight.detach(), optimizer.state[weight]

    def test_matches_reference_over_several_steps(self) -> None:
        for kwargs in ({"lr": 0.01}, {"lr": 0.02, "betas": (0.8, 0.95), "weight_decay": 0.1}):
            got, state = self._run(lion, 6, **kwargs)
            want, ref_state = self._run(lion_ref, 6, **kwargs)
            assert_close(got, want, rtol=1e-12, atol=1e-12)
            assert_close(state["exp_avg"], ref_state["exp_avg"], rtol=1e-12, atol=1e-12)

    def test_first_step_by_hand(self) -> None:
        weight = torch.nn.Parameter(torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64))
        optimizer = lion.Lion([weight], lr=0.1, betas=(0.9, 0.99), weight_decay=0.5)
        weight.grad = torch.tensor([0.3, -0.2, 0.0], dtype=torch.float64)
        optimizer.step()
        # decay: w * (1 - 0.1 * 0.5); direction: sign(0.9 * 0 + 0.1 * g)
        decayed = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64) * 0.95
        expected = decayed - 0.1 * torch.tensor([1.0, -1.0, 0.0], dtype=torch.float64)
        assert_close(weight.detach(), expected, rtol=1e-12, atol=1e-12)
        assert_close(optimizer.state[weight]["exp_avg"], 0.01 * weight.grad, rtol=1e-12, atol=1e-12)

    def test_momentum_weights_the_direction_and_is_kept(self) -> None:
        weight = torch.nn.Parameter(torch.zeros(2, dtype=torch.float64))
        optimizer = lion.Lion([weight], lr=1.0, betas=(0.5, 0.9))
        weight.grad = torch.tensor([1.0, -1.0], dtype=torch.float64)
        optimizer.step()
        weight.grad = torch.tensor([-0.01, 0.01], dtype=torch.float64)
        optimizer.step()
        # m after step 1 = 0.1 * g1 = (0.1, -0.1); step 2 direction = sign(0.5 * m + 0.5 * g2) = (1, -1)
        assert_close(weight.detach(), torch.tensor([-2.0, 2.0], dtype=torch.float64))
        assert_close(optimizer.state[weight]["exp_avg"], torch.tensor([0.089, -0.089], dtype=torch.float64))

    def test_the_gradient_weight_of_the_interpolation_decides_the_direction(self) -> None:
        # m = 0.1 after one step; then 0.9 * 0.1 + 0.1 * (-0.5) = 0.04 > 0: the weight moves down again,
        # although the new gradient points the other way (a larger gradient weight would flip the sign).
        weight = torch.nn.Parameter(torch.zeros(1, dtype=torch.float64))
        optimizer = lion.Lion([weight], lr=1.0, betas=(0.9, 0.9))
        weight.grad = torch.tensor([1.0], dtype=torch.float64)
        optimizer.step()
        weight.grad = torch.tensor([-0.5], dtype=torch.float64)
        optimizer.step()
        assert_close(weight.detach(), torch.tensor([-2.0], dtype=torch.float64))
        assert_close(optimizer.state[weight]["exp_avg"], torch.tensor([0.04], dtype=torch.float64))

    def test_parameter_groups_closure_and_skipped_parameters(self) -> None:
        a = torch.nn.Parameter(torch.ones(3, dtype=torch.float64))
        b = torch.nn.Parameter(torch.ones(3, dtype=torch.float64))
        frozen = torch.nn.Parameter(torch.ones(3, dtype=torch.float64))
        optimizer = lion.Lion([{"params": [a]}, {"params": [b, frozen], "lr": 0.5}], lr=0.1)

        def closure() -> torch.Tensor:
            optimizer.zero_grad()
            loss = (a * 2.0).sum() + (b * -3.0).sum()
            loss.backward()
            return loss

        loss = optimizer.step(closure)
        self.assertAlmostEqual(float(loss), -3.0, places=12)
        assert_close(a.detach(), torch.full((3,), 0.9, dtype=torch.float64))
        assert_close(b.detach(), torch.full((3,), 1.5, dtype=torch.float64))
        assert_close(frozen.detach(), torch.ones(3, dtype=torch.float64))
        self.assertNotIn(frozen, optimizer.state)

    def test_state_dict_round_trip_continues_identically(self) -> None:
        weight = torch.nn.Parameter(self.start.clone())
        optimizer = lion.Lion([weight], lr=0.01, weight_decay=0.05)
        for _ in range(3):
            optimizer.zero_grad()
            quadratic(weight, self.target).backward()
            optimizer.step()
        saved = optimizer.state_dict()
        clone = torch.nn.Parameter(weight.detach().clone())
        restored = lion.Lion([clone], lr=0.01, weight_decay=0.05)
        restored.load_state_dict(saved)
        for opt, param in ((optimizer, weight), (restored, clone)):
            opt.zero_grad()
            quadratic(param, self.target).backward()
            opt.step()
        assert_close(clone.detach(), weight.detach(), rtol=1e-12, atol=1e-12)

    def test_training_reduces_the_loss(self) -> None:
        torch.manual_seed(3)
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)).double()
        x = torch.randn(64, 4, dtype=torch.float64)
        y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]], dtype=torch.float64)
        optimizer = lion.Lion(model.parameters(), lr=0.01)
        losses = []
        for _ in range(60):
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(float(loss))
        self.assertLess(losses[-1], 0.25 * losses[0])


if __name__ == "__main__":
    unittest.main()
