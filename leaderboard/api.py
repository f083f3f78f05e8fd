"""The leaderboard's read API under /api/v1/: the board tables, models, papers and snippets (runs and
their results are the evaluation app's, ``evaluation/api.py``).

Every view parses its query parameters with a serializer (a bad value -> 400 whose body names the
parameter), calls one selector and renders JSON, the browsable API, or CSV (``?format=csv``; the tables
also take ``?format=json``). The board tables and the model and paper details go through the one cache
layer (``leaderboard.caching.serve_api``: keyed by the versions of the scopes each declares, ETag, 304). Lists of catalogue rows
are paginated with ``limit``/``offset``; the board tables are not (one row per run on the board).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.generics import ListAPIView
from rest_framework.renderers import BrowsableAPIRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from contributions.models import Paper, Snippet
from evaluation.exports import CSVRenderer, FastJSONRenderer
from evaluation.models import EvaluationRun, LanguageModel
from leaderboard import caching
from leaderboard import serializers as s
from leaderboard.scopes import Scope
from leaderboard.selectors.analyses import error_breakdown, paper_scores_table, snippet_stats_table
from leaderboard.selectors.board import leaderboard_rows
from leaderboard.selectors.compare import COMPARE_LIMIT, comparison_summary
from leaderboard.selectors.models import model_detail, model_list
from leaderboard.selectors.papers import paper_detail, paper_list
from leaderboard.selectors.snippets import snippet_detail, snippet_list

RENDERERS = [FastJSONRenderer, BrowsableAPIRenderer, CSVRenderer]
FORMAT_PARAM = OpenApiParameter(
    "format", str, enum=["json", "csv"], description="json (default) or csv (a file with a header row)"
)
#: the query parameters of the board tables (the others, ``format`` included, are ignored)
BOARD_KEYS = tuple(s.BoardQuerySerializer().fields)


def _parse(serializer_class: type[s.serializers.Serializer], request: Request) -> s.serializers.Serializer:
    """Validate the query string; unknown parameters (and ``format``) are ignored."""
    params = {k: v for k, v in request.query_params.items() if k not in ("format", "limit", "offset")}
    serializer = serializer_class(data=params)
    serializer.is_valid(raise_exception=True)
    return serializer


class _Cached(APIView):
    """A read whose answer depends only on the versions of its ``scope``, the URL's arguments and
    ``keys``: served through the cache layer. ``data(request, **kwargs)`` parses the query and calls the
    selector."""

    keys: tuple[str, ...] = BOARD_KEYS
    data: Callable[..., Any]

    def get(self, request: Request, **kwargs: Any) -> HttpResponse:
        return caching.serve_api(
            self, request, endpoint=type(self).__name__, args=tuple(sorted(kwargs.items())), keys=self.keys,
            scope=self.scope(request, **kwargs), build=lambda: self.data(request, **kwargs),
        )  # fmt: skip

    def scope(self, request: Request, **kwargs: Any) -> Scope:
        """What the answer shows; a board table's: the release its ``release`` parameter names."""
        return Scope.board(request.query_params.get("release"))


class _Table(_Cached):
    """A board table: ``{"results": [...], ...}``, CSV with fixed columns."""

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
            "`contamination=per-model` scores each model on the papers after its own cutoff. `paper_from` "
            "and `paper_to` (YYYY-MM-DD, both included) restrict every run to the papers of its release "
            "first committed within that window, on top of the rule; a paper with no known date is outside "
            "every window. `ci95` is null where the bootstrap interval was not computed for the selection."
        ),
        parameters=[s.BoardQuerySerializer, FORMAT_PARAM],
        responses=s.LeaderboardSerializer,
    )
    def get(self, request: Request) -> HttpResponse:
        return super().get(request)

    def data(self, request: Request) -> dict[str, Any]:
        filters = _parse(s.BoardQuerySerializer, request).to_filters()
        rows = leaderboard_rows(filters=filters)
        return {
            "results": s.LeaderboardRowSerializer(rows, many=True).data,
            "count": len(rows),
            "contamination": filters.contamination,
        }


