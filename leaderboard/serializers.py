"""Input (query parameter) and output serializers of the read API. Outputs read the selectors' dataclasses
and the catalogue/evaluation models; inputs turn query strings into ``LeaderboardFilters`` with errors
keyed by the parameter's name (a bad value -> 400 naming it)."""

from __future__ import annotations

import dataclasses
import functools
import operator
from collections.abc import Callable, Iterable
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers
from rest_framework_dataclasses.field_utils import get_type_info
from rest_framework_dataclasses.serializers import DataclassSerializer

from contributions.api_fields import KnownNameField
from contributions.models import Snippet
from leaderboard import forms
from leaderboard.selectors.analyses import PaperTableRow, SnippetTableRow
from leaderboard.selectors.board import ANY_RELEASE, LeaderboardFilters, Row
from leaderboard.selectors.common import ErrorCountRow, ModelRef, Score
from leaderboard.selectors.compare import (
    COMPARE_LIMIT,
    ComparedPair,
    ComparedScore,
    ComparisonSummary,
    Setting,
    SettingQuery,
)
from leaderboard.selectors.models import (
    Forging,
    Memorisation,
    ModelDetail,
    PaperScoreRow,
    RunSummary,
    SnippetVerdict,
    VerbatimShare,
)
from leaderboard.selectors.papers import MatrixRow, PaperDetail, paper_list
from leaderboard.selectors.picking import MATCHES_SHOWN, Picked, models_pick
from leaderboard.selectors.snippets import Attempt, SnippetDetail
from researchcodebench.scoring import PairedDifference


def _choice(choices: list[str], **kwargs: Any) -> serializers.ChoiceField:
    allowed = ", ".join(choices)
    return serializers.ChoiceField(
        choices=choices, error_messages={"invalid_choice": f'"{{input}}" is not one of: {allowed}.'}, **kwargs
    )


def _board_known(name: str) -> Callable[[], list[str]]:
    return lambda: forms.board_choices()[name]


class BoardQuerySerializer(serializers.Serializer):
    """Query parameters shared by the leaderboard endpoints (all optional): the parameters, choices,
    defaults and matching of ``leaderboard.forms`` (the pages' filter form reads the same), plus
    ``include_unfinished``."""

    contamination = _choice(list(forms.CONTAMINATION_LABELS), default=forms.DEFAULTS["contamination"])
    developer = KnownNameField(
        known=_board_known("developer"),
        required=False,
        max_length=100,
        help_text="a developer of a scored model (any case)",
    )
    weights = _choice(list(forms.WEIGHTS_CHOICES), required=False, help_text="open or closed weights only")
    verification = _choice(list(forms.VERIFICATION_CHOICES), required=False)
    release = KnownNameField(
        known=_board_known("release"), required=False, max_length=100, help_text="a release name (* for all)"
    )
    template = KnownNameField(
        known=_board_known("template"), required=False, max_length=16, help_text="a prompt template"
    )
    paper = _choice(
        list(forms.PAPER_CHOICES),
        default=forms.DEFAULTS["paper"],
        help_text="runs with the paper in the prompt, without, or both",
    )
    paper_from = serializers.DateField(
        required=False,
        input_formats=["iso-8601"],
        help_text="paper-date window start (YYYY-MM-DD, included): score each run only on the papers of its "
        "release first committed on or after this date; a paper with no known date is outside every window",
        error_messages={"invalid": "paper_from: not a date; write it as YYYY-MM-DD, e.g. 2024-07-01."},
    )
    paper_to = serializers.DateField(
        required=False,
        input_formats=["iso-8601"],
        help_text="paper-date window end (YYYY-MM-DD, included): only papers first committed on or before it. "
        "A window that ends before it starts (`paper_to` before `paper_from`) is a 400 naming `paper_to`",
        error_messages={"invalid": "paper_to: not a date; write it as YYYY-MM-DD, e.g. 2024-07-01."},
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

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        try:
            forms.board_window_check(attrs.get("paper_from"), attrs.get("paper_to"))
        except DjangoValidationError as exc:
            raise serializers.ValidationError({"paper_to": exc.messages}) from None
        return attrs

    def to_filters(self) -> LeaderboardFilters:
        return forms.board_filters(
            self.validated_data, include_unfinished=self.validated_data["include_unfinished"]
        )


class _RunIdField(serializers.IntegerField):
    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, str) and not (data.isascii() and data.isdigit()):
            raise serializers.ValidationError(f'"{data[:40]}" is not a run id.')
        return super().to_internal_value(data)


