"""CSV and JSON exports of every read-API table (the leaderboard's and the runs').

JSON is written by ``FastJSONRenderer``: DRF's ``JSONRenderer`` output (compact, UTF-8, U+2028/U+2029
escaped, dates and times through DRF's encoder), encoded by orjson, which is 4-5x faster on a board table
of 10,000 rows (issue 21: a cold table is mostly its encoding).

The API views render their data with ``CSVRenderer`` when asked for ``?format=csv`` (DRF picks the renderer
from the ``format`` query parameter) and with JSON for ``?format=json``. The same ``table_csv`` function
serves pages that want a CSV link without going through the API. It lives in ``evaluation``, the lowest app
with a read API, so that the leaderboard (a higher layer) uses the same renderer.

CSV layout: one header row, then one row per record. Nested objects become dotted columns
(``model.key``), lists become ``;``-joined cells, ``None`` an empty cell, booleans ``true``/``false``.
A text cell that a spreadsheet would read as a formula (first character ``=``, ``+``, ``-``, ``@``, tab or
carriage return: OWASP's "CSV injection") gets a leading ``'``, so opening an export never runs a model
name or an error message; numbers are written as they are (a negative score stays a number).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from typing import Any

import orjson
from rest_framework.renderers import BaseRenderer, JSONRenderer


def flatten(record: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested mapping as one level of dotted keys (lists kept as lists)."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


#: first characters that make a spreadsheet treat a cell as a formula (or start one after a separator)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutralise(text: str) -> str:
    """``text`` with a leading ``'`` when a spreadsheet would evaluate it as a formula."""
    return f"'{text}" if text.startswith(FORMULA_STARTS) else text


#: the value types a cell is written from directly (a table's rows are mostly these)
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _cell(value: Any) -> str:
    kind = type(value)
    if kind is str:
        return neutralise(value)
    if kind is int or kind is float:
        return str(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return neutralise(";".join(_cell(v) for v in value))
    if isinstance(value, str):
        return neutralise(value)
    return str(value)


def table_csv(records: Iterable[Mapping[str, Any]], columns: list[str] | None = None) -> str:
    """Records as CSV text with a header row. ``columns`` fixes the columns (and their order); by default
    every key seen, in first-seen order. An empty table still has its header when ``columns`` is given."""
    # A flat record (only scalar values, string keys: most tables) is read as is; flattening copies it.
    rows = [
        r if all(type(v) in _SCALARS for v in r.values()) and all(type(k) is str for k in r) else flatten(r)
        for r in records
    ]
    if columns is None:
        columns = []
        for row in rows:
            columns.extend(k for k in row if k not in columns)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    # The csv module quotes a field with a line feed (our line terminator) but not one with a carriage
    # return, which readers take as a line break: a row holding one is written fully quoted.
    quoted = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_ALL)
    writer.writerow(columns)
    for row in rows:
        cells = [_cell(row.get(c)) for c in columns]
        (quoted if "\r" in "".join(cells) else writer).writerow(cells)
    return buf.getvalue()


def records_of(data: Any) -> list[Mapping[str, Any]]:
    """The table inside an API payload: the ``results`` list of a page or envelope, a bare list, or an
    error object as (field, message) rows so that a failed CSV request still says why."""
    if isinstance(data, Mapping) and isinstance(data.get("results"), list):
        return data["results"]
    if isinstance(data, list):
        return data
    if isinstance(data, Mapping):
        return [{"field": k, "message": _cell(v)} for k, v in data.items()]
    return [{"value": data}]


class CSVRenderer(BaseRenderer):
    """DRF renderer for ``?format=csv``. A view may set ``export_name`` (the download's file name) and
    ``csv_columns`` (fixed columns, so an empty table still has its header)."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: dict | None = None):
        context = renderer_context or {}
        view = context.get("view")
        response = context.get("response")
        failed = response is not None and response.status_code >= 400
        columns = None if failed else getattr(view, "csv_columns", None)
        if response is not None and not failed:
            name = getattr(view, "export_name", "export")
            response["Content-Disposition"] = f'attachment; filename="{name}.csv"'
        return table_csv(records_of(data), columns).encode(self.charset)


#: orjson leaves dates and times to DRF's encoder (``Z`` for UTC, milliseconds), as DRF's renderer writes them
_ORJSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_NON_STR_KEYS


class FastJSONRenderer(JSONRenderer):
    """``JSONRenderer`` encoded by orjson. An indented answer (``; indent=`` in the Accept header), a
    setting away from DRF's defaults (``COMPACT_JSON``, ``UNICODE_JSON``, ``STRICT_JSON``) or a value
    orjson refuses goes to DRF's own renderer. The output is DRF's byte for byte, with two exceptions: a
    float under 1e-4 is the same number written differently (``1e-7`` where Python writes ``1e-07``),
    and a non-finite float, which DRF refuses to write (a server error), is written as ``null``."""

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: dict | None = None):
        if data is None:
            return b""
        renderer_context = renderer_context or {}
        plain = (
            self.compact
            and not self.ensure_ascii
            and self.strict
            and self.get_indent(accepted_media_type, renderer_context) is None
        )
        if plain:
            try:
                out = orjson.dumps(data, default=self.encoder_class().default, option=_ORJSON_OPTIONS)
            except (TypeError, orjson.JSONEncodeError):
                pass  # a value only DRF's encoder takes (a huge int, a non-finite float): DRF renders it
            else:
                # As DRF does: U+2028 and U+2029 are valid JSON but end a line in JavaScript.
                return out.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
        return super().render(data, accepted_media_type, renderer_context)
