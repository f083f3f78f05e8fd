"""Shared by the contributions tests: pset folders for the catalogue tests (the examples, copied; the
hostile fixture; small hand-made ones) and the helpers of the workflow's service tests (maintainers, the
signal that queues a validation, a proposal's history, findings)."""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission

from contributions.models import Proposal
from contributions.services.proposals import RUBRIC_KEYS
from contributions.signals import revision_submitted
from researchcodebench.pset import PaperMeta, read_pset, task_files
from researchcodebench.validation import Finding
from tests.factories import UserFactory

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "pset"
HOSTILE = REPO / "tests" / "researchcodebench" / "fixtures" / "hostile_pset"

REGISTRY_ENTRY = """- id: {id}
  title: "{title}"
  arxiv_abs: https://arxiv.org/abs/{arxiv}v2
  arxiv_date: 2025-02-06
  arxiv_v1_date: 2024-06-20
  github_url: https://github.com/example/{id}
  first_commit_date: 2025-01-07
  last_commit_date: null
  venue: ICLR2025
  annotated_file_paths: model.py
  context_file_paths: null
"""

MODEL = """import math


def scale(x, k):
    # <paper2code name="scale input">
    y = x * k
    # <paper2code name="shift">
    y = y + 1
    # </paper2code name="shift">
    # </paper2code name="scale input">
    return y


def root(x):
    # <paper2code name="square root">
    return math.sqrt(x)
    # </paper2code name="square root">
"""

TEST = "from model import scale\nassert scale(2, 3) == 7\n"


def write_small_pset(root: Path, ids: tuple[str, ...] = ("alpha", "beta"), model: str = MODEL) -> Path:
    """A valid pset: one task per id, each with 3 snippets (a parent, its child, a sibling) and 4 lines."""
    root.mkdir(parents=True, exist_ok=True)
    entries = []
    for n, task_id in enumerate(ids):
        folder = root / task_id
        folder.mkdir()
        (folder / "model.py").write_text(model, encoding="utf-8")
        (folder / "paper2code_test.py").write_text(TEST, encoding="utf-8")
        (folder / "paper2code_paper.tex").write_text(f"\\title{{Paper {task_id}}}\n", encoding="utf-8")
        entries.append(REGISTRY_ENTRY.format(id=task_id, title=f"Paper {task_id}", arxiv=f"2501.0000{n}"))
    (root / "papers.yaml").write_text("\n".join(entries), encoding="utf-8")
    return root


def copy_pset(source: Path, dest: Path) -> Path:
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


@pytest.fixture
def example_pset(tmp_path: Path) -> Path:
    """A snapshot of examples/pset (tests may change it), or a small pset while the examples are absent."""
    if (EXAMPLES / "papers.yaml").is_file():
        return copy_pset(EXAMPLES, tmp_path / "examples")
    return write_small_pset(tmp_path / "examples")


@pytest.fixture
def hostile_pset(tmp_path: Path) -> Path:
    return copy_pset(HOSTILE, tmp_path / "hostile")


@pytest.fixture
def small_pset(tmp_path: Path) -> Callable[..., Path]:
    def make(name: str = "small", **kwargs) -> Path:
        return write_small_pset(tmp_path / name, **kwargs)

    return make


def pset_content(root: Path) -> dict[str, bytes]:
    """What a pset holds: its own top-level files and every file of each registered task folder.

    Folders that ``papers.yaml`` does not list are not tasks (a half-written task, say) and are left out.
    """
    out = {p.name: p.read_bytes() for p in sorted(root.iterdir()) if p.is_file()}
    for task in read_pset(root).tasks:
        out.update(
            {f"{task.id}/{rel}": (Path(task.root) / rel).read_bytes() for rel in task_files(task.root)}
        )
    return out


def all_files(root: Path) -> dict[str, bytes]:
    """relpath -> bytes of every file under ``root`` (caches excluded)."""
    return {
        "/".join(p.relative_to(root).parts): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts and not p.name.endswith(".pyc")
    }


# ------------------------------------------------------------------------------------------- catalogue

#: a registry entry for the catalogue services' tests
META = PaperMeta(id="alpha", title="Alpha", arxiv_abs="https://arxiv.org/pdf/2401.00001v3.pdf", venue="")


# ------------------------------------------------------------------------------------------- workflow

State = Proposal.State
ALL_CHECKED = {key: True for key in RUBRIC_KEYS}

FLAKY = Finding(
    check="flaky", severity="error", message="reference passed 3 of 5 runs", file="paper2code_test.py"
)


@pytest.fixture
def queued(request):
    """The revision ids ``revision_submitted`` was sent for (the signal the evaluation app answers)."""
    sent: list[int] = []

    def listener(sender, *, revision_id, **kwargs):
        sent.append(revision_id)

    revision_submitted.connect(listener, weak=False, dispatch_uid="test-proposals-queued")
    request.addfinalizer(lambda: revision_submitted.disconnect(dispatch_uid="test-proposals-queued"))
    return sent


def make_maintainer():
    """A user holding the review permission directly (the "maintainers" group grants the same)."""
    user = UserFactory(email=f"maintainer{next(_keys)}@example.org")
    user.user_permissions.add(
        Permission.objects.get(content_type__app_label="contributions", codename="review_proposal")
    )
    return user


@pytest.fixture
def maintainer():
    return make_maintainer()


_keys = itertools.count()


def states(proposal: Proposal) -> list[tuple[str, str]]:
    return list(proposal.events.order_by("pk").values_list("from_state", "to_state"))
