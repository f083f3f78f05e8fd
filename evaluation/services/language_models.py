"""Writes of language models (maintainer pages and uploads of a new model's predictions), and who may
upload predictions for which model.

Callers validate the fields (``evaluation.forms.LanguageModelForm``); these services only persist them.
API keys are never stored: ``api_key_env`` names the environment variable holding one.

Upload rights follow ``LanguageModel.management``: a ``published`` model's results are the paper's, so
nobody adds runs to it; a ``maintainer`` model is the portal's (it generates the completions), so only
maintainers and the users they granted (``uploaders``) upload for it; a ``self_reported`` model was
created by a user's upload, so its owner, granted users and maintainers upload for it.
``language_model_upload_check`` is the one place that decides.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.db import transaction

from contributions.roles import can_maintain
from evaluation.models import LanguageModel
from researchcodebench.predictions import shown


class UploadNotAllowed(Exception):
    """``user`` may not upload predictions for the model; the message says why and what to do instead."""


#: ``open_weights`` is a nullable boolean where null means "unknown", but the field lacks ``blank=True``,
#: so model validation would refuse the null it is meant to hold.
_CLEAN_EXCLUDE = ["open_weights"]


@lru_cache(maxsize=4096)
def name_skeleton(text: str) -> str:
    """What a model's key or name looks like, for telling lookalikes apart: Unicode-compatible forms folded
    (NFKC), every character that Unicode lists as confusable with a Latin one replaced by it (Cyrillic
    ``С`` -> ``C``), accents, case, punctuation, spaces and invisible characters dropped. Two keys or names
    with the same skeleton read as the same model."""
    from confusable_homoglyphs import confusables

    folded = unicodedata.normalize("NFKC", text)
    swaps: dict[str, str] = {}
    for found in confusables.is_confusable(folded, greedy=True, preferred_aliases=["latin"]) or []:
        ascii_glyphs = [h["c"] for h in found.get("homoglyphs", ()) if h.get("c", "").isascii()]
        if ascii_glyphs and not found["character"].isascii():
            swaps[found["character"]] = ascii_glyphs[0]
    swapped = "".join(swaps.get(c, c) for c in folded)
    plain = "".join(c for c in unicodedata.normalize("NFKD", swapped) if not unicodedata.combining(c))
    return "".join(c for c in plain.casefold() if unicodedata.category(c)[0] not in "PZC")


def language_model_lookalike(*, key: str, name: str) -> LanguageModel | None:
    """An existing model whose key or name reads the same as ``key`` or ``name`` (``name_skeleton``): a new
    self-reported model must not imitate it."""
    wanted = {name_skeleton(text) for text in (key, name) if text} - {""}
    for model in LanguageModel.objects.only("key", "name").order_by("pk"):
        if wanted & {name_skeleton(model.key), name_skeleton(model.name)}:
            return model
    return None


@transaction.atomic
def language_model_create(
    *, uploaders: Iterable[AbstractBaseUser] | None = None, **fields: Any
) -> LanguageModel:
    """Create a model from validated field values (keyword-only; ``key`` and ``name`` are required).

    Without ``management`` the model is maintainer-managed (the maintainer pages); an upload that creates
    a model passes ``management=SELF_REPORTED`` and its ``owner``. ``uploaders`` are granted upload rights.
    """
    model = LanguageModel(**fields)
    model.full_clean(exclude=_CLEAN_EXCLUDE)
    model.save()
    if uploaders is not None:
        language_model_uploaders_set(model=model, users=uploaders)
    return model


@transaction.atomic
def language_model_update(
    *, model: LanguageModel, uploaders: Iterable[AbstractBaseUser] | None = None, **fields: Any
) -> LanguageModel:
    """Set validated field values on ``model`` and save them; ``uploaders`` (when given) replaces the
    users granted upload rights."""
    for name, value in fields.items():
        setattr(model, name, value)
    model.full_clean(exclude=_CLEAN_EXCLUDE)
    model.save()
    if uploaders is not None:
        language_model_uploaders_set(model=model, users=uploaders)
    return model


def language_model_upload_check(
    *, model: LanguageModel, user: AbstractBaseUser | AnonymousUser | None
) -> None:
    """Raise ``UploadNotAllowed`` unless ``user`` may upload predictions for ``model`` (module docstring)."""
    name = shown(model.key)
    if model.management == LanguageModel.Management.PUBLISHED:
        raise UploadNotAllowed(
            f"{name} holds the results published with the paper and is locked; "
            "upload under a new model key instead"
        )
    if user is None or not user.is_authenticated:
        raise UploadNotAllowed("sign in to upload predictions")
    if can_maintain(user) or model.uploaders.filter(pk=user.pk).exists():
        return
    if model.management == LanguageModel.Management.SELF_REPORTED and model.owner_id == user.pk:
        return
    if model.management == LanguageModel.Management.SELF_REPORTED:
        raise UploadNotAllowed(
            f"{name} belongs to another user; upload under a new model key, or ask its owner to have a "
            "maintainer grant you upload rights"
        )
    raise UploadNotAllowed(
        f"{name} is managed by the maintainers (the portal generates its completions); upload under a new "
        "model key, or ask a maintainer to grant you upload rights"
    )


@transaction.atomic
def language_model_uploaders_set(*, model: LanguageModel, users: Iterable[AbstractBaseUser]) -> None:
    """Make ``users`` exactly the users granted upload rights on ``model`` (a maintainer's decision; a
    published model stays locked whatever the grants)."""
    model.uploaders.set(list(users))