class LeaderboardPapersApi(_Table):
    row_serializer = s.PaperTableRowSerializer
    export_name = "leaderboard-papers"

    @extend_schema(
        summary="Per-paper scores of the board's runs (heatmap data)",
        parameters=[s.BoardQuerySerializer, FORMAT_PARAM],
        responses=s.PaperTableSerializer,
    )
    def get(self, request: Request) -> HttpResponse:
        return super().get(request)

    def data(self, request: Request) -> dict[str, Any]:
        filters = _parse(s.BoardQuerySerializer, request).to_filters()
        rows = paper_scores_table(filters=filters)
        return {"results": s.rows_data(s.PaperTableRowSerializer, rows), "count": len(rows)}


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
        responses=s.ErrorsTableSerializer,
    )
    def get(self, request: Request) -> HttpResponse:
        return super().get(request)

    def data(self, request: Request) -> dict[str, Any]:
        filters = _parse(s.BoardQuerySerializer, request).to_filters()
        b = error_breakdown(filters=filters)
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
        return {
            "results": rows,
            "count": len(rows),
            "categories": s.ErrorCountSerializer(b.categories, many=True).data,
            "infrastructure": s.ErrorCountSerializer(b.infrastructure, many=True).data,
        }


class LeaderboardSnippetsApi(_Table):
    row_serializer = s.SnippetStatRowSerializer
    export_name = "leaderboard-snippets"
    keys = tuple(s.SnippetQuerySerializer().fields)

    @extend_schema(
        summary="Per-snippet solve rates across runs (difficulty), hardest first",
        parameters=[s.SnippetQuerySerializer, FORMAT_PARAM],
        responses=s.SnippetTableSerializer,
    )
    def get(self, request: Request) -> HttpResponse:
        return super().get(request)

    def scope(self, request: Request, **kwargs: Any) -> Scope:
        return Scope(all_releases=True)  # solve rates over every run

    def data(self, request: Request) -> dict[str, Any]:
        paper = _parse(s.SnippetQuerySerializer, request).validated_data.get("paper")
        rows = snippet_stats_table(paper=paper)
        return {"results": s.rows_data(s.SnippetStatRowSerializer, rows), "count": len(rows)}


class CompareApi(_Cached):
    renderer_classes = [FastJSONRenderer, BrowsableAPIRenderer]
    keys = tuple(s.CompareQuerySerializer().fields)

    @extend_schema(
        summary="Two or more models compared on one setting: scores and paired differences",
        description=(
            "The comparison page's numbers (`/compare/`). The models are compared only on a setting they all "
            "have a scored run on (the same release, prompt template and paper setting): the first that "
            "`release`, `template` and `paper` pick (each optional; none given: the setting the first "
            "model's page shows, when common, else the common setting of its newest run). `models` gives each "
            "model's run on it with its Scaled Pass@1, and `pairs` each pair's paired difference (first minus "
            "second) with its 95% paired bootstrap interval and whether that excludes zero "
            "(docs/scoring.md#comparing-two-models-the-paired-difference). When they have no setting in common "
            "(or none the query picks) the answer is still a 200: `setting` is null, `note` says why, "
            "`models` lists the settings each has and `nearest` the setting most of them share. An unknown or "
            "ambiguous name in `models` is a 400 naming `models`."
        ),
        parameters=[s.CompareQuerySerializer],
        responses=s.ComparisonSerializer,
    )
    def get(self, request: Request) -> HttpResponse:
        return super().get(request)

    def scope(self, request: Request, **kwargs: Any) -> Scope:
        """The models every name may pick (as the comparison page's)."""
        return Scope(models=tuple(n.strip() for n in request.query_params.getlist("models")[:COMPARE_LIMIT]))

    def data(self, request: Request) -> dict[str, Any]:
        params = {k: v for k, v in request.query_params.items() if k not in ("format", "models")}
        if "models" in request.query_params:
            params["models"] = request.query_params.getlist("models")
        query = s.CompareQuerySerializer(data=params)
        query.is_valid(raise_exception=True)
        summary = comparison_summary(keys=query.validated_data["models"].keys, asked=query.setting_query())
        return s.ComparisonSerializer(summary).data


