"""Talking to language models: one OpenAI-compatible chat call with backoff, timeouts and accounting.

Every provider is reached through the ``openai`` SDK with a base URL (``PROVIDER_BASE_URLS`` when the model
has none of its own). The API key is read from the variable
``model.api_key_env`` names (``settings.RCB_LLM_KEY_READER``, ``config.env.env_secret``) at call time and never
stored. The SDK's own retries are off: ``chat_complete`` retries itself so that every attempt, wait and
final error is known and recorded by the caller.

Egress: a model row is staff input, so what it may make the portal send, and where, is bounded at call time
(not only by the form, since rows can predate a rule): the key variable must match
``settings.RCB_LLM_KEY_ENV_PATTERN`` (so no row can name ``DJANGO_SECRET_KEY`` or ``HOME`` and have its
value sent out), the endpoint's host must be in ``settings.RCB_LLM_ALLOWED_HOSTS``, and no redirect is
followed (a redirect could take the key and the prompt to a host the allow-list never saw).

Retries follow the core's rules (``researchcodebench.chat``, which ``rcb generate`` uses too): rate limits
(429), overload (503, 529), other 5xx, timeouts and connection errors are retried with capped exponential
backoff, a ``Retry-After`` header on 429/503 replaces the computed wait; other 4xx errors fail at once.

Concurrency: at most ``model.max_concurrency`` requests per provider endpoint *in one process* (a
semaphore per (provider, base URL)). Across processes the generation lease (``lease_acquire``) caps the
number of completions of one model generating at the same time, using the database as the shared counter.
"""

from __future__ import annotations

import fnmatch
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import openai
from django.conf import settings
from django.utils.http import is_same_domain

from researchcodebench import outbound
from researchcodebench.chat import (
    BACKOFF_BASE_S,
    MAX_REQUESTS,
    REQUEST_TIMEOUT_S,
    RETRY_STATUSES,
    backoff_s,
    hinted_wait_s,
)

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletion

    from evaluation.models import LanguageModel

#: Default OpenAI-compatible endpoints per provider (``LanguageModel.base_url`` overrides them).
PROVIDER_BASE_URLS: dict[str, str] = {
    "openai": "https://api.openai.com/v1",
    "openrouter": "https://openrouter.ai/api/v1",
    "deepseek": "https://api.deepseek.com/v1",
    "xai": "https://api.x.ai/v1",
    "google": "https://generativelanguage.googleapis.com/v1beta/openai/",
    "anthropic": "https://api.anthropic.com/v1/",
    "vllm": "http://127.0.0.1:8000/v1",
    "ollama": "http://127.0.0.1:11434/v1",
}
#: Providers that run locally and accept any key when the model names no key variable.
LOCAL_PROVIDERS = ("vllm", "ollama")
#: The portal's own secrets: never an API key variable, whatever RCB_LLM_KEY_ENV_PATTERN allows.
PORTAL_SECRETS = frozenset({"DJANGO_SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL", "RCB_CACHE_URL"})


class LLMError(RuntimeError):
    """A call that failed for good; ``requests`` is how many HTTP requests were made."""

    def __init__(self, message: str, *, requests: int = 0, retryable: bool = False) -> None:
        super().__init__(message)
        self.requests = requests
        self.retryable = retryable


@dataclass(frozen=True)
class ChatResult:
    """One answered chat request: the text (possibly empty), usage, cost and timings."""

    content: str
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: Decimal | None
    latency_s: float
    requests: int
    waited_s: float
    finish_reason: str | None


def key_env_refusal(name: str) -> str | None:
    """Why the variable ``name`` may not be read as an API key, or None when it may.

    It must match one of the globs of ``settings.RCB_LLM_KEY_ENV_PATTERN`` (case-sensitive) and not be one of
    ``PORTAL_SECRETS``.
    """
    patterns = settings.RCB_LLM_KEY_ENV_PATTERN
    if name not in PORTAL_SECRETS and any(fnmatch.fnmatchcase(name, p) for p in patterns):
        return None
    return (
        f"the API key variable {name!r} is not allowed: key variables must match "
        f"RCB_LLM_KEY_ENV_PATTERN ({', '.join(patterns) or 'empty'}), e.g. RCB_LLM_KEY_OPENAI"
    )


def _host_allowed(host: str, port: int, entry: str) -> bool:
    """``entry`` is ``*``, ``host``, ``.domain`` (the domain and its subdomains) or either with ``:port``."""
    entry = entry.strip().lower()
    if entry == "*":
        return True
    try:
        parts = urlsplit(f"//{entry}")
        entry_host, entry_port = (parts.hostname or "").rstrip("."), parts.port
    except ValueError:
        return False
    if entry.startswith("."):
        entry_host = "." + entry_host.lstrip(".")
    return bool(entry_host) and is_same_domain(host, entry_host) and entry_port in (None, port)


