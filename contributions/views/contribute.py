"""The contribution form's pages: its five steps, from paper metadata to submitting the proposal."""

from __future__ import annotations

import secrets
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods
from django_htmx.http import HttpResponseClientRedirect, HttpResponseLocation

from contributions.forms import CodeForm, FilesForm, PaperMetaForm, contribution_label, meta_initial
from contributions.intake import (
    IntakeError,
    IntakeLimits,
    IntakeResult,
    intake_archive,
    intake_git,
    quarantine_root,
)
from contributions.models import Proposal, ProposalRevision
from contributions.selectors.contribute import (
    file_choices,
    form_step_reached,
    paper_for_arxiv_id,
    revision_preview,
    revision_tagged_files,
    snippet_problem,
)
from contributions.selectors.proposals import (
    latest_revision,
    proposal_get_for_viewer,
    proposal_list_for_viewer,
    proposal_open_for_key,
    proposal_status,
)
from contributions.services.notifications import proposal_url
from contributions.services.proposal_state import EDITABLE_STATES, UPLOADABLE_STATES, ProposalError
from contributions.services.proposal_validation import proposal_submit
from contributions.services.proposals import (
    proposal_meta_step_save,
    proposal_save_draft,
)
from contributions.services.revisions import revision_update_manifest, revision_upload
from contributions.upload_manifest import MANIFEST_DEFAULTS
from researchcodebench.arxiv import arxiv_id

# ------------------------------------------------------------------------------------ contribution form
#
# Five steps, one function view each, at /contribute/<id>/step/<n>/: (1) paper metadata, (2) code,
# (3) files, (4) preview, (5) submit. Each saves the author's answers with ``proposal_save_draft`` so a
# draft resumes where it was left. A step is open once the steps before it were completed for the
# revision now uploaded (``selectors.contribute.form_step_reached``). With htmx a step answers with its fragment (template partial
# "step"), and a completed step sends htmx to the next one (``HX-Location``), so the page never reloads.

STEPS: tuple[tuple[int, str], ...] = ((1, "Paper"), (2, "Code"), (3, "Files"), (4, "Preview"), (5, "Submit"))
STEP_URL_NAMES = {
    1: "contributions:contribute_meta",
    2: "contributions:contribute_code",
    3: "contributions:contribute_files",
    4: "contributions:contribute_preview",
    5: "contributions:contribute_submit",
}
#: the step where each field a service may name in ``ProposalError.field`` is answered
FIELD_STEPS = {
    "task_key": 1,
    "title": 1,
    "meta": 1,
    "code": 2,
    **{key: 3 for key in MANIFEST_DEFAULTS},
    "manifest": 3,
}
STEP_TARGET = "#contribute-step"


def step_url(proposal: Proposal, step: int) -> str:
    return reverse(STEP_URL_NAMES[step], kwargs={"proposal_id": proposal.pk})


def marks_url(proposal: Proposal) -> str:
    """The marking page, where the author marks the snippets on the code (``views.marking``)."""
    return reverse("contributions:proposal_marks", kwargs={"proposal_id": proposal.pk})


def _own_proposal(request: HttpRequest, proposal_id: int) -> Proposal:
    """The signed-in author's proposal; 404 for anyone else (a maintainer may see it, not edit it)."""
    try:
        proposal = proposal_get_for_viewer(viewer=request.user, proposal_id=proposal_id)
    except Proposal.DoesNotExist:
        raise Http404("No such proposal.") from None
    if proposal.author_id != request.user.pk:
        raise Http404("No such proposal.")
    return proposal


def resume_url(proposal: Proposal) -> str:
    """Where the author continues the form: the last step they may open now."""
    return step_url(proposal, form_step_reached(proposal, latest_revision(proposal)))


def _steps_context(proposal: Proposal | None, current: int, reached: int) -> dict[str, Any]:
    steps = [
        {
            "number": number,
            "label": label,
            "url": step_url(proposal, number) if proposal is not None and number <= reached else "",
            "current": number == current,
        }
        for number, label in STEPS
    ]
    status = proposal_status(proposal) if proposal is not None else None
    return {"steps": steps, "step": current, "proposal": proposal, "status": status}


