"""Routes of the leaderboard's read API (included under /api/v1/; the runs' are in evaluation/api_urls.py)."""

from django.conf import settings
from django.urls import path

from contributions import url_converters  # noqa: F401 (registers <id:...>)
from leaderboard import api

urlpatterns = [
    path("leaderboard/", api.LeaderboardApi.as_view(), name="api-leaderboard"),
    path("leaderboard/papers/", api.LeaderboardPapersApi.as_view(), name="api-leaderboard-papers"),
    path("leaderboard/errors/", api.LeaderboardErrorsApi.as_view(), name="api-leaderboard-errors"),
    path("leaderboard/snippets/", api.LeaderboardSnippetsApi.as_view(), name="api-leaderboard-snippets"),
    path("compare/", api.CompareApi.as_view(), name="api-compare"),
    path("models/", api.ModelListApi.as_view(), name="api-models"),
    path("models/<str:key>/", api.ModelDetailApi.as_view(), name="api-model"),
    path("papers/", api.PaperListApi.as_view(), name="api-papers"),
    path("papers/<str:key>/", api.PaperDetailApi.as_view(), name="api-paper"),
    path("snippets/", api.SnippetListApi.as_view(), name="api-snippets"),
    path("snippets/<id:snippet_id>/", api.SnippetDetailApi.as_view(), name="api-snippet"),
]

if settings.RCB_BENCH:
    # bench/leaderboard_load.py compares the pages with this do-nothing view (same middleware and routing).
    urlpatterns.append(path("bench/trivial/", api.bench_trivial, name="api-bench-trivial"))
