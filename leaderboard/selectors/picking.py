"""Picking models by what a visitor sees (the comparison's form): every model as a choice for its
autocomplete, and the names typed or ticked resolved to model keys."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import Q
from django.db.models.functions import Lower

from evaluation.models import LanguageModel


@dataclass(frozen=True)
class ModelChoice:
    """One model as the autocomplete offers it: its display name, key and developer."""

    key: str
    name: str
    developer: str


def model_choices() -> list[ModelChoice]:
    """Every model, by display name, as a choice to pick. One query."""
    rows = LanguageModel.objects.order_by("name", "key").values_list("key", "name", "developer")
    return [ModelChoice(key=k, name=n, developer=d) for k, n, d in rows]


#: the most matches an ambiguous name offers
MATCHES_SHOWN = 8


@dataclass(frozen=True)
class Picked:
    """Names resolved to models: ``keys`` in the order given (each model once), ``names`` their display
    names, ``unknown`` the names that matched no model, as given, and ``ambiguous`` each name that is part
    of several models' key, name or developer, with those models (at most ``MATCHES_SHOWN``)."""

    keys: tuple[str, ...]
    unknown: tuple[str, ...]
    names: tuple[str, ...] = ()
    ambiguous: tuple[tuple[str, tuple[ModelChoice, ...]], ...] = ()


def models_pick(*, names: Sequence[str]) -> Picked:
    """Resolve ``names`` (surrounding blanks ignored, empty ones skipped) to models: a name is a model's key
    or display name, case-insensitive; an exact key wins, then a key, then a display name, both
    case-insensitive; else a name that is part of exactly one model's key, name or developer picks it, and
    one that is part of several is ambiguous. One query, and one per name that is neither (none when no
    name is given)."""
    wanted = [n.strip() for n in names if n.strip()]
    if not wanted:
        return Picked(keys=(), unknown=())
    lowered = {n.lower() for n in wanted}
    found = (
        LanguageModel.objects.annotate(lkey=Lower("key"), lname=Lower("name"))
        .filter(Q(lkey__in=lowered) | Q(lname__in=lowered))
        .values_list("key", "name")
    )
    exact, by_key, by_name, display = set(), {}, {}, {}
    for key, name in found:
        exact.add(key)
        by_key[key.lower()] = key
        by_name[name.lower()] = key
        display[key] = name
    keys: dict[str, None] = {}
    unknown: dict[str, None] = {}
    ambiguous: dict[str, tuple[ModelChoice, ...]] = {}
    for n in wanted:
        key = n if n in exact else by_key.get(n.lower(), by_name.get(n.lower()))
        if key is None:
            matches = _matches(n)
            if len(matches) == 1:
                key = matches[0].key
                display[key] = matches[0].name
            elif matches:
                ambiguous[n] = matches
                continue
        if key is None:
            unknown[n] = None
        else:
            keys[key] = None
    return Picked(
        keys=tuple(keys),
        unknown=tuple(unknown),
        names=tuple(display[k] for k in keys),
        ambiguous=tuple(ambiguous.items()),
    )


def _matches(text: str) -> tuple[ModelChoice, ...]:
    """The models whose key, name or developer contains ``text`` (case-insensitive), by display name: at
    most ``MATCHES_SHOWN`` + 1, so that more than shown still reads as ambiguous."""
    rows = (
        LanguageModel.objects.filter(
            Q(key__icontains=text) | Q(name__icontains=text) | Q(developer__icontains=text)
        )
        .order_by("name", "key")
        .values_list("key", "name", "developer")[: MATCHES_SHOWN + 1]
    )
    return tuple(ModelChoice(key=k, name=n, developer=d) for k, n, d in rows)
