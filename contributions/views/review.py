"""Pages of a proposal after the form: its page (code, validation, history, comments, reviews), the
maintainers' review queue and the notification list.

Views parse input, call one service or selector and render; every proposal goes through the one access
guard ``proposal_get_for_viewer`` (404 for whoever may not see it). The validation status on the
proposal page polls with htmx (``hx-trigger="every 2s"``) while the validation can still move, and the
fragment it gets back carries no trigger once it is final, so polling stops by itself.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_POST, require_safe

from contributions.forms import LICENSES
from contributions.models import (
    UNCHECKED_EXPLANATION_MIN,
    Proposal,
    ProposalRevision,
    Review,
    UncheckedReason,
)
from contributions.params import optional_id
from contributions.proposal_status import report_overridable
from contributions.roles import REVIEW_PERMISSION, is_maintainer
from contributions.selectors import notifications as notification_selectors
from contributions.selectors.proposal_page import (
    approve_blocked,
    comment_line_url,
    meta_rows,
    revisions_with_diffs,
    shown_code,
    validation_section,
)
from contributions.selectors.proposals import (
    latest_revision,
    latest_submitted_revision,
    proposal_get_for_viewer,
    proposal_history,
    proposal_status,
    revision_outcome,
)
from contributions.selectors.review_queue import proposal_queue_rows, proposal_waiting
from contributions.services import (
    RUBRIC,
    ProposalError,
    comment_add,
    notifications_mark_read,
    proposal_review,
    proposal_withdraw,
)
from contributions.services.proposal_state import MAX_REASON, MAX_TEXT, UPLOADABLE_STATES
from contributions.views.contribute import resume_url

State = Proposal.State
VStatus = ProposalRevision.ValidationStatus

#: the contribution form's code step (``/contribute/<id>/step/<n>/``): where a new revision is uploaded
CODE_STEP = 2
#: the statuses whose next step for the author is to continue the form where they left it
RESUMABLE = ("draft", "revising", "could_not_run")


def _proposal_or_404(request: HttpRequest, proposal_id: Any) -> Proposal:
    try:
        return proposal_get_for_viewer(viewer=request.user, proposal_id=proposal_id)
    except Proposal.DoesNotExist:
        raise Http404("No such proposal.") from None


def _code_step_url(proposal: Proposal) -> str:
    try:
        return reverse("contributions:contribute_code", kwargs={"proposal_id": proposal.pk})
    except NoReverseMatch:
        return f"/contribute/{proposal.pk}/step/{CODE_STEP}/"


# ------------------------------------------------------------------------------------------------ forms


class CommentForm(forms.Form):
    body = forms.CharField(
        label="Comment (Markdown)", widget=forms.Textarea(attrs={"rows": 4}), max_length=MAX_TEXT
    )
    file = forms.CharField(label="File", required=False, max_length=500)
    line = forms.IntegerField(label="Line", required=False, min_value=1)

    def add_service_error(self, error: ProposalError) -> None:
        """Put a service's refusal on the field it names, else on the form."""
        self.add_error(error.field if error.field in self.fields else None, error.words)


class WithdrawForm(forms.Form):
    reason = forms.CharField(
        label="Why (optional)",
        required=False,
        max_length=MAX_REASON,
        widget=forms.Textarea(attrs={"rows": 2}),
        # Shown as a message above the page, away from the field: it says which answer it is about.
        error_messages={
            "max_length": "The reason for withdrawing may be at most %(limit_value)d characters long "
            "(it has %(show_value)d).",
        },
    )


