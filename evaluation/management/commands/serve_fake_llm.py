"""`python manage.py serve_fake_llm [--port 8001] [--pset examples/pset]`: the demo's language model, a
small OpenAI-compatible chat-completions server on 127.0.0.1 that answers the prompts of the example tasks.

It lets the demo (`make demo`, scripts/demo.sh) run a generated evaluation from the web with no API key
and no network: ``load_demo`` creates a maintainer-managed model pointing at it. ``POST /v1/chat/completions``
answers each prompt deterministically: the block it asks for is found by its placeholder and the masked
file the prompt shows, and every ``WRONG_EVERY``-th snippet of each task (in document order) gets a body
that raises, the others the reference code. So a run's score is neither 0 nor 100, and the same on every
run. A prompt of no example task (the model page's connection test, say) gets prose without code. Each
answer is logged on stdout as ``answered TASK / SNIPPET: reference|wrong`` or ``answered an unknown
prompt``.

It binds the loopback interface only: it is a demo aid, not a service.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from researchcodebench.annotations import split_lines, strip_tags
from researchcodebench.problems import mask_file
from researchcodebench.pset import PsetError, read_pset

HOST = "127.0.0.1"
DEFAULT_PORT = 8001
#: every this-many-th snippet of a task (the 4th, 8th, ...) is answered wrong on purpose
WRONG_EVERY = 4
#: a request body larger than this is refused (the largest example prompt is far smaller)
MAX_BODY_BYTES = 8 * 1024 * 1024
UNKNOWN_ANSWER = "I am the demo's fake model: I only answer the prompts of the example tasks."
_BLOCK = re.compile(r'# TODO: Implement block "(.+?)"')


def chat_completion_body(*, prompt: str, content: str, model: str, ident: str = "chatcmpl-demo") -> dict:
    """An OpenAI chat-completions answer carrying ``content``, with token counts estimated at 4 characters a
    token (the test suite's fake server answers with the same body)."""
    prompt_tokens, completion_tokens = len(prompt) // 4, len(content) // 4
    return {
        "id": ident,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


@dataclass(frozen=True)
class Planned:
    """The answer to the prompts of one snippet: its masked file identifies the prompt."""

    task: str
    snippet: str
    masked: str
    wrong: bool
    answer: str


def _fence(lines: list[str]) -> str:
    return "Here is the block.\n```python\n" + "\n".join(lines) + "\n```\n"


def plan_answers(pset: Path) -> list[Planned]:
    """One planned answer per snippet of every valid task of ``pset`` (see the module docstring).

    Answers keep the snippet's own indentation (the ``rcb-2025`` template never re-indents) and drop nested
    snippets' tag lines, as a model would.
    """
    planned: list[Planned] = []
    for task in read_pset(pset).tasks:
        if task.errors:
            continue
        for index, snippet in enumerate(task.snippets, start=1):
            wrong = index % WRONG_EVERY == 0
            if wrong:
                body = [" " * snippet.indent + 'raise RuntimeError("the demo model got this block wrong")']
            else:
                body = strip_tags(split_lines(snippet.code.rstrip("\n")))
            masked = mask_file(task.read_text(snippet.file), snippet).rstrip("\n")
            planned.append(Planned(task.id, snippet.name, masked, wrong, _fence(body)))
    return planned


class FakeAnswers:
    """Finds the planned answer of a prompt."""

    def __init__(self, planned: list[Planned]) -> None:
        self.by_name: dict[str, list[Planned]] = {}
        for p in planned:
            self.by_name.setdefault(p.snippet, []).append(p)

    def find(self, prompt: str) -> Planned | None:
        """The snippet whose placeholder and masked file are in ``prompt`` (the guidelines' own example
        block matches no masked file); None when there is none."""
        for name in dict.fromkeys(_BLOCK.findall(prompt)):
            for p in self.by_name.get(name, ()):
                if p.masked in prompt:
                    return p
        return None


def _prompt_of(payload: Any) -> str:
    """The last message's text; ``ValueError`` naming what is wrong with the request body."""
    if not isinstance(payload, dict):
        raise ValueError("the request body is not a JSON object")
    messages = payload.get("messages")
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        raise ValueError("'messages' must be a non-empty list of message objects")
    content = messages[-1].get("content")
    if isinstance(content, list):  # content parts: keep the text ones
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    if not isinstance(content, str):
        raise ValueError("the last message's 'content' must be a string or a list of text parts")
    return content


def make_server(answers: FakeAnswers, *, port: int, log: Any) -> ThreadingHTTPServer:
    """The HTTP server on ``127.0.0.1:port`` (0: a free port); ``log(line)`` records every answer."""
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass  # one line per answer is logged below, not the access log

        def _send(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, message: str) -> None:
            self._send(status, {"error": {"message": message, "type": "invalid_request_error"}})

        def do_GET(self) -> None:
            self._error(404, f"no route GET {self.path}: this server answers POST /v1/chat/completions")

        def do_POST(self) -> None:
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._error(404, f"no route POST {self.path}: this server answers POST /v1/chat/completions")
                return
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                self._error(400, "the Content-Length header is not a number")
                return
            if not 0 < length <= MAX_BODY_BYTES:
                self._error(413 if length > 0 else 400, f"the body must be 1 to {MAX_BODY_BYTES} bytes")
                return
            try:
                payload = json.loads(self.rfile.read(length))
                prompt = _prompt_of(payload)
            except (ValueError, UnicodeDecodeError) as exc:
                self._error(400, f"bad request body: {exc}")
                return
            found = answers.find(prompt)
            content = found.answer if found else UNKNOWN_ANSWER
            with lock:
                if found:
                    log(f"answered {found.task} / {found.snippet}: {'wrong' if found.wrong else 'reference'}")
                else:
                    log("answered an unknown prompt")
            self._send(
                200,
                chat_completion_body(
                    prompt=prompt, content=content, model=str(payload.get("model") or "demo-fake")
                ),
            )

    server = ThreadingHTTPServer((HOST, port), Handler)
    server.daemon_threads = True
    return server


class Command(BaseCommand):
    help = (
        "Serve the demo's fake language model: an OpenAI-compatible chat endpoint on 127.0.0.1 that answers "
        "the example tasks' prompts (most with the reference code, every fourth snippet wrongly). Ctrl-C stops it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--port",
            type=int,
            default=DEFAULT_PORT,
            help=f"port on 127.0.0.1 (default {DEFAULT_PORT}; 0: any)",
        )
        parser.add_argument(
            "--pset",
            type=Path,
            default=settings.BASE_DIR / "examples" / "pset",
            help="the task folder whose prompts it answers (default: the example tasks)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        port = options["port"]
        if not 0 <= port <= 65535:
            raise CommandError(f"--port: {port} is not a port number (0-65535)")
        try:
            planned = plan_answers(options["pset"])
        except (PsetError, OSError, ValueError) as exc:
            raise CommandError(f"--pset {options['pset']}: {exc}") from exc
        if not planned:
            raise CommandError(f"--pset {options['pset']}: no valid task with snippets to answer")

        def log(line: str) -> None:
            self.stdout.write(line)
            self.stdout.flush()

        try:
            server = make_server(FakeAnswers(planned), port=port, log=log)
        except OSError as exc:
            raise CommandError(
                f"--port {port}: cannot listen on {HOST}:{port} ({exc.strerror or exc})"
            ) from exc
        host, bound = server.server_address[:2]
        wrong = sum(p.wrong for p in planned)
        tasks = len({p.task for p in planned})
        log(
            f"fake LLM listening on http://{host}:{bound}/v1 ({tasks} tasks, {len(planned)} snippets, "
            f"{wrong} answered wrong on purpose)"
        )
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
