"""Template filters of the evaluation pages."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def duration(seconds: float | None) -> str:
    """A rough, human duration ("about 40 s", "about 3 min", "about 2 h 5 min"); "unknown" for None."""
    if seconds is None:
        return "unknown"
    s = max(0, round(seconds))
    if s < 60:
        return f"about {s} s"
    minutes = round(s / 60)
    if minutes < 60:
        return f"about {minutes} min"
    hours, rest = divmod(minutes, 60)
    return f"about {hours} h {rest} min" if rest else f"about {hours} h"
