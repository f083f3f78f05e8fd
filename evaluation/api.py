"""The evaluation API: submitters upload predictions for a release with a token; anyone reads runs and their
results (JSON, or CSV with ``?format=csv``)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.generics import ListAPIView
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import BrowsableAPIRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

from contributions.authentication import ApiTokenAuthentication
from contributions.models import Release
from evaluation import live_cache, selectors
from evaluation.board_links import run_board_url
from evaluation.exports import CSVRenderer, FastJSONRenderer
from evaluation.models import Completion, EvaluationRun, LanguageModel
from evaluation.serializers import (
    ErrorListOutput,
    PredictionsUploadInput,
    PredictionsUploadOutput,
    ResultQuerySerializer,
    ResultSerializer,
    RunQuerySerializer,
    RunSerializer,
)
from evaluation.services.uploads import IdempotencyKeyReused, NewModel, PredictionsInvalid, predictions_upload
from researchcodebench.predictions import shown


class RunUploadApi(APIView):
    """POST /api/v1/runs/upload/: validate a predictions JSONL and start a run that tests it."""

    authentication_classes = [ApiTokenAuthentication]
    permission_classes = [IsAuthenticated]
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "uploads"
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        request={"multipart/form-data": PredictionsUploadInput},
        parameters=[
            OpenApiParameter(
                "Idempotency-Key",
                str,
                OpenApiParameter.HEADER,
                description="optional, 1-128 visible ASCII characters (a UUID): a retry of the same file with "
                "the same key answers 200 with the run the first attempt started instead of starting another",
            )
        ],
        responses={
            200: PredictionsUploadOutput,
            201: PredictionsUploadOutput,
            400: ErrorListOutput,
            422: ErrorListOutput,
        },
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
            upload = predictions_upload(
                release=release,
                file=data["file"],
                template=data.get("template"),
                with_paper=data["with_paper"],
                requester=request.user,
                model=model,
                new_model=None if model else NewModel(key=data["model"], name=data.get("model_name", "")),
                idempotency_key=request.headers.get("Idempotency-Key", ""),
            )
        except PredictionsInvalid as exc:
            return Response({"errors": _upload_errors(exc)}, status=status.HTTP_400_BAD_REQUEST)
        except IdempotencyKeyReused as exc:
            return Response(
                {"errors": [f"Idempotency-Key: {exc}"]}, status=status.HTTP_422_UNPROCESSABLE_ENTITY
            )
        run = upload.run
        coverage = selectors.run_coverage(run=run)
        body = {
            "id": run.pk,
            "url": request.build_absolute_uri(reverse("evaluation:run_detail", args=[run.pk])),
            "status": run.status,
            "items": coverage.items,
            "coverage": {
                "covered_snippets": coverage.covered_snippets,
                "release_snippets": coverage.release_snippets,
            },
            "template": run.template,
            "with_paper": run.with_paper,
            "board_url": request.build_absolute_uri(run_board_url(run)),
        }
        if upload.replayed:
            return Response(
                PredictionsUploadOutput(body).data,
                status=status.HTTP_200_OK,
                headers={"Idempotent-Replayed": "true"},
            )
        return Response(PredictionsUploadOutput(body).data, status=status.HTTP_201_CREATED)


def _flatten(errors: dict) -> list[str]:
    """DRF's {field: [messages]} as "field: message" lines, like the file's line errors."""
    return [f"{field}: {message}" for field, messages in errors.items() for message in messages]


#: the upload service's names of the model's fields -> this API's
_SERVICE_FIELDS = {
    "model": "model",
    "model_key": "model",
    "model_name": "model_name",
    "idempotency_key": "Idempotency-Key",
}


def _upload_errors(exc: PredictionsInvalid) -> list[str]:
    """The model's field errors as "field: message", then the file's (whole-file first, then by line)."""
    fields = [
        f"{_SERVICE_FIELDS[name]}: {message}"
        for name, messages in exc.field_errors.items()
        if name in _SERVICE_FIELDS
        for message in messages
    ]
    return [*fields, *exc.errors]


# --- The read API of runs and their results ----------------------------------------------------------------

#: JSON, the browsable API and CSV (``?format=csv``: one header row, then one row per record)
READ_RENDERERS = [FastJSONRenderer, BrowsableAPIRenderer, CSVRenderer]
FORMAT_PARAM = OpenApiParameter(
    "format", str, enum=["json", "csv"], description="json (default) or csv (a file with a header row)"
)


def _query(serializer_class: type[serializers.Serializer], request: Request) -> serializers.Serializer:
    """The validated query string (a bad value -> 400 naming the parameter); ``format`` and the
    pagination parameters belong to DRF, unknown parameters are ignored."""
    params = {k: v for k, v in request.query_params.items() if k not in ("format", "limit", "offset")}
    serializer = serializer_class(data=params)
    serializer.is_valid(raise_exception=True)
    return serializer


#: the formats a plain visitor's answer is shared in (``evaluation.live_cache``); the browsable API is a page
#: with the visitor's token, built for them
SHARED_FORMATS = ("json", "csv")
#: the query parameters every read endpoint takes besides its own filters
PAGE_PARAMS = ("format", "limit", "offset")


class LiveReadMixin:
    """A GET whose JSON or CSV a plain visitor gets from a shared copy at most a few seconds old
    (``evaluation.live_cache``): ``live_endpoint`` names it, ``live_query`` the serializer of its filters."""

    live_endpoint: str
    live_query: type[serializers.Serializer] | None = None

    def read(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """The answer built for this request (a list view's own ``get`` unless a view says otherwise)."""
        return super().get(request, *args, **kwargs)  # type: ignore[misc]

    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        fmt = request.accepted_renderer.format
        if fmt not in SHARED_FORMATS:
            return self.read(request, *args, **kwargs)
        filters = tuple(self.live_query().fields) if self.live_query else ()
        return live_cache.live_response(
            request,
            endpoint=self.live_endpoint,
            args=tuple(sorted(kwargs.items())),
            keys=(*filters, *PAGE_PARAMS),
            variant=fmt,
            vary=("Accept",),
            build=lambda: self._rendered(self.read(request, *args, **kwargs)),
        )

    def _rendered(self, response: Response) -> Response:
        response = self.finalize_response(self.request, response)
        response.render()
        return response


def _run_or_404(run_id: int) -> EvaluationRun:
    try:
        return selectors.run_get(run_id=run_id)
    except Http404:
        raise NotFound(f"no run {run_id}.") from None


class RunListApi(LiveReadMixin, ListAPIView):
    """GET /api/v1/runs/: every run, newest first, paginated."""

    renderer_classes = READ_RENDERERS
    serializer_class = RunSerializer
    export_name = "runs"
    live_endpoint = "api-runs"
    live_query = RunQuerySerializer

    @extend_schema(summary="Evaluation runs, newest first", parameters=[RunQuerySerializer, FORMAT_PARAM])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self) -> QuerySet[EvaluationRun]:
        return selectors.run_list_for_api(filters=_query(RunQuerySerializer, self.request).to_filters())


