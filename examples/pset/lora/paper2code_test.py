"""Test for the LoRA task (two annotated files): LoRALinear numerics, initialisation, freezing,
merging, and adapter injection into a small model."""

import unittest

import torch
from torch import nn

import inject
import lora_layer


def assert_close(got: torch.Tensor, want: torch.Tensor, rtol: float = 1e-7, atol: float = 1e-9) -> None:
    """Tolerance comparison (cheaper to start than torch.testing.assert_close)."""
    assert got.shape == want.shape, f"shape {tuple(got.shape)} != {tuple(want.shape)}"
    assert torch.allclose(got, want, rtol=rtol, atol=atol), f"{got} != {want}"


class Block(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d, bias=False)
        self.mlp = nn.Sequential()
        self.mlp.add_module("up", nn.Linear(d, 2 * d))
        self.mlp.add_module("q", nn.Linear(2 * d, d))
        self.norm = nn.LayerNorm(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.q(x) + self.k(x) * self.v(x) + self.mlp(x))


def randomise_b(model: nn.Module) -> None:
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, lora_layer.LoRALinear):
                m.lora_B.normal_()


class LoRALinearTest(unittest.TestCase):
    def setUp(self) -> None:
        torch.manual_seed(2021)
        self.base = nn.Linear(10, 6).double()
        self.x = torch.randn(4, 3, 10, dtype=torch.float64)

    def test_initialisation_and_freezing(self) -> None:
        layer = lora_layer.LoRALinear(self.base, r=4, alpha=16.0)
        self.assertAlmostEqual(layer.scaling, 4.0)
        self.assertEqual(tuple(layer.lora_A.shape), (4, 10))
        self.assertEqual(tuple(layer.lora_B.shape), (6, 4))
        self.assertTrue(torch.all(layer.lora_B == 0))
        self.assertGreater(float(layer.lora_A.detach().abs().sum()), 0.0)
        big = lora_layer.LoRALinear(nn.Linear(400, 3), r=5, alpha=5.0)
        self.assertAlmostEqual(float(big.lora_A.detach().std()), 1.0 / 5, delta=0.02)
        self.assertFalse(any(p.requires_grad for p in layer.base.parameters()))
        self.assertTrue(layer.lora_A.requires_grad and layer.lora_B.requires_grad)
        with self.assertRaises(ValueError):
            lora_layer.LoRALinear(nn.Linear(3, 3), r=0, alpha=1.0)
        self.assertEqual(lora_layer.LoRALinear(nn.Linear(3, 3), r=1, alpha=2.0).scaling, 2.0)

    def test_forward_matches_formula(self) -> None:
        layer = lora_layer.LoRALinear(self.base, r=3, alpha=6.0).double()
        with torch.no_grad():
            assert_close(layer(self.x), self.base(self.x))
            layer.lora_B.normal_()
            want = self.x @ self.base.weight.T + self.base.bias + 2.0 * (self.x @ layer.lora_A.T @ layer.lora_B.T)
            assert_close(layer(self.x), want, rtol=1e-10, atol=1e-10)
            assert_close(layer.delta_weight(), 2.0 * layer.lora_B @ layer.lora_A)

    def test_merge_and_unmerge(self) -> None:
        layer = lora_layer.LoRALinear(self.base, r=2, alpha=3.0).double()
        original = self.base.weight.detach().clone()
        with torch.no_grad():
            layer.lora_B.normal_()
            before = layer(self.x)
            layer.merge()
            layer.merge()  # merging twice must not add the update twice
            self.assertTrue(layer.merged)
            assert_close(self.base.weight, original + 1.5 * layer.lora_B @ layer.lora_A)
            assert_close(layer(self.x), before, rtol=1e-10, atol=1e-10)
            layer.unmerge()
            layer.unmerge()
            self.assertFalse(layer.merged)
            assert_close(self.base.weight, original, rtol=1e-12, atol=1e-12)
            assert_close(layer(self.x), before, rtol=1e-10, atol=1e-10)

    def test_gradients_reach_only_adapter(self) -> None:
        layer = lora_layer.LoRALinear(self.base, r=2, alpha=2.0).double()
        layer(self.x).pow(2).sum().backward()
        self.assertIsNone(self.base.weight.grad)
        self.assertGreater(float(layer.lora_B.grad.abs().sum()), 0.0)

    def test_dropout_only_on_adapter_path_in_training(self) -> None:
        layer = lora_layer.LoRALinear(self.base, r=2, alpha=2.0, dropout=0.5).double()
        with torch.no_grad():
            layer.lora_B.normal_()
            layer.eval()
            clean = layer(self.x)
            layer.train()
            torch.manual_seed(0)
            noisy = layer(self.x)
        self.assertGreater(float((noisy - clean).abs().max()), 1e-6)
        assert_close(clean, self.base(self.x) + layer.scaling * (self.x @ layer.lora_A.T @ layer.lora_B.T))


class InjectTest(unittest.TestCase):
    def test_inject_targets_freeze_and_count(self) -> None:
        torch.manual_seed(5)
        model = Block(8).double()
        x = torch.randn(5, 8, dtype=torch.float64)
        with torch.no_grad():
            before = model(x)
        returned = inject.inject_lora(model, {"q", "v"}, r=2, alpha=4.0)
        self.assertIs(returned, model)
        self.assertIsInstance(model.q, lora_layer.LoRALinear)
        self.assertIsInstance(model.v, lora_layer.LoRALinear)
        self.assertIsInstance(model.mlp.q, lora_layer.LoRALinear)
        self.assertIsInstance(model.k, nn.Linear)
        self.assertIsInstance(model.mlp.up, nn.Linear)
        self.assertFalse(model.norm.weight.requires_grad)
        self.assertFalse(model.k.weight.requires_grad)
        # q: 2 * (8 + 8), v: 2 * (8 + 8), mlp.q: 2 * (16 + 8)
        self.assertEqual(inject.trainable_parameter_count(model), 32 + 32 + 48)
        with torch.no_grad():
            assert_close(model(x), before, rtol=1e-12, atol=1e-12)

    def test_set_merged_round_trip(self) -> None:
        torch.manual_seed(6)
        model = inject.inject_lora(Block(8).double(), {"q", "k"}, r=3, alpha=3.0)
        randomise_b(model)
        x = torch.randn(4, 8, dtype=torch.float64)
        weight = model.k.base.weight.detach().clone()
        with torch.no_grad():
            adapted = model(x)
            inject.set_merged(model, True)
            self.assertTrue(model.q.merged and model.k.merged and model.mlp.q.merged)
            self.assertGreater(float((model.k.base.weight - weight).abs().max()), 1e-6)
            assert_close(model(x), adapted, rtol=1e-10, atol=1e-10)
            inject.set_merged(model, False)
            self.assertFalse(model.q.merged or model.k.merged)
            assert_close(model.k.base.weight, weight, rtol=1e-12, atol=1e-12)
            assert_close(model(x), adapted, rtol=1e-10, atol=1e-10)
        self.assertEqual(inject.trainable_parameter_count(nn.Linear(3, 2)), 8)


if __name__ == "__main__":
    unittest.main()
