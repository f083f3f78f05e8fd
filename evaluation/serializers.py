"""API input and output shapes of the evaluation app."""

from __future__ import annotations

from rest_framework import serializers

from contributions.api_fields import KnownNameField
from contributions.models import Release
from evaluation.models import EvaluationRun, LanguageModel, PredictionsUpload, TestResult
from evaluation.selectors.runs import RunFilters, run_requester_for_viewer
from evaluation.services.uploads import MODEL_KEY_RE
from researchcodebench.problems import TEMPLATES


class PredictionsUploadInput(serializers.Serializer):
    """multipart/form-data: the model (by key), the release (by name), the template, the paper setting and the
    JSONL file."""

    model = KnownNameField(
        known=lambda: list(LanguageModel.objects.order_by("key").values_list("key", flat=True)),
        new_pattern=MODEL_KEY_RE.pattern,
        min_length=1,
        max_length=100,
        help_text="key of the model. An existing model's key is refused (400, `model: ...`) unless its token's "
        "user may upload for it: a model they created, one a maintainer granted them, or any but a published "
        "model for a maintainer. An unknown key creates the model: it must match the pattern, needs "
        "`model_name`, and is refused when it reads the same as an existing model's key or name "
        "(letters that look alike, case and punctuation aside)",
    )
    model_name = serializers.CharField(
        max_length=200,
        required=False,
        help_text="display name: creates the model when its key is unknown (required then: without it the "
        "upload is a 400 naming `model_name`); refused when another model has that name or one that reads "
        "the same. Ignored for an existing key",
    )
    release = KnownNameField(
        known=lambda: list(Release.objects.order_by("name").values_list("name", flat=True)),
        max_length=100,
        help_text="name of the benchmark release",
    )
    # Not nullable: a multipart form has no null; absent is the release's default.
    template = serializers.ChoiceField(
        choices=TEMPLATES,
        required=False,
        help_text="the prompt template the answers were made with (how code is extracted from a 'response'); "
        "absent: the release's default",
        # The default message repeats the submitted value, which may be of any size.
        error_messages={"invalid_choice": f"choose one of {', '.join(TEMPLATES)}"},
    )
    # allow_null: in a multipart form an absent boolean would otherwise read as false, not as "not given".
    with_paper = serializers.BooleanField(
        required=False,
        allow_null=True,
        default=None,
        help_text="whether the paper was in the prompt (true/false); absent: the release's default. The run is "
        "ranked on the board of its release, template and paper setting",
    )
    file = serializers.FileField(
        help_text="predictions JSONL for the release (docs/predictions.md): UTF-8 text, one JSON object per "
        "line naming a task and a snippet of the release, within the size, line and code limits. A file that "
        "is not is a 400 listing each problem (`file: ...`, `line N: ...`); nothing is created"
    )


class RunCoverageOutput(serializers.Serializer):
    covered_snippets = serializers.IntegerField()
    release_snippets = serializers.IntegerField()