def _render_step(
    request: HttpRequest, template: str, context: dict[str, Any], *, status: int = 200
) -> HttpResponse:
    if request.htmx and not request.htmx.boosted and not request.htmx.history_restore_request:
        # htmx swaps only 2xx answers: a step with field errors is a normal answer to show in place. A
        # history restore (Back to a step, whose page htmx does not keep: contribute_base's hx-history)
        # replaces the whole page, so it gets the whole page.
        template += "#step"
        status = 200
    return render(request, template, context, status=status)


def _go(request: HttpRequest, url: str, *, whole_page: bool = False) -> HttpResponse:
    """To the next step: htmx loads its fragment in place (and pushes its URL); otherwise a redirect."""
    if request.htmx:
        if whole_page:
            return HttpResponseClientRedirect(url)
        return HttpResponseLocation(url, target=STEP_TARGET, swap="outerHTML")
    return redirect(url)


def _to_reached(request: HttpRequest, proposal: Proposal, revision: ProposalRevision | None) -> HttpResponse:
    messages.info(request, "Complete the earlier steps first.")
    return _go(request, step_url(proposal, form_step_reached(proposal, revision)))


def _locked(request: HttpRequest, proposal: Proposal) -> HttpResponse:
    """A proposal that left the draft: its page, since the form can no longer change it."""
    status = proposal_status(proposal)
    messages.info(request, f"This proposal's status is “{status.label}”: the form can no longer change it.")
    return _go(request, proposal_url(proposal) or reverse("contributions:contribute"), whole_page=True)


def _service_error(form: forms.Form, exc: ProposalError, *, fallback: str | None = None) -> None:
    """Put a service's refusal on the form field it names, or on ``fallback`` (the field where the answer it
    names is given), in words without its key; else on the whole form, after the label of what it names."""
    if exc.field in form.fields or fallback is not None:
        form.add_error(exc.field if exc.field in form.fields else fallback, exc.words)
    else:
        form.add_error(None, exc.words_away(contribution_label(exc.field)))


def contribute(request: HttpRequest) -> HttpResponse:
    """The signed-in user's proposals and drafts (each with where to continue) and "New contribution"."""
    rows = []
    for proposal in proposal_list_for_viewer(viewer=request.user):
        editable = proposal.state in EDITABLE_STATES
        revision = latest_revision(proposal) if editable else None
        rows.append(
            {
                "proposal": proposal,
                "status": proposal_status(proposal),
                "editable": editable,
                "continue_url": step_url(proposal, form_step_reached(proposal, revision)) if editable else "",
                "url": proposal_url(proposal),
            }
        )
    return render(request, "contributions/contribute_list.html", {"rows": rows})


def _fill_from_catalogue(form_data: Any) -> tuple[dict[str, Any], str]:
    """Step (a)'s answers with the empty fields filled from the catalogue's paper of the given arXiv id."""
    # Bounded like the fields themselves: these values are shown again, unvalidated, as initial data.
    values = {
        name: str(form_data.get(name, ""))[: getattr(field, "max_length", None) or 20]
        for name, field in PaperMetaForm.base_fields.items()
    }
    ident = arxiv_id(str(values.get("arxiv") or "")[:200])
    if not ident:
        return values, "Give an arXiv id or URL to fill the form in from."
    values["arxiv"] = ident
    paper = paper_for_arxiv_id(arxiv_id=ident)
    if paper is None:
        return values, f"No paper with arXiv id {ident} is in the catalogue yet: fill the fields in by hand."
    known = {
        "title": paper.title,
        "venue": paper.venue,
        "github_url": paper.github_url,
        "arxiv_v1_date": paper.arxiv_v1_date.isoformat() if paper.arxiv_v1_date else "",
        "arxiv_date": paper.arxiv_date.isoformat() if paper.arxiv_date else "",
        "first_commit_date": paper.first_commit_date.isoformat() if paper.first_commit_date else "",
        "last_commit_date": paper.last_commit_date.isoformat() if paper.last_commit_date else "",
    }
    filled = [name for name, value in known.items() if value and not values.get(name)]
    for name in filled:
        values[name] = known[name]
    labels = ", ".join(str(PaperMetaForm.base_fields[name].label).lower() for name in filled) or "nothing new"
    return values, f"Filled in from the catalogue's paper “{paper.title}”: {labels}."


