"""Pages of the benchmark catalogue: releases (a release's page, its download, cutting a release, choosing
the default). The papers page is the leaderboard's (``leaderboard.views.papers.papers_page``), served from
its cache."""

from __future__ import annotations

import base64
import hashlib
import tempfile
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from contributions.citation import release_bibtex
from contributions.errors import CatalogueError
from contributions.models import Release, TaskVersion
from contributions.roles import RELEASE_PERMISSION
from contributions.selectors import releases as release_selectors
from contributions.selectors.catalogue import task_versions_current
from contributions.selectors.release_export import release_archive
from contributions.services.releases import release_cut, release_set_default


class ReleaseCutForm(forms.Form):
    """A new release: a slug name, a title, and which of the current task versions it holds (all by default)."""

    name = forms.SlugField(
        max_length=100,
        help_text="Letters, digits, - and _; becomes the git tag (e.g. rcb-2026-01).",
        error_messages={
            "invalid": "A release name may hold only letters, digits, hyphens (-) and underscores (_), without "
            "spaces."
        },
    )
    title = forms.CharField(max_length=200, required=False)
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False, max_length=5000)
    task_versions = forms.ModelMultipleChoiceField(
        queryset=TaskVersion.objects.none(),
        widget=forms.CheckboxSelectMultiple,
        label="Task versions",
        help_text="The newest published version of each task.",
    )
    make_default = forms.BooleanField(required=False, label="Make it the release the leaderboard shows first")

    def __init__(self, *args: Any, current: list[TaskVersion], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["task_versions"]
        field.queryset = TaskVersion.objects.filter(pk__in=[v.pk for v in current]).select_related("task")
        field.label_from_instance = lambda v: f"{v.task.key} v{v.number}"
        if not self.is_bound:
            self.initial["task_versions"] = [v.pk for v in current]


def _require_release_permission(request: HttpRequest) -> HttpResponse | None:
    """A redirect to sign in for a visitor; ``PermissionDenied`` (403) for a member who may not cut releases."""
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    if not request.user.has_perm(RELEASE_PERMISSION):
        raise PermissionDenied("only maintainers cut releases")
    return None


def release_list(request: HttpRequest) -> HttpResponse:
    """Every release with its size and its tag in the benchmark git repository."""
    context = {
        "releases": list(release_selectors.release_list()),
        "can_cut": request.user.is_authenticated and request.user.has_perm(RELEASE_PERMISSION),
    }
    return render(request, "contributions/release_list.html", context)


def _release_page_or_404(name: str) -> release_selectors.ReleasePage:
    try:
        return release_selectors.release_page(name=name)
    except Release.DoesNotExist as exc:
        raise Http404(str(exc)) from None


@require_safe
def release_detail(request: HttpRequest, name: str) -> HttpResponse:
    """A release: its tasks and versions, counts, git tag and commit, its download, citation and board."""
    page = _release_page_or_404(name)
    url = request.build_absolute_uri(reverse("contributions:release_detail", args=[page.release.name]))
    context = {
        "page": page,
        "release": page.release,
        "bibtex": release_bibtex(release=page.release, url=url),
        # The board and the papers page are the leaderboard's (a layer above): linked by path and filter.
        "board_url": "/?release=" + page.release.name,
        "papers_url": "/papers/?release=" + page.release.name,
    }
    return render(request, "contributions/release_detail.html", context)


@require_safe
def release_download(request: HttpRequest, name: str) -> HttpResponse:
    """The release as ``<name>.tar.gz``: the folder ``manage.py export_release`` writes (``papers.yaml`` and
    every task folder), streamed from a temporary file, its SHA-256 in ``Repr-Digest`` (and as the ``ETag``).
    404 for a release whose tasks have no files here."""
    page = _release_page_or_404(name)
    if not page.downloadable:
        raise Http404(
            f"release {name!r} has task versions without files (metadata only): nothing to download"
        )
    out = tempfile.TemporaryFile()
    try:
        release_archive(release=page.release, out=out)
    except CatalogueError as exc:
        out.close()
        raise Http404(str(exc)) from None
    out.seek(0)
    digest = hashlib.file_digest(out, "sha256")
    out.seek(0)
    response = FileResponse(out, as_attachment=True, filename=f"{page.release.name}.tar.gz")
    # The archive's hash (RFC 9530), which ``rcb download`` checks; the bytes depend on the release alone.
    response["Repr-Digest"] = f"sha-256=:{base64.b64encode(digest.digest()).decode()}:"
    response["ETag"] = f'"{digest.hexdigest()}"'
    return response


@require_http_methods(["GET", "POST"])
def release_cut_view(request: HttpRequest) -> HttpResponse:
    """Maintainers cut a release from the current task versions; it is tagged in the benchmark repository."""
    refused = _require_release_permission(request)
    if refused is not None:
        return refused
    current = task_versions_current()
    form = ReleaseCutForm(request.POST if request.method == "POST" else None, current=current)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            release = release_cut(
                name=data["name"],
                title=data["title"],
                description=data["description"],
                task_versions=data["task_versions"],
                by=request.user,
                make_default=data["make_default"],
            )
        except CatalogueError as exc:
            form.add_error("name" if str(exc).startswith("release name") else "task_versions", str(exc))
        else:
            messages.success(
                request,
                f"Release {release.name} holds {release.entries.count()} task version(s); it is tagged.",
            )
            return redirect("contributions:release_list")
    return render(request, "contributions/release_cut.html", {"form": form, "current": current})


@require_POST
def release_default_view(request: HttpRequest, name: str) -> HttpResponse:
    """Maintainers choose the release the leaderboard shows first."""
    refused = _require_release_permission(request)
    if refused is not None:
        return refused
    try:
        release = release_selectors.release_get(name=name)
    except Release.DoesNotExist as exc:
        raise Http404(str(exc)) from None
    release_set_default(release=release)
    messages.success(request, f"The leaderboard now shows release {release.name} first.")
    return redirect("contributions:release_list")
