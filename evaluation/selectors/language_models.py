"""The language models page."""

from __future__ import annotations

from django.db.models import Count, QuerySet

from evaluation.models import LanguageModel


def language_model_list() -> QuerySet[LanguageModel]:
    """Every language model, by display name, with its number of runs."""
    return LanguageModel.objects.annotate(n_runs=Count("runs")).order_by("name")
