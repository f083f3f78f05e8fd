"""The evaluation API: submitters upload predictions for a release with a token; anyone reads runs and their
results (JSON, or CSV with ``?format=csv``)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404
from django.urls import reverse
from django.utils.cache import patch_cache_control
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.authentication import SessionAuthentication
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
from evaluation import live_cache
from evaluation.board_links import run_board_url
from evaluation.exports import CSVRenderer, FastJSONRenderer
from evaluation.models import Completion, EvaluationRun, LanguageModel, PredictionsUpload
from evaluation.selectors.results import run_result_list
from evaluation.selectors.runs import run_coverage, run_get, run_list_for_api
from evaluation.selectors.uploads import upload_for_viewer
from evaluation.serializers import (
    ErrorListOutput,
    PredictionsUploadInput,
    PredictionsUploadOutput,
    ResultQuerySerializer,
    ResultSerializer,
    RunQuerySerializer,
    RunSerializer,
    UploadReceiptOutput,
)
from evaluation.services.received_uploads import predictions_upload_receive
from evaluation.services.uploads import (
    IdempotencyKeyReused,
    NewModel,
    PredictionsInvalid,
    api_error_lines,
    predictions_upload,
)
from researchcodebench.predictions import shown

#: ``IDEMPOTENCY_KEY_RE`` as the schema states it (JSON Schema's patterns have no ``\x`` escapes)
IDEMPOTENCY_KEY_PATTERN = "^[!-~]{1,128}$"
#: every rule that refuses an upload, as its 400 documents them (the ones OpenAPI cannot state included)
UPLOAD_REFUSALS = (
    "Nothing was created; `errors` lists every problem (`<field>: <message>`, `line N: <message>`, or one "
    "of the whole file): a "
    "field the schema refuses; a `model` key of an existing model this token's user may not upload for; a new "
    "model's key or `model_name` that another model has or that reads the same as another model's; a new "
    "model without `model_name`; a malformed `Idempotency-Key`; a `file` that is not valid predictions for "
    "the release (not UTF-8, not one JSON object per line, naming a task or snippet the release does not "
    "have, over the size, line or code limits)."
)
#: the preference (RFC 7240) of a client that takes ``202 Accepted`` and asks for the outcome later
RESPOND_ASYNC = "respond-async"


def prefers_async(request: Request) -> bool:
    """True when the request's ``Prefer`` header holds ``respond-async`` (any case, any parameters)."""
    preferences = request.headers.get("Prefer", "").split(",")
    return any(p.split(";")[0].split("=")[0].strip().lower() == RESPOND_ASYNC for p in preferences)


class RunUploadApi(APIView):
    """POST /api/v1/runs/upload/: validate a predictions JSONL and start a run that tests it; with
    ``Prefer: respond-async``, store it and answer 202 at once while a worker does that."""

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
                pattern=IDEMPOTENCY_KEY_PATTERN,
                description="optional, 1-128 visible ASCII characters (a UUID): a retry of the same file with "
                "the same key answers 200 with the run (or the upload) the first attempt started instead of "
                "starting another; a key this user already sent with another file or release is a 422",
            ),
            OpenApiParameter(
                "Prefer",
                str,
                OpenApiParameter.HEADER,
                description="optional: 'respond-async' answers 202 as soon as the file is stored (its size "
                "checked), with the upload to ask for its run or its errors (Location); a worker checks it",
            ),
        ],
        responses={
            200: PredictionsUploadOutput,
            201: PredictionsUploadOutput,
            202: UploadReceiptOutput,
            400: OpenApiResponse(ErrorListOutput, description=UPLOAD_REFUSALS),
            422: OpenApiResponse(
                ErrorListOutput, description="The `Idempotency-Key` was used by this user for another upload."
            ),
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
        try:
            if prefers_async(request):
                return self._receive(request, release, data)
            return self._upload(request, release, data)
        except PredictionsInvalid as exc:
            return Response({"errors": api_error_lines(exc)}, status=status.HTTP_400_BAD_REQUEST)
        except IdempotencyKeyReused as exc:
            return Response(
                {"errors": [f"Idempotency-Key: {exc}"]}, status=status.HTTP_422_UNPROCESSABLE_ENTITY
            )

    def _upload(self, request: Request, release: Release, data: dict) -> Response:
        model = LanguageModel.objects.filter(key=data["model"]).first()
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
        body = PredictionsUploadOutput(uploaded_run_body(request, upload.run)).data
        if upload.replayed:
            return Response(body, status=status.HTTP_200_OK, headers={"Idempotent-Replayed": "true"})
        return Response(body, status=status.HTTP_201_CREATED)

    def _receive(self, request: Request, release: Release, data: dict) -> Response:
        received = predictions_upload_receive(
            release=release,
            file=data["file"],
            requester=request.user,
            model_key=data["model"],
            model_name=data.get("model_name", ""),
            template=data.get("template"),
            with_paper=data["with_paper"],
            idempotency_key=request.headers.get("Idempotency-Key", ""),
        )
        body = upload_receipt_body(request, received.upload)
        headers = {"Location": body["url"], "Preference-Applied": RESPOND_ASYNC}
        if received.replayed:
            return Response(
                body, status=status.HTTP_200_OK, headers={**headers, "Idempotent-Replayed": "true"}
            )
        return Response(body, status=status.HTTP_202_ACCEPTED, headers=headers)


class UploadReceiptApi(APIView):
    """GET /api/v1/runs/uploads/<id>/: an upload answered 202, with the run it started or its errors once a
    worker checked it. Its submitter's (and maintainers'); anyone else is told there is none."""

    authentication_classes = [ApiTokenAuthentication, SessionAuthentication]
    permission_classes = [IsAuthenticated]
    renderer_classes = [FastJSONRenderer, BrowsableAPIRenderer]

    @extend_schema(responses=UploadReceiptOutput, summary="An upload received with Prefer: respond-async")
    def get(self, request: Request, upload_id: int) -> Response:
        upload = upload_for_viewer(upload_id=upload_id, viewer=request.user)
        if upload is None:
            raise NotFound(f"no upload {upload_id} of yours.")
        response = Response(upload_receipt_body(request, upload))
        patch_cache_control(response, private=True, no_cache=True)
        return response


def uploaded_run_body(request: Request, run: EvaluationRun) -> dict[str, Any]:
    """What an upload's answer says of the run it started."""
    coverage = run_coverage(run=run)
    return {
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


def upload_receipt_body(request: Request, upload: PredictionsUpload) -> dict[str, Any]:
    """An upload received with ``Prefer: respond-async``: where to ask for it, its state, and once a worker
    checked it, the run it started or every error."""
    run = upload.run if upload.status == PredictionsUpload.Status.STARTED else None
    return UploadReceiptOutput(
        {
            "id": upload.pk,
            "url": request.build_absolute_uri(reverse("api-upload", args=[upload.pk])),
            "status": upload.status,
            "received_at": upload.received_at,
            "checked_at": upload.checked_at,
            "errors": upload.errors,
            "run": uploaded_run_body(request, run) if run is not None else None,
        }
    ).data


def _flatten(errors: dict) -> list[str]:
    """DRF's {field: [messages]} as "field: message" lines, like the file's line errors."""
    return [f"{field}: {message}" for field, messages in errors.items() for message in messages]


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
        return run_get(run_id=run_id)
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
        return run_list_for_api(filters=_query(RunQuerySerializer, self.request).to_filters())


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
        return run_result_list(run=run, outcome=query.get("outcome", ""), paper=query.get("paper", ""))
