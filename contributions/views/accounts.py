"""Account pages the portal adds to django-allauth's: the contributor's profile and personal API tokens.

Sign-up, sign-in, sign-out, email verification and password reset are allauth's views (``/accounts/``), with
templates under ``templates/account/`` and ``templates/allauth/``. These views parse a form, call one service
(``contributions.services.accounts``) and render.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_http_methods, require_POST

from contributions.models import ApiToken, Profile
from contributions.roles import is_maintainer
from contributions.selectors import accounts as account_selectors
from contributions.services.accounts import api_token_create, api_token_revoke, profile_update
from contributions.validators import github_normalise, orcid_normalise


class ProfileForm(forms.Form):
    display_name = forms.CharField(
        label="Name",
        max_length=Profile._meta.get_field("display_name").max_length,
        required=False,
        help_text="As you want to be credited on the papers you contribute.",
    )
    affiliation = forms.CharField(
        max_length=Profile._meta.get_field("affiliation").max_length, required=False
    )
    orcid = forms.CharField(
        label="ORCID iD",
        max_length=60,
        required=False,
        help_text="0000-0000-0000-000X, or its https://orcid.org/ address.",
    )
    github = forms.CharField(
        label="GitHub user", max_length=60, required=False, help_text="Your user name, e.g. octocat."
    )

    def clean_orcid(self) -> str:
        return orcid_normalise(self.cleaned_data["orcid"])

    def clean_github(self) -> str:
        return github_normalise(self.cleaned_data["github"])


class ApiTokenForm(forms.Form):
    name = forms.CharField(
        max_length=ApiToken._meta.get_field("name").max_length,
        help_text="Where you will use it, e.g. “lab cluster”.",
    )


def _initial(profile: Profile | None) -> dict[str, str]:
    if profile is None:
        return {}
    return {
        "display_name": profile.display_name,
        "affiliation": profile.affiliation,
        "orcid": profile.orcid,
        "github": profile.github,
    }


@login_required
@require_http_methods(["GET", "POST"])
def profile_edit(request: HttpRequest) -> HttpResponse:
    """The signed-in user's profile; a bad ORCID iD or GitHub name is an error on its field."""
    profile = account_selectors.profile_for(user=request.user)
    if request.method == "POST":
        form = ProfileForm(request.POST)
        if form.is_valid():
            try:
                profile_update(user=request.user, **form.cleaned_data)
            except ValidationError as exc:
                form.add_error(None, exc)
            else:
                messages.success(request, "Your profile was saved.")
                return redirect("contributions:profile")
    else:
        form = ProfileForm(initial=_initial(profile))
    context = {"form": form, "is_maintainer": is_maintainer(request.user)}
    return render(request, "contributions/profile_edit.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def api_token_list(request: HttpRequest) -> HttpResponse:
    """The user's tokens; a POST creates one and shows its secret in this response only."""
    created = None
    if request.method == "POST":
        form = ApiTokenForm(request.POST)
        if form.is_valid():
            try:
                created = api_token_create(user=request.user, name=form.cleaned_data["name"])
            except ValidationError as exc:
                form.add_error(None, exc)
            else:
                form = ApiTokenForm()
    else:
        form = ApiTokenForm()
    context = {
        "form": form,
        "tokens": account_selectors.api_token_list(user=request.user),
        "created": created,
    }
    response = render(request, "contributions/api_token_list.html", context)
    # The page may hold a secret: no cache (browser or proxy) keeps a copy.
    add_never_cache_headers(response)
    return response


@login_required
@require_POST
def api_token_revoke_view(request: HttpRequest, token_id: int) -> HttpResponse:
    if api_token_revoke(user=request.user, token_id=token_id):
        messages.success(request, "The token was revoked: requests that use it are now refused.")
    else:
        messages.error(request, "You have no such token (it may already be revoked).")
    return redirect("contributions:api_tokens")