class ReviewForm(forms.Form):
    """The rubric checklist, a decision, a Markdown body and one override reason per snippet the test
    does not check (fields ``override_<i>``, labelled with the snippet's name)."""

    decision = forms.ChoiceField(choices=Review.Decision.choices, widget=forms.RadioSelect)
    body = forms.CharField(
        label="Review (Markdown; the reason, for request changes and reject)",
        required=False,
        max_length=MAX_TEXT,
        widget=forms.Textarea(attrs={"rows": 6}),
    )

    def __init__(self, *args: Any, overridable: list[str], approve_blocked: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for key, label in RUBRIC:
            self.fields[f"rubric_{key}"] = forms.BooleanField(label=label, required=False)
        self.overridable = overridable
        for index, name in enumerate(overridable):
            self.fields[f"override_reason_{index}"] = forms.ChoiceField(
                label=f"Why may “{name}” stay unchecked",
                required=False,
                choices=[("", "— pick a reason —"), *UncheckedReason.choices],
            )
            self.fields[f"override_{index}"] = forms.CharField(
                label=f"Explain why accepting that the test does not check “{name}” is sound "
                f"(at least {UNCHECKED_EXPLANATION_MIN} characters; shown with the snippet on every public page)",
                required=False,
                max_length=MAX_REASON,
                widget=forms.Textarea(attrs={"rows": 2}),
            )
        self.approve_blocked = approve_blocked

    def rubric_fields(self) -> list[forms.BoundField]:
        return [self[f"rubric_{key}"] for key, _ in RUBRIC]

    def override_fields(self) -> list[tuple[str, forms.BoundField, forms.BoundField]]:
        return [
            (name, self[f"override_reason_{i}"], self[f"override_{i}"])
            for i, name in enumerate(self.overridable)
        ]

    def clean_decision(self) -> str:
        decision = self.cleaned_data["decision"]
        if decision == Review.Decision.APPROVE and self.approve_blocked:
            raise forms.ValidationError(f"Approve is not available: {self.approve_blocked}")
        return decision

    def rubric(self) -> dict[str, bool]:
        return {key: bool(self.cleaned_data.get(f"rubric_{key}")) for key, _ in RUBRIC}

    def overrides(self) -> dict[str, dict[str, str]]:
        out: dict[str, dict[str, str]] = {}
        for index, name in enumerate(self.overridable):
            reason = self.cleaned_data.get(f"override_reason_{index}") or ""
            text = (self.cleaned_data.get(f"override_{index}") or "").strip()
            if reason or text:
                out[name] = {"reason": reason, "explanation": text}
        return out

    def add_service_error(self, error: ProposalError) -> None:
        """Put a service's refusal on the field it names (the rubric's and the decision's on the form)."""
        fields = {"body": "body", "snippet_overrides": "override_0" if self.overridable else None}
        self.add_error(fields.get(error.field or ""), error.words)


def _review_form(proposal: Proposal, *, viewer: Any, data: Any = None) -> ReviewForm:
    """The review form for the revision under review: an override field per snippet its report says the
    test does not check, and approve refused with the reason when ``viewer`` cannot approve now."""
    revision = latest_submitted_revision(proposal)
    report = dict(revision.validation_report or {}) if revision is not None else {}
    return ReviewForm(
        data,
        overridable=sorted(report_overridable(report)),
        approve_blocked=approve_blocked(proposal=proposal, viewer=viewer, report=report),
    )


# ------------------------------------------------------------------------------------------ proposal page


def _page_context(
    request: HttpRequest,
    proposal: Proposal,
    *,
    review_form: ReviewForm | None = None,
    comment_form: CommentForm | None = None,
) -> dict[str, Any]:
    viewer = request.user
    revisions = list(proposal.revisions.select_related("created_by").order_by("number"))
    under_review = latest_submitted_revision(proposal)
    shown = under_review or latest_revision(proposal)
    wanted = optional_id(request.GET.get("revision"))
    if wanted is not None:
        shown = next((r for r in revisions if r.number == wanted), shown)
    validation = validation_section(proposal, under_review)
    comments = list(proposal.comments.select_related("author", "revision").order_by("created_at", "pk"))
    code = shown_code(shown, comments=comments) if shown else None
    maintainer = is_maintainer(viewer)
    can_review = maintainer and viewer.pk != proposal.author_id and not proposal.is_final
    if can_review and review_form is None:
        review_form = _review_form(proposal, viewer=viewer)
    is_author = viewer.pk == proposal.author_id
    return {
        **validation,
        **_status_context(request, proposal),
        "revisions": [(r, d, revision_outcome(r)) for r, d in revisions_with_diffs(revisions)],
        "shown": shown,
        "under_review": under_review,
        "code": code,
        "thread": [(c, comment_line_url(c, shown)) for c in comments],
        "history": proposal_history(proposal=proposal),
        "reviews": list(proposal.reviews.select_related("reviewer", "revision").order_by("created_at", "pk")),
        "rubric": RUBRIC,
        "review_form": review_form if (can_review or review_form is not None) else None,
        "comment_form": comment_form or CommentForm(initial=_comment_prefill(request)),
        "can_comment": is_author or (maintainer and proposal.state != State.DRAFT),
        "can_withdraw": is_author and not proposal.is_final,
        "withdraw_form": WithdrawForm(),
        "waiting": proposal_waiting(proposal),
        "meta_rows": meta_rows(proposal, licenses=dict(LICENSES)),
    }


def _status_context(request: HttpRequest, proposal: Proposal) -> dict[str, Any]:
    """What the page's header badge and its "next step" panel show (the page, and each live update)."""
    is_author = request.user.pk == proposal.author_id
    maintainer = is_maintainer(request.user)
    status = proposal_status(proposal)
    return {
        "proposal": proposal,
        "status": status,
        "is_author": is_author,
        "is_maintainer": maintainer,
        "can_revise": is_author and proposal.state in UPLOADABLE_STATES and status.key not in RESUMABLE,
        "can_review": maintainer and not is_author and proposal.state == State.READY_FOR_REVIEW,
        "code_step_url": _code_step_url(proposal),
        "marks_url": reverse("contributions:proposal_marks", kwargs={"proposal_id": proposal.pk}),
        "continue_url": resume_url(proposal) if is_author and status.key in RESUMABLE else "",
    }


def _comment_prefill(request: HttpRequest) -> dict[str, Any]:
    """The comment form's file and line from the query (``?file=...&line=...``: a "comment on this line"
    link)."""
    prefill: dict[str, Any] = {}
    if request.GET.get("file"):
        prefill["file"] = request.GET["file"][:500]
        line = optional_id(request.GET.get("line"))
        if line is not None:
            prefill["line"] = line
    return prefill


@login_required
@require_safe
def proposal_detail(request: HttpRequest, proposal_id: int) -> HttpResponse:
    """The proposal's page for its author and the maintainers; an htmx poll gets the validation fragment."""
    proposal = _proposal_or_404(request, proposal_id)
    if request.htmx and request.htmx.target == "validation-status":
        # The validation section, and (out of band) the header's status and the next step, which it moves.
        revision = latest_submitted_revision(proposal)
        context = {**validation_section(proposal, revision), **_status_context(request, proposal)}
        return render(request, "contributions/proposal_poll.html", context)
    return render(request, "contributions/proposal_detail.html", _page_context(request, proposal))


def _form_post(
    request: HttpRequest,
    proposal: Proposal,
    *,
    form: CommentForm | ReviewForm,
    act: Callable[[], tuple[str, str]],
) -> HttpResponse:
    """A form posted on the proposal page: when ``form`` is valid, ``act()`` calls the service and returns
    the success message and the page anchor to land on. Invalid input or the service's refusal
    (on the form) answers the page with the form's errors and status 400."""
    if form.is_valid():
        try:
            message, anchor = act()
        except ProposalError as exc:
            form.add_service_error(exc)
        else:
            messages.success(request, message)
            url = reverse("contributions:proposal_detail", kwargs={"proposal_id": proposal.pk})
            return redirect(f"{url}#{anchor}" if anchor else url)
    proposal.refresh_from_db()
    forms_shown = {"review_form": form} if isinstance(form, ReviewForm) else {"comment_form": form}
    context = _page_context(request, proposal, **forms_shown)
    return render(request, "contributions/proposal_detail.html", context, status=400)


@login_required
@require_POST
def proposal_comment(request: HttpRequest, proposal_id: int) -> HttpResponse:
    proposal = _proposal_or_404(request, proposal_id)
    form = CommentForm(request.POST)

    def act() -> tuple[str, str]:
        comment = comment_add(
            proposal=proposal,
            author=request.user,
            body=form.cleaned_data["body"],
            file=form.cleaned_data["file"] or "",
            line=form.cleaned_data["line"],
        )
        return "Your comment was added.", f"comment-{comment.pk}"

    return _form_post(request, proposal, form=form, act=act)


@login_required
@require_POST
def proposal_review_submit(request: HttpRequest, proposal_id: int) -> HttpResponse:
    proposal = _proposal_or_404(request, proposal_id)
    if not is_maintainer(request.user):
        raise PermissionDenied("Only maintainers review proposals.")
    form = _review_form(proposal, viewer=request.user, data=request.POST)

    def act() -> tuple[str, str]:
        review = proposal_review(
            proposal=proposal,
            reviewer=request.user,
            decision=form.cleaned_data["decision"],
            rubric=form.rubric(),
            body=form.cleaned_data["body"],
            overrides=form.overrides(),
        )
        return f"Your review ({review.get_decision_display().lower()}) was recorded.", ""

    return _form_post(request, proposal, form=form, act=act)


@login_required
@require_POST
def proposal_withdraw_view(request: HttpRequest, proposal_id: int) -> HttpResponse:
    proposal = _proposal_or_404(request, proposal_id)
    form = WithdrawForm(request.POST)
    if not form.is_valid():
        messages.error(request, "; ".join(e for errors in form.errors.values() for e in errors))
        return redirect("contributions:proposal_detail", proposal_id=proposal.pk)
    try:
        proposal_withdraw(proposal=proposal, by=request.user, reason=form.cleaned_data["reason"])
    except ProposalError as exc:
        messages.error(request, exc.words)
    else:
        messages.success(request, "The proposal was withdrawn.")
    return redirect("contributions:proposal_detail", proposal_id=proposal.pk)


# ------------------------------------------------------------------------------------------ review queue

_QUEUE_STATES = [(value, label) for value, label in State.choices if value != State.DRAFT]


class QueueFilterForm(forms.Form):
    state = forms.MultipleChoiceField(
        choices=_QUEUE_STATES, required=False, widget=forms.CheckboxSelectMultiple, label="State"
    )
    waiting = forms.IntegerField(
        label="Waiting longer than (days)", required=False, min_value=0, max_value=3650
    )
    q = forms.CharField(label="Search title, task key or arXiv id", required=False, max_length=200)


@login_required
@permission_required(REVIEW_PERMISSION, raise_exception=True)
@require_safe
def review_queue(request: HttpRequest) -> HttpResponse:
    """Proposals waiting for maintainers, longest waiting first, with filters; htmx swaps only the table."""
    form = QueueFilterForm(request.GET or None)
    filters: dict[str, Any] = {}
    if form.is_bound and form.is_valid():
        data = form.cleaned_data
        filters = {
            "states": data["state"] or None,
            "waiting_longer_than": timedelta(days=data["waiting"]) if data["waiting"] is not None else None,
            "search": data["q"] or "",
        }
    context = {
        "form": form,
        "rows": proposal_queue_rows(limit=200, **filters),
        "filtered": bool(filters),
    }
    template = "contributions/review_queue.html"
    if request.htmx and not request.htmx.boosted:
        template += "#queue"
    status = 400 if form.is_bound and not form.is_valid() else 200
    return render(request, template, context, status=status)


# ----------------------------------------------------------------------------------------- notifications


@login_required
@require_safe
def notification_list(request: HttpRequest) -> HttpResponse:
    """The signed-in user's notifications, unread first, newest first within each."""
    rows = list(notification_selectors.notification_list(user=request.user, limit=200))
    rows.sort(key=lambda n: n.read_at is not None)
    unread = sum(1 for n in rows if n.read_at is None)
    return render(request, "contributions/notifications.html", {"rows": rows, "unread": unread})


@login_required
@require_POST
def notifications_read(request: HttpRequest) -> HttpResponse:
    """Mark one notification (``id``) or all of them read; another user's ids mark nothing."""
    ids = (
        [i for i in map(optional_id, request.POST.getlist("id")) if i is not None]
        if "id" in request.POST
        else None
    )
    count = notifications_mark_read(user=request.user, notification_ids=ids)
    messages.success(request, f"Marked {count} notification{'s' if count != 1 else ''} read.")
    return redirect("contributions:notifications")