class ModelDetailQuerySerializer(serializers.Serializer):
    run = _RunIdField(
        required=False,
        min_value=0,
        max_value=2**63 - 1,
        help_text="one of the model's runs (default: latest)",
    )


class SnippetQuerySerializer(serializers.Serializer):
    paper = KnownNameField(
        known=lambda: list(paper_list().values_list("key", flat=True)),
        required=False,
        max_length=100,
        help_text="a paper key",
    )

    def validate_paper(self, value: str) -> str:
        if not paper_list().filter(key=value).exists():
            raise serializers.ValidationError(f'unknown paper "{value}".')
        return value


class _ModelNamesField(serializers.ListField):
    """The ``models`` of a comparison: its errors are one flat list of messages (a 400's body maps each
    parameter to a list of strings), each bad name numbered."""

    def run_child_validation(self, data: list[Any]) -> list[Any]:
        result, errors = [], []
        for n, item in enumerate(data, 1):
            try:
                result.append(self.child.run_validation(item))
            except serializers.ValidationError as exc:
                errors += [f"name {n}: {message}" for message in exc.detail]
        if errors:
            raise serializers.ValidationError(errors)
        return result


def _release_names() -> list[str]:
    return [name for name in forms.board_choices()["release"] if name != ANY_RELEASE]


class CompareQuerySerializer(serializers.Serializer):
    """The comparison's query: the models (two to ``COMPARE_LIMIT``, each a key, a display name or a part of
    exactly one model's key, name or developer) and, optionally, part of the setting to compare them on."""

    models = _ModelNamesField(
        child=serializers.CharField(max_length=100, trim_whitespace=False),
        min_length=2,
        max_length=COMPARE_LIMIT,
        help_text="a model's key or display name (any case), or a part of exactly one model's key, name or "
        "developer; repeat the parameter for each model (2 to 6). A name that matches no model, one that "
        "matches several (the 400 lists them), or names that pick fewer than two different models are a 400 "
        "naming `models`",
    )
    release = KnownNameField(
        known=_release_names, required=False, max_length=100,
        help_text="compare on a run of this release (default: the setting the first model's page shows, when "
        "every model has it)",
    )  # fmt: skip
    template = KnownNameField(
        known=_board_known("template"),
        required=False,
        max_length=16,
        help_text="compare on this prompt template",
    )
    paper = _choice(
        ["with", "without"],
        required=False,
        help_text="compare on runs with the paper in the prompt, or without",
    )

    def validate_release(self, value: str) -> str:
        return forms.board_choice("release", value, _release_names())

    def validate_template(self, value: str) -> str:
        return forms.board_choice("template", value, forms.board_choices()["template"])

    def validate_models(self, value: list[str]) -> Picked:
        picked = models_pick(names=value)
        errors = [
            f"No model is called “{name}”: give a model's key or display name, or a part of one."
            for name in picked.unknown
        ]
        for name, matches in picked.ambiguous:
            listed = ", ".join(f"{m.name} ({m.key})" for m in matches[:MATCHES_SHOWN])
            more = " and more" if len(matches) > MATCHES_SHOWN else ""
            errors.append(f"“{name}” matches several models: {listed}{more}. Give the key of one of them.")
        if not errors and len(picked.keys) < 2:
            shown = ", ".join(picked.names) or "no model"
            errors.append(f"These names pick {shown} only: name at least two different models.")
        if errors:
            raise serializers.ValidationError(errors)
        return picked

    def setting_query(self) -> SettingQuery | None:
        """The part of a setting asked for; None when nothing is."""
        data = self.validated_data
        paper = data.get("paper")
        query = SettingQuery(
            release=data.get("release"),
            template=data.get("template"),
            with_paper=None if paper is None else paper == "with",
        )
        return None if query == SettingQuery() else query


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


#: field classes whose ``to_representation`` gives back a value of exactly this type as it is
_AS_IS = {
    serializers.CharField: str,
    serializers.IntegerField: int,
    serializers.FloatField: float,
    serializers.BooleanField: bool,
}


