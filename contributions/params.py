"""Numbers read from a request's query or form: only ASCII digits, short enough to be an id the database can
hold (``str.isdigit`` also accepts characters such as ``²`` that ``int`` refuses, and ``int`` refuses more than
4,300 digits), so a page given anything else shows its default instead of failing."""

from __future__ import annotations

#: the most digits a read id may have: 18 digits always fit a signed 64-bit key
MAX_DIGITS = 18


def optional_id(raw: str | None) -> int | None:
    """``raw`` as a non-negative int when it is 1 to ``MAX_DIGITS`` ASCII digits, else None."""
    if raw and len(raw) <= MAX_DIGITS and raw.isascii() and raw.isdigit():
        return int(raw)
    return None
