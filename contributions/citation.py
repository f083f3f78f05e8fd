"""A release's citation as BibTeX: the release itself (name, tag, commit, address) and the benchmark's paper."""

from __future__ import annotations

import re

from contributions.models import Release

#: the paper that describes the benchmark (arXiv:2506.02314)
PAPER_BIBTEX = """@article{hua2025researchcodebench,
  title   = {{ResearchCodeBench}: Benchmarking {LLMs} on Implementing Novel Machine Learning Research Code},
  author  = {Hua, Tianyu and others},
  journal = {arXiv preprint arXiv:2506.02314},
  year    = {2025},
}"""

_SPECIAL = re.compile(r"([&%$#_])")


def _bibtex_text(value: str) -> str:
    """``value`` safe inside a BibTeX field: braces and backslashes dropped, LaTeX's specials escaped,
    whitespace (newlines included) collapsed."""
    plain = " ".join(value.replace("{", "").replace("}", "").replace("\\", "").split())
    return _SPECIAL.sub(r"\\\1", plain)


def release_bibtex(*, release: Release, url: str) -> str:
    """BibTeX for ``release`` at ``url`` (its page), followed by the benchmark paper's entry.

    The key is ``researchcodebench-<name>`` (a release name is a slug, so the key is valid); the note names
    the git tag and commit of the benchmark repository when the release has been committed there.
    """
    title = f"ResearchCodeBench, release {release.name}"
    if release.title:
        title += f": {release.title}"
    note = f"Benchmark release {release.name}"
    if release.git_commit:
        note += f", git tag {release.git_tag}, commit {release.git_commit}"
    fields = [
        ("title", "{" + _bibtex_text(title) + "}"),
        ("author", "{Hua, Tianyu and others}"),
        ("year", "{" + str(release.created_at.year) + "}"),
        ("howpublished", "{\\url{" + url.replace("}", "").replace("{", "") + "}}"),
        ("note", "{" + _bibtex_text(note) + ". Benchmark described in arXiv:2506.02314}"),
    ]
    body = "\n".join(f"  {key:<12} = {value}," for key, value in fields)
    return f"@misc{{researchcodebench-{release.name},\n{body}\n}}\n\n{PAPER_BIBTEX}\n"
