"""The API under /api/v1/. Each app contributes its routes here as they are built."""

from django.urls import URLPattern, URLResolver, include, path

urlpatterns: list[URLPattern | URLResolver] = [
    path("", include("evaluation.api_urls")),
    path("", include("leaderboard.api_urls")),
]
