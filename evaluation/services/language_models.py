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

from collections.abc import Iterable
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
