"""Pages of a proposal after the form: its page (code, validation, history, comments, reviews), the
maintainers' review queue and the notification list.

Views parse input, call one service or selector and render; every proposal goes through the one access
guard ``proposal_get_for_viewer`` (404 for whoever may not see it). The validation status on the
proposal page polls with htmx (``hx-trigger="every 2s"``) while the validation can still move, and the
fragment it gets back carries no trigger once it is final, so polling stops by itself.
"""

from __future__ import annotations

from collections import OrderedDict
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
    Comment,
    Proposal,
    ProposalRevision,
    Review,
    UncheckedReason,
)
from contributions.params import optional_id
from contributions.proposal_status import report_blocking, report_overridable
from contributions.roles import REVIEW_PERMISSION, is_maintainer
from contributions.selectors import notifications as notification_selectors
from contributions.selectors.code_view import RevisionCode, file_anchor, revision_code
from contributions.selectors.proposals import (
    latest_revision,
    latest_submitted_revision,
    proposal_get_for_viewer,
    proposal_history,
    proposal_status,
    revision_outcome,
)
from contributions.selectors.review_queue import proposal_queue_rows, proposal_waiting
from contributions.selectors.revision_diff import revision_diff
from contributions.services import (
    RUBRIC,
    ProposalError,
    comment_add,
    notifications_mark_read,
    proposal_review,
    proposal_withdraw,
)
from contributions.services.proposal_state import MAX_REASON, MAX_TEXT
from contributions.views.contribute import resume_url
from researchcodebench.validation import variants_summary
from researchcodebench.variants import SnippetVariants

State = Proposal.State
VStatus = ProposalRevision.ValidationStatus

#: validation statuses that can still change (the page keeps polling while the revision is in one)
RUNNING_STATUSES = (VStatus.PENDING, VStatus.RUNNING)
#: proposal states in which a validation is still to come or under way
VALIDATING_STATES = (State.SUBMITTED, State.VALIDATING)
#: the contribution form's code step (``/contribute/<id>/step/<n>/``): where a new revision is uploaded
CODE_STEP = 2
#: the states in which the author may upload a new revision (from ready for review it is a "revise" move)
REVISABLE_STATES = (State.DRAFT, State.CHANGES_REQUESTED, State.READY_FOR_REVIEW)
#: the statuses whose next step for the author is to continue the form where they left it
RESUMABLE = ("draft", "revising", "could_not_run")
#: bound of each revision's diff on the page
DIFF_LINES = 2000


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


def _is_polling(proposal: Proposal, revision: ProposalRevision | None) -> bool:
    return (
        revision is not None
        and revision.submitted_at is not None
        and proposal.state in VALIDATING_STATES
        and revision.validation_status in RUNNING_STATUSES
    )


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


def _approve_blocked(*, proposal: Proposal, viewer: Any, report: dict[str, Any]) -> str:
    """Why the viewer cannot approve now ("" when they can, given the rubric and the override reasons)."""
    if viewer.pk == proposal.author_id:
        return "nobody approves their own proposal."
    if proposal.state != State.READY_FOR_REVIEW:
        return f"the proposal is {proposal.get_state_display().lower()}, not ready for review."
    if not report:
        return "there is no validation report."
    blocking = report_blocking(report)
    if blocking:
        return f"the validation report has {len(blocking)} error(s) no review can accept."
    return ""


def _review_form(proposal: Proposal, *, viewer: Any, data: Any = None) -> ReviewForm:
    """The review form for the revision under review: an override field per snippet its report says the
    test does not check, and approve refused with the reason when ``viewer`` cannot approve now."""
    revision = latest_submitted_revision(proposal)
    report = dict(revision.validation_report or {}) if revision is not None else {}
    return ReviewForm(
        data,
        overridable=sorted(report_overridable(report)),
        approve_blocked=_approve_blocked(proposal=proposal, viewer=viewer, report=report),
    )


# ------------------------------------------------------------------------------------------ proposal page


