"""Pages of evaluation runs: list, detail with live progress, predictions upload, starting a generated run
(maintainers), maintainer model pages.

Views only parse input, call one selector or service and render. With htmx a view answers with the
fragment (a template partial) that the page swaps in; without it, with the whole page.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import wraps
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.text import capfirst
from django.views.decorators.http import require_http_methods, require_POST
from rest_framework.throttling import UserRateThrottle

from contributions.http import plain_request
from contributions.roles import can_maintain
from evaluation import live_cache
from evaluation.board_links import run_board_place
from evaluation.forms import LanguageModelForm, PredictionsUploadForm, RunFilterForm, RunStartForm
from evaluation.models import EvaluationRun, LanguageModel
from evaluation.selectors.counts import run_counts
from evaluation.selectors.integrity import (
    run_confirmation,
    run_progress_for_viewer,
    run_rejudge_summary,
    run_tampering_count,
    run_tampering_list,
)
from evaluation.selectors.language_models import language_model_list
from evaluation.selectors.runs import (
    RunFilters,
    run_failures,
    run_get,
    run_recovery,
    run_requester_for_viewer,
    run_score,
    runs_with_progress,
)
from evaluation.selectors.runs import run_list as runs_filtered
from evaluation.services import generation, rejudge, runs
from evaluation.services.estimates import EstimateError, run_estimate
from evaluation.services.language_models import language_model_create, language_model_update
from evaluation.services.uploads import IdempotencyKeyReused, PredictionsInvalid, predictions_upload

RUNS_PER_PAGE = 50


def staff_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Maintainers only: anonymous users go to the sign-in page (``LOGIN_URL``); signed-in users who may not
    maintain (``contributions.roles.can_maintain``: the "maintainers" group or staff) get 403."""

    @wraps(view)
    @login_required
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not can_maintain(request.user):
            raise PermissionDenied("Maintainers only.")
        return view(request, *args, **kwargs)

    return wrapped


def run_list(request: HttpRequest) -> HttpResponse:
    """Runs with filters (model, status, source, release); htmx swaps only the table."""
    form = RunFilterForm(request.GET)
    values = form.values()
    found = runs_filtered(filters=RunFilters(**values))
    page = Paginator(found, RUNS_PER_PAGE).get_page(request.GET.get("page"))
    page.object_list = runs_with_progress(page.object_list)
    query = {k: v for k, v in values.items() if v}
    context = {
        "form": form,
        "page": page,
        "query": urlencode(query),
        "filtered": bool(query),
        "status_links": [(value, label) for value, label in EvaluationRun.Status.choices],
        "values": values,
    }
    template = "evaluation/run_list.html"
    if request.htmx and not request.htmx.boosted:
        template += "#run-table"
    return render(request, template, context)


#: the parts of the run page an htmx request may ask for (its target) -> the template partial
RUN_PAGE_PARTS = {"run-progress": "progress", "run-rejudge": "rejudge"}


def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    """One run with its live progress; an htmx poll gets only the progress fragment. A plain visitor shares
    a copy at most a few seconds old (``evaluation.live_cache``)."""
    part = RUN_PAGE_PARTS.get(request.htmx.target, "") if request.htmx else ""
    return live_cache.live_response(
        request,
        endpoint="run-page",
        args=(run_id,),
        variant=part,
        vary=("HX-Request", "HX-Target"),
        build=lambda: _run_detail_page(request, run_id, part),
    )


def _run_detail_page(request: HttpRequest, run_id: int, part: str) -> HttpResponse:
    run = run_get(run_id=run_id)
    # One pass over the run's verdicts for every count below (6,000 of them on a large run).
    counts = run_counts(run=run)
    context = {
        "run": run,
        "progress": run_progress_for_viewer(run=run, viewer=request.user, counts=counts),
        "requester": run_requester_for_viewer(run=run, viewer=request.user),
        # The construct and line of a tampering hit are for maintainers; everyone sees how many.
        "tampering_count": run_tampering_count(run=run, counts=counts),
        "tampering": (run_tampering_list(run=run, counts=counts) if can_maintain(request.user) else None),
        # Passes confirmed against impossible variants: counts for everyone, the forged verdicts with their
        # variant for maintainers only (an accusation, as tampering is).
        "confirmation": run_confirmation(run=run, viewer=request.user, counts=counts),
        "rejudge": run_rejudge_summary(run=run, viewer=request.user, counts=counts),
        "board": run_board_place(run),
        "score": run_score(run=run, counts=counts),
        "failures": run_failures(run=run, counts=counts),
        "recovery": run_recovery(run=run, viewer=request.user),
        # Every completion with its verdict (the API pages its results; the link asks for all of them).
        "results_csv_url": reverse("api-run-results", args=[run.pk])
        + f"?{urlencode({'format': 'csv', 'limit': max(run.total_items, 1000)})}",
    }
    if plain_request(request):
        # No form on the page for a visitor who is not signed in: no token, so no cookie and a shareable page.
        context["csrf_token"] = ""
    template = "evaluation/run_detail.html"
    if part:
        template += f"#{part}"
        context["poll"] = part == "progress"
    return render(request, template, context)


