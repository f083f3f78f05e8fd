"""The OpenAPI schema's operations, as drf-spectacular describes them, with two changes: security, and the
error answers every operation may give.

drf-spectacular lists every authentication scheme on every operation, adding an empty requirement (``{}``)
where anonymous clients are let in too; Swagger UI draws a lock for any listed scheme, so every public read
looked as if it needed a token. Here an operation open to anonymous clients lists no security at all, and
only the ones that need a token (the predictions upload) keep their schemes.

drf-spectacular documents only the success answers; here every operation also states the errors it can
answer, with their bodies, unless the view documents that status itself: 400 where it takes query
parameters or a body (the body names each bad field), 404 everywhere (an unknown id or key, an unknown
``format``, an id past the database's range), 401 and 403 where it needs a token, 429 where it is
throttled.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema

#: ``{"detail": "..."}``: what DRF answers for 401, 403, 404, 405 and 429
DETAIL_BODY: dict[str, Any] = {
    "type": "object",
    "properties": {"detail": {"type": "string"}},
    "required": ["detail"],
}
#: a 400's body: each bad parameter or field with its messages (``detail`` for a request it cannot parse)
FIELD_ERRORS_BODY: dict[str, Any] = {
    "type": "object",
    "properties": {"detail": {"type": "string"}},
    "additionalProperties": {"type": "array", "items": {"type": "string"}},
    "description": "parameter or field name -> what is wrong with its value",
}
ERROR_DESCRIPTIONS = {
    "400": "A parameter or field has a value the operation does not accept: the body names it.",
    "401": "No valid token: send `Authorization: Token <secret>`.",
    "403": "The token's user may not do this.",
    "404": "Nothing has that id or key (or the `format` is not one this operation answers in).",
    "429": "Too many requests: the `Retry-After` header says in how many seconds to try again.",
}


class PublicAwareAutoSchema(AutoSchema):
    def get_auth(self) -> list[dict[str, Any]]:
        """No security requirement for an operation anonymous clients may call; the schemes otherwise."""
        auths = super().get_auth()
        return [] if {} in auths else auths

    def get_operation(self, *args: Any, **kwargs: Any) -> dict[str, Any] | None:
        """drf-spectacular's operation, then the errors it can answer that its view does not document."""
        operation = super().get_operation(*args, **kwargs)
        if operation is None:
            return None
        codes = ["404"]
        # ``format`` is DRF's: a format the operation does not answer in is a 404, not a 400.
        takes_input = "requestBody" in operation or any(
            p["in"] == "query" and p["name"] != "format" for p in operation.get("parameters", [])
        )
        if takes_input:
            codes.append("400")
        if operation.get("security"):
            codes += ["401", "403"]
        if getattr(self.view, "throttle_classes", None):
            codes.append("429")
        responses = operation["responses"]
        for code in sorted(codes):
            if code not in responses:
                body = FIELD_ERRORS_BODY if code == "400" else DETAIL_BODY
                responses[code] = {
                    **self._get_response_for_code(body, code),
                    "description": ERROR_DESCRIPTIONS[code],
                }
        operation["responses"] = dict(sorted(responses.items()))
        return operation
