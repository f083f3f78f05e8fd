"""The predictions format: one parser, one ``Prediction`` type, and how an answer becomes the tested code.

A predictions file is JSON Lines (``docs/predictions.md``): UTF-8 text, one JSON object per line::

    {"task": "DyT", "snippet": "forward", "completion_idx": 0, "code": "return x * 2"}
    {"task": "DyT", "snippet": "init", "completion_idx": 0, "response": "```python\\n...\\n```"}

``task`` and ``snippet`` name the answered snippet, ``completion_idx`` (default 0) which of its n completions
this is, and exactly one of ``code`` (the region's new body) or ``response`` (a raw model reply, from which
the code is extracted with a prompt template's rules). Blank lines are ignored; other fields are ignored.

The CLI's ``evaluate``, the portal's upload form and API and run creation all read files and answers through
this module, so a file one accepts is accepted by the others and tested the same way. The parser treats its
input as adversarial: it never raises for bad input, bounds every size (file, line count, line, answer,
name, number), and reports every problem as ``line N: message`` with offending values shortened.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from researchcodebench.annotations import split_lines
from researchcodebench.problems import TEMPLATES

#: how many characters of an offending value an error message shows
SHOWN_CHARS = 80
#: integers longer than this many digits are not parsed (Python refuses past 4,300 digits, and no
#: completion index needs more than a few)
_MAX_INT_DIGITS = 30
_NAME_FIELDS = ("task", "snippet")
_ANSWER_FIELDS = ("code", "response")


@dataclass(frozen=True)
class PredictionLimits:
    """Bounds on a predictions file; every one is checked before the value it bounds is used.

    ``max_completions`` bounds ``completion_idx`` to ``0 .. max_completions - 1``; ``max_code_bytes`` bounds
    ``code`` or ``response`` (UTF-8 bytes) of one line; ``max_errors`` how many errors a report lists.
    """

    max_bytes: int = 20 * 1024 * 1024
    max_lines: int = 100_000
    max_code_bytes: int = 256 * 1024
    max_completions: int = 100
    max_name_chars: int = 500
    max_errors: int = 50

    def __post_init__(self) -> None:
        for name in ("max_bytes", "max_lines", "max_code_bytes", "max_completions", "max_name_chars"):
            if getattr(self, name) < 1:
                raise ValueError(f"PredictionLimits.{name} must be at least 1")

    @property
    def max_line_bytes(self) -> int:
        """The longest line read. JSON may write one byte of code as six (``\\u0001``), so a line may be
        six times its answer; the margin holds the other fields."""
        return 6 * self.max_code_bytes + 64 * 1024

    def size_error(self, size: int) -> str | None:
        """The whole-file message for a file of ``size`` bytes, or None when it is within the limit.
        Callers that know the size before reading (an upload, a file on disk) check it first."""
        if size > self.max_bytes:
            return f"the file is too large ({human_size(size)}); the limit is {human_size(self.max_bytes)}"
        return None


@dataclass(frozen=True)
class Prediction:
    """One answer: the snippet it answers, its completion index, and ``code`` or ``response``.

    A parsed prediction has exactly one of ``code`` and ``response`` and knows its ``line`` (1-based);
    one built in code (``line=0``) with neither is an answer with no code.
    """

    task: str
    snippet: str
    completion_idx: int = 0
    code: str | None = None
    response: str | None = None
    line: int = 0

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.task, self.snippet, self.completion_idx)


@dataclass(frozen=True)
class PredictionError:
    """One problem: its 1-based ``line``, or None for the whole file, and a message naming the field."""

    line: int | None
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}" if self.line else self.message


@dataclass(frozen=True)
class ParsedPredictions:
    """What a file holds: the valid predictions (file order) and every error (line order)."""

    predictions: tuple[Prediction, ...]
    errors: tuple[PredictionError, ...]

    @property
    def ok(self) -> bool:
        return not self.errors and bool(self.predictions)

    @property
    def n_completions(self) -> int:
        """Completions per snippet the file provides (highest index + 1)."""
        return max((p.completion_idx for p in self.predictions), default=-1) + 1


def human_size(n: int) -> str:
    """A byte count for people: ``20 MB``, ``1.5 KB``, ``12 bytes``."""
    for unit, size in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if n >= size:
            value = n / size
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n} bytes"


def shown(value: str, limit: int = SHOWN_CHARS) -> str:
    """``value`` quoted for an error message, cut to ``limit`` characters (escapes keep it one line)."""
    if len(value) <= limit:
        return repr(value)
    return f"{value[:limit]!r}... ({len(value)} characters)"


def format_errors(
    errors: list[PredictionError] | tuple[PredictionError, ...], *, limit: int, source: str | None = None
) -> list[str]:
    """Errors in line order (whole-file ones first), at most ``limit`` of them and then one
    ``... and N more errors`` line. Each reads ``line N: message``, or ``SOURCE:N: message`` (as compilers
    name a place) when a ``source`` such as the file's path is given."""
    ordered = sorted(errors, key=lambda e: e.line or 0)
    if source is None:
        lines = [str(e) for e in ordered[:limit]]
    else:
        lines = [
            f"{source}:{e.line}: {e.message}" if e.line else f"{source}: {e.message}" for e in ordered[:limit]
        ]
    if len(ordered) > limit:
        lines.append(f"... and {len(ordered) - limit} more errors")
    return lines


