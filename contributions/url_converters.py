"""``<id:name>``: a row id in a URL, within the database's range.

Django's ``<int:...>`` matches any run of digits, and a lookup with one past PostgreSQL's bigint range fails
in the database (a 500). An ``id`` is at most 2**63 - 1; a larger number matches no route, so it is a 404 like
any other unknown id. The API schema states the same range (``SPECTACULAR_SETTINGS["PATH_CONVERTER_OVERRIDES"]``).
"""

from __future__ import annotations

from django.urls import register_converter

#: the largest id a row can have (PostgreSQL's bigint)
MAX_ID = 2**63 - 1


class IdConverter:
    regex = "[0-9]{1,19}"

    def to_python(self, value: str) -> int:
        number = int(value)
        if number > MAX_ID:
            raise ValueError(f"{value} is past the largest id")
        return number

    def to_url(self, value: int) -> str:
        return str(value)


register_converter(IdConverter, "id")
