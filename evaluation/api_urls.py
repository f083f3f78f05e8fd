"""Routes of the evaluation API (included under /api/v1/)."""

from django.urls import path

from evaluation import api

urlpatterns = [
    path("runs/upload/", api.RunUploadApi.as_view(), name="api-run-upload"),
]
