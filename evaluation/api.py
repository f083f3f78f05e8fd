"""The evaluation API: submitters upload predictions for a release with a token."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.authentication import TokenAuthentication
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

from contributions.models import Release
from evaluation import selectors
from evaluation.models import LanguageModel
from evaluation.serializers import ErrorListOutput, PredictionsUploadInput, PredictionsUploadOutput
from evaluation.services.uploads import NewModel, PredictionsInvalid, predictions_upload
from researchcodebench.predictions import shown


class RunUploadApi(APIView):
    """POST /api/v1/runs/upload/: validate a predictions JSONL and start a run that tests it."""

    authentication_classes = [TokenAuthentication]
    permission_classes = [IsAuthenticated]
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "uploads"
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        request={"multipart/form-data": PredictionsUploadInput},
        responses={201: PredictionsUploadOutput, 400: ErrorListOutput},
        summary="Upload predictions for a release",
    )
    def post(self, request: Request) -> Response:
        form = PredictionsUploadInput(data=request.data)
        if not form.is_valid():
            return Response({"errors": _flatten(form.errors)}, status=status.HTTP_400_BAD_REQUEST)
        data = form.validated_data
        release = Release.objects.filter(name=data["release"]).first()
        if release is None:
            return Response(
                {"errors": [f"release: unknown release {shown(data['release'])}"]},
                status=status.HTTP_400_BAD_REQUEST,
            )
        model = LanguageModel.objects.filter(key=data["model"]).first()
        try:
            run = predictions_upload(
                release=release,
                file=data["file"],
                template=data["template"],
                requester=request.user,
                model=model,
                new_model=None if model else NewModel(key=data["model"], name=data.get("model_name", "")),
            )
        except PredictionsInvalid as exc:
            return Response({"errors": _upload_errors(exc)}, status=status.HTTP_400_BAD_REQUEST)
        progress = selectors.run_progress(run=run)
        body = {
            "id": run.pk,
            "url": request.build_absolute_uri(reverse("evaluation:run_detail", args=[run.pk])),
            "status": run.status,
            "items": progress.total,
            "coverage": {
                "covered_snippets": progress.covered_snippets,
                "release_snippets": progress.release_snippets,
            },
        }
        return Response(PredictionsUploadOutput(body).data, status=status.HTTP_201_CREATED)


def _flatten(errors: dict) -> list[str]:
    """DRF's {field: [messages]} as "field: message" lines, like the file's line errors."""
    return [f"{field}: {message}" for field, messages in errors.items() for message in messages]


#: the upload service's names of the new model's fields -> this API's
_SERVICE_FIELDS = {"model_key": "model", "model_name": "model_name"}


def _upload_errors(exc: PredictionsInvalid) -> list[str]:
    """The model's field errors as "field: message", then the file's (whole-file first, then by line)."""
    fields = [
        f"{_SERVICE_FIELDS[name]}: {message}"
        for name, messages in exc.field_errors.items()
        if name in _SERVICE_FIELDS
        for message in messages
    ]
    return [*fields, *exc.errors]
