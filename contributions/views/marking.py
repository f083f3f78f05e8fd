"""The marking page: the author marks, names and adjusts the snippets on the code as it is, sees what a model
will be shown, saves the marks as a new revision and validates it, on one page.

``/contribute/<id>/snippets/``: the author edits (while the proposal takes uploads); a maintainer sees the
same page read-only with the line comments. Each change is one POST (``action``: add, change, delete,
discard, save, validate) that the services check whole before keeping it in the draft; with htmx it answers
the page's working area in place (partial "marking"), without it a redirect back (or the page with the
refusal, status 400). The marks live on the server, so Back and reload show them as they were left.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_http_methods

from contributions.models import Comment, Proposal
from contributions.roles import is_maintainer
from contributions.selectors.marking import marking_page
from contributions.selectors.proposal_page import RUNNING_STATUSES, is_polling
from contributions.selectors.proposals import (
    latest_revision,
    latest_submitted_revision,
    proposal_get_for_viewer,
    proposal_status,
)
from contributions.services.marking import (
    mark_add,
    mark_change,
    mark_delete,
    marks_discard,
    revision_marks_save,
)
from contributions.services.proposal_state import UPLOADABLE_STATES, ProposalError
from contributions.services.proposal_validation import proposal_submit

#: the longest snippet name the form takes (a tag is one line; names are shown everywhere)
NAME_MAX = 200
ACTIONS = ("add", "change", "delete", "discard", "save", "validate")


def _viewable(request: HttpRequest, proposal_id: int) -> Proposal:
    """The proposal for its author or a maintainer; 404 for anyone else."""
    try:
        proposal = proposal_get_for_viewer(viewer=request.user, proposal_id=proposal_id)
    except Proposal.DoesNotExist:
        raise Http404("No such proposal.") from None
    if proposal.author_id != request.user.pk and not is_maintainer(request.user):
        raise Http404("No such proposal.")
    return proposal


def _line(value: str, label: str) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ProposalError(
            f"{label}: give a line number (a whole number), not {value[:40]!r}", field="marks"
        ) from None
    if not 0 < number < 10**7:
        raise ProposalError(f"{label}: line {number} is not a line of a file", field="marks")
    return number


def _name(value: str, label: str = "name") -> str:
    if len(value) > NAME_MAX:
        raise ProposalError(f"{label}: a snippet name has at most {NAME_MAX} characters", field="marks")
    return value


def _act(request: HttpRequest, proposal: Proposal) -> tuple[str, str]:
    """Carry out the posted ``action``; returns (the message for the author, the snippet to preview)."""
    post = request.POST
    action = post.get("action", "")
    by = request.user
    if action == "add":
        name = _name(post.get("name", ""))
        file = post.get("file", "")[:1000]
        start = (file, _line(post.get("first", ""), "first line"))
        end = (post.get("end_file", "")[:1000] or file, _line(post.get("last", ""), "last line"))
        mark_add(proposal=proposal, by=by, name=name, start=start, end=end)
        return (
            f"Snippet “{name}” marked on {file}, lines {min(start[1], end[1])}-{max(start[1], end[1])}.",
            name,
        )
    if action == "change":
        old = post.get("old_name", "")[: NAME_MAX + 1]
        name = _name(post.get("name", ""))
        first, last = _line(post.get("first", ""), "first line"), _line(post.get("last", ""), "last line")
        mark_change(proposal=proposal, by=by, old_name=old, name=name, first=first, last=last)
        renamed = f" (was “{old}”)" if old != name else ""
        return f"Snippet “{name}”{renamed} now covers lines {first}-{last}.", name
    if action == "delete":
        name = post.get("name", "")[: NAME_MAX + 1]
        mark_delete(proposal=proposal, by=by, name=name)
        return f"Snippet “{name}” deleted; the snippets inside it stay.", ""
    if action == "discard":
        marks_discard(proposal=proposal, by=by)
        return "Unsaved changes discarded: the marks are the newest revision's again.", ""
    if action in ("save", "validate"):
        saved = revision_marks_save(proposal=proposal, by=by)
        said = f"Saved as revision {saved.number}." if saved is not None else "Nothing to save."
        if action == "validate":
            proposal_submit(proposal=proposal, by=by)
            revision = latest_revision(proposal)
            said = f"{said if saved else ''} Revision {revision.number} is being validated.".strip()
        return said, ""
    raise ProposalError(f"action: unknown action {action[:40]!r} (known: {', '.join(ACTIONS)})")


def _context(
    request: HttpRequest, proposal: Proposal, *, shown: str, preview: str, notice: str = "", error: Any = None
) -> dict[str, Any]:
    proposal.refresh_from_db()
    revision = latest_revision(proposal)
    editable = proposal.author_id == request.user.pk and proposal.state in UPLOADABLE_STATES
    validated = latest_submitted_revision(proposal)
    comments = (
        list(
            Comment.objects.filter(proposal=proposal, revision=revision)
            .exclude(file="")
            .select_related("author")
        )
        if revision is not None
        else []
    )
    page = (
        marking_page(
            proposal=proposal,
            revision=revision,
            validated=validated,
            shown=shown,
            preview=preview,
            comments=comments,
        )
        if revision is not None
        else None
    )
    return {
        "proposal": proposal,
        "status": proposal_status(proposal),
        "revision": revision,
        "page": page,
        "editable": editable,
        "polling": is_polling(proposal, validated),
        "running": validated is not None and validated.validation_status in RUNNING_STATUSES,
        "notice": notice,
        "error": error,
        "action_url": reverse("contributions:proposal_marks", kwargs={"proposal_id": proposal.pk}),
        "proposal_url": reverse("contributions:proposal_detail", kwargs={"proposal_id": proposal.pk}),
    }


@login_required
@require_http_methods(["GET", "POST"])
def proposal_marks(request: HttpRequest, proposal_id: int) -> HttpResponse:
    proposal = _viewable(request, proposal_id)
    shown = request.POST.get("shown") or request.GET.get("file", "")
    preview = request.GET.get("preview", "")[: NAME_MAX + 1]
    if request.method == "GET":
        context = _context(request, proposal, shown=shown[:1000], preview=preview)
        if request.htmx and request.GET.get("part") == "status":
            response = render(request, "contributions/marks.html#status", context)
            if not context["polling"]:
                response["HX-Refresh"] = "true"
            return response
        return render(request, "contributions/marks.html", context)
    if proposal.author_id != request.user.pk:
        raise Http404("No such proposal.")
    try:
        notice, preview = _act(request, proposal)
    except ProposalError as exc:
        context = _context(request, proposal, shown=shown[:1000], preview="", error=exc)
        return _answer(request, context, status=400)
    if request.htmx:
        context = _context(request, proposal, shown=shown[:1000], preview=preview, notice=notice)
        if request.POST.get("action") == "validate":
            response = HttpResponse(status=204)
            response["HX-Refresh"] = "true"
            messages.success(request, notice)
            return response
        return _answer(request, context, status=200)
    messages.success(request, notice)
    query = {k: v for k, v in (("file", shown[:1000]), ("preview", preview)) if v}
    url = reverse("contributions:proposal_marks", kwargs={"proposal_id": proposal.pk})
    return redirect(f"{url}?{urlencode(query)}" if query else url)


def _answer(request: HttpRequest, context: dict[str, Any], *, status: int) -> HttpResponse:
    if request.htmx and not request.htmx.boosted:
        # htmx swaps only 2xx answers: a refusal is a normal answer to show in place.
        return render(request, "contributions/marks.html#marking", context, status=200)
    return render(request, "contributions/marks.html", context, status=status)
