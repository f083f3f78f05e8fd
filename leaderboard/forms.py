"""The board filters: the one definition of the parameters every board-like page and the read API take.

``BoardFilterForm`` (the pages) and ``serializers.BoardQuerySerializer`` (the API) both read the choices,
defaults and matching rules here, and both turn their cleaned values into ``LeaderboardFilters`` with
``board_filters``. They differ only in what a bad value does: the API answers 400 naming the parameter;
a page shows the message next to the filters and falls back to that parameter's default (the other
filters still apply), so a stale link still shows a board.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import date
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.http import QueryDict

from evaluation.models import EvaluationRun
from leaderboard.selectors.board import (
    ANY_RELEASE,
    CONTAMINATION_MODES,
    SORT_KEYS,
    LeaderboardFilters,
    filter_choices,
)
from researchcodebench import problems

CONTAMINATION_LABELS = {
    "none": "None (every paper)",
    "global": "Original global rule",
    "per-model": "Per model (papers after its own cutoff)",
}
PAPER_CHOICES = {"with": "With paper", "without": "Without paper", "any": "Both (each ranked on its own)"}
WEIGHTS_CHOICES = {"open": "Open weights", "closed": "Closed"}
VERIFICATION_CHOICES = {v.value: v.value.capitalize() for v in EvaluationRun.Verification}
SORT_CHOICES = sorted([*SORT_KEYS, *(f"-{k}" for k in SORT_KEYS)])
#: every parameter with its default ("" = no restriction); the order is the filter form's
DEFAULTS = {
    "developer": "",
    "weights": "",
    "verification": "",
    "release": "",
    "template": "",
    "paper": "with",
    "contamination": "none",
    "paper_from": "",
    "paper_to": "",
    "sort": "-scaled_pass_at_1",
}
FILTER_PARAMS = tuple(DEFAULTS)
#: the paper-date window (``LeaderboardFilters.paper_from``/``paper_to``): ISO dates, not choices
DATE_PARAMS = ("paper_from", "paper_to")
DATE_LABELS = {"paper_from": "Paper date from", "paper_to": "Paper date to"}
#: the parameters whose allowed values are read from the board (``board_choices``)
DYNAMIC_PARAMS = ("developer", "release", "template")
#: matched ignoring case (and answered in the board's spelling)
CASE_INSENSITIVE = frozenset({"developer"})
assert set(CONTAMINATION_LABELS) == set(CONTAMINATION_MODES), "a contamination mode lacks a label"


def board_choices() -> dict[str, list[str]]:
    """The allowed values of every parameter: developers and templates of scored runs (any known prompt
    template too), every release or all of them (``ANY_RELEASE``), and the fixed lists;
    ``release_default`` names the release an empty ``release`` stands for. Three queries."""
    found = filter_choices()
    return {
        "developer": found["developer"],
        "weights": list(WEIGHTS_CHOICES),
        "verification": list(VERIFICATION_CHOICES),
        "release": [*found["release"], ANY_RELEASE],
        "release_default": found["release_default"],
        "template": list(dict.fromkeys([*problems.TEMPLATES, *found["template"]])),
        "paper": list(PAPER_CHOICES),
        "contamination": list(CONTAMINATION_LABELS),
        "sort": SORT_CHOICES,
    }


def board_choice(name: str, value: str, allowed: Iterable[str]) -> str:
    """``value`` as one of ``allowed`` (its spelling there); raises ``ValidationError`` naming the parameter
    and what it accepts."""
    allowed = list(allowed)
    if name in CASE_INSENSITIVE:
        match = next((a for a in allowed if a.lower() == value.lower()), None)
    else:
        match = value if value in allowed else None
    if match is None:
        shown = ", ".join(repr(a) for a in allowed) or "none available"
        raise ValidationError(f"Unknown {name} {value!r}; choose one of {shown}.", code="invalid_choice")
    return match


def board_date(name: str, value: str | date) -> date:
    """A paper-date parameter as a date (``YYYY-MM-DD``); raises ``ValidationError`` naming the parameter."""
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(value.strip())
    except ValueError:
        raise ValidationError(
            f"{name}: {value!r} is not a date; write it as YYYY-MM-DD, e.g. 2024-07-01.", code="invalid_date"
        ) from None


def board_window_check(start: date | None, end: date | None) -> None:
    """Raises ``ValidationError`` naming ``paper_to`` when the window ends before it starts."""
    if start and end and start > end:
        raise ValidationError(
            f"paper_to: {end.isoformat()} is before paper_from ({start.isoformat()}).", code="empty_window"
        )


def board_filters(values: Mapping[str, Any], *, include_unfinished: bool = False) -> LeaderboardFilters:
    """Cleaned parameter values (absent or empty = the default) -> ``LeaderboardFilters``."""
    v = {name: values.get(name) or default for name, default in DEFAULTS.items()}
    window = {name: board_date(name, v[name]) if v[name] else None for name in DATE_PARAMS}
    return LeaderboardFilters(
        developer=v["developer"] or None,
        open_weights={"open": True, "closed": False}.get(v["weights"]),
        verification=v["verification"] or None,
        release=v["release"] or None,
        template=v["template"] or None,
        with_paper={"with": True, "without": False, "any": None}[v["paper"]],
        contamination=v["contamination"],
        sort=v["sort"],
        include_unfinished=include_unfinished,
        **window,
    )


class BoardParamField(forms.ChoiceField):
    """One board parameter as a select. Empty or absent = the parameter's default; another value must be
    one of the choices (``board_choice``). The select shows the value that applies: the board's
    spelling of a valid value, the default in place of an invalid one."""

    def __init__(self, *, name: str, label: str, **kwargs: Any) -> None:
        super().__init__(label=label, required=False, **kwargs)
        self.param = name

    def to_python(self, value: Any) -> str:
        return super().to_python(value).strip()

    def clean(self, value: Any) -> str:
        value = self.to_python(value)
        return self.clean_value(value) if value else DEFAULTS[self.param]

    def clean_value(self, value: str) -> str:
        try:
            return board_choice(self.param, value, (str(k) for k, _label in self.choices if k != ""))
        except ValidationError as exc:
            default = DEFAULTS[self.param]
            fallback = dict(self.choices).get(default, default)
            if self.param == "release":
                instead = "Showing the default release instead."
            elif not default:
                instead = "Showing all instead."
            else:
                instead = f"Using the default ({fallback}) instead."
            raise ValidationError(f"{exc.messages[0]} {instead}", code="invalid_choice") from None

    def bound_data(self, data: Any, initial: Any) -> str:
        try:
            return self.clean(data)
        except ValidationError:
            return DEFAULTS[self.param]


class PaperDateField(forms.CharField):
    """One end of the paper-date window as a date input. Empty or absent = no bound; another value must be
    a date (``board_date``); a bad one is reported naming the field by its label and the bound is dropped."""

    widget = forms.DateInput(attrs={"type": "date"})

    def __init__(self, *, name: str, **kwargs: Any) -> None:
        super().__init__(label=DATE_LABELS[name], required=False, max_length=32, **kwargs)
        self.param = name

    def clean(self, value: Any) -> str:
        value = (self.to_python(value) or "").strip()
        if not value:
            return ""
        try:
            return board_date(self.param, value).isoformat()
        except ValidationError:
            # Worded for a person (the API keeps ``board_date``'s message naming the parameter).
            raise ValidationError(
                f"{self.label} must be a date such as 2024-07-01, not “{value}”; showing no bound instead.",
                code="invalid_date",
            ) from None

    def bound_data(self, data: Any, initial: Any) -> str:
        try:
            return self.clean(data)
        except ValidationError:
            return ""


def _options(
    values: Iterable[str], labels: Mapping[str, str] | None = None, *, blank: bool, blank_label: str = "Any"
) -> list:
    options = [(v, (labels or {}).get(v, v)) for v in values]
    return [("", blank_label), *options] if blank else options


#: the empty choice of the parameters whose "no restriction" is not what an empty value means, or whose
#: "Any" view groups rather than mixes (the ranking rule, docs/scoring.md#ranking)
RELEASE_ANY_LABEL = "Any (each release ranked on its own)"
TEMPLATE_ANY_LABEL = "Any (each template ranked on its own)"


class BoardFilterForm(forms.Form):
    """The filters of the board-like pages, bound to a query string. ``filters`` is what applies (invalid
    values replaced by their default), ``values`` the same as strings for links and controls, and
    ``errors`` one message per rejected parameter."""

    developer = BoardParamField(name="developer", label="Developer")
    weights = BoardParamField(name="weights", label="Weights")
    verification = BoardParamField(name="verification", label="Verification")
    release = BoardParamField(name="release", label="Release")
    template = BoardParamField(name="template", label="Prompt template")
    paper = BoardParamField(name="paper", label="Paper in prompt")
    contamination = BoardParamField(name="contamination", label="Contamination rule")
    paper_from = PaperDateField(name="paper_from")
    paper_to = PaperDateField(name="paper_to")
    sort = BoardParamField(name="sort", label="Sort", widget=forms.HiddenInput)

    def __init__(self, data: QueryDict, *, choices: Mapping[str, list[str]] | None = None) -> None:
        super().__init__(data, auto_id="f-%s")
        allowed = choices if choices is not None else board_choices()
        labels = {
            "weights": WEIGHTS_CHOICES,
            "verification": VERIFICATION_CHOICES,
            "paper": PAPER_CHOICES,
            "contamination": CONTAMINATION_LABELS,
        }
        default_release = (allowed.get("release_default") or [""])[0]
        blank_labels = {
            "release": f"Default ({default_release})" if default_release else "Any",
            "template": TEMPLATE_ANY_LABEL,
        }
        labels["release"] = {ANY_RELEASE: RELEASE_ANY_LABEL}
        for name, field in self.fields.items():
            if name in DATE_PARAMS:
                continue
            field.choices = _options(
                allowed[name],
                labels.get(name),
                blank=not DEFAULTS[name],
                blank_label=blank_labels.get(name, "Any"),
            )

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        start, end = data.get("paper_from"), data.get("paper_to")
        try:
            board_window_check(
                board_date("paper_from", start) if start else None,
                board_date("paper_to", end) if end else None,
            )
        except ValidationError:
            self.add_error(
                "paper_to",
                f"The paper-date window ends ({end}) before it starts ({start}); showing no upper bound instead.",
            )
            # The control shows what applies, as for any rejected parameter: no upper bound.
            self.data = self.data.copy()
            self.data["paper_to"] = ""
        return data

    @property
    def values(self) -> dict[str, str]:
        """Every parameter's value that applies (the default where it was absent, empty or invalid)."""
        self.is_valid()
        return {name: self.cleaned_data.get(name) or default for name, default in DEFAULTS.items()}

    @property
    def filters(self) -> LeaderboardFilters:
        return board_filters(self.values)

    @property
    def active(self) -> bool:
        """True when a filter narrows the board (sorting does not)."""
        return any(value != DEFAULTS[name] for name, value in self.values.items() if name != "sort")
