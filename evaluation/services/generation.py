"""Generating completions through a model's OpenAI-compatible API (queue ``site``).

The prompt comes from ``researchcodebench.problems.build_prompt`` over the materialised task version, the
answer from ``extract_answer`` with the run's template. Every outcome is recorded on the completion through
``completion_record_generation``: the response, tokens, cost, latency, or the error that ended it (after
``llm.chat_complete``'s retries) -- never a silent gap.
"""

from __future__ import annotations

import time

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser

from contributions.models import Release
from evaluation import llm
from evaluation.models import Completion, EvaluationRun, LanguageModel
from evaluation.services.estimates import MAX_SAMPLES
from evaluation.services.runs import RunError, completion_record_generation, run_create
from researchcodebench.predictions import extract_answer
from researchcodebench.problems import build_prompt

CONNECTION_TEST_PROMPT = "Reply with the single word: ok"


def _llm_options() -> dict:
    return {
        "timeout_s": float(settings.RCB_LLM_TIMEOUT_S),
        "max_requests": settings.RCB_LLM_MAX_REQUESTS,
        "backoff_base_s": settings.RCB_LLM_BACKOFF_BASE_MS / 1000.0,
    }


def completion_generate(*, completion_id: int, owner: str) -> Completion | None:
    """Generate one leased completion and record the result (or the error that ended it).

    Precondition: ``owner`` holds the generation lease. Not one transaction: the network call happens
    outside any transaction, the record is atomic. Returns what ``completion_record_generation`` returns.
    """
    from contributions.task_folders import task_version_task

    item = Completion.objects.select_related("run__model", "snippet__task_version__task").get(
        pk=completion_id
    )
    run = item.run
    try:
        task = task_version_task(task_version=item.snippet.task_version)
        snippet = task.snippet(item.snippet.name)
        prompt = build_prompt(task, snippet, template=run.template, with_paper=run.with_paper)
    except Exception as exc:  # a task that cannot be shown to a model is recorded, not retried
        return completion_record_generation(
            completion_id=completion_id,
            owner=owner,
            error=f"cannot build the prompt: {type(exc).__name__}: {exc}",
        )
    try:
        answer = llm.chat_complete(
            model=run.model, prompt=prompt.text, temperature=run.temperature, **_llm_options()
        )
    except llm.LLMError as exc:
        return completion_record_generation(
            completion_id=completion_id,
            owner=owner,
            prompt_hash=prompt.hash,
            error=f"{exc} ({exc.requests} requests)",
        )
    code = extract_answer(answer.content, template=run.template, indent=snippet.indent)
    return completion_record_generation(
        completion_id=completion_id,
        owner=owner,
        prompt_hash=prompt.hash,
        response=answer.content,
        code=code,
        input_tokens=answer.input_tokens,
        output_tokens=answer.output_tokens,
        cost_usd=answer.cost_usd,
        latency_s=answer.latency_s,
    )


def model_test_connection(*, model: LanguageModel) -> tuple[bool, str]:
    """Send one tiny request to ``model``; (True, what it answered and how fast) or (False, why not)."""
    started = time.monotonic()
    try:
        answer = llm.chat_complete(
            model=model,
            prompt=CONNECTION_TEST_PROMPT,
            timeout_s=min(30.0, float(settings.RCB_LLM_TIMEOUT_S)),
            max_requests=1,
        )
    except llm.LLMError as exc:
        return False, str(exc)
    elapsed = time.monotonic() - started
    text = answer.content.strip().replace("\n", " ")[:80]
    if not text:
        return False, f"the endpoint answered in {elapsed:.2f} s but with empty content"
    tokens = ""
    if answer.input_tokens is not None and answer.output_tokens is not None:
        tokens = f", {answer.input_tokens}+{answer.output_tokens} tokens"
    return True, f"answered {text!r} in {elapsed:.2f} s{tokens}"


def generation_refusal(*, model: LanguageModel) -> str | None:
    """Why the portal cannot generate completions of ``model``, or None when it can.

    Published and self-reported models are answered for by others (the paper, the submitter): the portal
    never calls an API for them. A maintainer-managed model needs an endpoint on an allowed host; its key
    is read by the workers at call time, so a missing key shows on the run, item by item.
    """
    if model.management != LanguageModel.Management.MAINTAINER:
        return (
            f"{model.name} is {model.get_management_display().lower()}: the portal generates completions "
            "only for models managed by the maintainers"
        )
    problem = llm.endpoint_problem(model)
    return f"{model.name}: {problem}" if problem else None


def run_start(
    *,
    model: LanguageModel,
    release: Release,
    template: str,
    with_paper: bool,
    n_completions: int,
    temperature: float | None = None,
    requester: AbstractBaseUser | None = None,
) -> EvaluationRun:
    """Start a generated run of ``model`` on every testable snippet of ``release`` (the web's "Start
    evaluation" and ``manage.py evaluate_model``); its items are queued for generation after commit.

    Raises ``RunError`` when the portal cannot generate for the model (``generation_refusal``), for a
    sample count outside 1..``MAX_SAMPLES``, or for what ``run_create`` refuses (an unknown template).
    """
    refusal = generation_refusal(model=model)
    if refusal:
        raise RunError(refusal)
    if not 1 <= n_completions <= MAX_SAMPLES:
        raise RunError(f"the number of samples must be between 1 and {MAX_SAMPLES}")
    return run_create(
        model=model,
        release=release,
        template=template,
        with_paper=with_paper,
        n_completions=n_completions,
        temperature=temperature,
        source=EvaluationRun.Source.GENERATED,
        verification=EvaluationRun.Verification.GENERATED,
        requester=requester,
    )
