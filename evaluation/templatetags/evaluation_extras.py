"""Template filters of the evaluation pages."""

from __future__ import annotations

from django import template

from evaluation.models import TestResult
from researchcodebench import errors

register = template.Library()

#: the one mapping of a test outcome to its words (the model's choices)
OUTCOME_LABELS = dict(TestResult.Outcome.choices)


def _fallback(value: object) -> str:
    return str(value).replace("_", " ")


@register.filter
def outcome_label(value: object) -> str:
    """A test outcome in words (``no_code`` -> "No code extracted"); an unknown value with its underscores
    as spaces."""
    return OUTCOME_LABELS.get(str(value), _fallback(value))


@register.filter
def category_label(value: object) -> str:
    """An error category in words, as the charts name it (``value_runtime`` -> "Value/Runtime Errors",
    ``researchcodebench.errors.LABELS``); an unknown value with its underscores as spaces."""
    return errors.LABELS.get(str(value), _fallback(value))


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