#: the session's map of new-contribution forms (their ``?form=`` token) to the drafts they created
NEW_FORMS_SESSION_KEY = "rcb_contribute_new_forms"
#: how many of those the session remembers (the newest)
NEW_FORMS_KEPT = 20
_TOKEN_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")


def _new_form_token(request: HttpRequest) -> str:
    """The ``?form=`` token of a new-contribution form ("" when absent or malformed)."""
    token = request.GET.get("form", "")
    return token if 0 < len(token) <= 40 and set(token) <= _TOKEN_CHARS else ""


def _new_form_draft(request: HttpRequest, token: str) -> Proposal | None:
    """The draft the new-contribution form ``token`` created in this session, while the form may still
    change it (None otherwise)."""
    pk = (request.session.get(NEW_FORMS_SESSION_KEY) or {}).get(token) if token else None
    if pk is None:
        return None
    try:
        proposal = _own_proposal(request, pk)
    except Http404:
        return None
    return proposal if proposal.state in EDITABLE_STATES else None


def _remember_new_form(request: HttpRequest, token: str, proposal: Proposal) -> None:
    if token:
        known = {**(request.session.get(NEW_FORMS_SESSION_KEY) or {}), token: proposal.pk}
        request.session[NEW_FORMS_SESSION_KEY] = dict(list(known.items())[-NEW_FORMS_KEPT:])


def _meta_form(proposal: Proposal | None) -> PaperMetaForm:
    if proposal is None:
        return PaperMetaForm()
    saved = (proposal.draft or {}).get("1")
    return PaperMetaForm(initial=saved or meta_initial(task_key=proposal.task_key, meta=proposal.meta))


@login_required
@require_http_methods(["GET", "POST"])
def contribute_meta(request: HttpRequest, proposal_id: int | None = None) -> HttpResponse:
    """Step (a): the paper's metadata. Without a proposal (``/contribute/new/``) it creates the draft.

    A new-contribution form carries a token (``?form=``, put in the address by ``static/js/contribute.js``)
    that the session maps to the draft it created: Back or a reload to the form, or posting it again,
    opens and changes that draft instead of an empty form that would refuse its own task key.
    """
    proposal = _own_proposal(request, proposal_id) if proposal_id is not None else None
    token = "" if proposal_id is not None else _new_form_token(request)
    if proposal is None and (created := _new_form_draft(request, token)) is not None:
        if request.method == "GET":
            messages.info(request, f"Your answers are saved in the draft “{created.task_key}”.")
            return redirect(step_url(created, 1))
        proposal = created
    if proposal is not None and proposal.state not in EDITABLE_STATES:
        return _locked(request, proposal)
    notice, own_draft = "", None
    if request.method == "POST" and request.POST.get("action") == "fill":
        initial, notice = _fill_from_catalogue(request.POST)
        form = PaperMetaForm(initial=initial)
    elif request.method == "POST":
        form = PaperMetaForm(request.POST)
        if form.is_valid():
            try:
                saved = proposal_meta_step_save(
                    by=request.user,
                    proposal=proposal,
                    task_key=form.cleaned_data["task_key"],
                    meta=form.meta(),
                    answers=form.draft(),
                )
            except ProposalError as exc:
                key = form.cleaned_data["task_key"]
                _service_error(form, exc)
                if exc.field == "task_key":
                    own_draft = proposal_open_for_key(author=request.user, task_key=key, exclude=proposal)
            else:
                _remember_new_form(request, token, saved)
                for warning in form.warnings:
                    messages.warning(request, warning)
                return _go(request, step_url(saved, 2))
    else:
        form = _meta_form(proposal)
    reached = form_step_reached(proposal, latest_revision(proposal)) if proposal is not None else 1
    context = {
        **_steps_context(proposal, 1, reached),
        "form": form,
        "notice": notice,
        # A new form names itself (``?form=``), so that the session can map it to the draft it creates.
        "action": step_url(proposal, 1)
        if proposal is not None
        else f"{reverse('contributions:contribute_new')}?form={token or secrets.token_urlsafe(12)}",
        "own_draft": own_draft,
        "own_draft_url": resume_url(own_draft) if own_draft is not None else "",
    }
    status = 400 if request.method == "POST" and form.errors else 200
    return _render_step(request, "contributions/contribute_meta.html", context, status=status)


