"""Input (query parameter) and output serializers of the read API. Outputs read the selectors' dataclasses
and the catalogue/evaluation models; inputs turn query strings into ``LeaderboardFilters`` with errors
keyed by the parameter's name (a bad value -> 400 naming it)."""

from __future__ import annotations

import functools
from typing import Any

from rest_framework import serializers

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


class ModelRefSerializer(serializers.Serializer):
    key = serializers.CharField()
    name = serializers.CharField()
    developer = serializers.CharField()
    open_weights = serializers.BooleanField(allow_null=True)
    knowledge_cutoff = serializers.DateField(allow_null=True)


class ModelSerializer(ModelRefSerializer):
    company = serializers.CharField()
    provider_model_id = serializers.CharField()
    knowledge_cutoff_raw = serializers.CharField()


class ScoreSerializer(serializers.Serializer):
    scaled_pass_at_1 = serializers.FloatField(allow_null=True)
    scaled_pass_at_1_std = serializers.FloatField(allow_null=True)
    pass_at_1 = serializers.FloatField(allow_null=True)
    pass_at_1_std = serializers.FloatField(allow_null=True)
    ci95 = serializers.ListField(child=serializers.FloatField(), allow_null=True, min_length=2, max_length=2)
    coverage = serializers.FloatField()
    coverage_complete = serializers.BooleanField()
    snippets = serializers.IntegerField()
    expected_snippets = serializers.IntegerField()
    lines = serializers.IntegerField()
    papers = serializers.IntegerField()


class LeaderboardRowSerializer(serializers.Serializer):
    """One leaderboard row; ``rank`` is null for a row without a score."""

    rank = serializers.IntegerField(allow_null=True)
    model = ModelRefSerializer()
    scaled_pass_at_1 = serializers.FloatField(allow_null=True, source="score.scaled_pass_at_1")
    pass_at_1 = serializers.FloatField(allow_null=True, source="score.pass_at_1")
    scaled_pass_at_1_std = serializers.FloatField(allow_null=True, source="score.scaled_pass_at_1_std")
    pass_at_1_std = serializers.FloatField(allow_null=True, source="score.pass_at_1_std")
    ci95 = serializers.ListField(
        child=serializers.FloatField(), allow_null=True, source="score.ci95", help_text="null: not computed"
    )
    line_rates = serializers.ListField(
        child=serializers.FloatField(allow_null=True), source="score.line_rates"
    )
    task_rates = serializers.ListField(
        child=serializers.FloatField(allow_null=True), source="score.task_rates"
    )
    coverage = serializers.FloatField(source="score.coverage")
    coverage_complete = serializers.BooleanField(source="score.coverage_complete")
    snippets = serializers.IntegerField(source="score.snippets")
    expected_snippets = serializers.IntegerField(source="score.expected_snippets")
    lines = serializers.IntegerField(source="score.lines")
    papers = serializers.IntegerField(source="score.papers")
    verification = serializers.CharField()
    cost_usd = serializers.FloatField(allow_null=True)
    run_id = serializers.IntegerField()
    release = serializers.CharField(allow_null=True)
    template = serializers.CharField()
    with_paper = serializers.BooleanField()
    source = serializers.CharField()
    status = serializers.CharField()
    n_completions = serializers.IntegerField()
    finished_at = serializers.DateTimeField(allow_null=True)
    contamination = serializers.CharField()
    selection = serializers.ListField(child=serializers.CharField(), allow_null=True)


class LeaderboardSerializer(serializers.Serializer):
    results = LeaderboardRowSerializer(many=True)
    count = serializers.IntegerField()
    contamination = serializers.CharField()


