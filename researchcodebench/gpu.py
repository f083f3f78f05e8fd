"""GPUs: which ones this host has (``detect_gpus``), and whether a task's code asks for one
(``gpu_uses``), so that a task that needs a GPU is routed to the ``eval-gpu`` queue (docs/sandbox.md).

Plain Python: no Django. ``detect_gpus`` asks ``nvidia-smi`` (the NVIDIA driver's tool, present wherever a
container can be given NVIDIA devices); a host without it, or where it fails, has no GPU.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

#: How long ``nvidia-smi`` may take before the host counts as having no usable GPU.
NVIDIA_SMI_TIMEOUT_S = 10.0
_QUERY = ["--query-gpu=name,memory.total", "--format=csv,noheader"]


def detect_gpus(nvidia_smi: str = "nvidia-smi") -> list[dict[str, str]]:
    """One ``{"name", "memory"}`` per GPU ``nvidia-smi`` lists (e.g. ``{"name": "NVIDIA H200", "memory":
    "143771 MiB"}``); ``[]`` when the tool is missing, fails or times out."""
    executable = shutil.which(nvidia_smi)
    if executable is None:
        return []
    try:
        done = subprocess.run(
            [executable, *_QUERY], capture_output=True, text=True, timeout=NVIDIA_SMI_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    if done.returncode != 0:
        return []
    devices = []
    for line in done.stdout.splitlines():
        name, _, memory = line.rpartition(",")
        if name.strip() and memory.strip():
            devices.append({"name": name.strip()[:200], "memory": memory.strip()[:50]})
    return devices


@dataclass(frozen=True)
class GpuUse:
    """One place a task's code asks for a CUDA device: ``file:line`` and the expression, shortened."""

    file: str
    line: int
    code: str


def _is_cuda(node: ast.AST) -> bool:
    """A string literal naming a CUDA device: ``"cuda"``, ``"cuda:0"``."""
    return (
        isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.split(":")[0] == "cuda"
    )


def _uses_in(source: str) -> list[tuple[int, ast.AST]]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    found: list[tuple[int, ast.AST]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        attribute = func.attr if isinstance(func, ast.Attribute) else None
        name = func.id if isinstance(func, ast.Name) else attribute
        # x.cuda(), torch.device("cuda"), x.to("cuda"), any call with device="cuda"
        if (
            attribute == "cuda"
            or (name in ("device", "to") and node.args and _is_cuda(node.args[0]))
            or any(k.arg == "device" and _is_cuda(k.value) for k in node.keywords)
        ):
            found.append((node.lineno, node))
    return found


def gpu_uses(task_root: str | Path, files: Iterable[str]) -> list[GpuUse]:
    """Every call in the task's Python ``files`` (paths relative to ``task_root``) that asks for a CUDA
    device, in file and line order. Calls inside a test of ``torch.cuda.is_available()`` count too: the
    author meant the GPU to be used where there is one."""
    root = Path(task_root)
    uses: list[GpuUse] = []
    for rel in sorted(files):
        if not rel.endswith(".py"):
            continue
        try:
            source = (root / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line, node in sorted(_uses_in(source), key=lambda item: item[0]):
            code = ast.get_source_segment(source, node) or ""
            uses.append(GpuUse(rel, line, " ".join(code.split())[:80]))
    return uses
