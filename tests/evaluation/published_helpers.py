"""Shared set-up of the published-results tests (test_published.py, test_published_source.py): where the
shipped fixture and the original's files are, and a small fixture written on the fly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.published_source import FIXTURE_FORMAT

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "demo" / "rcb-2025-published.json.gz"
SHARED = REPO.parent / "shared" / "data"
ORIGINAL = SHARED / "overall_stats.json"
REGISTRY = SHARED / "papers.yaml"

needs_original = pytest.mark.skipif(
    not ORIGINAL.exists() or not REGISTRY.exists(),
    reason=f"the original published results ({ORIGINAL}, {REGISTRY}) are not available on this machine",
)


def small_fixture(tmp_path: Path, **overrides) -> Path:
    """A two-paper, three-model fixture in our format; ``overrides`` replace top-level fields."""
    model = {
        "provider_model_id": "",
        "developer": "Acme",
        "company": "OPENROUTER",
        "open_weights": True,
        "knowledge_cutoff": "2024-7",
        "input_cost_per_mtok": 0.5,
        "output_cost_per_mtok": 1.5,
    }
    document = {
        "format": FIXTURE_FORMAT,
        "source": "test data",
        "models": [
            {**model, "key": "ACME_HIGH", "name": "Acme-1", "provider_model_id": "acme/one",
             "request_options": {"reasoning_effort": "high"}},
            {**model, "key": "ACME_LOW", "name": "Acme-1", "provider_model_id": "acme/one",
             "request_options": {"reasoning": {"effort": "low"}}},
            {**model, "key": "OTHER", "name": "Other", "company": "XAI", "knowledge_cutoff": "2024-11-17",
             "request_options": {}},
        ],
        "papers": [
            {"key": "alpha", "title": "Alpha", "arxiv_abs": "https://arxiv.org/abs/2401.00001v2",
             "first_commit_date": "2024-03-01", "annotated_file_paths": ["model.py"]},
            {"key": "beta", "title": "Beta", "first_commit_date": None},
        ],
        "snippets": [["alpha", "a1", 4], ["alpha", "a2", 1], ["beta", "b1", 10]],
        "outcomes": {"P": {"passed": True, "exit_code": 0}, "F": {"passed": False, "exit_code": 1},
                     "T": {"passed": False, "exit_code": 124}},
        "verdicts": {"ACME_HIGH": ["PFT", "PPF"], "ACME_LOW": ["FF."], "OTHER": ["PPP"]},
        "published_scores": {
            "ACME_HIGH": {"line": (100 * 4 / 15 + 100 * 5 / 15) / 2, "task": (100 / 3 + 200 / 3) / 2,
                          "papers": {"alpha": 90.0, "beta": 0.0}},
            "OTHER": {"line": 100.0, "task": 100.0, "papers": {"alpha": 100.0, "beta": 100.0}},
        },
    }  # fmt: skip
    document.update(overrides)
    path = tmp_path / "small.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path
