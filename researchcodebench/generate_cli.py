"""``rcb generate``: ask an OpenAI-compatible endpoint for every snippet of a pset and write predictions.

    rcb generate PSET --base-url URL --model NAME --output FILE.jsonl [--api-key-env VAR]
                 [--template rcb-2025|rcb-v2] [--no-paper] [--samples N] [--tasks ID ...]
                 [--concurrency N] [--temperature T] [--max-tokens N] [--max-requests N]
                 [--timeout S] [--input-price USD] [--output-price USD]

Each snippet's prompt is the portal's (``researchcodebench.problems.build_prompt``); each answer is written
as a line of the predictions format (docs/predictions.md) holding the model's whole reply as ``response``,
so the portal and ``rcb evaluate`` extract its code with the same rules (``predictions.extract_answer``).
The line also carries what the format ignores: the template, whether the paper was shown, the prompt's
hash, the model, tokens, cost and latency.

Resumable: a completion is appended and flushed the moment it arrives, and a run starts by reading the
output file, so a rerun (after Ctrl-C, a kill, a crash) asks only for the completions not yet written.
A cut-off last line is dropped. SIGTERM or Ctrl-C stops sending new requests and writes the answers of
those in flight before exiting, so nothing paid for is asked again; after a SIGKILL only the requests that
were in flight (at most ``--concurrency``) are asked again. Requests are retried by the core's rules (``researchcodebench.chat``); a
completion that still fails is reported and left for the next run (exit 1); an error that is not retried
(a bad key, an unknown model: HTTP 4xx) stops the run at once, and so do ``GIVE_UPS_IN_A_ROW`` completions
in a row that failed every retry (an endpoint that is down).

Exit status: 0 every completion is written, 1 some failed, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TextIO
from urllib.parse import urlsplit

import openai
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from . import chat
from .errors import CliError
from .predictions import extract_answer
from .problems import DEFAULT_TEMPLATE, TEMPLATES, build_prompt
from .pset import PsetError, Task, read_pset

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
#: sent as the key to a loopback endpoint (vLLM, Ollama) when the key variable is not set
LOCAL_KEY = "not-needed"
_LOOPBACK = ("localhost", "127.0.0.1", "::1")
#: this many completions failing every retry with no answer between them stop the run (the endpoint is down)
GIVE_UPS_IN_A_ROW = 3

Key = tuple[str, str, int]


@dataclass(frozen=True)
class Job:
    """One completion to ask for: the ``completion_idx``-th sample of a snippet."""

    task: Task
    snippet_name: str
    indent: int
    completion_idx: int

    @property
    def key(self) -> Key:
        return (self.task.id, self.snippet_name, self.completion_idx)


class GiveUp(Exception):
    """A request that failed for good; ``retryable`` is False when no later run would do better."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


