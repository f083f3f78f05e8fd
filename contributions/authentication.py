"""DRF authentication by personal API token: ``Authorization: Token <secret>``.

The header is the same as DRF's ``TokenAuthentication``; the difference is that the database keeps only the
token's digest (``contributions.models.ApiToken``), so the secret is shown once and a leaked database
holds no usable token.
"""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from contributions.services.accounts import api_token_authenticate


class ApiTokenAuthentication(TokenAuthentication):
    keyword = "Token"

    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:
        token = api_token_authenticate(secret=key)
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        return token.user, token
