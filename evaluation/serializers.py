"""API input and output shapes of the evaluation app."""

from __future__ import annotations

from rest_framework import serializers

from researchcodebench.problems import TEMPLATES


class PredictionsUploadInput(serializers.Serializer):
    """multipart/form-data: the model (by key), the release (by name), the template and the JSONL file."""

    model = serializers.CharField(max_length=100, help_text="key of the model (created when unknown)")
    model_name = serializers.CharField(
        max_length=200, required=False, help_text="display name: creates the model when its key is unknown"
    )
    release = serializers.CharField(max_length=100, help_text="name of the benchmark release")
    template = serializers.ChoiceField(
        choices=TEMPLATES,
        default="rcb-v2",
        # The default message repeats the submitted value, which may be of any size.
        error_messages={"invalid_choice": f"choose one of {', '.join(TEMPLATES)}"},
    )
    file = serializers.FileField(help_text="predictions JSONL, one object per line")


class RunCoverageOutput(serializers.Serializer):
    covered_snippets = serializers.IntegerField()
    release_snippets = serializers.IntegerField()


class PredictionsUploadOutput(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.URLField(help_text="the run's page (live progress)")
    status = serializers.CharField()
    items = serializers.IntegerField(help_text="predictions to test")
    coverage = RunCoverageOutput()


class ErrorListOutput(serializers.Serializer):
    errors = serializers.ListField(child=serializers.CharField())