class RunDetailApi(LiveReadMixin, APIView):
    """GET /api/v1/runs/<id>/: one run."""

    renderer_classes = [FastJSONRenderer, BrowsableAPIRenderer]
    live_endpoint = "api-run"

    @extend_schema(summary="One evaluation run", responses=RunSerializer)
    def get(self, request: Request, run_id: int) -> Response:
        return super().get(request, run_id=run_id)

    def read(self, request: Request, run_id: int) -> Response:
        return Response(RunSerializer(_run_or_404(run_id), context={"request": request}).data)


class RunResultsApi(LiveReadMixin, ListAPIView):
    """GET /api/v1/runs/<id>/results/: the run's completions with their verdicts, paginated."""

    renderer_classes = READ_RENDERERS
    serializer_class = ResultSerializer
    export_name = "run-results"
    live_endpoint = "api-run-results"
    live_query = ResultQuerySerializer

    @extend_schema(
        summary="The completions of a run with their verdicts (paginated)",
        parameters=[ResultQuerySerializer, FORMAT_PARAM],
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self) -> QuerySet[Completion]:
        run = _run_or_404(self.kwargs["run_id"])
        query = _query(ResultQuerySerializer, self.request).validated_data
        return selectors.run_result_list(
            run=run, outcome=query.get("outcome", ""), paper=query.get("paper", "")
        )