def _wildcard(entry: str) -> bool:
    entry = entry.strip()
    return entry == "*" or entry.startswith(".")


def endpoint_refusal(url: str) -> str | None:
    """Why requests may not be sent to ``url``, or None when its host is in ``RCB_LLM_ALLOWED_HOSTS``.

    A host allowed only by a pattern (``*`` or ``.domain``) must also resolve to public addresses only
    (``researchcodebench.outbound``); a host named exactly may be anywhere."""
    try:
        parts = urlsplit(url)
        host, port = (parts.hostname or "").rstrip("."), parts.port
    except ValueError:
        return f"the endpoint {url!r} is not a valid URL"
    if parts.scheme not in ("http", "https") or not host:
        return f"the endpoint {url!r} is not an http:// or https:// URL with a host"
    port = port or (443 if parts.scheme == "https" else 80)
    allowed = settings.RCB_LLM_ALLOWED_HOSTS
    matched = [entry for entry in allowed if _host_allowed(host, port, entry)]
    if matched and any(not _wildcard(entry) for entry in matched):
        # A host the operator named itself (a local vLLM server, say) is their decision.
        return None
    if matched:
        # Allowed only by a pattern (``*``, ``.domain``): the host must be public (the git intake's rule).
        try:
            outbound.resolve_public(host, port)
        except outbound.OutboundRefused:
            return f"the endpoint {url} is refused: {outbound.UNREACHABLE}"
        return None
    return (
        f"the endpoint {url} is refused: its host {host}:{port} is not in RCB_LLM_ALLOWED_HOSTS "
        f"({', '.join(allowed) or 'empty'})"
    )


def endpoint_problem(model: LanguageModel) -> str | None:
    """Why the portal may not call ``model``'s endpoint, in words that name no field key (None when it may):
    it has none (no base URL, and its provider no default one), or its host is not allowed
    (``endpoint_refusal``)."""
    url = model.base_url or PROVIDER_BASE_URLS.get(model.provider)
    if not url:
        return f"its provider ({model.get_provider_display()}) has no default endpoint; set a base URL"
    return endpoint_refusal(url)


def base_url_for(model: LanguageModel) -> str:
    """The endpoint of ``model``: its own base URL, else its provider's default.

    ``LLMError`` when there is none or its host is not allowed (``endpoint_problem``).
    """
    problem = endpoint_problem(model)
    if problem:
        raise LLMError(f"model {model.key!r}: {problem}")
    return model.base_url or PROVIDER_BASE_URLS[model.provider]


def api_key_for(model: LanguageModel) -> str:
    """The API key from the environment variable the model names; ``LLMError`` saying which is missing or
    why the variable may not be read (``key_env_refusal``)."""
    if not model.api_key_env:
        if model.provider in LOCAL_PROVIDERS:
            return "not-needed"
        raise LLMError(f"model {model.key!r} names no API key environment variable: set one on the model")
    refusal = key_env_refusal(model.api_key_env)
    if refusal:
        raise LLMError(f"model {model.key!r}: {refusal}")
    key = settings.RCB_LLM_KEY_READER(model.api_key_env)
    if not key:
        raise LLMError(
            f"the API key variable {model.api_key_env} is not set in the worker's environment "
            f"(model {model.key!r})"
        )
    return key


def cost_of(model: LanguageModel, input_tokens: int | None, output_tokens: int | None) -> Decimal | None:
    """USD for the tokens at the model's per-1M-token prices; None when a price or a count is unknown."""
    if input_tokens is None or output_tokens is None:
        return None
    if model.input_cost_per_mtok is None or model.output_cost_per_mtok is None:
        return None
    million = Decimal(1_000_000)
    return (
        Decimal(input_tokens) * model.input_cost_per_mtok
        + Decimal(output_tokens) * model.output_cost_per_mtok
    ) / million


_semaphores: dict[tuple[str, str], threading.BoundedSemaphore] = {}
_semaphores_lock = threading.Lock()


def _semaphore(model: LanguageModel, base_url: str) -> threading.BoundedSemaphore:
    key = (model.provider, base_url)
    with _semaphores_lock:
        if key not in _semaphores:
            _semaphores[key] = threading.BoundedSemaphore(max(1, model.max_concurrency))
        return _semaphores[key]


_clients: dict[tuple[str, str, float], openai.OpenAI] = {}
_clients_lock = threading.Lock()


