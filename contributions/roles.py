"""Who may do what with contributions: everyone signed in contributes; maintainers review.

A maintainer is a user with the ``contributions.review_proposal`` permission (in practice through a group),
so the role is granted in the admin and checked the same way everywhere: through ``is_maintainer``.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db.models import Q, QuerySet

REVIEW_PERMISSION = "contributions.review_proposal"
RELEASE_PERMISSION = "contributions.cut_release"


def is_maintainer(user: Any) -> bool:
    """Whether ``user`` (possibly anonymous or None) may review proposals."""
    return bool(
        user is not None and user.is_authenticated and user.is_active and user.has_perm(REVIEW_PERMISSION)
    )


def maintainers() -> QuerySet:
    """Every active user who may review proposals: through a group, directly, or as a superuser.

    The same users ``is_maintainer`` accepts with the default ``ModelBackend``; used to address notifications.
    """
    perm = Permission.objects.filter(content_type__app_label="contributions", codename="review_proposal")
    return (
        get_user_model()
        .objects.filter(is_active=True)
        .filter(Q(is_superuser=True) | Q(user_permissions__in=perm) | Q(groups__permissions__in=perm))
        .distinct()
        .order_by("pk")
    )