@require_POST
@staff_required
def run_cancel_view(request: HttpRequest, run_id: int) -> HttpResponse:
    run = run_get(run_id=run_id)
    if run.is_final:
        messages.error(request, f"Run {run.pk} is already {run.get_status_display().lower()}.")
    else:
        runs.run_cancel(run=run, by=request.user)
        messages.success(request, f"Run {run.pk} was cancelled.")
    return redirect("evaluation:run_detail", run_id=run.pk)


#: what the "re-run" buttons may ask for: infrastructure failures, or every failed item
RERUN_CHOICES = {
    "infra": ("infra_error", runs.RERUN_GENERATION_FAILED),
    "failed": ("failed", "timeout", "oom", "no_code", "infra_error", runs.RERUN_GENERATION_FAILED),
}


@require_POST
@staff_required
def run_rerun_view(request: HttpRequest, run_id: int) -> HttpResponse:
    """Queue the failed items of a run again (``which``: "infra" or "failed")."""
    run = run_get(run_id=run_id)
    outcomes = RERUN_CHOICES.get(request.POST.get("which", "infra"))
    if outcomes is None:
        messages.error(request, "Choose which items to re-run.")
        return redirect("evaluation:run_detail", run_id=run.pk)
    count = runs.run_rerun(run=run, outcomes=outcomes, by=request.user)
    if count:
        messages.success(
            request, f"{count} item{'s' if count != 1 else ''} of run {run.pk} were queued again."
        )
    else:
        messages.info(request, f"Run {run.pk} has no such items to re-run.")
    return redirect("evaluation:run_detail", run_id=run.pk)


@require_POST
@staff_required
def run_rejudge_view(request: HttpRequest, run_id: int) -> HttpResponse:
    """Queue a cold re-judge of every pass of an uploaded run not yet re-judged (docs/integrity.md)."""
    run = run_get(run_id=run_id)
    try:
        count = rejudge.run_rejudge_passes(run=run, by=request.user)
    except rejudge.RejudgeError as exc:
        messages.error(request, capfirst(str(exc)) + ".")
        return redirect("evaluation:run_detail", run_id=run.pk)
    if count:
        messages.success(
            request, f"{count} pass{'es' if count != 1 else ''} of run {run.pk} queued for a cold re-judge."
        )
    else:
        messages.info(request, f"Run {run.pk} has no passes left to re-judge.")
    return redirect("evaluation:run_detail", run_id=run.pk)


class UploadThrottle(UserRateThrottle):
    """The upload API's rate (``RCB_UPLOAD_THROTTLE``) for the upload form. Scope "uploads" gives the same
    cache key per user as the API's ``ScopedRateThrottle``, so the form and the API share one budget."""

    scope = "uploads"


@login_required
@require_http_methods(["GET", "POST"])
def run_upload(request: HttpRequest) -> HttpResponse:
    """Upload a predictions JSONL: on success go to the new run; otherwise show every error by line.

    A POST past the upload rate gets the page back with status 429, a ``Retry-After`` header and a message.
    """
    line_errors: list[str] = []
    if request.method == "POST":
        throttle = UploadThrottle()
        if not throttle.allow_request(request, None):
            return _upload_throttled(request, throttle)
        form = PredictionsUploadForm(request.POST, request.FILES)
        if form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                sent = predictions_upload(
                    release=form.cleaned_data["release"],
                    file=upload,
                    template=form.cleaned_data["template"],
                    with_paper=form.cleaned_data["with_paper"],
                    requester=request.user,
                    model=form.cleaned_data["model"],
                    new_model=form.new_model(),
                    idempotency_key=form.cleaned_data["upload_key"],
                )
            except IdempotencyKeyReused as exc:
                form.add_error(
                    None,
                    f"This form already started run {exc.run.pk} with another file: reload the page to upload again.",
                )
            except PredictionsInvalid as exc:
                for name, problems in exc.field_errors.items():
                    for problem in problems:
                        form.add_error(form.SERVICE_FIELDS.get(name, name), capfirst(problem) + ".")
                line_errors = exc.line_errors
            else:
                if sent.replayed:
                    messages.info(request, f"Run {sent.run.pk} was already created from this upload.")
                else:
                    messages.success(request, f"Run {sent.run.pk} was created from {upload.name}.")
                return redirect("evaluation:run_detail", run_id=sent.run.pk)
    else:
        form = PredictionsUploadForm(
            initial={"model": request.GET.get("model")}, release_name=request.GET.get("release")
        )
    return render(
        request,
        "evaluation/run_upload.html",
        {"form": form, "line_errors": line_errors},
        status=400 if request.method == "POST" else 200,
    )