def read_done(path: str) -> set[Key]:
    """The completions ``path`` already holds (none when it does not exist). A last line cut off by a kill
    (no newline at its end) is removed from the file, so the rerun writes it whole."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return set()
    except OSError as exc:
        raise CliError(f"{path}: cannot read the output file: {exc.strerror}") from exc
    if data and not data.endswith(b"\n"):
        keep = data.rfind(b"\n") + 1
        with open(path, "r+b") as handle:
            handle.truncate(keep)
        data = data[:keep]
    done: set[Key] = set()
    for number, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
            done.add((line["task"], line["snippet"], int(line.get("completion_idx", 0))))
        except (ValueError, KeyError, TypeError) as exc:
            raise CliError(f"{path}:{number}: not a predictions line ({exc}); use another --output") from exc
    return done


def plan_jobs(tasks: list[Task], samples: int, done: set[Key]) -> list[Job]:
    """Every completion of every snippet of ``tasks`` not in ``done``, in document order."""
    return [
        job
        for task in tasks
        for snippet in task.snippets
        for idx in range(samples)
        if (job := Job(task, snippet.name, snippet.indent, idx)).key not in done
    ]


def api_key(variable: str, base_url: str) -> str:
    """The key from ``variable``; a loopback endpoint (a local vLLM or Ollama) needs none."""
    key = os.environ.get(variable) if variable else None
    if key:
        return key
    if (urlsplit(base_url).hostname or "") in _LOOPBACK:
        return LOCAL_KEY
    raise CliError(f"--api-key-env: the variable {variable or '(none)'} is not set (the endpoint's API key)")


def request_once(
    client: openai.OpenAI,
    *,
    model: str,
    prompt: str,
    options: dict[str, Any],
    max_requests: int,
    backoff_base_s: float,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[Any, int]:
    """The chat completion of ``prompt`` and the number of requests it took; ``GiveUp`` when every attempt
    failed or the error is not retried (``researchcodebench.chat``)."""
    last = ""
    for attempt in range(1, max_requests + 1):
        wait = None
        try:
            response = client.chat.completions.create(
                model=model, messages=[{"role": "user", "content": prompt}], **options
            )
        except openai.APIStatusError as exc:
            last = f"HTTP {exc.status_code}: {str(exc)[:300]}"
            if exc.status_code not in chat.RETRY_STATUSES:
                raise GiveUp(last, retryable=False) from exc
            wait = chat.hinted_wait_s(exc.status_code, exc.response.headers)
        except openai.APITimeoutError:
            last = "timed out"
        except openai.APIConnectionError as exc:
            last = f"cannot connect: {exc}"
        else:
            return response, attempt
        if attempt < max_requests:
            sleep(wait if wait is not None else chat.backoff_s(attempt, backoff_base_s))
    raise GiveUp(f"gave up after {max_requests} requests; last error: {last}", retryable=True)


class _Rate(ProgressColumn):
    """Completions per second."""

    def render(self, task: Any) -> Text:
        speed = task.finished_speed or task.speed
        return Text("-/s" if speed is None else f"{speed:.2f}/s")


class Totals:
    """What the run wrote and spent, updated from the worker threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.written = 0
        self.no_code = 0
        self.failed: list[str] = []
        self.gave_up_in_a_row = 0
        self.stop_reason = ""
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost_usd = 0.0


def _selected_tasks(args: argparse.Namespace) -> list[Task]:
    """The valid tasks of the pset that ``--tasks`` names (all when it names none); a CLI error otherwise."""
    try:
        pset = read_pset(args.pset)
    except PsetError as exc:
        raise CliError(str(exc)) from exc
    known = {t.id: t for t in pset.tasks if not t.errors}
    if args.tasks:
        unknown = sorted(set(args.tasks) - set(known))
        if unknown:
            raise CliError(f"--tasks: unknown or invalid task id(s) {', '.join(unknown)}")
    return [t for t in known.values() if not args.tasks or t.id in args.tasks]


def _check_arguments(args: argparse.Namespace) -> None:
    if args.samples < 1 or args.concurrency < 1 or args.max_requests < 1:
        raise CliError("--samples, --concurrency and --max-requests must be at least 1")
    if (args.input_price is None) != (args.output_price is None):
        raise CliError("give both --input-price and --output-price (USD per million tokens), or neither")