def _client(base_url: str, api_key: str, timeout_s: float) -> openai.OpenAI:
    """One SDK client per endpoint, key and timeout in this process (building one costs ~0.1 s: TLS set-up)."""
    key = (base_url, api_key, timeout_s)
    with _clients_lock:
        if key not in _clients:
            # The SDK's default HTTP client follows redirects, to any host; ours answers a redirect as the
            # 3xx it is (``chat_complete`` refuses it), so requests only ever reach the allowed endpoint.
            _clients[key] = openai.OpenAI(
                api_key=api_key,
                base_url=base_url,
                timeout=timeout_s,
                max_retries=0,
                http_client=openai.DefaultHttpxClient(follow_redirects=False, timeout=timeout_s),
            )
        return _clients[key]


def _request_options(model: LanguageModel, temperature: float | None) -> dict[str, Any]:
    options = dict(model.request_options or {})
    if temperature is not None:
        options["temperature"] = temperature
    allowed = ("temperature", "top_p", "max_tokens", "max_completion_tokens", "reasoning_effort", "seed")
    extra = {k: v for k, v in options.items() if k not in allowed}
    kwargs = {k: v for k, v in options.items() if k in allowed}
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


def _status_error(exc: openai.APIStatusError, *, base_url: str, attempt: int) -> tuple[str, float | None]:
    """A retryable HTTP error status as (the error, the wait its ``Retry-After`` asks for or None);
    ``LLMError`` for a redirect (never followed) or a status that is not retried."""
    status = exc.status_code
    if 300 <= status < 400:
        target = _short(exc.response.headers.get("location") or "nowhere", 200)
        raise LLMError(
            f"{base_url} answered HTTP {status} (a redirect to {target}); the redirect was "
            "refused: the portal follows no redirects, set the base URL to the final endpoint",
            requests=attempt,
        ) from exc
    error = f"HTTP {status} from {base_url}: {_short(exc)}"
    if status not in RETRY_STATUSES:
        raise LLMError(error, requests=attempt) from exc
    return error, hinted_wait_s(status, exc.response.headers)


def _chat_result(
    model: LanguageModel, response: ChatCompletion, *, latency_s: float, requests: int, waited_s: float
) -> ChatResult:
    """An answered request's text (empty when it has none), tokens and their cost."""
    choice = response.choices[0] if response.choices else None
    content = (choice.message.content if choice and choice.message else None) or ""
    usage = response.usage
    tokens_in = usage.prompt_tokens if usage else None
    tokens_out = usage.completion_tokens if usage else None
    return ChatResult(
        content=content,
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        cost_usd=cost_of(model, tokens_in, tokens_out),
        latency_s=latency_s,
        requests=requests,
        waited_s=waited_s,
        finish_reason=choice.finish_reason if choice else None,
    )


def chat_complete(
    *,
    model: LanguageModel,
    prompt: str,
    temperature: float | None = None,
    timeout_s: float = REQUEST_TIMEOUT_S,
    max_requests: int = MAX_REQUESTS,
    backoff_base_s: float = BACKOFF_BASE_S,
    sleep: Callable[[float], None] = time.sleep,
) -> ChatResult:
    """Send ``prompt`` as the single user message; retry as the module docstring says.

    Raises ``LLMError`` (with the number of requests made) when every attempt failed or the error is
    not retryable. An empty answer is returned as such (the caller records "no code extracted").
    """
    base_url = base_url_for(model)
    client = _client(base_url, api_key_for(model), timeout_s)
    kwargs = _request_options(model, temperature)
    waited = 0.0
    last_error = ""
    for attempt in range(1, max_requests + 1):
        wait: float | None = None
        with _semaphore(model, base_url):
            started = time.monotonic()
            try:
                response = client.chat.completions.create(
                    model=model.provider_model_id or model.key,
                    messages=[{"role": "user", "content": prompt}],
                    **kwargs,
                )
            except openai.APIStatusError as exc:
                last_error, wait = _status_error(exc, base_url=base_url, attempt=attempt)
            except openai.APITimeoutError:
                last_error = f"timed out after {timeout_s:g}s waiting for {base_url}"
            except openai.APIConnectionError as exc:
                last_error = f"cannot connect to {base_url}: {_short(exc)}"
            else:
                latency = time.monotonic() - started
                return _chat_result(model, response, latency_s=latency, requests=attempt, waited_s=waited)
        if attempt == max_requests:
            break
        delay = wait if wait is not None else backoff_s(attempt, backoff_base_s)
        waited += delay
        sleep(delay)
    raise LLMError(
        f"gave up after {max_requests} requests; last error: {last_error}",
        requests=max_requests,
        retryable=True,
    )


def _short(exc: Exception | str, limit: int = 300) -> str:
    text = str(exc).strip().replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "..."
