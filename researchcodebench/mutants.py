"""Small, deterministic mutants of a snippet's code, found through its syntax tree.

Three kinds, each changing one token and keeping every other character (indentation, comments, line
breaks) as it was:

- ``operator``: ``+`` <-> ``-``, ``*`` <-> ``/`` in a binary operation or an augmented assignment;
- ``constant``: an int ``n`` -> ``n + 1``, a float ``x`` -> ``2 * x`` (``0.0`` -> ``1.0``);
- ``comparison``: ``<`` -> ``>=``, ``<=`` -> ``>``, ``>`` -> ``<=``, ``>=`` -> ``<``, ``==`` <-> ``!=``.

Used to judge wrong-but-plausible completions, not only references (bench/eval_speed.py, the warm-versus-
cold test). A mutant that does not parse, or whose tree equals the original's, is left out; a mutant can
still be equivalent to the original (the tests cannot tell them apart), which is for its judge to find.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

KINDS = ("operator", "constant", "comparison")

_OPERATOR_SWAP: dict[type, tuple[str, str]] = {
    ast.Add: ("+", "-"),
    ast.Sub: ("-", "+"),
    ast.Mult: ("*", "/"),
    ast.Div: ("/", "*"),
}
_COMPARISON_FLIP: dict[type, tuple[str, str]] = {
    ast.Lt: ("<", ">="),
    ast.LtE: ("<=", ">"),
    ast.Gt: (">", "<="),
    ast.GtE: (">=", "<"),
    ast.Eq: ("==", "!="),
    ast.NotEq: ("!=", "=="),
}


@dataclass(frozen=True)
class Mutant:
    """One mutant: its ``kind`` (one of ``KINDS``), the 1-based ``line`` of ``code`` it changes, what
    changed (``"+ -> -"``) and the whole mutated code."""

    kind: str
    line: int
    change: str
    code: str


def _parse(code: str) -> tuple[ast.Module, int] | None:
    """The tree of ``code`` and how many lines were put before it: an indented block (a function's body)
    is parsed inside ``if True:``."""
    for prefix in ("", "if True:\n"):
        try:
            return ast.parse(prefix + code), prefix.count("\n")
        except (SyntaxError, ValueError):
            continue
    return None


class _Source:
    """Character offsets in ``code`` from the tree's (line, UTF-8 byte column) positions."""

    def __init__(self, code: str, shift: int) -> None:
        self.code = code
        self.shift = shift
        self.lines = code.split("\n")
        self.starts = [0]
        for line in self.lines[:-1]:
            self.starts.append(self.starts[-1] + len(line) + 1)

    def offset(self, lineno: int, col: int) -> int:
        index = lineno - 1 - self.shift
        line = self.lines[index]
        return self.starts[index] + len(line.encode("utf-8")[:col].decode("utf-8", "ignore"))

    def start(self, node: ast.AST) -> int:
        return self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def end(self, node: ast.AST) -> int:
        return self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    def line_of(self, offset: int) -> int:
        return self.code.count("\n", 0, offset) + 1


def _find_token(code: str, start: int, end: int, symbol: str) -> int | None:
    """Where ``symbol`` stands between two operands (``code[start:end]``), skipping comments."""
    index = start
    while index < end:
        char = code[index]
        if char == "#":
            newline = code.find("\n", index, end)
            if newline < 0:
                return None
            index = newline + 1
            continue
        if code.startswith(symbol, index):
            return index
        index += 1
    return None


def _inside_fstrings(tree: ast.AST) -> set[int]:
    """Ids of nodes within f-strings (their positions are not reliable on every Python version)."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            inside.update(id(child) for child in ast.walk(node))
    return inside


def _sites(tree: ast.AST, source: _Source) -> list[tuple[str, int, int, str, str]]:
    """(kind, start, end, old text, new text) for every place a mutant can change, in source order."""
    skip = _inside_fstrings(tree)
    sites: list[tuple[str, int, int, str, str]] = []

    def token(kind: str, left: ast.AST, right: ast.AST, old: str, new: str) -> None:
        at = _find_token(source.code, source.end(left), source.start(right), old)
        if at is not None:
            sites.append((kind, at, at + len(old), old, new))

    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATOR_SWAP:
            old, new = _OPERATOR_SWAP[type(node.op)]
            token("operator", node.left, node.right, old, new)
        elif isinstance(node, ast.AugAssign) and type(node.op) in _OPERATOR_SWAP:
            old, new = _OPERATOR_SWAP[type(node.op)]
            token("operator", node.target, node.value, old + "=", new + "=")
        elif isinstance(node, ast.Compare):
            left = node.left
            for op, right in zip(node.ops, node.comparators, strict=True):
                if type(op) in _COMPARISON_FLIP:
                    old, new = _COMPARISON_FLIP[type(op)]
                    token("comparison", left, right, old, new)
                left = right
        elif isinstance(node, ast.Constant) and type(node.value) in (int, float):
            value = node.value
            changed = value + 1 if isinstance(value, int) else (2.0 * value if value else 1.0)
            start, end = source.start(node), source.end(node)
            sites.append(("constant", start, end, source.code[start:end], repr(changed)))
    return sorted(sites, key=lambda site: (site[1], KINDS.index(site[0])))


def ast_mutants(code: str, *, per_kind: int | None = None) -> list[Mutant]:
    """The mutants of ``code`` (a snippet's body as it stands in its file), in source order, at most
    ``per_kind`` of each kind (None: all). Code that does not parse has none."""
    parsed = _parse(code)
    if parsed is None:
        return []
    tree, shift = parsed
    original = ast.dump(tree)
    source = _Source(code, shift)
    taken = dict.fromkeys(KINDS, 0)
    mutants: list[Mutant] = []
    for kind, start, end, old, new in _sites(tree, source):
        if per_kind is not None and taken[kind] >= per_kind:
            continue
        mutated = code[:start] + new + code[end:]
        reparsed = _parse(mutated)
        if mutated == code or reparsed is None or ast.dump(reparsed[0]) == original:
            continue
        taken[kind] += 1
        mutants.append(Mutant(kind, source.line_of(start), f"{old} -> {new}", mutated))
    return mutants


__all__ = ["KINDS", "Mutant", "ast_mutants"]
