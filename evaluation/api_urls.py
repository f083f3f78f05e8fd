"""Routes of the evaluation API (included under /api/v1/)."""

from django.urls import path

from evaluation import api

urlpatterns = [
    path("runs/upload/", api.RunUploadApi.as_view(), name="api-run-upload"),
    path("runs/", api.RunListApi.as_view(), name="api-runs"),
    path("runs/<int:run_id>/", api.RunDetailApi.as_view(), name="api-run"),
    path("runs/<int:run_id>/results/", api.RunResultsApi.as_view(), name="api-run-results"),
]
