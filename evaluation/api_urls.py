"""Routes of the evaluation API (included under /api/v1/)."""

from django.urls import path

from contributions import url_converters  # noqa: F401 (registers <id:...>)
from evaluation import api

urlpatterns = [
    path("runs/upload/", api.RunUploadApi.as_view(), name="api-run-upload"),
    path("runs/uploads/<id:upload_id>/", api.UploadReceiptApi.as_view(), name="api-upload"),
    path("runs/", api.RunListApi.as_view(), name="api-runs"),
    path("runs/<id:run_id>/", api.RunDetailApi.as_view(), name="api-run"),
    path("runs/<id:run_id>/results/", api.RunResultsApi.as_view(), name="api-run-results"),
]
