"""An upload's declarations (``ProposalRevision.manifest``): their keys and defaults, and the first guess
the contribution form makes from the uploaded files.

Plain rules over the upload's files (relpath -> bytes), below both the services that store a revision
(``services.revisions``: ``revision_manifest_clean``, ``revision_upload``) and the form's reads
(``contributions.selectors.contribute``), so each imports them without importing the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

import yaml

from researchcodebench import pset as rcb_pset
from researchcodebench.annotations import END_TAG, START_TAG, split_lines

#: The manifest keys of a revision (``ProposalRevision.manifest``) and their defaults.
MANIFEST_DEFAULTS: dict[str, Any] = {
    "annotated_files": [],
    "context_files": [],
    "oracle_files": [],
    "test_entry": "paper2code_test.py",
    "paper_file": "",
    "requirements_file": "",
    "needs_gpu": False,
}
PAPER_SUFFIXES = (".tex", ".md")
#: files an author may mark as context (shown to models) or annotated: code and text the parser reads
CODE_SUFFIXES = (".py",)


def _text(content: bytes) -> str | None:
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        return None


def has_tags(content: bytes) -> bool:
    """Whether a file holds a paper2code start or end tag line (the parser's exact tag rule)."""
    text = _text(content)
    if text is None or "paper2code" not in text:
        return False
    return any(START_TAG.match(line) or END_TAG.match(line) for line in split_lines(text))


def tagged_files(files: Mapping[str, bytes]) -> list[str]:
    """The code files holding paper2code tags, sorted: the candidates for annotated files."""
    return sorted(rel for rel, data in files.items() if rel.endswith(CODE_SUFFIXES) and has_tags(data))


def _uploaded_manifest(files: Mapping[str, bytes]) -> rcb_pset.TaskManifest | None:
    """The upload's own ``task.yaml`` (an original-format task folder carries one), if it parses."""
    raw = files.get(rcb_pset.MANIFEST)
    text = _text(raw) if raw is not None else None
    if text is None:
        return None
    try:
        manifest, problems_found = rcb_pset.parse_manifest(yaml.safe_load(text))
    except yaml.YAMLError:
        return None
    return None if problems_found else manifest


def _guess_test(paths: list[str], declared: str | None, tagged: list[str]) -> str:
    """The test script: the declared or default one, else a test-named or other untagged code file; ""
    when the upload has none (an annotated file is never its own test)."""
    for candidate in (declared, MANIFEST_DEFAULTS["test_entry"]):
        if candidate and candidate in paths:
            return candidate
    code = sorted(p for p in paths if p.endswith(CODE_SUFFIXES) and p not in tagged)
    named = [p for p in code if PurePosixPath(p).name.startswith("test") or p.endswith("_test.py")]
    return (named or code or [""])[0]


def _guess_paper(paths: list[str]) -> str:
    for name in rcb_pset.PAPER_FILES:
        if name in paths:
            return name
    papers = [p for p in paths if p.endswith(PAPER_SUFFIXES) and PurePosixPath(p).name.lower() != "readme.md"]
    return papers[0] if len(papers) == 1 else ""


def manifest_guess(files: Mapping[str, bytes]) -> dict[str, Any]:
    """First declarations for a fresh upload (the author confirms or changes them in step c).

    Annotated files are the files holding tags; the test entry, oracle files and GPU need come from the
    upload's own ``task.yaml`` when it has one (``test_entry`` is "" when no code file can be the test); the paper is ``paper2code_paper.tex``/``.md`` or the one
    ``.tex``/``.md`` file; the requirements list is ``requirements.txt`` when present.
    """
    paths = sorted(files)
    tagged = tagged_files(files)
    declared = _uploaded_manifest(files)
    oracle = [p for p in (declared.oracle_files if declared else ()) if p in files and p not in tagged]
    return {
        **MANIFEST_DEFAULTS,
        "annotated_files": tagged,
        "oracle_files": oracle,
        "test_entry": _guess_test(paths, declared.test_entry if declared else None, tagged),
        "paper_file": _guess_paper(paths),
        "requirements_file": "requirements.txt" if "requirements.txt" in files else "",
        "needs_gpu": bool(declared.needs_gpu) if declared else False,
    }
