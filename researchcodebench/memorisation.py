"""Memorisation: how much of a snippet's reference code a completion reproduces (docs/scoring.md#memorisation).

Both texts are reduced to *normalised tokens* and compared:

- tokens come from the standard library's ``tokenize`` with every line's leading whitespace removed first
  (a snippet is cut from inside a function, a completion may be indented differently: layout is not
  content). Comments (the nested paper2code tags among them), line ends, indentation and the encoding
  marker are dropped; a string literal becomes its value (``'a'`` and ``"a"`` are the same token), numbers,
  names and operators stay as written. Renaming a variable therefore changes the tokens; re-indenting,
  re-wrapping or re-commenting does not;
- a text the tokenizer refuses (a completion is model output: unclosed brackets or strings, stray bytes)
  never raises: both texts are then split by ``FALLBACK_TOKEN`` instead (words, numbers, single other
  characters, ``#`` comments cut off), so a pair is always compared with one tokenizer.

Two figures, both shares of the *reference* (a completion that adds code around a verbatim copy still
reproduces the original):

- ``run_share``: the longest run of consecutive tokens the two have in common, over the reference's
  token count;
- ``ngram_share``: the share of the reference's distinct ``NGRAM``-token sequences that occur in the
  completion (None when the reference has fewer than ``NGRAM`` tokens).

A completion is **near verbatim** when the reference has at least ``MIN_REFERENCE_TOKENS`` tokens,
``ngram_share >= NEAR_VERBATIM_NGRAM`` and ``run_share >= NEAR_VERBATIM_RUN``: most of the reference's
5-token sequences, and at least half of it in one unbroken stretch. A shorter reference is "too short to
tell" (``near_verbatim`` None): a one-line snippet has few ways to be written, and a correct answer matches
it whether or not the model saw it. Only the first ``MAX_TOKENS`` tokens of either text are compared, so a
huge completion costs bounded time.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass
from difflib import SequenceMatcher

#: the length of the token sequences compared by ``ngram_share``
NGRAM = 5
#: a reference with fewer normalised tokens is too short to call a completion near verbatim
MIN_REFERENCE_TOKENS = 20
#: near verbatim: at least this share of the reference's ``NGRAM``-grams occur in the completion ...
NEAR_VERBATIM_NGRAM = 0.8
#: ... and its longest common run of tokens is at least this share of the reference
NEAR_VERBATIM_RUN = 0.5
#: tokens of each text compared at most (the rest of a longer text is ignored)
MAX_TOKENS = 20_000
#: characters of each text read at most (before tokenising)
MAX_CHARS = 400_000
#: the fallback tokenizer: a word, a number or any other single non-blank character
FALLBACK_TOKEN = re.compile(r"[A-Za-z_]\w*|\d[\w.]*|\S")

_DROPPED = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENCODING,
    tokenize.ENDMARKER,
}


class UntokenisableError(ValueError):
    """The standard tokenizer refused the text."""


@dataclass(frozen=True)
class Overlap:
    """How much of a reference one completion reproduces (see the module docstring). ``tokenizer`` is
    ``python`` (the standard tokenizer read both texts) or ``fallback``."""

    reference_tokens: int
    completion_tokens: int
    longest_run: int
    ngram_share: float | None
    near_verbatim: bool | None
    tokenizer: str

    @property
    def run_share(self) -> float:
        return self.longest_run / self.reference_tokens if self.reference_tokens else 0.0


def _cut(code: str) -> str:
    return "\n".join(line.lstrip() for line in code[:MAX_CHARS].splitlines()) + "\n"


def _string_value(text: str) -> str:
    try:
        return "s:" + repr(ast.literal_eval(text))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def python_tokens(code: str) -> list[str]:
    """The normalised tokens of ``code`` by the standard tokenizer (module docstring); raises
    ``UntokenisableError`` when it refuses the text."""
    out: list[str] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(_cut(code)).readline):
            if token.type in _DROPPED or not token.string.strip():
                continue
            if token.type == tokenize.ERRORTOKEN:
                raise UntokenisableError(f"unexpected {token.string!r} at line {token.start[0]}")
            out.append(_string_value(token.string) if token.type == tokenize.STRING else token.string)
            if len(out) >= MAX_TOKENS:
                break
    except (tokenize.TokenError, SyntaxError, ValueError) as exc:
        raise UntokenisableError(str(exc)) from exc
    return out


def fallback_tokens(code: str) -> list[str]:
    """The tokens of ``code`` by ``FALLBACK_TOKEN``, ``#`` to the end of a line dropped (a ``#`` inside a
    string cuts it too: this tokenizer only has to be consistent, and never fail)."""
    out: list[str] = []
    for line in code[:MAX_CHARS].splitlines():
        out.extend(FALLBACK_TOKEN.findall(line.split("#", 1)[0]))
        if len(out) >= MAX_TOKENS:
            return out[:MAX_TOKENS]
    return out


def longest_common_run(a: list[str], b: list[str]) -> int:
    """The length of the longest run of consecutive tokens that ``a`` and ``b`` share."""
    if not a or not b:
        return 0
    return SequenceMatcher(None, a, b, autojunk=False).find_longest_match(0, len(a), 0, len(b)).size


def ngram_containment(reference: list[str], completion: list[str], n: int = NGRAM) -> float | None:
    """The share of ``reference``'s distinct ``n``-token sequences that occur in ``completion``; None when
    the reference is shorter than ``n`` tokens."""
    wanted = {tuple(reference[i : i + n]) for i in range(len(reference) - n + 1)}
    if not wanted:
        return None
    found = {tuple(completion[i : i + n]) for i in range(len(completion) - n + 1)}
    return len(wanted & found) / len(wanted)


def overlap(*, reference: str, completion: str) -> Overlap | None:
    """How much of ``reference`` the completion ``completion`` reproduces; None when there is nothing to
    compare (either text has no tokens). Never raises on malformed code."""
    try:
        ref, comp, tokenizer = python_tokens(reference), python_tokens(completion), "python"
    except UntokenisableError:
        ref, comp, tokenizer = fallback_tokens(reference), fallback_tokens(completion), "fallback"
    if not ref or not comp:
        return None
    run = longest_common_run(ref, comp)
    share = ngram_containment(ref, comp)
    near = None
    if len(ref) >= MIN_REFERENCE_TOKENS and share is not None:
        near = share >= NEAR_VERBATIM_NGRAM and run / len(ref) >= NEAR_VERBATIM_RUN
    return Overlap(
        reference_tokens=len(ref),
        completion_tokens=len(comp),
        longest_run=run,
        ngram_share=share,
        near_verbatim=near,
        tokenizer=tokenizer,
    )
