"""The static screen: a completion that reaches for the test's or the process's machinery never runs.

The screen reads the filled-in file (the task file with the completion in place) with ``ast`` and judges
only the completion's own lines; the rest of the file tells it which names are imported modules (``np``,
``F``, ``nn``) so that ``F.softmax = ...`` is recognised as patching ``torch.nn.functional``. A hit is a
model-tier failure, category ``harness_tampering``, whose reason names the construct and the line.

What it refuses (docs/integrity.md explains why each one is there and what the screen cannot see):

* process and test machinery: imports or uses of ``unittest``, ``gc``, ``inspect``, ``ctypes``,
  ``importlib``, ``signal``, ``atexit``, ``threading``, ``subprocess``, ``pickle`` and the like; ``sys`` and
  ``os`` beyond an allow-list of harmless attributes (so ``sys.modules``, ``sys._getframe``, ``os._exit``,
  ``os.kill``, ``os.write`` are out); exits (``exit``, ``quit``, ``SystemExit``);
* dynamic access: ``eval``/``exec``/``compile``, ``globals``/``locals``/``vars``, ``getattr`` with a
  computed name, dunder names other than a few harmless ones (``__import__``, ``__dict__``, ``__class__``,
  ``__globals__``, ``__eq__`` definitions...), frame and traceback attributes (``f_back``, ``tb_frame``...),
  private attributes of imported modules (``torch._C``);
* monkeypatching: assigning, deleting or ``setattr`` on an attribute of an imported module or class, of a
  builtin, or of a computed object (``type(x).allclose = ...``);
* strings that point at the harness or the test: the result marks, ``/proc/``, ``/dev/fd``, the test
  script's name; string literals that span the completion's edge (they would re-read the code after it).

Every reference snippet of the examples and the hostile fixture passes it
(tests/researchcodebench/test_tampering.py); loosen a rule only with such a reason.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

from .annotations import Snippet, split_lines
from .problems import fill_in

CATEGORY = "harness_tampering"

#: Modules a completion has no business touching: each is test, interpreter or process machinery.
FORBIDDEN_MODULES = frozenset(
    {
        "_ctypes",
        "_pickle",
        "_posixsubprocess",
        "_pytest",
        "_thread",
        "asyncio",
        "atexit",
        "bdb",
        "builtins",
        "cloudpickle",
        "code",
        "codeop",
        "concurrent",
        "copyreg",
        "ctypes",
        "dill",
        "doctest",
        "faulthandler",
        "fcntl",
        "gc",
        "importlib",
        "inspect",
        "marshal",
        "mmap",
        "multiprocessing",
        "pdb",
        "pickle",
        "pkgutil",
        "posix",
        "pty",
        "pytest",
        "resource",
        "runpy",
        "select",
        "selectors",
        "shelve",
        "signal",
        "site",
        "socket",
        "subprocess",
        "sys_monitoring",
        "threading",
        "trace",
        "traceback",
        "tracemalloc",
        "unittest",
        "zipimport",
    }
)

#: Dotted paths inside otherwise allowed libraries that load native code or reach the test machinery.
FORBIDDEN_PATHS = frozenset(
    {
        "io.FileIO",
        "io.open",
        "numpy.ctypeslib",
        "torch.hub",
        "torch.library",
        "torch.ops",
        "torch.utils.cpp_extension",
    }
)

#: The only attributes of ``sys`` and ``os`` a completion may use (read-only facts and file helpers).
ALLOWED_ATTRIBUTES = {
    "sys": frozenset(
        {"byteorder", "float_info", "getrecursionlimit", "getsizeof", "int_info", "maxsize", "platform"}
        | {"version", "version_info", "hexversion", "float_repr_style"}
    ),
    "os": frozenset(
        {"cpu_count", "curdir", "environ", "extsep", "fspath", "getcwd", "linesep", "listdir", "makedirs"}
        | {"mkdir", "path", "pathsep", "remove", "scandir", "sep", "stat", "unlink", "walk"}
    ),
}

#: Builtins that execute text, expose namespaces or end the process.
DANGEROUS_BUILTINS = frozenset(
    {
        "breakpoint",
        "compile",
        "eval",
        "exec",
        "exit",
        "globals",
        "locals",
        "quit",
        "vars",
        "KeyboardInterrupt",
        "SystemExit",
    }
)

#: Dunder names with no route to the interpreter's internals or to comparison overrides.
ALLOWED_DUNDERS = frozenset(
    {
        "__init__",
        "__name__",
        "__qualname__",
        "__doc__",
        "__repr__",
        "__str__",
        "__len__",
        "__iter__",
        "__next__",
        "__getitem__",
        "__contains__",
        "__enter__",
        "__exit__",
        "__post_init__",
        "__file__",
        "__slots__",
        "__all__",
        "__version__",
        "__future__",
    }
)

#: Attributes of frames, tracebacks, generators and code objects: the way to another frame's variables.
FRAME_ATTRIBUTES = frozenset(
    {
        "ag_frame",
        "co_code",
        "co_consts",
        "cr_frame",
        "f_back",
        "f_builtins",
        "f_code",
        "f_globals",
        "f_locals",
        "f_trace",
        "gi_code",
        "gi_frame",
        "tb_frame",
        "tb_next",
    }
)

_DUNDER = re.compile(r"^__\w+__$")
_SUSPICIOUS_TEXT = ("@@RCB", "RCB-RESULT", "RCB-START", "/proc/", "/dev/fd", "/dev/std", "/dev/tty")


@dataclass(frozen=True)
class Finding:
    """One construct the screen refuses: ``line`` is a line of the filled-in file."""

    line: int
    construct: str

    def describe(self, file: str) -> str:
        return f"{file}:{self.line}: {self.construct}"


def _dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a chain of attributes on a name, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _base(node: ast.AST) -> ast.AST:
    """The object an attribute/subscript chain starts from (``a`` in ``a.b[0].c``)."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
        node = node.value
    return node


