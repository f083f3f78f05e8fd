"""The documentation lives in the repository: code cites ``docs/`` pages that exist, the pages' links
resolve (files and section anchors), and no comment cites the old out-of-repository specification."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
#: Folders that are not the project's source: environments, runtime data, VCS metadata, caches.
_SKIP_DIRS = {".git", "var", "node_modules", "__pycache__", ".pytest_cache", ".ruff_cache"}
_SOURCE_SUFFIXES = (".py", ".html")
# Built from parts so that this file does not cite what it forbids.
_OLD_SPEC = re.compile(r"\b" + "SP" + r"EC\b")
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
_DOCS_PATH = re.compile(r"\bdocs/([\w./-]+?\.md)(#[\w-]+)?")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


def _source_files(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS and not d.startswith(".venv")]
        for name in filenames:
            if name.endswith(_SOURCE_SUFFIXES):
                yield Path(dirpath, name)


def heading_anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives the headings of ``markdown`` (lowercase, punctuation dropped, spaces to
    hyphens, ``-1``, ``-2`` ... for repeats); headings inside code fences are not headings."""
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    in_fence = False
    for line in markdown.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        match = None if in_fence else _HEADING.match(line)
        if match is None:
            continue
        slug = re.sub(r"[^\w\- ]", "", match.group(1).strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def broken_links(markdown_file: Path) -> list[str]:
    """Every relative link of ``markdown_file`` whose file or ``#anchor`` does not exist, as
    ``file:line: target (why)``. External links (with a scheme) are not checked."""
    problems: list[str] = []
    text = markdown_file.read_text(encoding="utf-8")
    in_fence = False
    for number, line in enumerate(text.splitlines(), start=1):
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        for target in _LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue
            path_part, _, anchor = target.partition("#")
            resolved = (markdown_file.parent / path_part).resolve() if path_part else markdown_file
            where = markdown_file.relative_to(REPO) if markdown_file.is_relative_to(REPO) else markdown_file
            if not resolved.exists():
                problems.append(f"{where}:{number}: {target} (no such file)")
                continue
            if anchor and resolved.suffix == ".md":
                if anchor not in heading_anchors(resolved.read_text(encoding="utf-8")):
                    problems.append(f"{where}:{number}: {target} (no heading with anchor #{anchor})")
    return problems


def test_no_source_file_cites_the_old_specification():
    offenders = []
    for path in _source_files(REPO):
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if _OLD_SPEC.search(line):
                offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not offenders, "cite a docs/ page instead:\n" + "\n".join(offenders)


def test_every_docs_page_cited_in_code_exists_with_its_section():
    cited = 0
    problems = []
    for path in [*_source_files(REPO), REPO / "README.md"]:
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            for page, anchor in _DOCS_PATH.findall(line):
                cited += 1
                target = DOCS / page
                where = f"{path.relative_to(REPO)}:{number}"
                if not target.is_file():
                    problems.append(f"{where}: docs/{page} does not exist")
                elif anchor and anchor[1:] not in heading_anchors(target.read_text(encoding="utf-8")):
                    problems.append(f"{where}: docs/{page}{anchor} names no heading of that page")
    assert cited, "no code cites docs/ at all: the citation pattern no longer matches"
    assert not problems, "\n".join(problems)


def test_every_relative_link_of_the_docs_resolves():
    pages = sorted(DOCS.glob("*.md"))
    assert pages, "docs/ holds no pages"
    problems = [p for page in pages for p in broken_links(page)]
    # The top-level README's links into docs/ (its other links are not this test's concern).
    problems += [p for p in broken_links(REPO / "README.md") if ": docs/" in p]
    assert not problems, "\n".join(problems)


def test_the_docs_index_links_every_page():
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    linked = {target.partition("#")[0] for target in _LINK.findall(index)}
    missing = [p.name for p in sorted(DOCS.glob("*.md")) if p.name != "README.md" and p.name not in linked]
    assert not missing, f"docs/README.md does not link: {', '.join(missing)}"


def test_link_check_reports_a_missing_file_and_a_missing_section(tmp_path):
    (tmp_path / "target.md").write_text("# Title\n\n## The line count N\n\n```\n# not a heading\n```\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](target.md#the-line-count-n) [gone](nowhere.md) [bad](target.md#not-a-heading)\n"
        "[web](https://example.org/x.md) [self](#missing)\n"
    )
    problems = broken_links(page)
    assert len(problems) == 3, problems
    assert "nowhere.md (no such file)" in problems[0]
    assert "target.md#not-a-heading (no heading with anchor #not-a-heading)" in problems[1]
    assert "#missing (no heading with anchor #missing)" in problems[2]


def test_heading_anchors_follow_github_rules():
    text = "# `task.yaml`, the portal manifest\n## Limits\n## Limits\n### Scaled Pass@1 and Pass@1\n"
    assert heading_anchors(text) == {
        "taskyaml-the-portal-manifest",
        "limits",
        "limits-1",
        "scaled-pass1-and-pass1",
    }
