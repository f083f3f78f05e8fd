"""No false positives on real code (issues 18 and 32; researchcodebench/corpus.py, bench/screen_corpus.py).

Every function body of torch's own ``optim``, ``nn/modules`` and ``distributions`` (installed in the
evaluation environment, so always here) is screened as a completion in the context of its own file: at most
0.2 % of them may be refused, each for a construct the screen keeps (what protects the confirmation and the
sandbox), never for ordinary code. The same code then runs under the audit hook, its own files judged as the
completion: no event of torch's optimizers, schedulers, layers or distributions is refused.
bench/screen_corpus.py adds transformers, timm, diffusers and einops from the package index (docs/integrity.md
has its numbers).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from researchcodebench import corpus

from .runner_fixtures import eval_python

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def torch_site() -> Path:
    import subprocess

    done = subprocess.run(
        [eval_python(), "-c", "import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))"],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.fail(f"the evaluation interpreter has no torch: {done.stderr[-300:]}", pytrace=False)
    return Path(done.stdout.strip())


def test_every_flag_on_torchs_own_sources_is_a_real_construct(torch_site):
    files = sorted(
        {
            p
            for sub in ("torch/optim", "torch/nn/modules", "torch/distributions")
            for p in (torch_site / sub).rglob("*.py")
        }
    )
    result = corpus.screen_files([(p, "torch", torch_site) for p in files], python=eval_python())
    assert result.bodies > 1500 and result.unparsable == 0
    assert [(b.file, b.name, [f.construct for f in fs]) for b, fs in result.not_kept()] == []
    # nn.Module's machinery (state_dict through __dict__, containers through computed getattr, hooks) is all
    # allowed now: guard against a screen that grows again.
    assert result.rate <= 0.002, corpus.report(result)


def test_torchs_own_code_runs_under_the_audit_hook_without_a_refusal():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import screen_corpus
    finally:
        sys.path.remove(str(ROOT / "bench"))
    checked = screen_corpus.runtime(eval_python())
    assert checked["exercised"] >= 50
    assert checked["flags"] == [] and checked["failed"] == []


def test_a_flag_is_classified_by_the_kind_its_reason_names():
    assert corpus.kind(
        "use of sys.modules (reached as timm.sys.modules) (the module table and the import machinery, x)"
    ) == ("the module table and the import machinery")
    assert corpus.kind("import of paper2code_test, which belongs to the test or holds an oracle") != "other"
    assert corpus.kind("getattr() with a computed attribute name") == "other"
    assert (
        corpus.normalise("use of sys.modules (reached as timm.sys.modules) (kind)")
        == "use of sys.modules (kind)"
    )