class _Generation:
    """One ``rcb generate``: asks for each job's completion (from the pool's threads) and appends its line to
    the open output file as it arrives; ``stop`` ends the asking (a signal, or an endpoint that keeps failing)."""

    def __init__(self, args: argparse.Namespace, client: Any, out: TextIO) -> None:
        self.args = args
        self.client = client
        self.out = out
        self.totals = Totals()
        self.stop = threading.Event()
        self.options: dict[str, Any] = {}
        if args.temperature is not None:
            self.options["temperature"] = args.temperature
        if args.max_tokens is not None:
            self.options["max_tokens"] = args.max_tokens

    def one(self, job: Job, advance: Callable[[], None]) -> None:
        if self.stop.is_set():
            return
        args = self.args
        try:
            snippet = job.task.snippet(job.snippet_name)
            prompt = build_prompt(job.task, snippet, template=args.template, with_paper=not args.no_paper)
            started = time.monotonic()
            response, requests = request_once(
                self.client, model=args.model, prompt=prompt.text, options=self.options,
                max_requests=args.max_requests, backoff_base_s=args.backoff_base,
            )  # fmt: skip
        except (GiveUp, ValueError, OSError) as exc:
            self._failed(job, exc)
            return
        line = self._line(job, prompt.hash, response, requests, time.monotonic() - started)
        self._write(job, line)
        advance()

    def _failed(self, job: Job, exc: Exception) -> None:
        totals = self.totals
        with totals.lock:
            totals.failed.append(f"{job.task.id} / {job.snippet_name} #{job.completion_idx}: {exc}")
            if not isinstance(exc, GiveUp):
                return
            totals.gave_up_in_a_row += 1
            if not exc.retryable:
                totals.stop_reason = "at the first error that is not retried (check --model and the key)"
            elif totals.gave_up_in_a_row >= GIVE_UPS_IN_A_ROW:
                totals.stop_reason = (
                    f"after {GIVE_UPS_IN_A_ROW} completions in a row failed every retry (is the endpoint up?)"
                )
            if totals.stop_reason:
                self.stop.set()

    def _line(
        self, job: Job, prompt_hash: str, response: Any, requests: int, latency: float
    ) -> dict[str, Any]:
        """The predictions line of one answer (docs/predictions.md, plus fields the format ignores)."""
        args = self.args
        choice = response.choices[0] if response.choices else None
        usage = response.usage
        tokens_in = usage.prompt_tokens if usage else None
        tokens_out = usage.completion_tokens if usage else None
        cost = None
        if args.input_price is not None and tokens_in is not None and tokens_out is not None:
            cost = (tokens_in * args.input_price + tokens_out * args.output_price) / 1_000_000
        return {
            "task": job.task.id,
            "snippet": job.snippet_name,
            "completion_idx": job.completion_idx,
            "response": (choice.message.content if choice and choice.message else None) or "",
            "template": args.template,
            "with_paper": not args.no_paper,
            "prompt_hash": prompt_hash,
            "model": args.model,
            "input_tokens": tokens_in,
            "output_tokens": tokens_out,
            "cost_usd": cost,
            "latency_s": round(latency, 3),
            "requests": requests,
            "finish_reason": choice.finish_reason if choice else None,
        }

    def _write(self, job: Job, line: dict[str, Any]) -> None:
        text = json.dumps(line, ensure_ascii=False) + "\n"
        totals = self.totals
        with totals.lock:
            self.out.write(text)
            self.out.flush()
            totals.written += 1
            totals.gave_up_in_a_row = 0
            if extract_answer(line["response"], template=self.args.template, indent=job.indent) is None:
                totals.no_code += 1
            totals.input_tokens += line["input_tokens"] or 0
            totals.output_tokens += line["output_tokens"] or 0
            totals.cost_usd += line["cost_usd"] or 0.0


def _progress_bar(stderr: TextIO) -> Progress:
    return Progress(
        TextColumn("generating"), BarColumn(), MofNCompleteColumn(), _Rate(), TextColumn("ETA"),
        TimeRemainingColumn(), console=Console(file=stderr), transient=False,
    )  # fmt: skip


def _run_jobs(generation: _Generation, jobs: list[Job], total: int, stderr: TextIO) -> bool:
    """Asks for every job with ``--concurrency`` threads under a progress bar; True if a signal stopped it
    (the requests in flight are written first)."""
    interrupted = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        interrupted.set()
        generation.stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    progress = _progress_bar(stderr)
    try:
        with progress, ThreadPoolExecutor(max_workers=generation.args.concurrency) as pool:
            bar = progress.add_task("generate", total=total, completed=total - len(jobs))
            for future in [pool.submit(generation.one, job, lambda: progress.advance(bar)) for job in jobs]:
                future.result()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return interrupted.is_set()


