"""What a language model row can make the portal send, and where (issue 10, item 4).

The key variable must match RCB_LLM_KEY_ENV_PATTERN and the endpoint's host must be in RCB_LLM_ALLOWED_HOSTS,
both in the model form and at call time (rows can predate the rules); redirects are never followed. The suite
allows 127.0.0.1 (tests/pytest_env.py), where the fake LLM servers listen.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from evaluation import llm
from evaluation.models import LanguageModel
from evaluation.services import model_test_connection
from tests.factories import LanguageModelFactory, StaffUserFactory

pytestmark = pytest.mark.django_db

REPO = Path(__file__).resolve().parents[2]
HTMX = {"HTTP_HX_REQUEST": "true"}
MODEL_FORM = {
    "key": "gpt-egress",
    "name": "GPT Egress",
    "provider": "openai",
    "provider_model_id": "gpt-egress-1",
    "base_url": "https://api.openai.com/v1",
    "api_key_env": "RCB_LLM_KEY_OPENAI",
    "request_options": "{}",
    "max_concurrency": "1",
    "open_weights": "unknown",
}


class Listener:
    """A local HTTP server that logs every request (any method) and answers each with ``status`` (a
    ``Location`` header when given, else a minimal chat completion)."""

    def __init__(self, status: int = 200, location: str | None = None) -> None:
        self.requests: list[tuple[str, str]] = []
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def _answer(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                listener.requests.append((self.command, self.path))
                body = b"" if location else json.dumps(_completion("ok")).encode()
                self.send_response(status)
                if location:
                    self.send_header("Location", location)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = _answer

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _completion(content: str) -> dict:
    return {
        "id": "chatcmpl-listener",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
    }


@pytest.fixture
def listeners() -> Iterator[list[Listener]]:
    started: list[Listener] = []
    yield started
    for listener in started:
        listener.stop()


@pytest.fixture
def staff():
    return StaffUserFactory(username="staff", password="pw")


@pytest.fixture
def fake_key(monkeypatch):
    monkeypatch.setenv("RCB_LLM_KEY_EGRESS", "sk-egress-test")


def model_at(base_url: str, *, api_key_env: str = "RCB_LLM_KEY_EGRESS") -> LanguageModel:
    """A row saved straight to the database, as one made before the rules (or outside the form) would be."""
    return LanguageModelFactory(
        key="egress", provider=LanguageModel.Provider.OTHER, base_url=base_url, api_key_env=api_key_env
    )


# --- key variables --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["DJANGO_SECRET_KEY", "HOME", "DATABASE_URL", "OPENAI_API_KEY"])
def test_model_form_refuses_a_key_variable_outside_the_pattern(client, staff, name):
    client.force_login(staff)
    response = client.post("/runs/models/add/", {**MODEL_FORM, "api_key_env": name})
    assert response.status_code == 400
    html = response.content.decode()
    assert "RCB_LLM_KEY_ENV_PATTERN" in html and "RCB_LLM_KEY_*" in html
    assert not LanguageModel.objects.exists()


def test_model_form_accepts_a_key_variable_matching_the_pattern(client, staff):
    client.force_login(staff)
    response = client.post("/runs/models/add/", MODEL_FORM)
    assert response.status_code == 302
    assert LanguageModel.objects.get().api_key_env == "RCB_LLM_KEY_OPENAI"


@pytest.mark.parametrize("name", ["DJANGO_SECRET_KEY", "HOME"])
def test_a_stored_model_naming_a_forbidden_key_variable_is_refused_at_call_time_and_sends_nothing(
    fake_llm, name
):
    model = model_at(fake_llm.base_url, api_key_env=name)
    ok, message = model_test_connection(model=model)
    assert not ok
    assert "RCB_LLM_KEY_ENV_PATTERN" in message and name in message
    assert os.environ[name] not in message
    assert fake_llm.requests == []


def test_the_connection_test_page_refuses_the_secret_key_variable_without_showing_it(
    client, staff, fake_llm, settings
):
    model = model_at(fake_llm.base_url, api_key_env="DJANGO_SECRET_KEY")
    client.force_login(staff)
    body = client.post(f"/runs/models/{model.pk}/test/", **HTMX).content.decode()
    assert '<span class="badge bad">Failed</span>' in body and "RCB_LLM_KEY_ENV_PATTERN" in body
    assert settings.SECRET_KEY not in body
    assert fake_llm.requests == []


def test_each_glob_of_the_pattern_list_allows_names_but_never_the_portals_own_secrets(settings):
    settings.RCB_LLM_KEY_ENV_PATTERN = ["RCB_LLM_KEY_*", "TEAM_*_KEY"]
    assert llm.key_env_refusal("TEAM_A_KEY") is None
    assert llm.key_env_refusal("RCB_LLM_KEY_X") is None
    assert "RCB_LLM_KEY_ENV_PATTERN" in llm.key_env_refusal("TEAM_A")
    assert llm.key_env_refusal("rcb_llm_key_x") is not None  # case matters, as it does for variables
    settings.RCB_LLM_KEY_ENV_PATTERN = ["*"]
    for secret in ("DJANGO_SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL", "RCB_CACHE_URL"):
        assert llm.key_env_refusal(secret) is not None


def test_defaults_are_the_key_pattern_and_the_public_providers_hosts():
    env = {
        k: v for k, v in os.environ.items() if k not in ("RCB_LLM_ALLOWED_HOSTS", "RCB_LLM_KEY_ENV_PATTERN")
    }
    code = (
        "import json; from django.conf import settings; "
        "print(json.dumps([settings.RCB_LLM_KEY_ENV_PATTERN, settings.RCB_LLM_ALLOWED_HOSTS]))"
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    patterns, hosts = json.loads(result.stdout.strip().splitlines()[-1])
    assert patterns == ["RCB_LLM_KEY_*"]
    public = {
        urlsplit(url).hostname
        for provider, url in llm.PROVIDER_BASE_URLS.items()
        if provider not in llm.LOCAL_PROVIDERS
    }
    assert set(hosts) == public and "127.0.0.1" not in hosts


# --- hosts ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url", ["https://api.example.com/v1", "http://10.1.2.3:8080/v1", "http://localhost:9/v1"]
)
def test_model_form_refuses_a_base_url_on_a_host_not_allowed(client, staff, url):
    client.force_login(staff)
    response = client.post("/runs/models/add/", {**MODEL_FORM, "base_url": url})
    assert response.status_code == 400
    assert "RCB_LLM_ALLOWED_HOSTS" in response.content.decode()
    assert not LanguageModel.objects.exists()


def test_model_form_refuses_a_provider_default_on_a_host_not_allowed(client, staff, settings):
    settings.RCB_LLM_ALLOWED_HOSTS = ["api.openai.com"]
    client.force_login(staff)
    response = client.post("/runs/models/add/", {**MODEL_FORM, "provider": "vllm", "base_url": ""})
    assert response.status_code == 400
    html = response.content.decode()
    assert "RCB_LLM_ALLOWED_HOSTS" in html and "Set a base URL on an allowed host" in html
    response = client.post("/runs/models/add/", {**MODEL_FORM, "base_url": ""})
    assert response.status_code == 302


def test_a_stored_model_on_a_host_not_allowed_is_refused_at_call_time_and_sends_nothing(
    fake_llm, fake_key, settings
):
    settings.RCB_LLM_ALLOWED_HOSTS = ["api.openai.com"]
    ok, message = model_test_connection(model=model_at(fake_llm.base_url))
    assert not ok and "RCB_LLM_ALLOWED_HOSTS" in message and "127.0.0.1" in message
    assert fake_llm.requests == []


@pytest.mark.parametrize(
    ("entries", "url", "allowed"),
    [
        (["api.openai.com"], "https://api.openai.com/v1", True),
        (["API.OpenAI.com"], "https://api.openai.com./v1", True),
        (["api.openai.com"], "https://api.openai.com.evil.net/v1", False),
        (["api.openai.com"], "https://evilapi.openai.com/v1", False),
        (["api.openai.com"], "https://api.openai.com@evil.net/v1", False),
        (["api.openai.com"], "https://api.openai.com:99999/v1", False),
        (["api.openai.com"], "ftp://api.openai.com/v1", False),
        (["127.0.0.1:8000"], "http://127.0.0.1:8000/v1", True),
        (["127.0.0.1:8000"], "http://127.0.0.1:8001/v1", False),
        (["127.0.0.1"], "http://127.0.0.1:11434/v1", True),
        (["example.org:443"], "https://example.org/v1", True),
        ([".example.org"], "https://a.b.example.org/v1", True),
        ([".example.org"], "https://example.org/v1", True),
        ([".example.org"], "https://badexample.org/v1", False),
        (["[::1]"], "http://[::1]:8000/v1", True),
        (["*"], "http://10.0.0.1/v1", False),
        (["*"], "http://[::ffff:127.0.0.1]/v1", False),
        (["*"], "http://93.184.215.14/v1", True),
        (["*"], "https://private.example.org/v1", False),
        (["10.0.0.1"], "http://10.0.0.1/v1", True),
        ([], "https://api.openai.com/v1", False),
    ],
)
def test_allowed_host_entries_match_hosts_ports_and_domains(settings, monkeypatch, entries, url, allowed):
    """Patterns (``*``, ``.domain``) admit public hosts only; a host named exactly may be local."""
    import socket

    def resolve(host, port, *args, **kwargs):
        # This machine has no DNS: example.org names resolve here, one of them to a private address.
        address = "10.1.2.3" if host.startswith("private.") else "93.184.215.14"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    settings.RCB_LLM_ALLOWED_HOSTS = entries
    assert (llm.endpoint_refusal(url) is None) is allowed


# --- redirects ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [301, 302, 307, 308])
@pytest.mark.parametrize("target_host", ["localhost", "127.0.0.1"])
def test_a_redirect_is_refused_and_its_target_receives_nothing(listeners, fake_key, status, target_host):
    target = Listener()
    redirector = Listener(status, location=f"http://{target_host}:{target.port}/v1/chat/completions")
    listeners += [target, redirector]
    ok, message = model_test_connection(model=model_at(redirector.base_url))
    assert not ok
    assert "redirect was refused" in message and f"HTTP {status}" in message
    assert target.requests == []
    assert redirector.requests == [("POST", "/v1/chat/completions")]


def test_generation_does_not_retry_a_redirect(listeners, fake_key):
    target = Listener()
    redirector = Listener(307, location=f"http://localhost:{target.port}/v1/chat/completions")
    listeners += [target, redirector]
    with pytest.raises(llm.LLMError, match="redirect was refused") as raised:
        llm.chat_complete(
            model=model_at(redirector.base_url), prompt="hi", max_requests=3, sleep=lambda s: None
        )
    assert raised.value.requests == 1 and not raised.value.retryable
    assert target.requests == []


def test_the_connection_test_to_an_allowed_endpoint_still_works(client, staff, fake_llm, fake_key):
    fake_llm.answer = lambda prompt: "ok"
    model = model_at(fake_llm.base_url)
    client.force_login(staff)
    body = client.post(f"/runs/models/{model.pk}/test/", **HTMX).content.decode()
    assert '<span class="badge ok">OK</span>' in body and "answered &#x27;ok&#x27;" in body
    assert len(fake_llm.requests) == 1
