"""Small, deterministic mutants of a snippet's code, found through its syntax tree.

Four kinds, each keeping every other character (indentation, comments, line breaks) as it was:

- ``operator``: ``+`` <-> ``-``, ``*`` <-> ``/`` in a binary operation or an augmented assignment;
- ``constant``: an int ``n`` -> ``n + 1``, a float ``x`` -> ``2 * x`` (``0.0`` -> ``1.0``);
- ``comparison``: ``<`` -> ``>=``, ``<=`` -> ``>``, ``>`` -> ``<=``, ``>=`` -> ``<``, ``==`` <-> ``!=``;
- ``statement``: one statement dropped (``pass`` in its place when it was the only one of its block).

The validation battery draws a few of them at random for every snippet (``draw``), from a seed the test
cannot know, so that a test which only recognises fixed wrong fills does not count as checking a snippet.

Used to judge wrong-but-plausible completions, not only references (bench/eval_speed.py, the warm-versus-
cold test). A mutant that does not parse, or whose tree equals the original's, is left out; a mutant can
still be equivalent to the original (the tests cannot tell them apart), which is for its judge to find.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

KINDS = ("operator", "constant", "comparison", "statement")
#: The kinds that change one token (the speed bench and the warm-versus-cold test judge these).
TOKEN_KINDS = KINDS[:3]

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


def _statement_sites(tree: ast.AST, source: _Source) -> list[tuple[str, int, int, str, str]]:
    """Drop one statement: (kind, start, end, old text, new text) per statement of the code's blocks."""
    sites: list[tuple[str, int, int, str, str]] = []
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if not isinstance(block, list) or not block or not isinstance(block[0], ast.stmt):
                continue
            for stmt in block:
                # The ``if True:`` the parser wrapped an indented body in is not the snippet's.
                if stmt.lineno - 1 - source.shift < 0:
                    continue
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    continue
                first = source.offset(stmt.lineno, 0)
                last_line = stmt.end_lineno or stmt.lineno  # type: ignore[attr-defined]
                index = last_line - 1 - source.shift
                end = source.starts[index] + len(source.lines[index])
                indent = source.lines[stmt.lineno - 1 - source.shift]
                pad = indent[: len(indent) - len(indent.lstrip())]
                if source.code[first:end].strip() == "" or first < 0:
                    continue
                replacement = pad + "pass" if len(block) == 1 else ""
                sites.append(("statement", first, end, source.code[first:end], replacement))
    return sites


def ast_mutants(
    code: str, *, per_kind: int | None = None, kinds: tuple[str, ...] = TOKEN_KINDS
) -> list[Mutant]:
    """The mutants of ``code`` (a snippet's body as it stands in its file), in source order, at most
    ``per_kind`` of each kind (None: all) of ``kinds`` (the one-token kinds unless told). Code that does not
    parse has none."""
    parsed = _parse(code)
    if parsed is None:
        return []
    tree, shift = parsed
    original = ast.dump(tree)
    source = _Source(code, shift)
    taken = dict.fromkeys(KINDS, 0)
    mutants: list[Mutant] = []
    found = _sites(tree, source) + (_statement_sites(tree, source) if "statement" in kinds else [])
    sites = sorted((s for s in found if s[0] in kinds), key=lambda s: (s[1], KINDS.index(s[0])))
    for kind, start, end, old, new in sites:
        if per_kind is not None and taken[kind] >= per_kind:
            continue
        mutated = code[:start] + new + code[end:]
        if kind == "statement" and not new:
            # The whole line goes (its line break too), so no blank line is left behind.
            mutated = (
                code[:start] + code[end + 1 :] if code[end : end + 1] == "\n" else code[:start].rstrip(" \t")
            )
        reparsed = _parse(mutated)
        if mutated == code or reparsed is None or ast.dump(reparsed[0]) == original:
            continue
        taken[kind] += 1
        change = f"{old} -> {new}" if kind != "statement" else f"dropped: {old.strip()[:80]}"
        mutants.append(Mutant(kind, source.line_of(start), change, mutated))
    return mutants


def draw(code: str, count: int, seed: str) -> list[Mutant]:
    """Up to ``count`` distinct mutants of ``code`` drawn at random (every kind and site alike) with the
    generator seeded by ``seed``: the same seed draws the same mutants, another seed others."""
    import random

    unique = list({m.code: m for m in ast_mutants(code, kinds=KINDS)}.values())
    rng = random.Random(seed)
    rng.shuffle(unique)
    return unique[:count]


__all__ = ["KINDS", "TOKEN_KINDS", "Mutant", "ast_mutants", "draw"]