@staff_required
@require_http_methods(["GET", "POST"])
def run_start_view(request: HttpRequest) -> HttpResponse:
    """Start a generated evaluation in two steps: the settings (GET ``?model=KEY``; a POST shows the
    estimated tokens and cost), then the confirmation (POST with ``confirm=yes``), which creates the run and
    goes to its page (live progress)."""
    if request.method == "GET":
        form = RunStartForm(
            initial={"model": request.GET.get("model")}, release_name=request.GET.get("release")
        )
        return render(request, "evaluation/run_start.html", {"form": form})
    form = RunStartForm(request.POST)
    if not form.is_valid():
        return render(request, "evaluation/run_start.html", {"form": form}, status=400)
    data = form.cleaned_data
    chosen = {key: data[key] for key in ("model", "release", "template", "with_paper", "n_completions")}
    if request.POST.get("confirm") != "yes":
        try:
            estimate = run_estimate(**chosen)
        except EstimateError as exc:
            form.add_error(None, capfirst(str(exc)) + ".")
            return render(request, "evaluation/run_start.html", {"form": form}, status=400)
        if not estimate.snippets:
            form.add_error(
                "release",
                f"Release {estimate.release.name} has no snippet the portal can test (its task versions are "
                "metadata only, without files); choose another release.",
            )
            return render(request, "evaluation/run_start.html", {"form": form}, status=400)
        return render(request, "evaluation/run_start_confirm.html", {"form": form, "estimate": estimate})
    try:
        run = generation.run_start(**chosen, temperature=data["temperature"], requester=request.user)
    except runs.RunError as exc:
        form.add_error(None, capfirst(str(exc)) + ".")
        return render(request, "evaluation/run_start.html", {"form": form}, status=400)
    # The progress fragment removes the message (by this id) once the run has started.
    messages.success(
        request, f"Run {run.pk} of {run.model.name} was queued.", extra_tags=f"run-{run.pk}-queued"
    )
    return redirect("evaluation:run_detail", run_id=run.pk)


def _upload_throttled(request: HttpRequest, throttle: UploadThrottle) -> HttpResponse:
    wait = throttle.wait()
    seconds = max(1, math.ceil(wait)) if wait is not None else None
    form = PredictionsUploadForm(initial={"model": request.GET.get("model")})
    response = render(
        request,
        "evaluation/run_upload.html",
        {
            "form": form,
            "line_errors": [],
            "throttled": {"rate": throttle.rate, "retry_after": _duration(seconds)},
        },
        status=429,
    )
    if seconds is not None:
        response["Retry-After"] = str(seconds)
    return response


def _duration(seconds: int | None) -> str:
    if seconds is None:
        return ""
    if seconds < 90:
        return f"{seconds} second{'s' if seconds != 1 else ''}"
    minutes = math.ceil(seconds / 60)
    return f"{minutes} minutes"


@staff_required
def model_list(request: HttpRequest) -> HttpResponse:
    return render(request, "evaluation/model_list.html", {"models": language_model_list()})


@staff_required
@require_http_methods(["GET", "POST"])
def model_add(request: HttpRequest) -> HttpResponse:
    form = LanguageModelForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        model = language_model_create(**form.cleaned_data)
        messages.success(request, f"Model {model.name} was added.")
        return redirect("evaluation:model_list")
    status = 400 if request.method == "POST" else 200
    return render(request, "evaluation/model_form.html", {"form": form, "model": None}, status=status)


@staff_required
@require_http_methods(["GET", "POST"])
def model_edit(request: HttpRequest, model_id: int) -> HttpResponse:
    model = get_object_or_404(LanguageModel, pk=model_id)
    form = LanguageModelForm(request.POST or None, instance=model)
    if request.method == "POST" and form.is_valid():
        language_model_update(model=model, **form.cleaned_data)
        messages.success(request, f"Model {model.name} was saved.")
        return redirect("evaluation:model_list")
    status = 400 if request.method == "POST" else 200
    return render(request, "evaluation/model_form.html", {"form": form, "model": model}, status=status)


@require_POST
@staff_required
def model_test(request: HttpRequest, model_id: int) -> HttpResponse:
    """Send one small request to the model's endpoint; htmx swaps the result in next to the button."""
    model = get_object_or_404(LanguageModel, pk=model_id)
    ok, message = generation.model_test_connection(model=model)
    context = {"model": model, "ok": ok, "message": message}
    if request.htmx:
        return render(request, "evaluation/model_list.html#test-result", context)
    (messages.success if ok else messages.error)(request, f"{model.name}: {message}")
    return redirect("evaluation:model_list")
