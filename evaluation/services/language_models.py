"""Writes of language models (maintainer pages and uploads of a new model's predictions).

Callers validate the fields (``evaluation.forms.LanguageModelForm``); these services only persist them.
API keys are never stored: ``api_key_env`` names the environment variable holding one.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from evaluation.models import LanguageModel

#: ``open_weights`` is a nullable boolean where null means "unknown", but the field lacks ``blank=True``,
#: so model validation would refuse the null it is meant to hold.
_CLEAN_EXCLUDE = ["open_weights"]


@transaction.atomic
def language_model_create(**fields: Any) -> LanguageModel:
    """Create a model from validated field values (keyword-only; ``key`` and ``name`` are required)."""
    model = LanguageModel(**fields)
    model.full_clean(exclude=_CLEAN_EXCLUDE)
    model.save()
    return model


@transaction.atomic
def language_model_update(*, model: LanguageModel, **fields: Any) -> LanguageModel:
    """Set validated field values on ``model`` and save them."""
    for name, value in fields.items():
        setattr(model, name, value)
    model.full_clean(exclude=_CLEAN_EXCLUDE)
    model.save()
    return model
