"""The screen's false-positive corpus: function bodies of real ML code, each screened as a completion.

A function body of a real library is code a model could have written for a snippet there: screened in the
context of its own file (``screen.screen_source`` on the file, the body's lines as the completion, the file's
own package as the task's local modules), then its chains resolved against the real libraries in the
evaluation interpreter (``screen.resolve``). A body the screen refuses is a false positive unless what it
refuses is one of the constructs the screen keeps (``KEPT``: each reason names its kind); the corpus reports
the rate and every construct, so that a rule is kept only for a reason shown on real code
(docs/integrity.md).

Used by tests/researchcodebench/test_screen_corpus.py (torch's own optim, nn/modules and distributions
sources, always installed) and bench/screen_corpus.py (adds transformers, timm, diffusers and einops).
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from . import screen

#: The kinds of construct the screen keeps (what protects the confirmation and the sandbox), as its reasons
#: name them, and the reasons that name no kind but the oracle or the test (a flag for one of these is the
#: screen doing its job on real code, not a false positive).
KEPT = (
    screen.MODULE_TABLE,
    screen.TEST_FRAMEWORK,
    screen.TELLING_RUNS_APART,
    screen.CODE_FROM_TEXT,
    screen.ESCAPE,
    screen.RAW_MEMORY,
    screen.PICKLE,
    "belongs to the test or holds an oracle",
    "(the test script)",
    "a string literal that runs past the end of the completion",
    "a string literal that starts before the completion",
)


@dataclass(frozen=True)
class Body:
    """One function body of ``file`` (lines ``first..last``) in package ``package``."""

    file: str
    package: str
    name: str
    first: int
    last: int


@dataclass
class Result:
    """The screening of a corpus: counts, the flagged bodies and what flagged them."""

    bodies: int = 0
    files: int = 0
    unparsable: int = 0
    flagged: list[tuple[Body, list[screen.Finding]]] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return len(self.flagged) / self.bodies if self.bodies else 0.0

    def constructs(self) -> Counter[str]:
        """How many bodies each (normalised) construct flagged."""
        found: Counter[str] = Counter()
        for _body, findings in self.flagged:
            for kind in {normalise(f.construct) for f in findings}:
                found[kind] += 1
        return found

    def not_kept(self) -> list[tuple[Body, list[screen.Finding]]]:
        """Flagged bodies with a finding that is not one of the constructs the screen keeps (false
        positives)."""
        return [
            (body, findings)
            for body, findings in self.flagged
            if any(not is_kept(f.construct) for f in findings)
        ]


def is_kept(construct: str) -> bool:
    """A construct the screen refuses by design (one of ``KEPT``)."""
    return kind(construct) != "other"


def kind(construct: str) -> str:
    """The kept kind ``construct`` names (``screen.MODULE_TABLE`` ...), or "other" (a false positive)."""
    return next((marker for marker in KEPT if marker in construct), "other")


def normalise(construct: str) -> str:
    """A construct without its place (``use of sys.modules (the module table ...)``, ``the module torch.hub
    (...)``)."""
    return re.sub(r" \(reached as [^)]*\)", "", construct)


def bodies(path: Path, *, package: str, root: Path) -> list[Body] | None:
    """Every function body of the file (nested ones included); None when it does not parse."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (SyntaxError, ValueError):
        return None
    found = []
    rel = str(path.relative_to(root))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0].lineno
            # A docstring is not code a model writes: the body starts after it.
            if isinstance(node.body[0], ast.Expr) and isinstance(
                getattr(node.body[0], "value", None), ast.Constant
            ):
                if len(node.body) == 1:
                    continue
                first = node.body[1].lineno
            last = node.end_lineno or first
            found.append(Body(rel, package, node.name, first, last))
    return found


def screen_files(
    files: Iterable[tuple[Path, str, Path]],
    *,
    python: str,
    preload: Sequence[str] = ("torch", "numpy"),
) -> Result:
    """Screen every function body of ``files`` ((path, package, root) each) and resolve their chains in
    ``python`` (one resolution per package, batched)."""
    result = Result()
    by_package: dict[str, list[tuple[Body, screen.Screening]]] = {}
    for path, package, root in files:
        found = bodies(path, package=package, root=root)
        if found is None:
            result.unparsable += 1
            continue
        result.files += 1
        source = path.read_text(encoding="utf-8", errors="replace")
        context = screen.FileContext(ast.parse(source))
        for body in found:
            screening = screen.screen_source(
                source, first=body.first, last=body.last, local_modules=(package,), context=context
            )
            if screening is None:
                continue
            result.bodies += 1
            by_package.setdefault(package, []).append((body, screening))
    for package, screenings in by_package.items():
        # Each chain goes with its position as its line, so that a refusal names the body it came from.
        flat = [(index, chain) for index, (_body, s) in enumerate(screenings) for chain in s.chains]
        numbered = [screen.Chain(n, chain.root, chain.attrs, chain.use) for n, (_i, chain) in enumerate(flat)]
        refused = screen.resolve(numbered, python=python, preload=preload, local_modules=(package,))
        extra: dict[int, list[screen.Finding]] = {}
        for finding in refused:
            index, chain = flat[finding.line]
            extra.setdefault(index, []).append(screen.Finding(chain.line, finding.construct))
        for index, (body, screening) in enumerate(screenings):
            findings = list(screening.findings) + extra.get(index, [])
            if findings:
                result.flagged.append((body, findings))
    return result


def report(result: Result, *, examples: int = 3) -> str:
    """The corpus's numbers and constructs as text (the closing note of issue 18 quotes it)."""
    lines = [
        f"{result.bodies} function bodies in {result.files} files ({result.unparsable} files did not parse)",
        f"flagged: {len(result.flagged)} ({100 * result.rate:.2f} %); with a construct the screen does not keep "
        f"(a false positive): {len(result.not_kept())}",
        "constructs (bodies):",
    ]
    for construct, count in result.constructs().most_common():
        lines.append(f"  {count:5d}  {'' if is_kept(construct) else '[false positive] '}{construct}")
        shown = [b for b, fs in result.flagged if any(normalise(f.construct) == construct for f in fs)][
            :examples
        ]
        for body in shown:
            lines.append(f"           {body.file}:{body.first} {body.name}")
    return "\n".join(lines)


__all__ = [
    "Body",
    "KEPT",
    "Result",
    "bodies",
    "is_kept",
    "kind",
    "report",
    "screen_files",
]
