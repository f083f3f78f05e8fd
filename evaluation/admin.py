from django.contrib import admin

from evaluation.models import (
    Completion,
    EvaluationRun,
    LanguageModel,
    PredictionsUpload,
    TestResult,
    WorkerHeartbeat,
)


@admin.register(LanguageModel)
class LanguageModelAdmin(admin.ModelAdmin):
    list_display = (
        "key",
        "name",
        "developer",
        "management",
        "owner",
        "open_weights",
        "knowledge_cutoff",
        "active",
    )
    list_filter = ("management", "developer", "open_weights", "active", "provider")
    search_fields = ("key", "name", "provider_model_id")
    list_select_related = ("owner",)
    raw_id_fields = ("owner",)
    filter_horizontal = ("uploaders",)


@admin.register(EvaluationRun)
class EvaluationRunAdmin(admin.ModelAdmin):
    list_display = ("id", "model", "release", "source", "verification", "status", "created_at")
    list_filter = ("status", "source", "verification")
    list_select_related = ("model", "release")


@admin.register(Completion)
class CompletionAdmin(admin.ModelAdmin):
    list_display = ("id", "run", "snippet", "completion_idx", "stage", "attempts")
    list_filter = ("stage",)
    raw_id_fields = ("run", "snippet")


@admin.register(TestResult)
class TestResultAdmin(admin.ModelAdmin):
    list_display = ("completion", "outcome", "category", "tier", "duration_s")
    list_filter = ("outcome", "tier", "category")
    raw_id_fields = ("completion",)


@admin.register(WorkerHeartbeat)
class WorkerHeartbeatAdmin(admin.ModelAdmin):
    list_display = ("hostname", "status", "queues", "last_seen_at")


@admin.register(PredictionsUpload)
class PredictionsUploadAdmin(admin.ModelAdmin):
    list_display = ("id", "requester", "release", "model_key", "status", "run", "received_at", "checked_at")
    list_filter = ("status",)
    list_select_related = ("requester", "release", "run")
    raw_id_fields = ("requester", "run")
    exclude = ("data",)
    readonly_fields = ("sha256", "errors", "received_at", "sent_at", "checked_at")
