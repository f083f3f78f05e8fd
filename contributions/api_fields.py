"""API input fields shared by the apps' serializers."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from django.db import DatabaseError
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from rest_framework import serializers


class KnownNameField(serializers.CharField):
    """A name from a set the database holds (developers, releases, templates, papers). The OpenAPI schema
    enumerates the names ``known()`` returns when it is generated (``KnownNameFieldExtension``), so a client
    reads there what the server accepts today. Refusing other names is the serializer's or the view's job (a
    400 naming the parameter), as for any other rule.

    With ``new_pattern`` (a regular expression, anchored), a name that is not known yet is accepted too when
    it matches the pattern (an upload's new model key): the schema then states the pattern, and lists only
    the known names outside it."""

    def __init__(
        self, *, known: Callable[[], list[str]], new_pattern: str | None = None, **kwargs: Any
    ) -> None:
        self.known = known
        self.new_pattern = new_pattern
        super().__init__(**kwargs)


class KnownNameFieldExtension(OpenApiSerializerFieldExtension):
    target_class = KnownNameField

    def map_serializer_field(self, auto_schema: Any, direction: str) -> dict[str, Any]:
        try:
            names = list(self.target.known())
        except DatabaseError:
            # No database to ask (``manage.py check --deploy`` generates the schema before any migrate, or a
            # build step): the names are left open, and the documented 400 says what is refused.
            return {"type": "string"}
        pattern = self.target.new_pattern
        if pattern is not None:
            bounds = {"minLength": 1, "maxLength": self.target.max_length} if self.target.max_length else {}
            outside = [name for name in names if not re.fullmatch(pattern, name)]
            if not outside:
                return {"type": "string", **bounds, "pattern": pattern}
            return {"type": "string", **bounds, "anyOf": [{"pattern": pattern}, {"enum": outside}]}
        # An empty enum is not valid OpenAPI; ``not: {}`` accepts nothing, as the server does then.
        return {"type": "string", "enum": names} if names else {"type": "string", "not": {}}
