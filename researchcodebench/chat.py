"""The retry rules for OpenAI-compatible chat calls, shared by the portal (``evaluation.llm``) and
``rcb generate`` (``researchcodebench.generate_cli``).

Rate limits (429), overload (503, 529), other 5xx, timeouts and connection errors are retried with capped
exponential backoff (``BACKOFF_BASE_S * 2**n``, at most ``BACKOFF_CAP_S``); a ``Retry-After`` header
(seconds or an HTTP date) on 429/503 replaces the computed wait (capped by ``RETRY_AFTER_CAP_S``). Other
4xx errors (bad key, unknown model) fail at once.
"""

from __future__ import annotations

import email.utils
import time
from typing import Any

MAX_REQUESTS = 5
BACKOFF_BASE_S = 1.0
BACKOFF_CAP_S = 30.0
RETRY_AFTER_CAP_S = 120.0
REQUEST_TIMEOUT_S = 300.0
RETRY_STATUSES = (408, 409, 429, 500, 502, 503, 504, 529)
#: statuses whose ``Retry-After`` header is obeyed
RETRY_AFTER_STATUSES = (429, 503)


def retry_after_s(headers: Any) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta seconds or an HTTP date), or None."""
    if headers is None:
        return None
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def backoff_s(attempt: int, base_s: float = BACKOFF_BASE_S) -> float:
    """The wait after failed request number ``attempt`` (1-based): capped exponential."""
    return min(BACKOFF_CAP_S, base_s * 2 ** (attempt - 1))


def hinted_wait_s(status: int, headers: Any) -> float | None:
    """The wait a retryable answer with HTTP ``status`` asks for (its capped ``Retry-After``), or None."""
    if status not in RETRY_AFTER_STATUSES:
        return None
    hinted = retry_after_s(headers)
    return None if hinted is None else min(hinted, RETRY_AFTER_CAP_S)