class PaperScoreSerializer(serializers.Serializer):
    paper_key = serializers.CharField()
    paper_title = serializers.CharField()
    first_commit_date = serializers.DateField(allow_null=True)
    after_cutoff = serializers.BooleanField(allow_null=True)
    scaled_pass_at_1 = serializers.FloatField(allow_null=True)
    scaled_pass_at_1_std = serializers.FloatField(allow_null=True)
    snippets = serializers.IntegerField()
    expected_snippets = serializers.IntegerField()
    lines = serializers.IntegerField()
    passed = serializers.IntegerField()
    results = serializers.IntegerField()


class ErrorCountSerializer(serializers.Serializer):
    category = serializers.CharField()
    label = serializers.CharField()
    tier = serializers.CharField()
    count = serializers.IntegerField()
    share = serializers.FloatField()


class SnippetVerdictSerializer(serializers.Serializer):
    snippet_id = serializers.IntegerField()
    paper_key = serializers.CharField()
    task_key = serializers.CharField()
    name = serializers.CharField()
    lines = serializers.IntegerField()
    verdicts = serializers.CharField(help_text="one character per completion index: P, F or - (no result)")
    passed = serializers.IntegerField()
    tested = serializers.IntegerField()
    category = serializers.CharField()


class RunSummarySerializer(serializers.Serializer):
    run_id = serializers.IntegerField()
    release = serializers.CharField(allow_null=True)
    template = serializers.CharField()
    with_paper = serializers.BooleanField()
    verification = serializers.CharField()
    source = serializers.CharField()
    status = serializers.CharField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    scaled_pass_at_1 = serializers.FloatField(allow_null=True)
    pass_at_1 = serializers.FloatField(allow_null=True)
    coverage = serializers.FloatField(allow_null=True)


class ModelDetailSerializer(serializers.Serializer):
    model = ModelSerializer()
    runs = RunSummarySerializer(many=True)
    run = RunSummarySerializer(allow_null=True)
    scores = serializers.DictField(child=ScoreSerializer(), help_text="contamination mode -> score")
    per_paper = PaperScoreSerializer(many=True)
    errors = ErrorCountSerializer(many=True)
    infrastructure_errors = ErrorCountSerializer(many=True)
    verdict_grid = SnippetVerdictSerializer(many=True)
    before_cutoff = ScoreSerializer(allow_null=True)
    after_cutoff = ScoreSerializer(allow_null=True)
    undated_papers = serializers.ListField(child=serializers.CharField())


class PaperListSerializer(serializers.Serializer):
    key = serializers.CharField()
    title = serializers.CharField()
    venue = serializers.CharField()
    arxiv_id = serializers.CharField()
    arxiv_abs = serializers.CharField()
    github_url = serializers.CharField()
    first_commit_date = serializers.DateField(allow_null=True)
    last_commit_date = serializers.DateField(allow_null=True)


class SnippetNodeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    task_key = serializers.CharField()
    task_version = serializers.IntegerField()
    name = serializers.CharField()
    ordinal = serializers.IntegerField()
    depth = serializers.IntegerField(allow_null=True)
    parent_id = serializers.IntegerField(allow_null=True)
    lines = serializers.IntegerField()
    runs = serializers.IntegerField()
    results = serializers.IntegerField()
    passed = serializers.IntegerField()
    solve_rate = serializers.FloatField(allow_null=True)


class MatrixRowSerializer(serializers.Serializer):
    run_id = serializers.IntegerField()
    model = ModelRefSerializer()
    with_paper = serializers.BooleanField()
    scaled_pass_at_1 = serializers.FloatField(allow_null=True)
    after_cutoff = serializers.BooleanField(allow_null=True)
    verdicts = serializers.DictField(child=serializers.CharField(), help_text="snippet id -> verdicts")


class PaperDetailSerializer(PaperListSerializer):
    arxiv_date = serializers.DateField(allow_null=True)
    arxiv_v1_date = serializers.DateField(allow_null=True)
    tasks = serializers.ListField(child=serializers.CharField())
    snippets = SnippetNodeSerializer(many=True)
    matrix = MatrixRowSerializer(many=True)


