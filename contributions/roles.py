"""Who may do what with contributions: everyone signed in contributes; maintainers review.

A maintainer is a user with the ``contributions.review_proposal`` permission (in practice through a group),
so the role is granted in the admin and checked the same way everywhere: through ``is_maintainer`` for
reviewing, and through ``can_maintain`` (maintainers and staff) for the rest of the maintainers' work.
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


def can_maintain(user: Any) -> bool:
    """Whether ``user`` (possibly anonymous or None) may do the portal's maintainer work: start, cancel and
    re-run evaluations, re-judge passes, manage language models, upload for any model, see who asked for a
    run and the details of a tampering verdict. A maintainer (``is_maintainer``) or an active staff account
    (the operators, who hold the admin anyway). The one rule behind every such check, in views, services,
    selectors and templates (``user_is_maintainer``)."""
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    return bool(user.is_staff) or is_maintainer(user)


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
