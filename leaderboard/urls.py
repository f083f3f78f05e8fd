from django.urls import path

from leaderboard import views

app_name = "leaderboard"
urlpatterns = [
    path("", views.board, name="board"),
    path("models/", views.model_search, name="model_search"),
    path("models/<str:key>/", views.model_page, name="model"),
    path("compare/", views.compare_page, name="compare"),
    path("papers/", views.papers_page, name="papers"),
    path("papers/<str:key>/", views.paper_page, name="paper"),
    # Snippet names are free text (spaces, commas, slashes): the path converter takes the rest of the URL.
    path("papers/<str:key>/snippets/<path:name>/prompt.txt", views.snippet_prompt, name="snippet_prompt"),
    path("papers/<str:key>/snippets/<path:name>/", views.snippet_page, name="snippet"),
    path("curation/snippets/", views.snippet_curation_page, name="snippet_curation"),
    path("errors/", views.errors_page, name="errors"),
    path("contamination/", views.contamination_page, name="contamination"),
    path("ablation/", views.ablation_page, name="ablation"),
]