def _intake(form: CodeForm) -> IntakeResult:
    """The upload's files through the safe intake; ``IntakeError`` is put on the field at fault."""
    limits = IntakeLimits.from_settings()
    archive = form.cleaned_data.get("archive")
    if archive:
        return intake_archive(filename=archive.name or "", stream=archive.file, limits=limits)
    return intake_git(
        url=form.cleaned_data["git_url"],
        commit=form.cleaned_data["git_commit"],
        limits=limits,
        quarantine=quarantine_root(),
    )


@login_required
@require_http_methods(["GET", "POST"])
def contribute_code(request: HttpRequest, proposal_id: int) -> HttpResponse:
    """Step (b): the code, as an archive or one commit of a git repository, read by the safe intake."""
    proposal = _own_proposal(request, proposal_id)
    if proposal.state not in UPLOADABLE_STATES:
        return _locked(request, proposal)
    revision = latest_revision(proposal)
    if request.method == "POST":
        form = CodeForm(request.POST, request.FILES)
        if form.is_valid():
            code_field = "archive" if form.cleaned_data.get("archive") else "git_url"
            try:
                revision = revision_upload(proposal=proposal, by=request.user, intake_result=_intake(form))
            except IntakeError as exc:
                field = code_field if code_field == "archive" or exc.field != "commit" else "git_commit"
                form.add_error(field, str(exc))
            except ProposalError as exc:
                if exc.field in MANIFEST_DEFAULTS:
                    # The guess was refused (e.g. no test script at all): the upload is what lacks it.
                    form.add_error(
                        code_field,
                        f"The upload cannot be a task. {exc.words_away(contribution_label(exc.field))}.",
                    )
                else:
                    _service_error(form, exc, fallback=code_field)
            else:
                if not revision.manifest.get("annotated_files"):
                    messages.info(
                        request,
                        "The code holds no paper2code tags yet: mark its snippets on it here, then save.",
                    )
                    return _go(request, marks_url(proposal), whole_page=True)
                return _go(request, step_url(proposal, 3))
    else:
        saved = (proposal.draft or {}).get("2") or {}
        initial = {"git_url": saved.get("origin"), "git_commit": saved.get("commit")}
        form = CodeForm(initial=initial if saved.get("source") == "git" else None)
    context = {
        **_steps_context(proposal, 2, form_step_reached(proposal, revision)),
        "form": form,
        "revision": revision,
        "file_count": len(revision.files) if revision else 0,
    }
    status = 400 if request.method == "POST" and form.errors else 200
    return _render_step(request, "contributions/contribute_code.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def contribute_files(request: HttpRequest, proposal_id: int) -> HttpResponse:
    """Step (c): which uploaded files are annotated, context, oracle, the test, the paper, requirements."""
    proposal = _own_proposal(request, proposal_id)
    if proposal.state not in EDITABLE_STATES:
        return _locked(request, proposal)
    revision = latest_revision(proposal)
    if form_step_reached(proposal, revision) < 3 or revision is None or revision.submitted_at is not None:
        return _to_reached(request, proposal, revision)
    if not revision.manifest.get("annotated_files"):
        messages.info(request, "Mark the snippets on the code first: it holds no paper2code tags yet.")
        return _go(request, marks_url(proposal), whole_page=True)
    choices = file_choices(paths=list(revision.files), tagged=revision_tagged_files(revision=revision))
    if request.method == "POST":
        form = FilesForm(request.POST, choices=choices)
        if form.is_valid():
            try:
                with transaction.atomic():
                    revision = revision_update_manifest(
                        revision=revision, by=request.user, manifest=form.manifest()
                    )
                    proposal_save_draft(
                        proposal=proposal,
                        by=request.user,
                        step=3,
                        data={**revision.manifest, "content_hash": revision.content_hash},
                    )
            except ProposalError as exc:
                _service_error(form, exc)
            else:
                return _go(request, step_url(proposal, 4))
    else:
        form = FilesForm(initial=revision.manifest, choices=choices)
    context = {
        **_steps_context(proposal, 3, form_step_reached(proposal, revision)),
        "form": form,
        "revision": revision,
    }
    status = 400 if request.method == "POST" and form.errors else 200
    return _render_step(request, "contributions/contribute_files.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def contribute_preview(request: HttpRequest, proposal_id: int) -> HttpResponse:
    """Step (d): the snippet tree and annotation issues as the core library parses the upload, and for a
    chosen snippet (``?snippet=NAME``; htmx swaps only that part) the exact problem a model is shown."""
    proposal = _own_proposal(request, proposal_id)
    if proposal.state not in EDITABLE_STATES:
        return _locked(request, proposal)
    revision = latest_revision(proposal)
    reached = form_step_reached(proposal, revision)
    if reached < 4 or revision is None:
        return _to_reached(request, proposal, revision)
    preview = revision_preview(proposal=proposal, revision=revision)
    if request.method == "POST":
        proposal_save_draft(
            proposal=proposal,
            by=request.user,
            step=4,
            data={
                "content_hash": revision.content_hash,
                "snippets": len(preview.rows),
                "errors": len(preview.errors),
            },
        )
        return _go(request, step_url(proposal, 5))
    chosen = request.GET.get("snippet", "")[:500]
    problem = snippet_problem(preview=preview, name=chosen) if chosen else None
    context = {
        **_steps_context(proposal, 4, reached),
        "revision": revision,
        "preview": preview,
        "chosen": chosen,
        "problem": problem,
    }
    template = "contributions/contribute_preview.html"
    if request.htmx and chosen and not request.htmx.boosted:
        return render(request, template + "#problem", context)
    return _render_step(request, template, context, status=404 if chosen and problem is None else 200)


@login_required
@require_http_methods(["GET", "POST"])
def contribute_submit(request: HttpRequest, proposal_id: int) -> HttpResponse:
    """Step (e): a summary, then ``proposal_submit``; success goes to the proposal's page."""
    proposal = _own_proposal(request, proposal_id)
    if proposal.state not in EDITABLE_STATES:
        return _locked(request, proposal)
    revision = latest_revision(proposal)
    reached = form_step_reached(proposal, revision)
    if reached < 5 or revision is None:
        return _to_reached(request, proposal, revision)
    error, error_step = "", 0
    if request.method == "POST":
        try:
            proposal_submit(proposal=proposal, by=request.user)
        except ProposalError as exc:
            error = exc.words_away(contribution_label(exc.field))
            error_step = FIELD_STEPS.get(exc.field or "", 0)
        else:
            messages.success(
                request, f"Revision {revision.number} of {proposal.task_key} was submitted for validation."
            )
            return _go(
                request, proposal_url(proposal) or reverse("contributions:contribute"), whole_page=True
            )
    preview = revision_preview(proposal=proposal, revision=revision)
    context = {
        **_steps_context(proposal, 5, reached),
        "revision": revision,
        "preview": preview,
        "meta": proposal.meta,
        "error": error,
        "error_url": step_url(proposal, error_step) if error_step else "",
    }
    return _render_step(
        request, "contributions/contribute_submit.html", context, status=400 if error else 200
    )
