"""The screen's false-positive corpus: function bodies of real ML code, each screened as a completion.

A function body of a real library is code a model could have written for a snippet there: screened in the
context of its own file (``screen.screen_source`` on the file, the body's lines as the completion, the file's
own package as the task's local modules), then its chains resolved against the real libraries in the
evaluation interpreter (``screen.resolve``). A body the screen refuses is a false positive unless what it
refuses is a real introspection construct (``INTROSPECTION``); the corpus reports the rate and every
construct, so that a rule is loosened only for a reason shown on real code (docs/integrity.md).

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

#: Constructs that are introspection by the screen's own definition: a flag for one of these is the screen
#: doing its job on real code, not a false positive (computed attribute names, namespace dictionaries,
#: frames, hooks that answer comparisons).
INTROSPECTION = (
    "with a computed attribute name",
    "used as a value (attribute names must be literal)",
    "without a literal attribute name",
    "the attribute __dict__",
    "use of vars()",
    "use of globals()",
    "use of locals()",
    "use of eval()",
    "use of exec()",
    "use of compile()",
    "use of __import__",
    "use of the frame attribute",
    "the module sys is not on the allow-list",
    "the module inspect is not on the allow-list",
    "the module importlib is not on the allow-list",
    "the module gc is not on the allow-list",
    "the module ctypes is not on the allow-list",
    "the module builtins is not on the allow-list",
    "use of sys.",
    "use of os.",
    "import of sys",
    "import of inspect",
    "import of importlib",
    "import of gc",
    "import of ctypes",
    "import of builtins",
    "import of traceback",
    "import of threading",
    "import of subprocess",
    "import of multiprocessing",
    "import of pickle",
    "import of unittest",
    "import of atexit",
    "import of signal",
    "definition of __eq__",
    "definition of __getattr__",
    "definition of __getattribute__",
    "definition of __torch_function__",
    "definition of __torch_dispatch__",
    "use of operator.attrgetter",
    "use of operator.methodcaller",
    "type() with three arguments",
    "the attribute __globals__",
    "the attribute __code__",
    "the attribute __closure__",
    "the attribute __builtins__",
    "the attribute __subclasses__",
    "the attribute __func__",
    "the attribute __self__",
    "the attribute __get__",
    "the attribute __class__",
    "an attribute of a __class__",
    "an attribute of type(",
    "(code surgery)",
    "use of __builtins__",
    "the attribute __dataclass_fields__",
    "assignment to the attribute __all__",
    "assignment to the attribute __dict__",
)
#: Constructs that reach process or code-loading machinery (exits, pickle, torch.hub, subprocess, test
#: frameworks): no research snippet needs them, and the boundary refuses them on purpose.
MACHINERY = (
    "use of exit",
    "use of quit",
    "SystemExit",
    "the module pickle",
    "the module torch.hub",
    "the module pkgutil",
    "the module subprocess",
    "the module pytest",
    "the module doctest",
    "the module threading",
    "the module multiprocessing",
    "the module torch.multiprocessing",
    "the module torch.package",
    "the module torch.utils.cpp_extension",
    "import of pickle",
    "import of subprocess",
    "import of pytest",
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

    def not_introspection(self) -> list[tuple[Body, list[screen.Finding]]]:
        """Flagged bodies with a finding that is not a real introspection construct (false positives)."""
        return [
            (body, findings)
            for body, findings in self.flagged
            if any(not is_introspection(f.construct) for f in findings)
        ]


def is_introspection(construct: str) -> bool:
    """A construct the screen refuses by design: introspection or process/code-loading machinery."""
    return kind(construct) != "other"


def kind(construct: str) -> str:
    """ "introspection", "machinery" or "other" (a false positive)."""
    if any(marker in construct for marker in INTROSPECTION):
        return "introspection"
    if any(marker in construct for marker in MACHINERY):
        return "machinery"
    return "other"


def normalise(construct: str) -> str:
    """A construct without its particular names (``getattr() with a computed attribute name``, ``the module
    X is not on the allow-list``...)."""
    text = re.sub(r"\(reached as [^)]*\)", "(reached as ...)", construct)
    text = re.sub(r"\(([^()]*)\)$", "(...)", text)
    return text


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
        f"flagged: {len(result.flagged)} ({100 * result.rate:.2f} %); with a construct that is neither "
        f"introspection nor machinery (a false positive): {len(result.not_introspection())}",
        "constructs (bodies):",
    ]
    for construct, count in result.constructs().most_common():
        lines.append(f"  {count:5d}  [{kind(construct)}] {construct}")
        shown = [b for b, fs in result.flagged if any(normalise(f.construct) == construct for f in fs)][
            :examples
        ]
        for body in shown:
            lines.append(f"           {body.file}:{body.first} {body.name}")
    return "\n".join(lines)


__all__ = [
    "Body",
    "INTROSPECTION",
    "MACHINERY",
    "Result",
    "bodies",
    "is_introspection",
    "kind",
    "report",
    "screen_files",
]
