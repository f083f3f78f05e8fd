"""Input (query parameter) and output serializers of the read API. Outputs read the selectors' dataclasses
and the catalogue/evaluation models; inputs turn query strings into ``LeaderboardFilters`` with errors
keyed by the parameter's name (a bad value -> 400 naming it)."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from rest_framework import serializers
from rest_framework_dataclasses.field_utils import get_type_info
from rest_framework_dataclasses.serializers import DataclassSerializer

from contributions.models import Snippet
from leaderboard import forms, selectors
from leaderboard.selectors import LeaderboardFilters


def _choice(choices: list[str], **kwargs: Any) -> serializers.ChoiceField:
    allowed = ", ".join(choices)
    return serializers.ChoiceField(
        choices=choices, error_messages={"invalid_choice": f'"{{input}}" is not one of: {allowed}.'}, **kwargs
    )


class BoardQuerySerializer(serializers.Serializer):
    """Query parameters shared by the leaderboard endpoints (all optional): the parameters, choices,
    defaults and matching of ``leaderboard.forms`` (the pages' filter form reads the same), plus
    ``include_unfinished``."""

    contamination = _choice(list(forms.CONTAMINATION_LABELS), default=forms.DEFAULTS["contamination"])
    developer = serializers.CharField(
        required=False, max_length=100, help_text="a developer of a scored model (any case)"
    )
    weights = _choice(list(forms.WEIGHTS_CHOICES), required=False, help_text="open or closed weights only")
    verification = _choice(list(forms.VERIFICATION_CHOICES), required=False)
    release = serializers.CharField(required=False, max_length=100, help_text="a release name")
    template = serializers.CharField(required=False, max_length=16, help_text="a prompt template")
    paper = _choice(
        list(forms.PAPER_CHOICES),
        default=forms.DEFAULTS["paper"],
        help_text="runs with the paper in the prompt, without, or both",
    )
    sort = _choice(forms.SORT_CHOICES, default=forms.DEFAULTS["sort"])
    include_unfinished = serializers.BooleanField(default=False)

    @functools.cached_property
    def _allowed(self) -> dict[str, list[str]]:
        return forms.board_choices()

    def validate_developer(self, value: str) -> str:
        return forms.board_choice("developer", value, self._allowed["developer"])

    def validate_release(self, value: str) -> str:
        return forms.board_choice("release", value, self._allowed["release"])

    def validate_template(self, value: str) -> str:
        return forms.board_choice("template", value, self._allowed["template"])

    def to_filters(self) -> LeaderboardFilters:
        return forms.board_filters(
            self.validated_data, include_unfinished=self.validated_data["include_unfinished"]
        )


class SnippetQuerySerializer(serializers.Serializer):
    paper = serializers.CharField(required=False, max_length=100, help_text="a paper key")

    def validate_paper(self, value: str) -> str:
        if not selectors.paper_list().filter(key=value).exists():
            raise serializers.ValidationError(f'unknown paper "{value}".')
        return value


# An output serializer's fields are those of a selector's dataclass (``Meta.dataclass``): names, types and
# nullability come from its type hints, so the dataclass is the one definition of the shape. Serializers
# declare only what differs: nested outputs, computed fields, help texts (``extra_kwargs``). Without
# ``Meta.fields`` the fields come in the dataclass's order, a declared one in its place. (Comments, not
# docstrings: a serializer's docstring becomes its description in the OpenAPI schema.)
class _Output(DataclassSerializer):
    def get_default_field_names(self, declared_fields: Iterable[str]) -> list[str]:
        # The library puts declared fields first; the dataclass's order is the output's.
        names = list(self.dataclass_definition.fields)
        return names + [name for name in declared_fields if name not in names]


def _fields_of(
    dataclass: type, names: tuple[str, ...], *, source: str, extra_kwargs: dict[str, dict[str, Any]]
) -> type[serializers.Serializer]:
    """A base class declaring the fields ``names`` of ``dataclass``, typed from its hints as the library
    types them and read from the attribute ``source``: for an output that shows a nested dataclass's fields
    at its own level (the library builds fields from the outer dataclass only)."""
    typed = DataclassSerializer(dataclass=dataclass)
    fields = {}
    for name in names:
        extra = extra_kwargs.get(name, {})
        hint = get_type_info(typed.dataclass_definition.field_types[name])
        field_class, kwargs = typed.build_typed_field(name, hint, extra)
        fields[name] = field_class(**typed.include_extra_kwargs(kwargs, extra), source=f"{source}.{name}")
    return type(f"{dataclass.__name__}Fields", (serializers.Serializer,), fields)


class ModelRefSerializer(_Output):
    class Meta:
        dataclass = selectors.ModelRef
        fields = ("key", "name", "developer", "open_weights", "knowledge_cutoff")


# A model with its provider details. The model list serializes ``LanguageModel`` rows, which have the same
# attributes (the stored ``knowledge_cutoff`` there, the normalised one in a model's detail).
class ModelSerializer(_Output):
    class Meta:
        dataclass = selectors.ModelRef
        ref_name = "Model"
        fields = (*ModelRefSerializer.Meta.fields, "company", "provider_model_id", "knowledge_cutoff_raw")


class ScoreSerializer(_Output):
    coverage_complete = serializers.BooleanField()  # a property of ``Score``

    class Meta:
        dataclass = selectors.Score
        fields = (
            "scaled_pass_at_1", "scaled_pass_at_1_std", "pass_at_1", "pass_at_1_std", "ci95", "coverage",
            "coverage_complete", "snippets", "expected_snippets", "lines", "papers",
        )  # fmt: skip
        extra_kwargs = {"ci95": {"min_length": 2, "max_length": 2}}


#: the fields of a row's score that the row shows among its own (``coverage_complete``, a property, apart)
ROW_SCORE_FIELDS = (
    "scaled_pass_at_1", "pass_at_1", "scaled_pass_at_1_std", "pass_at_1_std", "ci95", "line_rates", "task_rates",
    "coverage", "snippets", "expected_snippets", "lines", "papers",
)  # fmt: skip


class LeaderboardRowSerializer(
    _Output,
    _fields_of(
        selectors.Score,
        ROW_SCORE_FIELDS,
        source="score",
        extra_kwargs={"ci95": {"help_text": "null: not computed"}},
    ),
):
    """One leaderboard row. Runs are ranked only against runs of the same release, template and paper
    setting; ``rank`` is null for a row without a score and for an ``incomplete`` row (below full
    coverage, listed after its group's ranked rows). ``rank_low``..``rank_high``: the ranks the 95%
    bootstrap intervals allow; ``tied_with``: the models of the group statistically tied with this one."""

    model = ModelRefSerializer()
    coverage_complete = serializers.BooleanField(source="score.coverage_complete")
    incomplete = serializers.BooleanField(help_text="below full coverage: listed apart, never ranked")

    class Meta:
        dataclass = selectors.Row
        ref_name = "LeaderboardRow"
        extra_kwargs = {
            "rank_low": {"help_text": "best rank the bootstrap intervals allow (null: not ranked)"},
            "rank_high": {"help_text": "worst rank the bootstrap intervals allow (null: not ranked)"},
            "tied_with": {"help_text": "keys of the models whose 95% interval overlaps this row's"},
        }
        fields = (
            "rank", "model", "scaled_pass_at_1", "pass_at_1", "scaled_pass_at_1_std", "pass_at_1_std", "ci95",
            "line_rates", "task_rates", "coverage", "coverage_complete", "snippets", "expected_snippets",
            "lines", "papers", "verification", "cost_usd", "run_id", "release", "template", "with_paper",
            "source", "status", "n_completions", "finished_at", "contamination", "selection", "rank_low",
            "rank_high", "tied_with", "incomplete",
        )  # fmt: skip


class LeaderboardSerializer(serializers.Serializer):
    results = LeaderboardRowSerializer(many=True)
    count = serializers.IntegerField()
    contamination = serializers.CharField()


class PaperScoreSerializer(_Output):
    class Meta:
        dataclass = selectors.PaperScoreRow
        ref_name = "PaperScore"


class ErrorCountSerializer(_Output):
    class Meta:
        dataclass = selectors.ErrorCountRow
        ref_name = "ErrorCount"


class SnippetVerdictSerializer(_Output):
    class Meta:
        dataclass = selectors.SnippetVerdict
        exclude = ("ordinal", "depth")
        extra_kwargs = {
            "verdicts": {"help_text": "one character per completion index: P, F or - (no result)"}
        }


class ModelDetailSerializer(_Output):
    model = ModelSerializer()
    scores = serializers.DictField(child=ScoreSerializer(), help_text="contamination mode -> score")
    per_paper = PaperScoreSerializer(many=True)
    errors = ErrorCountSerializer(many=True)
    infrastructure_errors = ErrorCountSerializer(many=True)
    verdict_grid = SnippetVerdictSerializer(many=True)
    before_cutoff = ScoreSerializer(allow_null=True)
    after_cutoff = ScoreSerializer(allow_null=True)

    class Meta:
        dataclass = selectors.ModelDetail


# A paper in the catalogue list: ``Paper`` rows, which have the same attributes as ``PaperDetail``.
class PaperListSerializer(_Output):
    class Meta:
        dataclass = selectors.PaperDetail
        ref_name = "PaperList"
        fields = (
            "key", "title", "venue", "arxiv_id", "arxiv_abs", "github_url", "first_commit_date",
            "last_commit_date",
        )  # fmt: skip


class MatrixRowSerializer(_Output):
    model = ModelRefSerializer()

    class Meta:
        dataclass = selectors.MatrixRow
        extra_kwargs = {"verdicts": {"help_text": "snippet id -> verdicts"}}


class PaperDetailSerializer(_Output):
    matrix = MatrixRowSerializer(many=True)

    class Meta:
        dataclass = selectors.PaperDetail
        fields = (
            *PaperListSerializer.Meta.fields,
            "arxiv_date",
            "arxiv_v1_date",
            "tasks",
            "snippets",
            "matrix",
        )


class SnippetStatRowSerializer(_Output):
    class Meta:
        dataclass = selectors.SnippetTableRow
        ref_name = "SnippetStatRow"


class AttemptSerializer(_Output):
    model = ModelRefSerializer()

    class Meta:
        dataclass = selectors.Attempt


class SnippetDetailSerializer(_Output):
    attempts = AttemptSerializer(many=True)

    class Meta:
        dataclass = selectors.SnippetDetail


class SnippetRowSerializer(serializers.ModelSerializer):
    """A snippet in the catalogue list, with its difficulty."""

    paper_key = serializers.CharField(source="task_version.task.paper.key")
    task_key = serializers.CharField(source="task_version.task.key")
    task_version = serializers.IntegerField(source="task_version.number")
    solve_rate = serializers.FloatField(source="stat.solve_rate", allow_null=True, default=None)
    results = serializers.IntegerField(source="stat.results", default=0)
    unchecked_reason = serializers.CharField(source="get_unchecked_reason_display")

    class Meta:
        model = Snippet
        fields = (
            "id", "paper_key", "task_key", "task_version", "name", "ordinal", "depth", "lines", "solve_rate",
            "results", "checked_by_test", "unchecked_reason", "unchecked_explanation",
        )  # fmt: skip
        read_only_fields = (
            "id", "name", "ordinal", "depth", "lines", "checked_by_test", "unchecked_reason",
            "unchecked_explanation",
        )  # fmt: skip


class PaperTableRowSerializer(_Output):
    class Meta:
        dataclass = selectors.PaperTableRow


class ModelErrorsRowSerializer(serializers.Serializer):
    """One (run, category) count: the long format, one row per cell of the per-model error chart."""

    run_id = serializers.IntegerField()
    model_key = serializers.CharField()
    model_name = serializers.CharField()
    tier = serializers.CharField()
    category = serializers.CharField()
    label = serializers.CharField()
    count = serializers.IntegerField()


class PaperTableSerializer(serializers.Serializer):
    """The per-paper table's envelope: its rows and their count."""

    results = PaperTableRowSerializer(many=True)
    count = serializers.IntegerField()


class ErrorsTableSerializer(serializers.Serializer):
    """The error table's envelope: per (run, tier, category) rows, model-tier totals and the infrastructure
    tier."""

    results = ModelErrorsRowSerializer(many=True)
    count = serializers.IntegerField()
    categories = ErrorCountSerializer(many=True)
    infrastructure = ErrorCountSerializer(many=True)


class SnippetTableSerializer(serializers.Serializer):
    """The snippet difficulty table's envelope: its rows and their count."""

    results = SnippetStatRowSerializer(many=True)
    count = serializers.IntegerField()


def serializer_columns(serializer: serializers.Serializer, prefix: str = "") -> list[str]:
    """The flattened (dotted) CSV columns of an output serializer, in declaration order."""
    columns: list[str] = []
    for name, f in serializer.fields.items():
        if isinstance(f, serializers.Serializer):
            columns += serializer_columns(f, f"{prefix}{name}.")
        else:
            columns.append(f"{prefix}{name}")
    return columns