def _report(args: argparse.Namespace, totals: Totals, interrupted: bool, stderr: TextIO) -> int:
    cost = f", ${totals.cost_usd:.4f}" if args.input_price is not None else ""
    stderr.write(
        f"wrote {totals.written} completions to {args.output} ({totals.no_code} with no code extracted; "
        f"{totals.input_tokens} input + {totals.output_tokens} output tokens{cost})\n"
    )
    if interrupted:
        stderr.write("stopped by a signal after the requests in flight were written; rerun to continue\n")
        return 1
    if totals.failed:
        stderr.write(f"{len(totals.failed)} completions failed (rerun to retry them):\n")
        for failure in totals.failed[:20]:
            stderr.write(f"  {failure}\n")
        if totals.stop_reason:
            stderr.write(f"stopped {totals.stop_reason}; the rest was not asked\n")
        return 1
    return 0


def run_generate(args: argparse.Namespace, *, stderr: TextIO | None = None) -> int:
    stderr = stderr or sys.stderr
    _check_arguments(args)
    tasks = _selected_tasks(args)
    key = api_key(args.api_key_env, args.base_url)
    jobs = plan_jobs(tasks, args.samples, read_done(args.output))
    total = sum(len(t.snippets) for t in tasks) * args.samples
    stderr.write(
        f"{total} completions ({len(tasks)} tasks, {args.samples} per snippet); {total - len(jobs)} already in "
        f"{args.output}, {len(jobs)} to ask {args.model} at {args.base_url}\n"
    )
    client = openai.OpenAI(api_key=key, base_url=args.base_url, timeout=args.timeout, max_retries=0)
    try:
        out = open(args.output, "a", encoding="utf-8")  # closed in the finally below
    except OSError as exc:
        raise CliError(f"{args.output}: cannot write the output file: {exc.strerror}") from exc
    generation = _Generation(args, client, out)
    try:
        interrupted = _run_jobs(generation, jobs, total, stderr)
    finally:
        out.close()
    return _report(args, generation.totals, interrupted, stderr)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "generate",
        help="ask an OpenAI-compatible endpoint for every snippet of a pset; write predictions JSONL",
        description="Generate completions for every snippet of PSET (resumable: a rerun asks only for what "
        "the output file lacks). Exit 0 all written, 1 some failed, 2 bad input.",
    )
    p.add_argument("pset", metavar="PSET", help="pset folder (papers.yaml + task folders)")
    p.add_argument("--base-url", required=True, help="the endpoint, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--model", required=True, help="the model name the endpoint knows")
    p.add_argument("--output", "-o", required=True, metavar="FILE.jsonl", help="predictions file (appended)")
    p.add_argument(
        "--api-key-env",
        default=DEFAULT_KEY_ENV,
        metavar="VAR",
        help=f"variable holding the API key (default {DEFAULT_KEY_ENV}; a loopback endpoint needs none)",
    )
    p.add_argument("--template", choices=TEMPLATES, default=DEFAULT_TEMPLATE, help="prompt template")
    p.add_argument("--no-paper", action="store_true", help="the without-paper ablation")
    p.add_argument("--samples", type=int, default=1, help="completions per snippet (default 1)")
    p.add_argument("--tasks", nargs="+", metavar="ID", help="only these task ids")
    p.add_argument("--concurrency", type=int, default=4, help="requests at the same time (default 4)")
    p.add_argument("--temperature", type=float, help="sampling temperature (default: the endpoint's)")
    p.add_argument("--max-tokens", type=int, help="answer length limit (default: the endpoint's)")
    p.add_argument(
        "--max-requests",
        type=int,
        default=chat.MAX_REQUESTS,
        help="requests per completion, retries included",
    )
    p.add_argument(
        "--backoff-base", type=float, default=chat.BACKOFF_BASE_S, help="first retry wait, seconds"
    )
    p.add_argument("--timeout", type=float, default=chat.REQUEST_TIMEOUT_S, help="seconds per request")
    p.add_argument("--input-price", type=float, metavar="USD", help="USD per million input tokens")
    p.add_argument("--output-price", type=float, metavar="USD", help="USD per million output tokens")
    p.set_defaults(handler=run_generate)
