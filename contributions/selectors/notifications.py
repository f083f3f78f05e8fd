"""Reads of a user's in-app notifications (the list and the unread count of the nav); they are written by
``services.notifications``."""

from __future__ import annotations

from typing import Any

from django.db.models import (
    QuerySet,
)

from contributions.models import (
    Notification,
)


def notification_list(*, user: Any, unread_only: bool = False, limit: int = 50) -> QuerySet[Notification]:
    """The user's notifications, newest first (at most ``limit``)."""
    if user is None or not user.is_authenticated:
        return Notification.objects.none()
    rows = Notification.objects.filter(recipient=user).select_related("proposal")
    if unread_only:
        rows = rows.filter(read_at__isnull=True)
    return rows.order_by("-created_at", "-pk")[:limit]


def notification_unread_count(*, user: Any) -> int:
    """How many of the user's notifications are unread (0 for an anonymous user)."""
    if user is None or not user.is_authenticated:
        return 0
    return Notification.objects.filter(recipient=user, read_at__isnull=True).count()