class PredictionsUploadOutput(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.URLField(help_text="the run's page (live progress)")
    status = serializers.CharField()
    items = serializers.IntegerField(help_text="predictions to test")
    coverage = RunCoverageOutput()
    template = serializers.CharField(help_text="the prompt template stored on the run")
    with_paper = serializers.BooleanField(
        help_text="whether the paper was in the prompt, as stored on the run"
    )
    board_url = serializers.URLField(help_text="the board of the run's release, template and paper setting")


class UploadReceiptOutput(serializers.Serializer):
    id = serializers.IntegerField(help_text="the upload")
    url = serializers.URLField(help_text="where to ask for it again (also the 202's Location)")
    status = serializers.ChoiceField(
        choices=PredictionsUpload.Status.values,
        help_text="received: waiting for a worker to check it; started: its run started (run); refused: "
        "nothing was created (errors); failed: the portal could not check it, nothing was created (errors; "
        "send it again later)",
    )
    received_at = serializers.DateTimeField()
    checked_at = serializers.DateTimeField(allow_null=True)
    errors = serializers.ListField(
        child=serializers.CharField(),
        help_text="a refusal's problems, as a synchronous upload's 400 says them; a failure's reason",
    )
    run = PredictionsUploadOutput(allow_null=True, help_text="the run it started, once started")


class ErrorListOutput(serializers.Serializer):
    errors = serializers.ListField(child=serializers.CharField())


# --- The read API of runs and their results ------------------------------------------------------------


# Outputs that mirror a model list its fields (``Meta.fields``), read-only: the model is the one definition
# of their names and types. (Comments, not docstrings: a serializer's docstring becomes its description in
# the OpenAPI schema.)
class RunModelSerializer(serializers.ModelSerializer):
    class Meta:
        model = LanguageModel
        fields = read_only_fields = ("key", "name", "developer", "open_weights", "knowledge_cutoff")


class RunSerializer(serializers.ModelSerializer):
    model = RunModelSerializer()
    release = serializers.CharField(source="release.name", allow_null=True, default=None)
    requester = serializers.SerializerMethodField(
        help_text="who asked for the run: shown only to them and to maintainers, null for everyone else"
    )

    class Meta:
        model = EvaluationRun
        fields = read_only_fields = (
            "id", "model", "release", "template", "with_paper", "n_completions", "source", "verification",
            "status", "status_reason", "cost_usd", "created_at", "finished_at", "requester",
        )  # fmt: skip
        # a number in JSON, as before (DRF's default for decimals is a string)
        extra_kwargs = {"cost_usd": {"coerce_to_string": False}}

    def get_requester(self, run: EvaluationRun) -> str | None:
        request = self.context.get("request")
        return run_requester_for_viewer(run=run, viewer=getattr(request, "user", None))


def _choice(choices: list[str], **kwargs: object) -> serializers.ChoiceField:
    allowed = ", ".join(choices)
    return serializers.ChoiceField(
        choices=choices, error_messages={"invalid_choice": f'"{{input}}" is not one of: {allowed}.'}, **kwargs
    )


class RunQuerySerializer(serializers.Serializer):
    model = serializers.CharField(required=False, max_length=100, help_text="a model key")
    status = _choice([s.value for s in EvaluationRun.Status], required=False)
    source = _choice([s.value for s in EvaluationRun.Source], required=False)
    release = serializers.CharField(required=False, max_length=100)

    def to_filters(self) -> RunFilters:
        return RunFilters(**{name: self.validated_data.get(name, "") for name in self.fields})


class ResultSerializer(serializers.Serializer):
    """One completion of a run with its verdict of record (``outcome`` empty: not tested yet)."""

    completion_id = serializers.IntegerField(source="id")
    paper_key = serializers.CharField(source="snippet.task_version.task.paper.key")
    task_key = serializers.CharField(source="snippet.task_version.task.key")
    snippet_id = serializers.IntegerField()
    snippet = serializers.CharField(source="snippet.name")
    lines = serializers.IntegerField(source="snippet.lines")
    #: False: the snippet's test does not check it (marked everywhere; left out of new releases' scores)
    snippet_checked_by_test = serializers.BooleanField(source="snippet.checked_by_test")
    completion_idx = serializers.IntegerField()
    stage = serializers.CharField()
    outcome = serializers.CharField(source="result.outcome", default="")
    passed = serializers.BooleanField(source="result.passed", allow_null=True, default=None)
    category = serializers.CharField(source="result.category", default="")
    tier = serializers.CharField(source="result.tier", default="")
    exit_code = serializers.IntegerField(source="result.exit_code", allow_null=True, default=None)
    duration_s = serializers.FloatField(source="result.duration_s", allow_null=True, default=None)
    # Memorisation (docs/scoring.md#memorisation): null when not measured
    near_verbatim = serializers.BooleanField(
        allow_null=True,
        help_text="reproduces the reference snippet nearly verbatim (null: not measured, or the reference "
        "is under 20 normalised tokens: too short to tell)",
    )
    overlap_run_share = serializers.FloatField(
        allow_null=True,
        help_text="longest run of normalised tokens shared with the reference, over the reference's (0-1)",
    )
    overlap_ngram_share = serializers.FloatField(
        allow_null=True,
        help_text="share of the reference's distinct 5-token sequences in the completion (0-1)",
    )


class ResultQuerySerializer(serializers.Serializer):
    outcome = _choice([o.value for o in TestResult.Outcome], required=False)
    paper = serializers.CharField(required=False, max_length=100)