class ModelListApi(ListAPIView):
    renderer_classes = RENDERERS
    serializer_class = s.ModelSerializer
    export_name = "models"

    @extend_schema(summary="Language models", parameters=[FORMAT_PARAM])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self) -> QuerySet[LanguageModel]:
        return model_list()


class ModelDetailApi(_Cached):
    renderer_classes = [FastJSONRenderer, BrowsableAPIRenderer]
    keys = ("run",)

    @extend_schema(
        summary="One model: runs, per-paper scores, errors, verdict grid, before/after its cutoff",
        parameters=[s.ModelDetailQuerySerializer],
        responses=s.ModelDetailSerializer,
    )
    def get(self, request: Request, key: str) -> HttpResponse:
        return super().get(request, key=key)

    def scope(self, request: Request, key: str) -> Scope:
        return Scope(models=(key,))

    def data(self, request: Request, key: str) -> dict[str, Any]:
        run = _parse(s.ModelDetailQuerySerializer, request).validated_data.get("run")
        try:
            detail = model_detail(key=key, run_id=run)
        except LanguageModel.DoesNotExist:
            raise NotFound(f'no model "{key}".') from None
        except EvaluationRun.DoesNotExist:
            raise NotFound(f"run {run} is not a run of {key}.") from None
        return s.ModelDetailSerializer(detail).data


class PaperListApi(ListAPIView):
    renderer_classes = RENDERERS
    serializer_class = s.PaperListSerializer
    export_name = "papers"

    @extend_schema(summary="Papers", parameters=[FORMAT_PARAM])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self) -> QuerySet[Paper]:
        return paper_list()


class PaperDetailApi(_Cached):
    renderer_classes = [FastJSONRenderer, BrowsableAPIRenderer]

    @extend_schema(
        summary="One paper: metadata, snippet tree with difficulty, model x snippet matrix",
        parameters=[s.BoardQuerySerializer],
        responses=s.PaperDetailSerializer,
    )
    def get(self, request: Request, key: str) -> HttpResponse:
        return super().get(request, key=key)

    def scope(self, request: Request, key: str) -> Scope:
        return Scope(paper=key)  # the runs of every release holding it, and its snippets' difficulty

    def data(self, request: Request, key: str) -> dict[str, Any]:
        filters = _parse(s.BoardQuerySerializer, request).to_filters()
        try:
            detail = paper_detail(key=key, filters=filters)
        except Paper.DoesNotExist:
            raise NotFound(f'no paper "{key}".') from None
        return s.PaperDetailSerializer(detail).data


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
        return snippet_list(paper=paper)


class SnippetDetailApi(_Cached):
    renderer_classes = [FastJSONRenderer, BrowsableAPIRenderer]
    keys = ()

    @extend_schema(summary="One snippet: reference code, difficulty, every completion with its verdict",
                   responses=s.SnippetDetailSerializer)  # fmt: skip
    def get(self, request: Request, snippet_id: int) -> HttpResponse:
        return super().get(request, snippet_id=snippet_id)

    def scope(self, request: Request, snippet_id: int) -> Scope:
        return Scope(snippet=snippet_id)  # completions of runs of the releases that hold its paper

    def data(self, request: Request, snippet_id: int) -> dict[str, Any]:
        try:
            detail = snippet_detail(snippet_id=snippet_id)
        except Snippet.DoesNotExist:
            raise NotFound(f"no snippet {snippet_id}.") from None
        return s.SnippetDetailSerializer(detail).data


def bench_trivial(request: HttpRequest) -> HttpResponse:
    """The load benchmark's baseline: a Django view doing no work (routed only when RCB_BENCH is set)."""
    return HttpResponse("ok", content_type="text/plain")
