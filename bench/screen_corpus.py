"""The screen's false-positive corpus on real ML code (issue 18 item 3; researchcodebench/corpus.py).

Every function body of these sources is screened as a completion in the context of its own file, and its
attribute chains resolved against the real libraries in the evaluation interpreter:

* transformers' modeling files (``transformers/models/*/modeling_*.py``), timm's models and layers,
  diffusers' models and schedulers and einops, from their wheels (downloaded once with pip into
  ``var/corpus/wheels``, pinned below; nothing is installed);
* torch's own ``optim``, ``nn/modules`` and ``distributions`` (the evaluation environment's torch).

``--runtime`` also runs torch's optimizers, learning-rate schedulers, layers and distributions with the
harness's audit hook treating their own files as the completion (every event they raise on their own
behalf is judged as if a model had written them). Prints the counts, the rate and every construct that
flagged a body, per source and in all; ``--json FILE`` writes them.

    .venv/bin/python bench/screen_corpus.py [--python .venv-eval/bin/python] [--runtime] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from researchcodebench import corpus  # noqa: E402
from researchcodebench.environments import default_python  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
WHEELS = {
    "transformers": "transformers==5.24.0",
    "timm": "timm==1.0.31",
    "diffusers": "diffusers==0.42.1",
    "einops": "einops==0.8.2",
}
#: (package, glob patterns inside its wheel or site-packages folder)
SOURCES = {
    "transformers": ("transformers/models/*/modeling_*.py",),
    "timm": ("timm/models/*.py", "timm/layers/*.py"),
    "diffusers": ("diffusers/models/**/*.py", "diffusers/schedulers/*.py"),
    "einops": ("einops/*.py", "einops/layers/*.py", "einops/experimental/*.py"),
    "torch": ("torch/optim/**/*.py", "torch/optim/*.py", "torch/nn/modules/*.py", "torch/distributions/*.py"),
}


def fetch(folder: Path) -> dict[str, Path]:
    """The wheels, downloaded when missing (pip, no dependencies, binary only)."""
    folder.mkdir(parents=True, exist_ok=True)
    found: dict[str, Path] = {}
    for name, pin in WHEELS.items():
        version = pin.split("==", 1)[1]
        wheel = next(iter(sorted(folder.glob(f"{name}-{version}-*.whl"))), None)
        if wheel is None:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "--no-deps",
                    "--only-binary=:all:",
                    "-q",
                    "-d",
                    str(folder),
                    pin,
                ],
                check=True,
            )
            wheel = next(iter(sorted(folder.glob(f"{name}-{version}-*.whl"))))
        found[name] = wheel
    return found


def extract(wheel: Path, patterns: tuple[str, ...], into: Path) -> list[Path]:
    into.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as archive:
        names = [n for n in archive.namelist() if n.endswith(".py")]
        chosen = sorted({n for n in names for p in patterns if Path(n).match(p)})
        for name in chosen:
            archive.extract(name, into)
    return [into / name for name in chosen]


def torch_sources(python: str) -> tuple[Path, list[Path]]:
    done = subprocess.run(
        [python, "-c", "import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))"],
        capture_output=True,
        text=True,
        check=True,
    )
    site = Path(done.stdout.strip())
    files = sorted({p for pattern in SOURCES["torch"] for p in site.glob(pattern)})
    return site, files


RUNTIME_CHECK = r"""
import json, os, sys, types
import torch
harness = types.ModuleType("rcb_harness")
exec(compile(open(sys.argv[1]).read(), "<rcb-harness>", "exec"), harness.__dict__)
site = os.path.dirname(os.path.dirname(torch.__file__))
flags = []
failed = []

class Recorder(harness._AuditHook):
    def _end(self, event, reason):
        flags.append(reason)

def watch(folder, file):
    hook = Recorder({"workdir": os.path.join(site, folder), "entry": "none", "nonce": "corpus",
                     "completion": {"file": file, "first": 1, "last": 10 ** 9}, "completed_real": [file]})
    return hook

