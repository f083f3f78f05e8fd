"""Reads of people: a user's profile, their API tokens, and the name the portal credits them with."""

from __future__ import annotations

from typing import Any

from django.db.models import (
    QuerySet,
)

from contributions.models import (
    ApiToken,
    Profile,
)


def profile_for(*, user: Any) -> Profile | None:
    """``user``'s profile, None before they first saved one."""
    return Profile.objects.filter(user=user).first()


def api_token_list(*, user: Any) -> QuerySet[ApiToken]:
    """``user``'s API tokens, newest first (digests only: secrets are never stored)."""
    return ApiToken.objects.filter(user=user).order_by("-created_at", "-pk")


def user_display_name(user: Any) -> str:
    """The name the portal credits ``user`` with: the profile's display name, else the full name, else the
    user name ("" for None)."""
    if user is None:
        return ""
    try:
        profile = user.profile  # select_related("profile") makes this free
    except Profile.DoesNotExist:
        profile = None
    if profile is not None and profile.display_name.strip():
        return profile.display_name.strip()
    full = (user.get_full_name() or "").strip()
    return full or user.get_username()
