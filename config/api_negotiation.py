"""The API's content negotiation: DRF's, except that an empty ``format`` is refused as an unknown one.

DRF reads ``?format=`` (empty) as no format at all and answers JSON, while the schema lists ``format`` as
``json`` or ``csv``: here an empty value is a 404 like any other format an operation does not answer in, as
the schema documents, so a client that sends what the schema does not allow is told so.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.request import Request


class StrictFormatNegotiation(DefaultContentNegotiation):
    def select_renderer(
        self, request: Request, renderers: list[Any], format_suffix: str | None = None
    ) -> Any:
        if not format_suffix and request.query_params.get(self.settings.URL_FORMAT_OVERRIDE) == "":
            raise Http404("an empty format: give json or csv, or leave format out")
        return super().select_renderer(request, renderers, format_suffix)
