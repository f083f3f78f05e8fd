"""The portal's allauth adapter: failed sign-ins are counted per (account, client address).

allauth counts failed sign-ins per address (``10/m/ip``) and per *key*, which it makes from the login alone:
five wrong passwords sent from anywhere would lock the account for everyone, its owner and maintainers
included. Here the key also holds the client's address (as allauth reads it, ``RCB_TRUSTED_PROXY_COUNT``
deep in ``X-Forwarded-For``), so a stranger's failures lock only the stranger's own address out of that
account; the per-address limit still bounds how many accounts one address can try (README, Configuration:
``RCB_LOGIN_FAILED_LIMIT``).
"""

from __future__ import annotations

from typing import Any

from allauth.account.adapter import DefaultAccountAdapter
from django.http import HttpRequest


class AccountAdapter(DefaultAccountAdapter):
    def _get_login_attempts_cache_key(self, request: HttpRequest, **credentials: Any) -> str:
        return (
            f"{super()._get_login_attempts_cache_key(request, **credentials)}@{self.get_client_ip(request)}"
        )
