from django.urls import path

from leaderboard.views import analyses, board, compare, models, papers, snippets

app_name = "leaderboard"
urlpatterns = [
    path("", board.board, name="board"),
    path("models/", models.model_search, name="model_search"),
    path("models/<str:key>/", models.model_page, name="model"),
    path("compare/", compare.compare_page, name="compare"),
    path("papers/", papers.papers_page, name="papers"),
    path("papers/<str:key>/", papers.paper_page, name="paper"),
    # Snippet names are free text (spaces, commas, slashes): the path converter takes the rest of the URL.
    path("papers/<str:key>/snippets/<path:name>/prompt.txt", snippets.snippet_prompt, name="snippet_prompt"),
    path("papers/<str:key>/snippets/<path:name>/", snippets.snippet_page, name="snippet"),
    path("curation/snippets/", snippets.snippet_curation_page, name="snippet_curation"),
    path("errors/", analyses.errors_page, name="errors"),
    path("contamination/", analyses.contamination_page, name="contamination"),
    path("ablation/", analyses.ablation_page, name="ablation"),
]