def rows_data(serializer_class: type[serializers.Serializer], rows: Iterable[Any]) -> list[dict[str, Any]]:
    """``serializer_class(rows, many=True).data`` of a flat row serializer (every field read from the
    attribute of its name): each field's own ``to_representation``, None for None, but not the machinery
    DRF runs around every field of every row, most of a table's time at 10,000 rows; a value the field
    would give back unchanged (a ``str`` for a ``CharField``, an ``int`` for an ``IntegerField``, ...) is
    taken as it is. A serializer with a nested or renamed field is run as is."""
    fields = serializer_class().fields
    if any(f.source != name or isinstance(f, serializers.BaseSerializer) for name, f in fields.items()):
        return serializer_class(rows, many=True).data
    shown = [
        (name, f.to_representation, _AS_IS.get(type(f))) for name, f in fields.items() if not f.write_only
    ]
    names = [name for name, _, _ in shown]
    shows = [(show, kind) for _, show, kind in shown]
    values = operator.attrgetter(*names) if len(names) > 1 else lambda row: (getattr(row, names[0]),)
    return [
        dict(
            zip(
                names,
                [
                    v if v is None or type(v) is kind else show(v)
                    for v, (show, kind) in zip(values(row), shows, strict=True)
                ],
                strict=True,
            )
        )
        for row in rows
    ]


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
        dataclass = ModelRef
        fields = ("key", "name", "developer", "open_weights", "knowledge_cutoff")


# A model with its provider details. The model list serializes ``LanguageModel`` rows, which have the same
# attributes (the stored ``knowledge_cutoff`` there, the normalised one in a model's detail).
class ModelSerializer(_Output):
    class Meta:
        dataclass = ModelRef
        ref_name = "Model"
        fields = (*ModelRefSerializer.Meta.fields, "company", "provider_model_id", "knowledge_cutoff_raw")


class ScoreSerializer(_Output):
    coverage_complete = serializers.BooleanField()  # a property of ``Score``

    class Meta:
        dataclass = Score
        fields = (
            "scaled_pass_at_1", "scaled_pass_at_1_std", "pass_at_1", "pass_at_1_std", "ci95", "coverage",
            "coverage_complete", "snippets", "expected_snippets", "lines", "papers",
        )  # fmt: skip
        extra_kwargs = {"ci95": {"min_length": 2, "max_length": 2}}


#: the fields of a row's score that the row shows among its own (``coverage_complete``, a property, apart)
ROW_SCORE_FIELDS = (
    "scaled_pass_at_1", "pass_at_1", "scaled_pass_at_1_std", "pass_at_1_std", "ci95", "line_rates", "task_rates",
    "coverage", "snippets", "expected_snippets", "lines", "papers", "passes_forged", "passes_confirmed",
    "passes_unconfirmed",
)  # fmt: skip
#: the help texts of the forging rate's fields (docs/scoring.md#forging-rate), wherever they are shown
FORGING_HELP = {
    "forging_rate": "forged / (forged + confirmed) passes, in percent (ImpossibleBench's cheating rate); null: "
    "not measured (results imported without code, or no pass confirmed or forged)",
    "passes_forged": "verdicts forged: passes that also passed an impossible variant of their test, which the "
    "reference fails",
    "passes_confirmed": "passes confirmed: they failed an impossible variant of their test, as an honest answer "
    "does",
    "passes_unconfirmed": "passes that could not be confirmed: their snippet has no impossible variant (its test "
    "does not check it)",
}


class LeaderboardRowSerializer(
    _Output,
    _fields_of(
        Score,
        ROW_SCORE_FIELDS,
        source="score",
        extra_kwargs={
            "ci95": {"help_text": "null: not computed"},
            **{name: {"help_text": text} for name, text in FORGING_HELP.items() if name != "forging_rate"},
        },
    ),
):
    """One leaderboard row. Runs are ranked only against runs of the same release, template and paper
    setting; ``rank`` is null for a row without a score and for an ``incomplete`` row (below full
    coverage, listed after its group's ranked rows). ``rank_low``..``rank_high``: the ranks the 95%
    bootstrap intervals allow; ``tied_with``: the models of the group statistically tied with this one."""

    model = ModelRefSerializer()
    coverage_complete = serializers.BooleanField(source="score.coverage_complete")
    incomplete = serializers.BooleanField(help_text="below full coverage: listed apart, never ranked")
    forging_rate = serializers.FloatField(
        source="score.forging_rate", allow_null=True, help_text=FORGING_HELP["forging_rate"]
    )

    class Meta:
        dataclass = Row
        ref_name = "LeaderboardRow"
        extra_kwargs = {
            "rank_low": {"help_text": "best rank the bootstrap intervals allow (null: not ranked)"},
            "rank_high": {"help_text": "worst rank the bootstrap intervals allow (null: not ranked)"},
            "tied_with": {"help_text": "keys of the models whose 95% interval overlaps this row's"},
            "covers": {
                "help_text": "for a run on no release, what it covers instead (a new task's approval run: "
                "'new task KEY vN'); rows rank only against rows of the same release, template, paper "
                "setting and covers; empty for a run on a release"
            },
        }
        fields = (
            "rank", "model", "scaled_pass_at_1", "pass_at_1", "scaled_pass_at_1_std", "pass_at_1_std", "ci95",
            "line_rates", "task_rates", "coverage", "coverage_complete", "snippets", "expected_snippets",
            "lines", "papers", "verification", "cost_usd", "run_id", "release", "covers", "template", "with_paper",
            "source", "status", "n_completions", "finished_at", "contamination", "selection", "rank_low",
            "rank_high", "tied_with", "incomplete", "forging_rate", "passes_forged", "passes_confirmed",
            "passes_unconfirmed",
        )  # fmt: skip


