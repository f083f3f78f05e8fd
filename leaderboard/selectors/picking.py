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


@dataclass(frozen=True)
class Picked:
    """Names resolved to models: ``keys`` in the order given (each model once), ``unknown`` the names
    that matched no model, as given."""

    keys: tuple[str, ...]
    unknown: tuple[str, ...]


def models_pick(*, names: Sequence[str]) -> Picked:
    """Resolve ``names`` (surrounding blanks ignored, empty ones skipped) to models: a name is a model's key
    or display name, case-insensitive; an exact key wins, then a key, then a display name, both
    case-insensitive. One query (none when no name is given)."""
    wanted = [n.strip() for n in names if n.strip()]
    if not wanted:
        return Picked(keys=(), unknown=())
    lowered = {n.lower() for n in wanted}
    found = (
        LanguageModel.objects.annotate(lkey=Lower("key"), lname=Lower("name"))
        .filter(Q(lkey__in=lowered) | Q(lname__in=lowered))
        .values_list("key", "name")
    )
    exact, by_key, by_name = set(), {}, {}
    for key, name in found:
        exact.add(key)
        by_key[key.lower()] = key
        by_name[name.lower()] = key
    keys: dict[str, None] = {}
    unknown: dict[str, None] = {}
    for n in wanted:
        key = n if n in exact else by_key.get(n.lower(), by_name.get(n.lower()))
        if key is None:
            unknown[n] = None
        else:
            keys[key] = None
    return Picked(keys=tuple(keys), unknown=tuple(unknown))
