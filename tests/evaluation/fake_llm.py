"""A small OpenAI-compatible chat server for tests, on 127.0.0.1 with a free port, in a thread.

``POST <base>/chat/completions`` answers the single user message with ``answer(prompt)``. Behaviour is
scripted per request: ``fail_next(...)`` queues failures consumed one per request (a status code with an
optional ``Retry-After``, ``"hang"`` to never answer within the client's timeout, ``"empty"`` for an
answer with empty content); ``mode`` applies to every request once the queue is empty ("ok", "500",
"hang", "empty"). Every request is logged with its arrival time and the status it got.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from evaluation.management.commands.serve_fake_llm import chat_completion_body


@dataclass(frozen=True)
class Logged:
    at: float
    prompt: str
    status: int
    behaviour: str


@dataclass(frozen=True)
class Failure:
    behaviour: str  # "status", "hang" or "empty"
    status: int = 500
    retry_after: str | None = None


def default_answer(prompt: str) -> str:
    return "```python\npass\n```"


class FakeLLM:
    """The server and its script. ``base_url`` is what a ``LanguageModel`` points at."""

    def __init__(self, answer: Callable[[str], str] = default_answer) -> None:
        self.answer = answer
        self.mode = "ok"
        self.hang_s = 30.0
        self.requests: list[Logged] = []
        self._failures: deque[Failure] = deque()
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-llm", daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FakeLLM:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        self._server.shutdown()
        self._server.server_close()

    def fail_next(self, *failures: Failure) -> None:
        with self._lock:
            self._failures.extend(failures)

    def _next_behaviour(self) -> Failure | None:
        with self._lock:
            if self._failures:
                return self._failures.popleft()
        if self.mode == "500":
            return Failure("status", 500)
        if self.mode in ("hang", "empty"):
            return Failure(self.mode)
        return None

    def _log(self, prompt: str, status: int, behaviour: str) -> None:
        with self._lock:
            self.requests.append(Logged(time.monotonic(), prompt, status, behaviour))

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def _send(self, status: int, body: dict, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                payload = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                messages = payload.get("messages") or []
                prompt = messages[-1]["content"] if messages else ""
                behaviour = fake._next_behaviour()
                if behaviour is not None and behaviour.behaviour == "hang":
                    fake._log(prompt, 0, "hang")
                    fake._stopped.wait(fake.hang_s)
                    return
                if behaviour is not None and behaviour.behaviour == "status":
                    fake._log(prompt, behaviour.status, "status")
                    headers = {"Retry-After": behaviour.retry_after} if behaviour.retry_after else {}
                    self._send(
                        behaviour.status,
                        {"error": {"message": f"scripted failure {behaviour.status}", "type": "server"}},
                        headers,
                    )
                    return
                content = "" if behaviour is not None else fake.answer(prompt)
                fake._log(prompt, 200, "empty" if behaviour is not None else "ok")
                self._send(
                    200,
                    chat_completion_body(
                        prompt=prompt,
                        content=content,
                        model=str(payload.get("model", "fake")),
                        ident="chatcmpl-fake",
                    ),
                )

        return Handler


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    server = FakeLLM().start()
    yield server
    server.stop()
