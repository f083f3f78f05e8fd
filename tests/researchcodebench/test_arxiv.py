"""The one arXiv-id rule: which URL and id spellings give which canonical id, and what gives none."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from researchcodebench.arxiv import arxiv_id

SHARED_REGISTRY = Path(__file__).resolve().parents[3] / "shared" / "data" / "papers.yaml"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("https://arxiv.org/abs/2502.10927", "2502.10927"),
        ("https://arxiv.org/abs/2502.10927v1", "2502.10927"),
        ("https://arxiv.org/abs/2502.10927v12", "2502.10927"),
        ("http://arxiv.org/pdf/2104.09864.pdf", "2104.09864"),
        ("https://arxiv.org/pdf/2104.09864v3", "2104.09864"),
        ("https://arxiv.org/pdf/2104.09864v3.pdf/", "2104.09864"),
        ("https://arxiv.org/html/2502.10927v2/", "2502.10927"),
        ("https://www.arxiv.org/abs/2503.10622v1", "2503.10622"),
        ("https://export.arxiv.org/abs/2503.10622", "2503.10622"),
        ("HTTPS://ARXIV.ORG/ABS/2502.10927V3", "2502.10927"),
        ("arxiv.org/abs/2502.10927", "2502.10927"),
        ("https://arxiv.org:443/abs/2502.10927", "2502.10927"),
        ("https://arxiv.org/abs/2502.10927v2?context=cs.LG", "2502.10927"),
        ("https://arxiv.org/abs/2502.10927#S3", "2502.10927"),
        ("https://arxiv.org/abs/2502.10927/", "2502.10927"),
        ("  https://arxiv.org/abs/2502.10927  ", "2502.10927"),
        ("https://arxiv.org/abs/0704.0001", "0704.0001"),
        ("https://arxiv.org/abs/hep-th/9901001", "hep-th/9901001"),
        ("https://arxiv.org/abs/hep-th/9901001v2", "hep-th/9901001"),
        ("https://arxiv.org/pdf/math.GT/0309136.pdf", "math.GT/0309136"),
        ("https://arxiv.org/abs/MATH.gt/0309136", "math.GT/0309136"),
        ("2502.10927", "2502.10927"),
        ("2502.10927v4", "2502.10927"),
        ("arXiv:2502.10927v4", "2502.10927"),
        ("ARXIV: hep-th/9901001", "hep-th/9901001"),
    ],
)
def test_accepts_urls_and_bare_ids_giving_the_canonical_id_without_version(value, expected):
    assert arxiv_id(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        None,
        "",
        "   ",
        "https://example.org/paper",
        "https://openreview.net/forum?id=U0SijGsCHJ",
        "https://evilarxiv.org/abs/2502.10927",
        "https://arxiv.org.example.com/abs/2502.10927",
        "https://example.com/?u=https://arxiv.org/abs/2502.10927",
        "https://arxiv.org/list/cs.LG/recent",
        "https://arxiv.org/abs/",
        "https://arxiv.org/abs/not-an-id",
        "https://arxiv.org/abs/2502.10927/extra",
        "https://arxiv.org/abs/2502.109",
        "https://[::1",
        "2502.10927/",
        "arXiv:",
        "x" * 10_000,
    ],
)
def test_anything_that_is_not_an_arxiv_id_gives_empty_text_without_raising(value):
    assert arxiv_id(value) == ""


@pytest.mark.skipif(not SHARED_REGISTRY.exists(), reason=f"{SHARED_REGISTRY} is not on this machine")
def test_the_original_registry_gives_the_ids_its_abstract_urls_name():
    entries = yaml.safe_load(SHARED_REGISTRY.read_text(encoding="utf-8"))
    ids = {entry["id"]: arxiv_id(entry.get("arxiv_abs")) for entry in entries}

    assert ids["DyT"] == "2503.10622"  # www. host
    assert ids["SISS"] == "2503.01034"  # no version suffix
    assert ids["GPS"] == ""  # an OpenReview link, not arXiv
    assert sum(1 for value in ids.values() if value) == len(ids) - 1