class LeaderboardSerializer(serializers.Serializer):
    results = LeaderboardRowSerializer(many=True)
    count = serializers.IntegerField()
    contamination = serializers.CharField()


class PaperScoreSerializer(_Output):
    class Meta:
        dataclass = PaperScoreRow
        ref_name = "PaperScore"


class ErrorCountSerializer(_Output):
    class Meta:
        dataclass = ErrorCountRow
        ref_name = "ErrorCount"


class SnippetVerdictSerializer(_Output):
    class Meta:
        dataclass = SnippetVerdict
        exclude = ("ordinal", "depth")
        extra_kwargs = {
            "verdicts": {"help_text": "one character per completion index: P, F or - (no result)"}
        }


class VerbatimShareSerializer(_Output):
    class Meta:
        dataclass = VerbatimShare
        extra_kwargs = {
            "passes": {"help_text": "passed completions of the run (of these papers)"},
            "measured": {"help_text": "passes that could be compared with the reference (code, 20+ tokens)"},
            "near_verbatim": {"help_text": "measured passes that reproduce the reference nearly verbatim"},
            "share": {"help_text": "near_verbatim / measured, in percent (null: none measured)"},
        }


class MemorisationSerializer(_Output):
    all = VerbatimShareSerializer()
    before_cutoff = VerbatimShareSerializer(allow_null=True)
    after_cutoff = VerbatimShareSerializer(allow_null=True)

    class Meta:
        dataclass = Memorisation


class RunSummarySerializer(_Output):
    class Meta:
        dataclass = RunSummary
        # ``label`` words a run without a release for the page; the API names runs by id and release.
        fields = tuple(f.name for f in dataclasses.fields(RunSummary) if f.name != "label")
        extra_kwargs = {name: {"help_text": text} for name, text in FORGING_HELP.items()}


class ForgingSerializer(_Output):
    class Meta:
        dataclass = Forging
        extra_kwargs = {
            **{name: {"help_text": text} for name, text in FORGING_HELP.items()},
            "runs": {"help_text": "runs of the model with a pass confirmed or forged"},
        }


class ModelDetailSerializer(_Output):
    model = ModelSerializer()
    runs = RunSummarySerializer(many=True)
    run = RunSummarySerializer(allow_null=True, help_text="the run the page shows (null: none scored)")
    scores = serializers.DictField(child=ScoreSerializer(), help_text="contamination mode -> score")
    per_paper = PaperScoreSerializer(many=True)
    errors = ErrorCountSerializer(many=True)
    infrastructure_errors = ErrorCountSerializer(many=True)
    verdict_grid = SnippetVerdictSerializer(many=True)
    before_cutoff = ScoreSerializer(allow_null=True)
    after_cutoff = ScoreSerializer(allow_null=True)
    memorisation = MemorisationSerializer(
        allow_null=True, help_text="the run's passes that are near verbatim (docs/scoring.md#memorisation)"
    )
    forging = ForgingSerializer(
        allow_null=True,
        help_text="the model's forging rate over all its runs (docs/scoring.md#forging-rate); per run in `runs`",
    )

    class Meta:
        dataclass = ModelDetail


# A paper in the catalogue list: ``Paper`` rows, which have the same attributes as ``PaperDetail``.
class PaperListSerializer(_Output):
    class Meta:
        dataclass = PaperDetail
        ref_name = "PaperList"
        fields = (
            "key", "title", "venue", "arxiv_id", "arxiv_abs", "github_url", "first_commit_date",
            "last_commit_date",
        )  # fmt: skip


class MatrixRowSerializer(_Output):
    model = ModelRefSerializer()

    class Meta:
        dataclass = MatrixRow
        # The run's overall score feeds the page's snippet statistics; the API's board carries it already.
        exclude = ("overall",)
        extra_kwargs = {"verdicts": {"help_text": "snippet id -> verdicts"}}


class PaperDetailSerializer(_Output):
    matrix = MatrixRowSerializer(many=True)

    class Meta:
        dataclass = PaperDetail
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
        dataclass = SnippetTableRow
        ref_name = "SnippetStatRow"