hooks = []
def judged(path):
    hook = watch(os.path.dirname(path), path)
    hooks.append(hook)
    return hook

current = [None]
sys.addaudithook(lambda e, a: current[0](e, a) if current[0] is not None else None)

def run(path, action):
    current[0] = judged(path)
    try:
        action()
    except Exception as exc:
        failed.append(f"{os.path.basename(path)}: {type(exc).__name__}: {exc}"[:300])
    finally:
        current[0] = None

exercised = 0
torch.manual_seed(0)
import torch.optim as optim
for name in ("SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "ASGD", "NAdam", "RAdam", "Rprop", "LBFGS"):
    cls = getattr(optim, name)
    def step(cls=cls):
        w = torch.nn.Parameter(torch.randn(4, 3))
        opt = cls([w], lr=0.01)
        for _ in range(3):
            def closure():
                opt.zero_grad()
                loss = (w ** 2).sum()
                loss.backward()
                return loss
            opt.step(closure)
        opt.state_dict()
    run(sys.modules[cls.__module__].__file__, step)
    exercised += 1
from torch.optim import lr_scheduler
for name, kwargs in (("StepLR", {"step_size": 2}), ("ExponentialLR", {"gamma": 0.9}), ("CosineAnnealingLR", {"T_max": 5}),
                     ("LambdaLR", {"lr_lambda": lambda e: 0.9 ** e}), ("OneCycleLR", {"max_lr": 0.1, "total_steps": 10}),
                     ("ReduceLROnPlateau", {}), ("LinearLR", {}), ("CyclicLR", {"base_lr": 0.01, "max_lr": 0.1})):
    def sched(name=name, kwargs=kwargs):
        w = torch.nn.Parameter(torch.randn(2))
        opt = optim.SGD([w], lr=0.1, momentum=0.9)
        s = getattr(lr_scheduler, name)(opt, **kwargs)
        for _ in range(4):
            opt.step()
            s.step(1.0) if name == "ReduceLROnPlateau" else s.step()
        s.state_dict()
    run(lr_scheduler.__file__, sched)
    exercised += 1
nn = torch.nn
layers = [nn.Linear(4, 3), nn.Conv1d(2, 3, 3), nn.Conv2d(2, 3, 3), nn.LayerNorm(4), nn.BatchNorm1d(4), nn.Dropout(0.1),
          nn.Embedding(10, 4), nn.LSTM(4, 3), nn.GRU(4, 3), nn.MultiheadAttention(4, 2), nn.TransformerEncoderLayer(4, 2, 8),
          nn.GELU(), nn.ReLU(), nn.Softmax(-1), nn.Sequential(nn.Linear(4, 4), nn.Tanh()), nn.ModuleList([nn.Linear(4, 4)]),
          nn.GroupNorm(2, 4), nn.Identity(), nn.SiLU(), nn.RMSNorm(4)]
inputs = {nn.Conv1d: lambda: torch.randn(1, 2, 5), nn.Conv2d: lambda: torch.randn(1, 2, 5, 5), nn.Embedding: lambda: torch.tensor([1, 2]),
          nn.LSTM: lambda: torch.randn(2, 1, 4), nn.GRU: lambda: torch.randn(2, 1, 4), nn.BatchNorm1d: lambda: torch.randn(3, 4),
          nn.GroupNorm: lambda: torch.randn(2, 4, 3)}
for layer in layers:
    def forward(layer=layer):
        x = inputs.get(type(layer), lambda: torch.randn(2, 4))()
        if isinstance(layer, nn.MultiheadAttention):
            out = layer(x.unsqueeze(0), x.unsqueeze(0), x.unsqueeze(0))[0]
        elif isinstance(layer, nn.ModuleList):
            out = layer[0](x)
        else:
            out = layer(x)
        out = out[0] if isinstance(out, tuple) else out
        if out.requires_grad:
            out.sum().backward()
        layer.state_dict(); repr(layer); layer.train(False); list(layer.named_modules())
    run(sys.modules[type(layer).__module__].__file__, forward)
    exercised += 1
import torch.distributions as D
for dist in (D.Normal(0.0, 1.0), D.Categorical(torch.tensor([0.2, 0.8])), D.Bernoulli(0.3), D.Beta(2.0, 3.0), D.Gamma(2.0, 1.0),
             D.MultivariateNormal(torch.zeros(2), torch.eye(2)), D.Dirichlet(torch.ones(3)), D.Uniform(0.0, 1.0), D.Poisson(2.0),
             D.Laplace(0.0, 1.0), D.Independent(D.Normal(torch.zeros(3), 1.0), 1)):
    def exercise(dist=dist):
        x = dist.sample((4,))
        dist.log_prob(x)
        try:
            dist.entropy()
            D.kl_divergence(dist, dist)
        except NotImplementedError:
            pass
    run(sys.modules[type(dist).__module__].__file__, exercise)
    exercised += 1
print(json.dumps({"exercised": exercised, "flags": flags, "failed": failed}))
"""


def runtime(python: str) -> dict:
    harness = ROOT / "researchcodebench" / "sandbox" / "_harness.py"
    done = subprocess.run(
        [python, "-I", "-c", RUNTIME_CHECK, str(harness)],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"},
    )
    if done.returncode != 0:
        raise SystemExit(f"the runtime check failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--python", default=default_python(), help="the evaluation interpreter (torch installed)"
    )
    parser.add_argument("--wheels", default=str(ROOT / "var" / "corpus" / "wheels"))
    parser.add_argument("--runtime", action="store_true", help="also run torch's code under the audit hook")
    parser.add_argument("--json", help="write the numbers to this file")
    args = parser.parse_args(argv)
    started = time.monotonic()
    wheels = fetch(Path(args.wheels))
    sources = Path(args.wheels).parent / "sources"
    groups: dict[str, list[tuple[Path, str, Path]]] = {}
    for name, wheel in wheels.items():
        files = extract(wheel, SOURCES[name], sources / name)
        groups[name] = [(path, name, sources / name) for path in files]
    site, torch_files = torch_sources(args.python)
    groups["torch"] = [(path, "torch", site) for path in torch_files]
    out: dict = {"groups": {}}
    everything = corpus.Result()
    for name, files in groups.items():
        result = corpus.screen_files(files, python=args.python)
        print(f"== {name}\n{corpus.report(result)}\n")
        out["groups"][name] = {
            "bodies": result.bodies,
            "files": result.files,
            "flagged": len(result.flagged),
            "rate": result.rate,
            "not_kept": len(result.not_kept()),
            "constructs": dict(result.constructs()),
        }
        everything.bodies += result.bodies
        everything.files += result.files
        everything.unparsable += result.unparsable
        everything.flagged += result.flagged
    research = [g for g in out["groups"] if g != "torch"]
    research_bodies = sum(out["groups"][g]["bodies"] for g in research)
    research_flagged = sum(out["groups"][g]["flagged"] for g in research)
    print(f"== all\n{corpus.report(everything, examples=1)}\n")
    print(
        f"research code (transformers, timm, diffusers, einops): {research_flagged} of {research_bodies} bodies "
        f"flagged ({100 * research_flagged / max(1, research_bodies):.2f} %)"
    )
    out["all"] = {
        "bodies": everything.bodies,
        "flagged": len(everything.flagged),
        "rate": everything.rate,
        "not_kept": len(everything.not_kept()),
        "constructs": dict(everything.constructs()),
        "research_bodies": research_bodies,
        "research_flagged": research_flagged,
    }
    if args.runtime:
        checked = runtime(args.python)
        print(
            f"runtime: {checked['exercised']} exercises of torch's code, {len(checked['flags'])} refusals, "
            f"{len(checked['failed'])} exercises that failed on their own"
        )
        for flag in checked["flags"] + checked["failed"]:
            print("  " + flag)
        out["runtime"] = checked
    print(f"({time.monotonic() - started:.1f} s)")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
