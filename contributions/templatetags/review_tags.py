"""Template helpers of the proposal, review and notification pages: ``{{ body|markdown }}`` (safe user
Markdown), ``{{ key|unchecked_reason }}`` (why a snippet may stay unchecked, in words), ``{{ delta|waiting }}``
(a waiting time in words) and ``{% unread_notifications as n %}`` (the nav's unread count)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django import template
from django.utils.safestring import SafeString

from contributions.markdown import render_markdown
from contributions.models import UncheckedReason
from contributions.selectors.notifications import notification_unread_count

register = template.Library()


@register.filter(name="markdown", is_safe=True)
def markdown_filter(source: str | None) -> SafeString:
    return render_markdown(source)


@register.filter
def unchecked_reason(key: str | None) -> str:
    """The words of an ``UncheckedReason`` key ("" for none; an unknown key as it is)."""
    if not key:
        return ""
    try:
        return str(UncheckedReason(key).label)
    except ValueError:
        return str(key)


@register.filter
def waiting(delta: timedelta | None) -> str:
    """A waiting time in the largest two units ("3 d 4 h", "12 min"); "—" for None."""
    if delta is None:
        return "—"
    seconds = max(0, int(delta.total_seconds()))
    days, rest = divmod(seconds, 86_400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min"


@register.simple_tag(takes_context=True)
def unread_notifications(context: dict[str, Any]) -> int:
    """The signed-in user's unread notification count (0 for anyone else)."""
    request = context.get("request")
    return notification_unread_count(user=getattr(request, "user", None))


@register.filter
def get_item(mapping: Any, key: str) -> Any:
    """``mapping[key]`` for a template (None when ``mapping`` is not a mapping or lacks the key)."""
    return mapping.get(key) if isinstance(mapping, dict) else None


@register.filter
def rubric_any(rubric: Any) -> bool:
    """Whether a review's rubric has any item checked (False for anything but a mapping)."""
    return isinstance(rubric, dict) and any(value is True for value in rubric.values())