class AttemptSerializer(_Output):
    model = ModelRefSerializer()

    class Meta:
        dataclass = Attempt
        # The snippet page shows a chosen model's raw response; the API's contract stays as recorded.
        exclude = ("raw_response", "run_source")


class SnippetDetailSerializer(_Output):
    attempts = AttemptSerializer(many=True)

    class Meta:
        dataclass = SnippetDetail


class SnippetRowSerializer(serializers.ModelSerializer):
    """A snippet in the catalogue list, with its difficulty."""

    paper_key = serializers.CharField(source="task_version.task.paper.key")
    task_key = serializers.CharField(source="task_version.task.key")
    task_version = serializers.IntegerField(source="task_version.number")
    solve_rate = serializers.FloatField(
        source="stat.solve_rate", allow_null=True, default=None, help_text="in percent (null: no results yet)"
    )
    results = serializers.IntegerField(
        source="results_scored", help_text="its results over every scored run (0 before any; never null)"
    )
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
        dataclass = PaperTableRow


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


class SettingSerializer(_Output):
    label = serializers.CharField(help_text="the setting in words")

    class Meta:
        dataclass = Setting
        extra_kwargs = {
            "release": {"help_text": "null: runs on no release"},
            "covers": {
                "help_text": 'what a run on no release covers ("new task rmsnorm v2"); empty on a release'
            },
        }


class SettingQuerySerializer(_Output):
    class Meta:
        dataclass = SettingQuery
        ref_name = "SettingAsked"
        extra_kwargs = {
            "release": {"help_text": "null: any release"},
            "template": {"help_text": "null: any template"},
            "with_paper": {"help_text": "null: with or without the paper"},
        }


class PairedDifferenceSerializer(_Output):
    distinguishable = serializers.BooleanField(help_text="the interval excludes zero")

    class Meta:
        dataclass = PairedDifference
        extra_kwargs = {
            "difference": {
                "help_text": "first minus second, in Scaled Pass@1 points, over the snippets both were judged on"
            },
            "low": {"help_text": "lower end of the paired bootstrap interval"},
            "high": {"help_text": "upper end of the paired bootstrap interval"},
            "snippets": {"help_text": "the snippets both were judged on"},
            "level": {"help_text": "the interval's confidence level"},
        }


class ComparedScoreSerializer(_Output):
    settings = SettingSerializer(many=True, help_text="the settings the model has a scored run on")

    class Meta:
        dataclass = ComparedScore
        extra_kwargs = {
            "run_id": {"help_text": "the model's run on the compared setting (null: nothing compared)"},
            "scaled_pass_at_1": {"help_text": "that run's Scaled Pass@1 (null: nothing compared)"},
            "pass_at_1": {"help_text": "that run's Pass@1 (null: nothing compared)"},
        }


class ComparedPairSerializer(_Output):
    difference = PairedDifferenceSerializer(
        allow_null=True, help_text="null: the two share no judged snippet"
    )

    class Meta:
        dataclass = ComparedPair
        extra_kwargs = {"first": {"help_text": "a model's key"}, "second": {"help_text": "a model's key"}}


class ComparisonSerializer(_Output):
    setting = SettingSerializer(
        allow_null=True, help_text="the setting compared on (null: none in common, or none the query picks)"
    )
    asked = SettingQuerySerializer(allow_null=True, help_text="the part of a setting asked for (null: none)")
    models = ComparedScoreSerializer(many=True)
    pairs = ComparedPairSerializer(
        many=True, help_text="each pair of models, in the order given (empty: nothing compared)"
    )
    common = SettingSerializer(many=True, help_text="the settings every model has a scored run on")
    nearest = SettingSerializer(
        allow_null=True,
        help_text="when none is common: the setting most of the models share (null: none, or one is common)",
    )

    class Meta:
        dataclass = ComparisonSummary
        ref_name = "Comparison"
        extra_kwargs = {
            "nearest_models": {"help_text": "keys of the models that have the nearest setting"},
            "note": {"help_text": "why nothing is compared, in words (empty when something is)"},
        }


def serializer_columns(serializer: serializers.Serializer, prefix: str = "") -> list[str]:
    """The flattened (dotted) CSV columns of an output serializer, in declaration order."""
    columns: list[str] = []
    for name, f in serializer.fields.items():
        if isinstance(f, serializers.Serializer):
            columns += serializer_columns(f, f"{prefix}{name}.")
        else:
            columns.append(f"{prefix}{name}")
    return columns
