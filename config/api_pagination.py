"""The API's pagination: ``limit`` and ``offset``, bounded and checked.

DRF's ``LimitOffsetPagination`` ignores a ``limit`` it cannot read and passes any ``offset`` to the database,
which answers 500 for one past its integer range. Here both are whole numbers in a stated range (the schema
says which); anything else is a 400 naming the parameter.
"""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request

#: the most rows one page may ask for: a whole run's results in one CSV (the model page links its run's
#: results with ``limit=100000``, ``leaderboard.links.RESULTS_EXPORT_LIMIT``: 2,000 snippets x 50 samples)
MAX_LIMIT = 100_000
#: the largest offset (PostgreSQL's integer range; far beyond any table here)
MAX_OFFSET = 2**31 - 1


def _bounded(request: Request, name: str, *, default: int, minimum: int, maximum: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    # Digits past the maximum's are out of range: counted before ``int()``, which refuses a string of more
    # than 4,300 digits with a ValueError (Python's limit on converting decimal text).
    digits = raw.lstrip("0") or "0"
    if not (
        raw.isascii()
        and raw.isdigit()
        and len(digits) <= len(str(maximum))
        and minimum <= int(digits) <= maximum
    ):
        raise ValidationError({name: [f"a whole number from {minimum} to {maximum}, not {raw[:40]!r}."]})
    return int(digits)


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    def get_limit(self, request: Request) -> int:
        return _bounded(
            request, self.limit_query_param, default=self.default_limit, minimum=1, maximum=MAX_LIMIT
        )

    def get_offset(self, request: Request) -> int:
        return _bounded(request, self.offset_query_param, default=0, minimum=0, maximum=MAX_OFFSET)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        bounds = {
            self.limit_query_param: {"minimum": 1, "maximum": MAX_LIMIT, "default": self.default_limit},
            self.offset_query_param: {"minimum": 0, "maximum": MAX_OFFSET, "default": 0},
        }
        for parameter in parameters:
            parameter["schema"].update(bounds.get(parameter["name"], {}))
        return parameters