class SnippetStatRowSerializer(serializers.Serializer):
    snippet_id = serializers.IntegerField()
    paper_key = serializers.CharField()
    task_key = serializers.CharField()
    task_version = serializers.IntegerField()
    name = serializers.CharField()
    lines = serializers.IntegerField()
    runs = serializers.IntegerField()
    results = serializers.IntegerField()
    passed = serializers.IntegerField()
    solve_rate = serializers.FloatField(allow_null=True)
    with_paper_solve_rate = serializers.FloatField(allow_null=True)
    without_paper_solve_rate = serializers.FloatField(allow_null=True)


class AttemptSerializer(serializers.Serializer):
    completion_id = serializers.IntegerField()
    completion_idx = serializers.IntegerField()
    run_id = serializers.IntegerField()
    model = ModelRefSerializer()
    with_paper = serializers.BooleanField()
    template = serializers.CharField()
    code = serializers.CharField()
    code_extracted = serializers.BooleanField()
    outcome = serializers.CharField()
    passed = serializers.BooleanField(allow_null=True)
    category = serializers.CharField()
    tier = serializers.CharField()
    exception_type = serializers.CharField()
    exception_message = serializers.CharField()
    stdout_tail = serializers.CharField()
    stderr_tail = serializers.CharField()
    duration_s = serializers.FloatField(allow_null=True)


class SnippetDetailSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    paper_key = serializers.CharField()
    paper_title = serializers.CharField()
    task_key = serializers.CharField()
    task_version_id = serializers.IntegerField()
    task_version = serializers.IntegerField()
    name = serializers.CharField()
    file = serializers.CharField()
    start_line = serializers.IntegerField(allow_null=True)
    end_line = serializers.IntegerField(allow_null=True)
    lines = serializers.IntegerField()
    depth = serializers.IntegerField(allow_null=True)
    parent_id = serializers.IntegerField(allow_null=True)
    reference_code = serializers.CharField()
    runs = serializers.IntegerField()
    results = serializers.IntegerField()
    passed = serializers.IntegerField()
    solve_rate = serializers.FloatField(allow_null=True)
    with_paper_solve_rate = serializers.FloatField(allow_null=True)
    without_paper_solve_rate = serializers.FloatField(allow_null=True)
    attempts = AttemptSerializer(many=True)


class SnippetRowSerializer(serializers.Serializer):
    """A snippet in the catalogue list, with its difficulty."""

    id = serializers.IntegerField()
    paper_key = serializers.CharField(source="task_version.task.paper.key")
    task_key = serializers.CharField(source="task_version.task.key")
    task_version = serializers.IntegerField(source="task_version.number")
    name = serializers.CharField()
    ordinal = serializers.IntegerField()
    depth = serializers.IntegerField(allow_null=True)
    lines = serializers.IntegerField()
    solve_rate = serializers.FloatField(source="stat.solve_rate", allow_null=True, default=None)
    results = serializers.IntegerField(source="stat.results", default=0)


class PaperTableRowSerializer(serializers.Serializer):
    run_id = serializers.IntegerField()
    model_key = serializers.CharField()
    model_name = serializers.CharField()
    paper_key = serializers.CharField()
    first_commit_date = serializers.DateField(allow_null=True)
    after_cutoff = serializers.BooleanField(allow_null=True)
    scaled_pass_at_1 = serializers.FloatField(allow_null=True)
    scaled_pass_at_1_std = serializers.FloatField(allow_null=True)
    snippets = serializers.IntegerField()
    expected_snippets = serializers.IntegerField()
    lines = serializers.IntegerField()


class ModelErrorsRowSerializer(serializers.Serializer):
    """One (run, category) count: the long format, one row per cell of the per-model error chart."""

    run_id = serializers.IntegerField()
    model_key = serializers.CharField()
    model_name = serializers.CharField()
    tier = serializers.CharField()
    category = serializers.CharField()
    label = serializers.CharField()
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
