"""The honesty battery's completions (tests/researchcodebench/test_honesty.py): correct answers to snippets of
the example tasks, written as a research engineer would, each in one or more common idioms that the screen and
the audit hook used to refuse (issue 32). Each replaces its snippet's reference code whole and computes the
same result.

``PROGRAMS``: name -> (task id, snippet name, the idioms it uses, code without indentation).
"""

from __future__ import annotations

PROGRAMS: dict[str, tuple[str, str, tuple[str, ...], str]] = {
    # ---------------------------------------------------------------- rmsnorm
    "rmsnorm-dataclass-config": (
        "rmsnorm",
        "root mean square",
        ("@dataclass", "dataclass __eq__", "object.__setattr__"),
        """
from dataclasses import dataclass, field


@dataclass(frozen=True)
class RMSConfig:
    dim: int
    p: float = -1.0
    features: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        partial = 0.0 < self.p < 1.0
        object.__setattr__(self, "features", int(self.dim * self.p) if partial else self.dim)


config = RMSConfig(self.dim, self.p)
assert config == RMSConfig(dim=self.dim, p=self.p)
squared_norm = x[..., : config.features].pow(2).sum(dim=-1, keepdim=True)
return torch.sqrt(squared_norm / config.features)
""",
    ),
    "rmsnorm-cudnn-flags": (
        "rmsnorm",
        "root mean square",
        ("torch.backends.cudnn.benchmark = False", "torch.backends.cudnn.deterministic = True"),
        """
torch.backends.cudnn.benchmark = False
torch.backends.cudnn.deterministic = True
k = int(self.dim * self.p) if 0.0 < self.p < 1.0 else self.dim
return torch.sqrt(x[..., :k].pow(2).sum(dim=-1, keepdim=True) / k)
""",
    ),
    "rmsnorm-torch-compile": (
        "rmsnorm",
        "root mean square",
        ("torch.compile",),
        """
def mean_square(values: torch.Tensor) -> torch.Tensor:
    return values.pow(2).sum(dim=-1, keepdim=True) / values.shape[-1]


k = int(self.dim * self.p) if 0.0 < self.p < 1.0 else self.dim
compiled = torch.compile(mean_square, backend="eager", dynamic=False)
return torch.sqrt(compiled(x[..., :k]))
""",
    ),
    "rmsnorm-checkpoint": (
        "rmsnorm",
        "root mean square",
        ("torch.utils.checkpoint",),
        """
from torch.utils.checkpoint import checkpoint


def mean_square(values: torch.Tensor) -> torch.Tensor:
    return values.pow(2).sum(dim=-1, keepdim=True) / values.shape[-1]


k = int(self.dim * self.p) if 0.0 < self.p < 1.0 else self.dim
return torch.sqrt(checkpoint(mean_square, x[..., :k], use_reentrant=False))
""",
    ),
    "rmsnorm-inspect-signature": (
        "rmsnorm",
        "root mean square",
        ("inspect.signature", "inspect.Parameter"),
        """
import inspect


def sum_of_squares(values: torch.Tensor, *, dim: int = -1, keepdim: bool = True) -> torch.Tensor:
    return values.pow(2).sum(dim=dim, keepdim=keepdim)


options = {
    name: parameter.default
    for name, parameter in inspect.signature(sum_of_squares).parameters.items()
    if parameter.kind is inspect.Parameter.KEYWORD_ONLY
}
k = int(self.dim * self.p) if 0.0 < self.p < 1.0 else self.dim
return torch.sqrt(sum_of_squares(x[..., :k], **options) / k)
""",
    ),
    "rmsnorm-getattr-from-config": (
        "rmsnorm",
        "root mean square",
        ("getattr(torch, name) with a name from a config", "getattr as a value"),
        """
config = {"reduce": "sum", "root": "sqrt"}
k = int(self.dim * self.p) if 0.0 < self.p < 1.0 else self.dim
lookup = getattr
reduce_fn, root_fn = (lookup(torch, config[key]) for key in ("reduce", "root"))
return root_fn(reduce_fn(x[..., :k].pow(2), dim=-1, keepdim=True) / k)
""",
    ),
    "rmsnorm-forward-setattr-fstring": (
        "rmsnorm",
        "rmsnorm forward",
        ('setattr(self, f"...")', "self.__dict__", "vars(self)"),
        """
rms = self.root_mean_square(x)
for name, value in {"rms": rms, "denominator": rms + self.eps}.items():
    setattr(self, f"_last_{name}", value.detach())
assert "_last_rms" in vars(self) or "_last_rms" in self.__dict__ or hasattr(self, "_last_rms")
out = self.weight * (x / (rms + self.eps))
if self.bias is not None:
    out = out + self.bias
return out
""",
    ),
    "rmsnorm-torch-function-subclass": (
        "rmsnorm",
        "normalise and apply gain",
        ("__torch_function__ on the completion's own tensor subclass", "class attribute written at run time"),
        """
class Counted(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.calls = getattr(cls, "calls", 0) + 1
        return super().__torch_function__(func, types, args, kwargs or {})


x_hat = (x.as_subclass(Counted) / (rms + self.eps)).as_subclass(torch.Tensor)
out = self.weight * x_hat
""",
    ),
    # ---------------------------------------------------------------- glu-variants
    "glu-registry-by-name": (
        "glu-variants",
        "gate activation",
        ("registry keyed by name", "inspect.isclass"),
        """
import inspect

gates = {
    "glu": torch.sigmoid,
    "bilinear": nn.Identity,
    "reglu": torch.relu,
    "geglu": lambda t: 0.5 * t * (1.0 + torch.erf(t / math.sqrt(2.0))),
    "swiglu": lambda t: t * torch.sigmoid(self.beta * t),
}
gate = gates[self.variant]
return gate()(z) if inspect.isclass(gate) else gate(z)
""",
    ),
    "glu-getattr-functional": (
        "glu-variants",
        "gate activation",
        ("getattr(F, name) with a name from a config", "functional API"),
        """
import torch.nn.functional as F

activation_of = {"glu": "sigmoid", "bilinear": None, "reglu": "relu", "geglu": "gelu", "swiglu": None}
name = activation_of[self.variant]
if self.variant == "swiglu":
    return z * torch.sigmoid(self.beta * z)
if name is None:
    return z
if name == "gelu":
    return 0.5 * z * (1.0 + torch.erf(z / math.sqrt(2.0)))
return getattr(F, name)(z)
""",
    ),
    "glu-checkpoint": (
        "glu-variants",
        "gated feed-forward",
        ("torch.utils.checkpoint",),
        """
import torch.utils.checkpoint


def hidden_units(inputs: torch.Tensor) -> torch.Tensor:
    return self.gate(self.w(inputs)) * self.v(inputs)


hidden = torch.utils.checkpoint.checkpoint(hidden_units, x, use_reentrant=False)
return self.w2(hidden)
""",
    ),
    "glu-enum-globals": (
        "glu-variants",
        "gate activation",
        ("Enum", "globals()"),
        """
import enum


class Gate(enum.Enum):
    GLU = "glu"
    BILINEAR = "bilinear"
    REGLU = "reglu"
    GEGLU = "geglu"
    SWIGLU = "swiglu"


assert {g.value for g in Gate} == set(globals()["VARIANTS"])
gate = Gate(self.variant)
if gate is Gate.GLU:
    return torch.sigmoid(z)
if gate is Gate.BILINEAR:
    return z
if gate is Gate.REGLU:
    return torch.clamp(z, min=0.0)
if gate is Gate.GEGLU:
    return 0.5 * z * (1.0 + torch.erf(z / math.sqrt(2.0)))
return z * torch.sigmoid(self.beta * z)
""",
    ),
    "glu-lru-cache": (
        "glu-variants",
        "parameter-matched hidden width",
        ("functools.lru_cache", "fractions"),
        """
from fractions import Fraction
from functools import lru_cache


@lru_cache(maxsize=None)
def matched(width: int) -> int:
    return round(Fraction(2, 3) * width)


return matched(d_ff_dense)
""",
    ),
    # ---------------------------------------------------------------- focal-loss
    "focal-namedtuple-partial": (
        "focal-loss",
        "sigmoid focal loss",
        ("NamedTuple", "functools.partial", "registry keyed by name"),
        """
from functools import partial
from typing import NamedTuple


class Terms(NamedTuple):
    log_p_t: np.ndarray
    p_t: np.ndarray
    alpha_t: np.ndarray


logits = np.asarray(logits, dtype=np.float64)
targets = np.asarray(targets, dtype=np.float64)
valid = targets >= 0
y = np.where(valid, targets, 0.0)
by_class = partial(np.where, y == 1.0)
log_p_t = log_sigmoid((2.0 * y - 1.0) * logits)
terms = Terms(log_p_t, np.exp(log_p_t), by_class(alpha, 1.0 - alpha) if alpha >= 0 else np.ones_like(y))
loss = np.where(valid, -terms.alpha_t * (1.0 - terms.p_t) ** gamma * terms.log_p_t, 0.0)
reductions = {
    "none": lambda values: values,
    "sum": lambda values: float(values.sum()),
    "mean": lambda values: float(values.sum() / max(int(valid.sum()), 1)),
    "normalized": lambda values: float(values.sum() / max(float((y[valid] == 1.0).sum()), 1.0)),
}
if reduction not in reductions:
    raise ValueError(f"unknown reduction {reduction!r}")
return reductions[reduction](loss)
""",
    ),
    "focal-reduction-registry": (
        "focal-loss",
        "reduction",
        ("registry keyed by name (decorator)",),
        """
reducers = {}


def register(name):
    def add(fn):
        reducers[name] = fn
        return fn

    return add


@register("none")
def _none(values):
    return values


@register("sum")
def _sum(values):
    return float(values.sum())


@register("mean")
def _mean(values):
    return float(values.sum() / max(int(valid.sum()), 1))


@register("normalized")
def _normalized(values):
    return float(values.sum() / max(float((y[valid] == 1.0).sum()), 1.0))


try:
    reducer = reducers[reduction]
except KeyError:
    raise ValueError(f"unknown reduction {reduction!r}") from None
return reducer(loss)
""",
    ),
    "focal-func-grad-vmap": (
        "focal-loss",
        "focal loss gradient",
        ("torch.func.grad", "torch.func.vmap", "functional API"),
        """
import torch
from torch.func import grad, vmap

x = torch.as_tensor(np.asarray(logits, dtype=np.float64))
t = torch.as_tensor(np.asarray(targets, dtype=np.float64))


def entry_loss(logit: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    y = torch.clamp(target, min=0.0)
    log_p_t = torch.nn.functional.logsigmoid((2.0 * y - 1.0) * logit)
    alpha_t = alpha * y + (1.0 - alpha) * (1.0 - y) if alpha >= 0 else torch.ones_like(y)
    return -alpha_t * (1.0 - log_p_t.exp()) ** gamma * log_p_t


per_entry = vmap(grad(entry_loss))(x.reshape(-1), t.reshape(-1)).reshape(x.shape)
return np.where(t.numpy() >= 0, per_entry.numpy(), 0.0)
""",
    ),
    "focal-eq-repr-helper": (
        "focal-loss",
        "prior probability bias",
        ("__eq__ and __repr__ on a helper class",),
        """
class Prior:
    def __init__(self, pi: float) -> None:
        self.pi = float(pi)

    def __repr__(self) -> str:
        return f"Prior(pi={self.pi!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Prior) and other.pi == self.pi

    def __hash__(self) -> int:
        return hash(self.pi)

    def logit(self) -> float:
        return float(-np.log((1.0 - self.pi) / self.pi))


prior = Prior(pi)
assert prior == Prior(pi) and repr(prior).startswith("Prior(")
return prior.logit()
""",
    ),
    # ---------------------------------------------------------------- label-smoothing
    "label-smoothing-einops": (
        "label-smoothing",
        "smoothed label distribution",
        ("einops",),
        """
from einops import rearrange, repeat

n = labels.shape[0]
classes = repeat(torch.arange(num_classes), "k -> n k", n=n)
is_true = classes == rearrange(labels, "n -> n 1")
on = torch.full((n, num_classes), epsilon / num_classes + (1.0 - epsilon), dtype=torch.float64)
return torch.where(is_true, on, torch.full_like(on, epsilon / num_classes))
""",
    ),
    "label-smoothing-vmap": (
        "label-smoothing",
        "label-smoothed cross entropy",
        ("torch.func.vmap",),
        """
from torch.func import vmap

keep = labels != ignore_index
logits, labels = logits[keep], labels[keep]
if labels.numel() == 0:
    return logits.sum() * 0.0


def row_loss(row: torch.Tensor, label: torch.Tensor) -> torch.Tensor:
    log_probs = torch.log_softmax(row, dim=-1)
    nll = -log_probs.gather(0, label.unsqueeze(0)).squeeze(0)
    return (1.0 - epsilon) * nll + epsilon * -log_probs.mean(dim=-1)


return vmap(row_loss)(logits, labels).mean()
""",
    ),
    "label-smoothing-typeddict": (
        "label-smoothing",
        "mix and average",
        ("TypedDict", "typing.get_type_hints"),
        """
from typing import TypedDict, get_type_hints


class Mix(TypedDict):
    true_label: "float"
    uniform: "float"


assert get_type_hints(Mix) == {"true_label": float, "uniform": float}
mix: Mix = {"true_label": 1.0 - epsilon, "uniform": epsilon}
loss = mix["true_label"] * nll + mix["uniform"] * uniform
return loss.mean()
""",
    ),
    # ---------------------------------------------------------------- soft-dtw
    "soft-dtw-dataloader": (
        "soft-dtw",
        "pairwise squared distances",
        ("DataLoader",),
        """
from torch.utils.data import DataLoader, TensorDataset

rows = []
for (chunk,) in DataLoader(TensorDataset(x), batch_size=4, shuffle=False):
    diff = chunk.unsqueeze(1) - y.unsqueeze(0)
    rows.append((diff * diff).sum(dim=-1))
return torch.cat(rows, dim=0)
""",
    ),
    "soft-dtw-itertools": (
        "soft-dtw",
        "fill the table",
        ("itertools.product",),
        """
import itertools

for i, j in itertools.product(range(1, n + 1), range(1, m + 1)):
    best = soft_min(rows[i - 1][j - 1], rows[i - 1][j], rows[i][j - 1], gamma)
    rows[i][j] = distances[i - 1, j - 1] + best
""",
    ),
    "soft-dtw-autograd-function": (
        "soft-dtw",
        "soft minimum",
        ("torch.autograd.Function",),
        """
class SoftMin(torch.autograd.Function):
    @staticmethod
    def forward(ctx, values: torch.Tensor, temperature: float) -> torch.Tensor:
        scaled = values / -temperature
        ctx.save_for_backward(torch.softmax(scaled, dim=0))
        return -temperature * torch.logsumexp(scaled, dim=0)

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):
        (weights,) = ctx.saved_tensors
        return grad_out * weights, None


return SoftMin.apply(torch.stack([a, b, c]), gamma)
""",
    ),
    "soft-dtw-functools-reduce": (
        "soft-dtw",
        "table filled by index",
        ("functools.reduce", "generator of cells"),
        """
from functools import reduce

table = torch.full((n + 1, m + 1), float("inf"), dtype=distances.dtype)
table[0][0] = 0.0


def fill(tbl: torch.Tensor, cell: tuple[int, int]) -> torch.Tensor:
    i, j = cell
    tbl[i][j] = distances[i - 1, j - 1] + soft_min(tbl[i - 1][j - 1], tbl[i - 1][j], tbl[i][j - 1], gamma)
    return tbl


return reduce(fill, ((i, j) for i in range(1, n + 1) for j in range(1, m + 1)), table)
""",
    ),
    # ---------------------------------------------------------------- dpo
    "dpo-namedtuple-output": (
        "dpo",
        "dpo objective",
        ("NamedTuple", "functional API"),
        """
from typing import NamedTuple


class DPOOutput(NamedTuple):
    losses: torch.Tensor
    chosen_rewards: torch.Tensor
    rejected_rewards: torch.Tensor


chosen_log_ratio, rejected_log_ratio = policy_chosen - ref_chosen, policy_rejected - ref_rejected
margin = beta * (chosen_log_ratio - rejected_log_ratio)
return DPOOutput(
    losses=-F.logsigmoid(margin),
    chosen_rewards=beta * chosen_log_ratio.detach(),
    rejected_rewards=beta * rejected_log_ratio.detach(),
)
""",
    ),
    "dpo-jit-script": (
        "dpo",
        "per-token log-probabilities",
        ("torch.jit.script",),
        """
@torch.jit.script
def gather_log_probs(scores: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return torch.gather(torch.log_softmax(scores, dim=-1), 2, targets.unsqueeze(-1)).squeeze(-1)


token_log_probs = gather_log_probs(logits, labels)
""",
    ),
    # ---------------------------------------------------------------- lora
    "lora-attrgetter-methodcaller": (
        "lora",
        "count trainable parameters",
        ("operator.attrgetter", "operator.methodcaller"),
        """
from operator import attrgetter, methodcaller

trainable = filter(attrgetter("requires_grad"), model.parameters())
return sum(map(methodcaller("numel"), trainable))
""",
    ),
    "lora-setattr-fstring": (
        "lora",
        "low-rank factors",
        ('setattr(self, f"lora_{name}", ...)',),
        """
like = {"dtype": base.weight.dtype, "device": base.weight.device}
shapes = {"A": (r, base.in_features), "B": (base.out_features, r)}
for name, shape in shapes.items():
    value = torch.randn(*shape, **like) / r if name == "A" else torch.zeros(*shape, **like)
    setattr(self, f"lora_{name}", nn.Parameter(value))
""",
    ),
    "lora-vars-update": (
        "lora",
        "scaling factor",
        ("vars(self)", "self.__dict__"),
        """
vars(self).update(scaling=alpha / r)
assert self.__dict__["scaling"] == alpha / r
""",
    ),
    "lora-hasattr-getattr-action": (
        "lora",
        "merge or unmerge all adapters",
        ("hasattr(x, k) with a computed name", "getattr(module, action)"),
        """
action = "merge" if merged else "unmerge"
for module in model.modules():
    if isinstance(module, LoRALinear) and hasattr(module, action):
        getattr(module, action)()
""",
    ),
    # ---------------------------------------------------------------- roformer
    "roformer-dunder-getattr-config": (
        "roformer",
        "rotation frequencies",
        ("__getattr__ on the completion's own class",),
        """
class Config(dict):
    def __getattr__(self, name: str):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


config = Config(head_dim=head_dim, base=base)
if config.head_dim % 2 != 0:
    raise ValueError(f"head_dim must be even for rotary embeddings, got {head_dim}")
exponents = torch.arange(0, config.head_dim // 2, dtype=torch.float64) * 2.0 / config.head_dim
return config.base ** (-exponents)
""",
    ),
    "roformer-einops": (
        "roformer",
        "interleave rotated pairs",
        ("einops",),
        """
from einops import rearrange

return rearrange(torch.stack((rot_even, rot_odd), dim=-1), "... d two -> ... (d two)")
""",
    ),
    "roformer-three-argument-type": (
        "roformer",
        "position times frequency angles",
        ("three-argument type()",),
        """
Angles = type("Angles", (tuple,), {"cos": property(lambda s: s[0]), "sin": property(lambda s: s[1])})
angles = positions.to(torch.float64)[:, None] * theta[None, :]
pair = Angles((torch.cos(angles), torch.sin(angles)))
return pair.cos, pair.sin
""",
    ),
    # ---------------------------------------------------------------- lion
    "lion-dataclass-step": (
        "lion",
        "lion step for one parameter",
        ("@dataclass", "dict.setdefault"),
        """
from dataclasses import dataclass


@dataclass(frozen=True)
class Hyper:
    lr: float
    beta1: float
    beta2: float
    weight_decay: float


hp = Hyper(lr, beta1, beta2, group["weight_decay"])
state = self.state[param]
if len(state) == 0:
    state["exp_avg"] = torch.zeros_like(param)
exp_avg = state["exp_avg"]
param.mul_(1.0 - hp.lr * hp.weight_decay)
param.add_(exp_avg.mul(hp.beta1).add(grad, alpha=1.0 - hp.beta1).sign_(), alpha=-hp.lr)
exp_avg.mul_(hp.beta2).add_(grad, alpha=1.0 - hp.beta2)
""",
    ),
}
