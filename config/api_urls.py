"""The API under /api/v1/. Each app contributes its routes here as they are built; any other path under
/api/v1/ is a JSON 404, as the schema documents (not the site's HTML page)."""

from django.urls import URLPattern, URLResolver, include, path, re_path

from config import views

urlpatterns: list[URLPattern | URLResolver] = [
    path("", include("evaluation.api_urls")),
    path("", include("leaderboard.api_urls")),
    re_path(r"^(?P<path>.*)$", views.api_not_found, name="api-not-found"),
]