def _report_groups(report: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    groups: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()
    for finding in report.get("findings") or []:
        if isinstance(finding, dict):
            groups.setdefault(str(finding.get("check") or "other"), []).append(finding)
    # Errors first inside each check, then the checks with errors first.
    for rows in groups.values():
        rows.sort(key=lambda f: f.get("severity") != "error")
    return sorted(groups.items(), key=lambda item: not any(f.get("severity") == "error" for f in item[1]))


def _finding_anchors(findings: list[dict[str, Any]]) -> None:
    for finding in findings:
        if finding.get("file"):
            anchor = file_anchor(str(finding["file"]))
            line = finding.get("line")
            finding["anchor"] = f"{anchor}-L{line}" if isinstance(line, int) and line > 0 else anchor
            finding["location"] = (
                f"{finding['file']}:{line}" if isinstance(line, int) and line > 0 else str(finding["file"])
            )


def _validation_context(proposal: Proposal, revision: ProposalRevision | None) -> dict[str, Any]:
    report = dict(revision.validation_report or {}) if revision is not None else {}
    findings = [dict(f) for f in report.get("findings") or [] if isinstance(f, dict)]
    _finding_anchors(findings)
    report["findings"] = findings
    return {
        "proposal": proposal,
        "vrev": revision,
        "report": report,
        "report_groups": _report_groups(report),
        "outcome": revision_outcome(revision),
        "polling": _is_polling(proposal, revision),
        "progress": [_progress_row(e) for e in revision.validation_progress or [] if isinstance(e, dict)]
        if revision is not None
        else [],
    }


def _progress_row(entry: dict[str, Any]) -> dict[str, Any]:
    """One streamed validation stage as the page shows it: its name, time and a one-line summary of its
    data (counts, not the raw records: the full results are in the report below)."""
    data = entry.get("data") if isinstance(entry.get("data"), dict) else {}
    parts = []
    runs = data.get("runs")
    if isinstance(runs, list):
        passed = sum(1 for r in runs if isinstance(r, dict) and r.get("passed"))
        parts.append(f"{passed} of {len(runs)} reference runs passed")
    if isinstance(data.get("timeout_s"), int | float):
        parts.append(f"timeout {data['timeout_s']:.1f} s")
    found = data.get("variants")
    if isinstance(found, dict) and found.get("snippet"):
        count = found.get("count")
        if isinstance(count, int) and count > 0:
            what = f"{count} impossible variant{'s' if count != 1 else ''}"
        elif isinstance(count, int):
            what = "NO impossible variant"
        else:
            what = "variants not derived"
        parts.append(f"snippet {str(found['snippet'])[:200]!r}: {what}")
    snippet = data.get("snippet")
    if isinstance(snippet, dict) and snippet.get("name"):
        checked = {True: "checked by the test", False: "NOT checked by the test"}.get(
            snippet.get("checked"), "not decided"
        )
        score = snippet.get("mutation_score")
        if (
            isinstance(score, dict)
            and isinstance(score.get("killed"), int)
            and isinstance(score.get("total"), int)
        ):
            checked += f" (mutation score {score['killed']}/{score['total']})"
        parts.append(f"snippet {str(snippet['name'])[:200]!r}: {checked}")
    findings = data.get("findings")
    if isinstance(findings, list):
        parts.append(f"{len(findings)} finding{'s' if len(findings) != 1 else ''}")
    return {
        "stage": str(entry.get("stage", ""))[:200],
        "at": str(entry.get("at", "")),
        "summary": "; ".join(parts),
    }


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
    validation = _validation_context(proposal, under_review)
    comments = list(proposal.comments.select_related("author", "revision").order_by("created_at", "pk"))
    code = _shown_code(shown, comments=comments) if shown else None
    maintainer = is_maintainer(viewer)
    can_review = maintainer and viewer.pk != proposal.author_id and not proposal.is_final
    if can_review and review_form is None:
        review_form = _review_form(proposal, viewer=viewer)
    is_author = viewer.pk == proposal.author_id
    return {
        **validation,
        **_status_context(request, proposal),
        "revisions": [(r, d, revision_outcome(r)) for r, d in _revisions_with_diffs(revisions)],
        "shown": shown,
        "under_review": under_review,
        "code": code,
        "thread": [(c, _comment_line_url(c, shown)) for c in comments],
        "history": proposal_history(proposal=proposal),
        "reviews": list(proposal.reviews.select_related("reviewer", "revision").order_by("created_at", "pk")),
        "rubric": RUBRIC,
        "review_form": review_form if (can_review or review_form is not None) else None,
        "comment_form": comment_form or CommentForm(initial=_comment_prefill(request)),
        "can_comment": is_author or (maintainer and proposal.state != State.DRAFT),
        "can_withdraw": is_author and not proposal.is_final,
        "withdraw_form": WithdrawForm(),
        "waiting": proposal_waiting(proposal),
        "meta_rows": _meta_rows(proposal),
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
        "can_revise": is_author and proposal.state in REVISABLE_STATES and status.key not in RESUMABLE,
        "can_review": maintainer and not is_author and proposal.state == State.READY_FOR_REVIEW,
        "code_step_url": _code_step_url(proposal),
        "continue_url": resume_url(proposal) if is_author and status.key in RESUMABLE else "",
    }


def _shown_code(shown: ProposalRevision, *, comments: list[Comment]) -> RevisionCode:
    """The shown revision's code with its own report's findings and snippet answers (the mutation check's,
    the mutation score and the impossible variants) and the comments anchored to its lines."""
    anchored = [c for c in comments if c.file and c.revision_id == shown.pk]
    report = dict(shown.validation_report or {})
    findings = [dict(f) for f in report.get("findings") or [] if isinstance(f, dict)]
    rows = [s for s in report.get("snippets") or [] if isinstance(s, dict)]
    checked = {str(s.get("name")): s.get("checked") for s in rows}
    mutation = {
        str(s.get("name")): s["mutation_score"]
        for s in rows
        if isinstance(s.get("mutation_score"), dict)
        and all(isinstance(s["mutation_score"].get(k), int) for k in ("killed", "total"))
    }
    return revision_code(
        revision=shown,
        findings=findings,
        comments=anchored,
        checked=checked,
        mutation=mutation,
        variants=_report_variants(report),
    )


def _report_variants(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Snippet name -> the summary of its impossible variants (count, each one's description, why there is
    none), from a validation report's ``variants``; a set that does not read is left out."""
    out: dict[str, dict[str, Any]] = {}
    stored = report.get("variants")
    for name, data in (stored if isinstance(stored, dict) else {}).items():
        try:
            out[str(name)] = variants_summary(SnippetVariants.from_dict(data))
        except (KeyError, TypeError, ValueError, AttributeError):
            continue
    return out


def _revisions_with_diffs(revisions: list[ProposalRevision]) -> list[tuple[ProposalRevision, Any]]:
    """Each revision with its diff against the previous one (submitted revisions after the first only)."""
    return [
        (r, revision_diff(revision=r, max_lines=DIFF_LINES))
        if r.submitted_at is not None and r.number > 1
        else (r, None)
        for r in revisions
    ]


def _comment_line_url(comment: Comment, shown: ProposalRevision | None) -> str:
    """Where a comment's file and line are shown: its line's anchor in the code section, with
    ``?revision=N`` when the page shows another revision; "" for a general comment."""
    if not comment.file:
        return ""
    anchor = "#" + file_anchor(comment.file) + (f"-L{comment.line}" if comment.line else "")
    if comment.revision is None or (shown is not None and comment.revision_id == shown.pk):
        return anchor
    return f"?revision={comment.revision.number}{anchor}"


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


_META_FIELDS = (
    ("title", "Title"),
    ("arxiv_abs", "arXiv"),
    ("venue", "Venue"),
    ("arxiv_v1_date", "arXiv v1 date"),
    ("arxiv_date", "arXiv date"),
    ("license", "License"),
    ("github_url", "Code repository"),
    ("commit", "Commit"),
    ("code_commit", "Commit"),
    ("first_commit_date", "First commit"),
    ("last_commit_date", "Last commit"),
)
#: keys shown elsewhere on the page or not meant for people
_META_HIDDEN = frozenset(
    {"id", "annotated_file_paths", "context_file_paths", "extra", "extra_order", "license_text"}
)


def _meta_text(value: Any) -> str:
    """A metadata value as words: a list as its items, anything else as text (at most 500 characters)."""
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)[:500]
    return str(value)[:500]


def _license_text(meta: dict[str, Any]) -> str:
    """The license's name (``forms.LICENSES``), or the text given for "other"."""
    license_id = str(meta.get("license") or "")
    if license_id == "other":
        return str(meta.get("license_text") or "other")[:500]
    return dict(LICENSES).get(license_id, license_id)


def _meta_rows(proposal: Proposal) -> list[tuple[str, str, bool]]:
    """(label, value, is_link) for the metadata the proposal has, the registry entry's ``extra`` keys (the
    license, the code's commit) as rows of their own; links only for http(s) URLs. No dict is ever shown
    as Python text: an unknown key with a mapping value is left out."""
    stored = proposal.meta or {}
    extra = stored.get("extra") if isinstance(stored.get("extra"), dict) else {}
    meta = {**extra, **{k: v for k, v in stored.items() if v not in (None, "", [], {})}}
    rows = []
    for key, label in _META_FIELDS:
        value = meta.get(key)
        if value in (None, "", []) or (key == "code_commit" and meta.get("commit")):
            continue
        text = _license_text(meta) if key == "license" else _meta_text(value)
        rows.append((label, text, text.startswith(("https://", "http://"))))
    known = {key for key, _ in _META_FIELDS} | _META_HIDDEN
    for key in sorted(set(meta) - known):
        value = meta[key]
        if value not in (None, "", [], {}) and not isinstance(value, dict):
            rows.append((key.replace("_", " ").capitalize(), _meta_text(value), False))
    return rows


@login_required
@require_safe
def proposal_detail(request: HttpRequest, proposal_id: int) -> HttpResponse:
    """The proposal's page for its author and the maintainers; an htmx poll gets the validation fragment."""
    proposal = _proposal_or_404(request, proposal_id)
    if request.htmx and request.htmx.target == "validation-status":
        # The validation section, and (out of band) the header's status and the next step, which it moves.
        revision = latest_submitted_revision(proposal)
        context = {**_validation_context(proposal, revision), **_status_context(request, proposal)}
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
