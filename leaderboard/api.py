"""The read API under /api/v1/: leaderboard tables, models, papers, snippets, runs and their results.

Every view parses its query parameters with a serializer (a bad value -> 400 whose body names the
parameter), calls one selector and renders JSON, the browsable API, or CSV (``?format=csv``; the tables
also take ``?format=json``). Lists of catalogue rows are paginated with ``limit``/``offset``; the
leaderboard tables are not (one row per run on the board).
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any

from django.core.cache import cache
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils.cache import get_conditional_response, patch_cache_control, patch_vary_headers
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.generics import ListAPIView
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from contributions.models import Paper, Snippet
from evaluation.models import Completion, EvaluationRun, LanguageModel
from leaderboard import selectors
from leaderboard import serializers as s
from leaderboard.exports import CSVRenderer

RENDERERS = [JSONRenderer, BrowsableAPIRenderer, CSVRenderer]
#: seconds a client may reuse the leaderboard's JSON/CSV without revalidating (then: ETag, 304)
API_MAX_AGE_S = 10
FORMAT_PARAM = OpenApiParameter(
    "format", str, enum=["json", "csv"], description="json (default) or csv (a file with a header row)"
)


def _parse(serializer_class: type[s.serializers.Serializer], request: Request) -> s.serializers.Serializer:
    """Validate the query string; unknown parameters (and ``format``) are ignored."""
    params = {k: v for k, v in request.query_params.items() if k not in ("format", "limit", "offset")}
    serializer = serializer_class(data=params)
    serializer.is_valid(raise_exception=True)
    return serializer


class _Table(APIView):
    """A leaderboard table: ``{"results": [...], ...}``, CSV with fixed columns."""

    renderer_classes = RENDERERS
    row_serializer: type[s.serializers.Serializer]
    export_name = "table"

    @property
    def csv_columns(self) -> list[str]:
        return s.serializer_columns(self.row_serializer())


class LeaderboardApi(_Table):
    row_serializer = s.LeaderboardRowSerializer
    export_name = "leaderboard"

    @extend_schema(
        summary="The leaderboard",
        description=(
            "One row per run on the board, sorted by Scaled Pass@1 (descending) unless `sort` says "
            "otherwise; `rank` is by Scaled Pass@1 either way. `contamination=global` applies the original "
            "rule (papers after the latest cutoff of the models shown, compared as text); "
            "`contamination=per-model` scores each model on the papers after its own cutoff. `ci95` is "
            "null where the bootstrap interval was not computed for the selection."
        ),
        parameters=[s.BoardQuerySerializer, FORMAT_PARAM],
        responses=s.LeaderboardSerializer,
    )
    def get(self, request: Request) -> HttpResponse:
        fmt = request.accepted_renderer.format
        if fmt not in ("json", "csv"):
            # The browsable API is a page with the visitor's CSRF token and user: neither stored nor shared.
            response = Response(self._payload(_parse(s.BoardQuerySerializer, request).to_filters()))
            patch_cache_control(response, private=True, max_age=API_MAX_AGE_S)
            return response
        # JSON and CSV depend only on the board version, the query (its known parameters, sorted) and the
        # format: that is the ETag (a conditional GET gets a 304) and the key of the rendered JSON, so a
        # repeat request is one query and no parsing. A bad query fails in the parser: never cached.
        query = sorted((k, v) for k in board_query_keys() for v in request.query_params.getlist(k))
        raw = repr((selectors.board_version(), "api-leaderboard", query, fmt))
        digest = hashlib.sha256(raw.encode()).hexdigest()[:40]
        etag = f'"{digest}"'
        response = get_conditional_response(request._request, etag=etag)
        if response is None and fmt == "json":
            key = f"leaderboard:api-json:{digest}"
            content = cache.get(key)
            if content is None:
                data = self._payload(_parse(s.BoardQuerySerializer, request).to_filters())
                content = request.accepted_renderer.render(
                    data, request.accepted_media_type, self.get_renderer_context()
                )
                cache.set(key, content, selectors.CACHE_TTL_S)
            response = HttpResponse(content, content_type=request.accepted_renderer.media_type)
        elif response is None:
            response = Response(self._payload(_parse(s.BoardQuerySerializer, request).to_filters()))
        response["ETag"] = etag
        patch_cache_control(response, public=True, max_age=API_MAX_AGE_S)
        patch_vary_headers(response, ("Accept",))
        return response

    @staticmethod
    def _payload(filters: selectors.LeaderboardFilters) -> dict[str, Any]:
        """The response body for ``filters``, cached like the rows (keyed by the board version)."""

        def build() -> dict[str, Any]:
            rows = selectors.leaderboard_rows_uncached(filters=filters)
            return {
                "results": s.LeaderboardRowSerializer(rows, many=True).data,
                "count": len(rows),
                "contamination": filters.contamination,
            }

        return selectors.cached_read("api-leaderboard", (filters,), build)


@functools.cache
def board_query_keys() -> tuple[str, ...]:
    """The query parameters of the leaderboard tables (the others, ``format`` included, are ignored)."""
    return tuple(s.BoardQuerySerializer().fields)


class LeaderboardPapersApi(_Table):
    row_serializer = s.PaperTableRowSerializer
    export_name = "leaderboard-papers"

    @extend_schema(
        summary="Per-paper scores of the board's runs (heatmap data)",
        parameters=[s.BoardQuerySerializer, FORMAT_PARAM],
        responses=s.PaperTableRowSerializer(many=True),
    )
    def get(self, request: Request) -> Response:
        filters = _parse(s.BoardQuerySerializer, request).to_filters()
        rows = selectors.paper_scores_table(filters=filters)
        return Response({"results": s.PaperTableRowSerializer(rows, many=True).data, "count": len(rows)})


class LeaderboardErrorsApi(_Table):
    row_serializer = s.ModelErrorsRowSerializer
    export_name = "leaderboard-errors"

    @extend_schema(
        summary="Error categories: per (run, tier, category) counts, totals and shares",
        description=(
            "`results` has one row per (run, tier, category); `categories` the model-tier totals with "
            "their share of all model-tier failures; `infrastructure` the infrastructure tier, which never "
            "counts against a model."
        ),
        parameters=[s.BoardQuerySerializer, FORMAT_PARAM],
        responses=s.ModelErrorsRowSerializer(many=True),
    )
    def get(self, request: Request) -> Response:
        filters = _parse(s.BoardQuerySerializer, request).to_filters()
        b = selectors.error_breakdown(filters=filters)
        rows = [
            {
                "run_id": m.run_id,
                "model_key": m.model.key,
                "model_name": m.model.name,
                "tier": tier,
                "category": category,
                "label": b.labels.get(category, category),
                "count": n,
            }
            for m in b.per_model
            for tier, counts in (("model", m.counts), ("infrastructure", m.infrastructure))
            for category, n in sorted(counts.items())
        ]
        return Response(
            {
                "results": rows,
                "count": len(rows),
                "categories": s.ErrorCountSerializer(b.categories, many=True).data,
                "infrastructure": s.ErrorCountSerializer(b.infrastructure, many=True).data,
            }
        )


class LeaderboardSnippetsApi(_Table):
    row_serializer = s.SnippetStatRowSerializer
    export_name = "leaderboard-snippets"

    @extend_schema(
        summary="Per-snippet solve rates across runs (difficulty), hardest first",
        parameters=[s.SnippetQuerySerializer, FORMAT_PARAM],
        responses=s.SnippetStatRowSerializer(many=True),
    )
    def get(self, request: Request) -> Response:
        paper = _parse(s.SnippetQuerySerializer, request).validated_data.get("paper")
        rows = selectors.snippet_stats_table(paper=paper)
        return Response({"results": s.SnippetStatRowSerializer(rows, many=True).data, "count": len(rows)})


class ModelListApi(ListAPIView):
    renderer_classes = RENDERERS
    serializer_class = s.ModelSerializer
    export_name = "models"

    @extend_schema(summary="Language models", parameters=[FORMAT_PARAM])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self) -> QuerySet[LanguageModel]:
        return selectors.model_list()


class ModelDetailApi(APIView):
    renderer_classes = [JSONRenderer, BrowsableAPIRenderer]

    @extend_schema(
        summary="One model: runs, per-paper scores, errors, verdict grid, before/after its cutoff",
        parameters=[OpenApiParameter("run", int, description="one of the model's runs (default: latest)")],
        responses=s.ModelDetailSerializer,
    )
    def get(self, request: Request, key: str) -> Response:
        run = request.query_params.get("run")
        if run is not None and not run.isdigit():
            return Response({"run": [f'"{run}" is not a run id.']}, status=400)
        try:
            detail = selectors.model_detail(key=key, run_id=int(run) if run else None)
        except LanguageModel.DoesNotExist:
            raise NotFound(f'no model "{key}".') from None
        except EvaluationRun.DoesNotExist:
            raise NotFound(f"run {run} is not a run of {key}.") from None
        return Response(s.ModelDetailSerializer(detail).data)


class PaperListApi(ListAPIView):
    renderer_classes = RENDERERS
    serializer_class = s.PaperListSerializer
    export_name = "papers"

    @extend_schema(summary="Papers", parameters=[FORMAT_PARAM])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self) -> QuerySet[Paper]:
        return Paper.objects.order_by("key")


class PaperDetailApi(APIView):
    renderer_classes = [JSONRenderer, BrowsableAPIRenderer]

    @extend_schema(
        summary="One paper: metadata, snippet tree with difficulty, model x snippet matrix",
        parameters=[s.BoardQuerySerializer],
        responses=s.PaperDetailSerializer,
    )
    def get(self, request: Request, key: str) -> Response:
        filters = _parse(s.BoardQuerySerializer, request).to_filters()
        try:
            detail = selectors.paper_detail(key=key, filters=filters)
        except Paper.DoesNotExist:
            raise NotFound(f'no paper "{key}".') from None
        return Response(s.PaperDetailSerializer(detail).data)


class SnippetListApi(ListAPIView):
    renderer_classes = RENDERERS
    serializer_class = s.SnippetRowSerializer
    export_name = "snippets"

    @extend_schema(
        summary="Snippets (every task version)", parameters=[s.SnippetQuerySerializer, FORMAT_PARAM]
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self) -> QuerySet[Snippet]:
        paper = _parse(s.SnippetQuerySerializer, self.request).validated_data.get("paper")
        qs = Snippet.objects.select_related("task_version__task__paper", "stat").order_by(
            "task_version__task__key", "task_version__number", "ordinal"
        )
        return qs.filter(task_version__task__paper__key=paper) if paper else qs


class SnippetDetailApi(APIView):
    renderer_classes = [JSONRenderer, BrowsableAPIRenderer]

    @extend_schema(summary="One snippet: reference code, difficulty, every completion with its verdict",
                   responses=s.SnippetDetailSerializer)  # fmt: skip
    def get(self, request: Request, snippet_id: int) -> Response:
        try:
            detail = selectors.snippet_detail(snippet_id=snippet_id)
        except Snippet.DoesNotExist:
            raise NotFound(f"no snippet {snippet_id}.") from None
        return Response(s.SnippetDetailSerializer(detail).data)


class RunListApi(ListAPIView):
    renderer_classes = RENDERERS
    serializer_class = s.RunSerializer
    export_name = "runs"

    @extend_schema(summary="Evaluation runs, newest first", parameters=[s.RunQuerySerializer, FORMAT_PARAM])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self) -> QuerySet[EvaluationRun]:
        q = _parse(s.RunQuerySerializer, self.request).validated_data
        qs = EvaluationRun.objects.select_related("model", "release").order_by("-created_at", "-id")
        if q.get("model"):
            qs = qs.filter(model__key=q["model"])
        if q.get("status"):
            qs = qs.filter(status=q["status"])
        if q.get("source"):
            qs = qs.filter(source=q["source"])
        if q.get("release"):
            qs = qs.filter(release__name=q["release"])
        return qs


class RunDetailApi(APIView):
    renderer_classes = [JSONRenderer, BrowsableAPIRenderer]

    @extend_schema(summary="One evaluation run", responses=s.RunSerializer)
    def get(self, request: Request, run_id: int) -> Response:
        run = EvaluationRun.objects.select_related("model", "release").filter(pk=run_id).first()
        if run is None:
            raise NotFound(f"no run {run_id}.")
        return Response(s.RunSerializer(run).data)


class RunResultsApi(ListAPIView):
    renderer_classes = RENDERERS
    serializer_class = s.ResultSerializer
    export_name = "run-results"

    @extend_schema(
        summary="The completions of a run with their verdicts (paginated)",
        parameters=[s.ResultQuerySerializer, FORMAT_PARAM],
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self) -> QuerySet[Completion]:
        run_id = self.kwargs["run_id"]
        if not EvaluationRun.objects.filter(pk=run_id).exists():
            raise NotFound(f"no run {run_id}.")
        q = _parse(s.ResultQuerySerializer, self.request).validated_data
        qs = (
            Completion.objects.filter(run_id=run_id)
            .select_related("snippet__task_version__task__paper", "result")
            .order_by("snippet__task_version__task__key", "snippet__ordinal", "completion_idx", "id")
        )
        if q.get("outcome"):
            qs = qs.filter(result__outcome=q["outcome"])
        if q.get("paper"):
            qs = qs.filter(snippet__task_version__task__paper__key=q["paper"])
        return qs


def bench_trivial(request: HttpRequest) -> HttpResponse:
    """The load benchmark's baseline: a Django view doing no work (routed only when RCB_BENCH is set)."""
    return HttpResponse("ok", content_type="text/plain")