def _targets(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
        return [node.target]
    if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        return [node.target]
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return [item.optional_vars for item in node.items if item.optional_vars is not None]
    return []


def _bound_names(target: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]


def _value_of(node: ast.AST) -> ast.AST | None:
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
        return node.value
    if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        return node.iter
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return ast.Tuple(elts=[item.context_expr for item in node.items], ctx=ast.Load())
    return None


#: Builtins whose result hands on (part of) their arguments, so ``m = next(iter([torch]))`` is still torch.
_PASS_THROUGH = frozenset({"dict", "filter", "getattr", "iter", "list", "max", "min", "next", "reversed"})
_PASS_THROUGH |= {"set", "sorted", "tuple", "zip", "enumerate", "map", "vars", "type"}


def _exposes(value: ast.AST, tainted: dict[str, str]) -> str | None:
    """The tainted name ``value`` hands on (a module or class reachable from the bound name), or None.

    Any other call's result is fresh (``torch.zeros(3, dtype=torch.float64)``), so what sits inside it
    does not flow to the bound name.
    """
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and node.func.id in _PASS_THROUGH:
                stack.extend(node.args)
            continue
        if isinstance(node, ast.Name) and node.id in tainted:
            return tainted[node.id]
        stack.extend(ast.iter_child_nodes(node))
    return None


class _Screen:
    def __init__(self, tree: ast.Module, first: int, last: int, protected: Iterable[str]) -> None:
        self.first = first
        self.last = last
        self.protected = tuple(p for p in protected if p)
        self.findings: list[Finding] = []
        #: name -> dotted path of the module or object it was imported as (whole file).
        self.imports: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.imports[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".", 1)[0]
                        self.imports[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    if alias.name != "*":
                        self.imports[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        # Nodes without a position (comprehensions, operators) count when they sit inside the completion.
        found: dict[int, ast.AST] = {}
        for node in ast.walk(tree):
            if self.inside(node):
                for inner in ast.walk(node):
                    found.setdefault(id(inner), inner)
        self.nodes = list(found.values())
        self.local: set[str] = set()
        for node in self.nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.local.add(node.name)
            elif isinstance(node, ast.arg):
                self.local.add(node.arg)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                args = node.args
                for arg in args.posonlyargs + args.args + args.kwonlyargs:
                    self.local.add(arg.arg)
        self.tainted = dict(self.imports)
        for _ in range(4):
            for node in self.nodes:
                value = _value_of(node)
                if value is None:
                    continue
                source = _exposes(value, self.tainted)
                for target in _targets(node):
                    for name in _bound_names(target):
                        if source is not None:
                            self.tainted.setdefault(name, source)
                        else:
                            self.local.add(name)

    def inside(self, node: ast.AST) -> bool:
        line = getattr(node, "lineno", None)
        return line is not None and self.first <= line <= self.last

    def hit(self, node: ast.AST, construct: str) -> None:
        self.findings.append(Finding(getattr(node, "lineno", self.first), construct))

    # ------------------------------------------------------------------ rules

    def path_rule(self, node: ast.AST, path: str) -> None:
        """A reference to the dotted path ``path`` (a module, or an attribute of one)."""
        parts = path.split(".")
        if parts[0] in FORBIDDEN_MODULES:
            self.hit(node, f"use of the {parts[0]!r} module ({path})")
            return
        if parts[0] in ALLOWED_ATTRIBUTES and len(parts) > 1 and parts[1] not in ALLOWED_ATTRIBUTES[parts[0]]:
            self.hit(node, f"use of {parts[0]}.{parts[1]}")
            return
        for forbidden in FORBIDDEN_PATHS:
            if path == forbidden or path.startswith(forbidden + "."):
                self.hit(node, f"use of {forbidden}")
                return
        if any(p.startswith("_") and not _DUNDER.match(p) for p in parts[1:]):
            self.hit(node, f"private attribute of an imported module ({path})")

    def check_import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                self.path_rule(node, alias.name)
            return
        if node.level:
            return
        module = node.module or ""
        for alias in node.names:
            if alias.name == "*":
                self.hit(node, f"star import from {module!r}")
            else:
                self.path_rule(node, f"{module}.{alias.name}")

    def check_name(self, node: ast.Name) -> None:
        name = node.id
        if _DUNDER.match(name) and name not in ALLOWED_DUNDERS:
            self.hit(node, f"use of {name}")
        elif name in DANGEROUS_BUILTINS and name not in self.imports and name not in self.local:
            self.hit(node, f"use of {name}()" if name[0].islower() else f"use of {name}")
        elif name in self.imports and isinstance(node.ctx, ast.Load):
            path = self.imports[name]
            top = path.split(".", 1)[0]
            if top in FORBIDDEN_MODULES or path in FORBIDDEN_PATHS:
                self.path_rule(node, path)
            elif top in ALLOWED_ATTRIBUTES and path == top and not self.is_attribute_base(node):
                self.hit(node, f"{top} used as a value")
            elif top in ALLOWED_ATTRIBUTES and path != top:
                self.path_rule(node, path)

    def is_attribute_base(self, node: ast.Name) -> bool:
        return id(node) in self.attribute_bases

    def check_attribute(self, node: ast.Attribute) -> None:
        if _DUNDER.match(node.attr) and node.attr not in ALLOWED_DUNDERS:
            self.hit(node, f"use of the attribute {node.attr}")
            return
        if node.attr in FRAME_ATTRIBUTES:
            self.hit(node, f"use of the frame attribute {node.attr}")
            return
        dotted = _dotted(node)
        if dotted is not None:
            root, _, rest = dotted.partition(".")
            if root in self.imports and root not in self.local:
                self.path_rule(node, f"{self.imports[root]}.{rest}")
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self.check_mutation(node, node.value, node.attr)

    def check_mutation(self, node: ast.AST, obj: ast.AST, attr: str) -> None:
        base = _base(obj)
        if isinstance(base, ast.Name):
            if base.id in self.tainted and base.id not in self.local:
                self.hit(node, f"assignment to an attribute of imported {self.tainted[base.id]} ({attr})")
            elif base.id in self.tainted:
                self.hit(node, f"assignment to an attribute of {base.id}, bound to {self.tainted[base.id]}")
            elif base.id in dir(builtins) and base.id not in self.local:
                self.hit(node, f"assignment to an attribute of the builtin {base.id} ({attr})")
        else:
            self.hit(node, f"assignment to an attribute of a computed object ({attr})")

    def check_subscript_store(self, node: ast.Subscript) -> None:
        base = _base(node)
        if isinstance(base, ast.Name) and base.id in self.tainted and base.id not in self.local:
            self.hit(node, f"item assignment into imported {self.tainted[base.id]}")

    def check_call(self, node: ast.Call) -> None:
        func = node.func
        if not isinstance(func, ast.Name) or func.id in self.local:
            return
        args = node.args
        if func.id == "getattr" and len(args) >= 2 and not isinstance(args[1], ast.Constant):
            self.hit(node, "getattr() with a computed attribute name")
        elif func.id in ("setattr", "delattr") and args:
            name = args[1].value if len(args) > 1 and isinstance(args[1], ast.Constant) else "<computed>"
            self.check_mutation(node, args[0], str(name))
        elif (
            func.id == "open"
            and args
            and isinstance(args[0], ast.Constant)
            and isinstance(args[0].value, int)
        ):
            self.hit(node, f"open() of file descriptor {args[0].value}")

    def check_string(self, node: ast.Constant) -> None:
        text = node.value
        if not isinstance(text, str):
            return
        end = getattr(node, "end_lineno", node.lineno) or node.lineno
        if not (self.first <= end <= self.last):
            self.hit(node, "a string literal that runs past the end of the completion")
            return
        if _DUNDER.match(text) and text not in ALLOWED_DUNDERS:
            self.hit(node, f"the string {text!r}")
        elif text in FRAME_ATTRIBUTES:
            self.hit(node, f"the string {text!r}")
        else:
            for needle in _SUSPICIOUS_TEXT + self.protected:
                if needle in text:
                    self.hit(node, f"a string naming {needle!r}")
                    return

    def run(self, tree: ast.Module) -> list[Finding]:
        self.attribute_bases = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and not self.inside(node):
                end = getattr(node, "end_lineno", None)
                if end is not None and self.first <= end <= self.last:
                    self.hit(node, "a string literal that starts before the completion")
        for node in self.nodes:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.check_import(node)
            elif isinstance(node, ast.Name):
                self.check_name(node)
            elif isinstance(node, ast.Attribute):
                self.check_attribute(node)
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)):
                self.check_subscript_store(node)
            elif isinstance(node, ast.Call):
                self.check_call(node)
            elif isinstance(node, ast.Constant):
                self.check_string(node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if _DUNDER.match(node.name) and node.name not in ALLOWED_DUNDERS:
                    self.hit(node, f"definition of {node.name}")
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                for name in node.names:
                    if name in self.imports or _DUNDER.match(name):
                        self.hit(node, f"rebinding the module-level name {name}")
        unique = {(f.line, f.construct): f for f in self.findings}
        return sorted(unique.values(), key=lambda f: (f.line, f.construct))


_NEWLINES = re.compile(r"\r\n|\r|\n")


def _line_count(text: str) -> int:
    # Python's tokenizer treats \r\n and a lone \r as line ends too; counting them keeps the screened range
    # on the completion's lines whatever line endings it smuggles in.
    return len(_NEWLINES.split(text))


def screen_source(
    source: str, *, first: int, last: int, protected: Iterable[str] = ()
) -> list[Finding] | None:
    """Findings for lines ``first..last`` (1-based, inclusive) of ``source``; None when it does not parse
    (the run then fails on its own ``SyntaxError``). ``protected``: substrings no string may contain."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    if last < first:
        return []
    screen = _Screen(tree, first, last, protected)
    return screen.run(tree)


def protected_words(test_entry: str) -> tuple[str, ...]:
    """Strings that name the test script (its file name and module name)."""
    path = PurePosixPath(test_entry)
    return tuple({path.name, path.stem} - {""})


def screen_completion(*, original: str, snippet: Snippet, code: str, test_entry: str) -> list[Finding]:
    """Findings for ``code`` filled into ``original`` (the text of ``snippet.file``) in place of the
    snippet's reference. Lines are lines of the filled-in file."""
    filled = fill_in(original, snippet, code)
    lines = split_lines(original)
    prefix = "\n".join(lines[: snippet.start_line])
    suffix = "\n".join(lines[snippet.end_line - 1 :])
    size = len(filled) - len(prefix) - len(suffix) - 2
    body = filled[len(prefix) + 1 : len(prefix) + 1 + size] if size > 0 else ""
    first = _line_count(prefix) + 1
    last = first + _line_count(body) - 1 if body else first - 1
    return screen_source(filled, first=first, last=last, protected=protected_words(test_entry)) or []


__all__ = ["CATEGORY", "Finding", "protected_words", "screen_completion", "screen_source"]