class _LongInteger:
    """Stands in for an integer literal too long to convert (see ``_MAX_INT_DIGITS``)."""

    def __init__(self, digits: str) -> None:
        self.digits = digits


def _parse_int(text: str) -> int | _LongInteger:
    return int(text) if len(text) <= _MAX_INT_DIGITS else _LongInteger(text)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float, _LongInteger)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _text_problem(value: str) -> str | None:
    """Why a decoded string cannot be kept (stored, shown, run), or None. JSON escapes can spell lone
    surrogates (``"\\ud800"``), which are not Unicode text, and NUL, which PostgreSQL text cannot hold."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"holds a lone surrogate {value[exc.start]!r} at character {exc.start + 1} (not valid Unicode)"
    nul = value.find("\x00")
    if nul >= 0:
        return f"holds a NUL character at character {nul + 1}"
    return None


def _read_line(
    number: int, obj: dict[str, Any], limits: PredictionLimits, errors: list[PredictionError]
) -> Prediction | None:
    """The prediction of one decoded line, or None after appending every problem it has to ``errors``."""
    problems: list[str] = []
    for name in _NAME_FIELDS:
        value = obj.get(name)
        if name not in obj:
            problems.append(f"missing field '{name}'")
        elif not isinstance(value, str) or not value:
            problems.append(f"field '{name}' must be a non-empty string, got {_json_type(value)}")
        elif len(value) > limits.max_name_chars:
            problems.append(
                f"field '{name}' is too long ({len(value)} characters; at most {limits.max_name_chars}): "
                f"{shown(value)}"
            )
        elif (problem := _text_problem(value)) is not None:
            problems.append(f"field '{name}' {problem}")
    idx = obj.get("completion_idx", 0)
    if isinstance(idx, bool) or not isinstance(idx, int) or not 0 <= idx < limits.max_completions:
        if isinstance(idx, _LongInteger):
            got = f"a {len(idx.digits.lstrip('-'))}-digit number"
        elif isinstance(idx, (int, float)) and not isinstance(idx, bool):
            got = shown(str(idx))
        else:
            got = _json_type(idx)
        problems.append(
            f"field 'completion_idx' must be an integer from 0 to {limits.max_completions - 1}, got {got}"
        )
    present = [name for name in _ANSWER_FIELDS if name in obj]
    if len(present) == 2:
        problems.append("give either 'code' or 'response', not both")
    elif not present:
        problems.append("missing field 'code' (or 'response')")
    else:
        name, value = present[0], obj[present[0]]
        if not isinstance(value, str):
            problems.append(f"field '{name}' must be a string, got {_json_type(value)}")
        elif (problem := _text_problem(value)) is not None:
            problems.append(f"field '{name}' {problem}")
        elif (size := len(value.encode("utf-8"))) > limits.max_code_bytes:
            problems.append(
                f"field '{name}' is too large ({human_size(size)}); the limit is "
                f"{human_size(limits.max_code_bytes)}"
            )
    if problems:
        errors.extend(PredictionError(number, p) for p in problems)
        return None
    return Prediction(
        task=obj["task"],
        snippet=obj["snippet"],
        completion_idx=idx,
        code=obj.get("code"),
        response=obj.get("response"),
        line=number,
    )


def parse_predictions(data: bytes, *, limits: PredictionLimits) -> ParsedPredictions:
    """Parse a predictions file; never raises for bad input.

    Whole-file problems (too large, too many lines, empty) stop parsing with one error. Otherwise every line
    is read, and each problem becomes one ``PredictionError`` naming the line and the field: not UTF-8,
    too long, not JSON (including nesting too deep for the decoder, ``NaN``), not an object, a missing or
    mistyped field, a number out of range, a string that is not storable Unicode or is over its limit, or a
    duplicate ``(task, snippet, completion_idx)`` (naming the first line). A UTF-8 byte-order mark and
    ``\\r\\n`` line ends are accepted. Only ``"\\n"`` ends a line: JSON strings may hold U+2028 and others.
    """
    numbered = _numbered_lines(data, limits)
    if isinstance(numbered, PredictionError):
        return ParsedPredictions((), (numbered,))
    predictions: list[Prediction] = []
    errors: list[PredictionError] = []
    first_line: dict[tuple[str, str, int], int] = {}
    for number, raw in numbered:
        obj = _decode_line(number, raw, limits)
        if isinstance(obj, PredictionError):
            errors.append(obj)
            continue
        prediction = _read_line(number, obj, limits, errors)
        if prediction is None:
            continue
        first = first_line.setdefault(prediction.key, number)
        if first != number:
            errors.append(
                PredictionError(number, f"duplicate of line {first} (task, snippet, completion_idx)")
            )
            continue
        predictions.append(prediction)
    return ParsedPredictions(tuple(predictions), tuple(errors))


def _numbered_lines(data: bytes, limits: PredictionLimits) -> list[tuple[int, bytes]] | PredictionError:
    """The file's non-blank lines with their 1-based numbers (a byte-order mark dropped), or the one
    whole-file error that stops parsing: too large, empty, or too many lines."""
    size_error = limits.size_error(len(data))
    if size_error:
        return PredictionError(None, size_error)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    raw_lines = data.split(b"\n")
    numbered = [(n, raw) for n, raw in enumerate(raw_lines, start=1) if raw.strip(b" \t\r")]
    if not numbered:
        return PredictionError(None, "the file is empty: expected one JSON object per line")
    if len(numbered) > limits.max_lines:
        return PredictionError(None, f"the file has {len(numbered)} lines; the limit is {limits.max_lines}")
    return numbered


def _decode_line(number: int, raw: bytes, limits: PredictionLimits) -> dict[str, Any] | PredictionError:
    """Line ``number`` as a JSON object, or the error that stops it: too long (checked before decoding),
    not UTF-8, not JSON, or not an object."""
    if len(raw) > limits.max_line_bytes:
        return PredictionError(
            number,
            f"the line is too long ({human_size(len(raw))}); the limit is {human_size(limits.max_line_bytes)}",
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return PredictionError(
            number, f"not UTF-8 text: invalid byte 0x{raw[exc.start]:02x} at byte {exc.start + 1}"
        )
    try:
        obj = json.loads(text, parse_int=_parse_int, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        return PredictionError(number, f"not valid JSON ({exc.msg} at column {exc.colno})")
    except RecursionError:
        return PredictionError(number, "not valid JSON here (nested too deeply)")
    except ValueError as exc:
        # Only the hooks above raise a plain ValueError here, with a short message of their own.
        return PredictionError(number, f"not valid JSON ({str(exc)[:SHOWN_CHARS]})")
    if not isinstance(obj, dict):
        return PredictionError(number, f"expected a JSON object, got {_json_type(obj)}")
    return obj


# ------------------------------------------------------------------------------ from an answer to code

# The original's exact extraction: the last ```python fence, non-greedy, across lines.
_FENCE_2025 = re.compile(r"```python\n(.*?)```", re.DOTALL)
# rcb-v2: an opening fence ends its line and may carry a language; python-like or bare ones are accepted.
_OPEN_FENCE = re.compile(r"```[ \t]*([\w+.-]*)[ \t]*\r?$")
_PYTHON_INFOS = ("", "python", "py", "python3", "py3")


def reindent(code: str, indent: int) -> str:
    """Strip the common leading whitespace of the non-blank lines, then indent them by ``indent`` spaces.

    Blank lines become empty. Whitespace characters are compared literally (a tab is not 4 spaces), so a
    mix of tabs and spaces keeps its relative structure.
    """
    lines = split_lines(code.rstrip("\n"))
    non_blank = [line for line in lines if line.strip()]
    if not non_blank:
        return ""
    common = non_blank[0][: len(non_blank[0]) - len(non_blank[0].lstrip())]
    for line in non_blank[1:]:
        prefix = line[: len(line) - len(line.lstrip())]
        size = 0
        while size < min(len(common), len(prefix)) and common[size] == prefix[size]:
            size += 1
        common = common[:size]
    pad = " " * indent
    return "\n".join(pad + line[len(common) :].rstrip("\r") if line.strip() else "" for line in lines)


def extract_answer(response: str, *, template: str, indent: int | None = None) -> str | None:
    """The code block a model answered with, or None when no code could be extracted.

    Each template has its own indentation rule. ``rcb-2025`` (exact): the last match of
    ```` ```python\\n(.*?)``` ````, verbatim, never re-indented (``indent`` is ignored); the original
    inserted an empty answer when nothing matched, here that case is None. ``rcb-v2``: the last
    ```` ```python ````/```` ```py ````/```` ```Python ````/bare fence (an unclosed last fence counts);
    when ``indent`` is given the block is re-indented to it; a blank block is None.
    """
    if template == "rcb-2025":
        matches = _FENCE_2025.findall(response)
        return matches[-1] if matches else None
    if template == "rcb-v2":
        blocks = [body for info, body in _fenced_blocks(response) if info.lower() in _PYTHON_INFOS]
        if not blocks or not blocks[-1].strip():
            return None
        block = blocks[-1]
        return reindent(block, indent) if indent is not None else block.rstrip("\n")
    raise ValueError(f"unknown template {template!r}; choose one of {', '.join(TEMPLATES)}")


def answer_code(prediction: Prediction, *, template: str, indent: int) -> str | None:
    """The code a prediction puts between its snippet's tags (indented ``indent`` columns), or None when
    its response holds none: ``code`` is always re-indented; ``response`` goes through the template's
    extraction and indentation rule (``extract_answer``)."""
    if prediction.code is not None:
        return reindent(prediction.code, indent)
    return extract_answer(prediction.response or "", template=template, indent=indent)


def _fenced_blocks(response: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced block, scanning fences in order so that the closing fence of one
    block is never mistaken for the opening of the next. An unclosed last block runs to the end."""
    blocks: list[tuple[str, str]] = []
    info: str | None = None
    body: list[str] = []
    for line in split_lines(response):
        if info is None:
            match = _OPEN_FENCE.search(line)
            if match:
                info, body = match.group(1), []
            continue
        if "```" in line:
            head = line[: line.index("```")]
            if head.strip():
                body.append(head)
            blocks.append((info, "\n".join(body) + "\n"))
            info = None
            continue
        body.append(line)
    if info is not None:
        blocks.append((info, "\n".join(body) + "\n"))
    return blocks
