from django.contrib import admin

from contributions.models import (
    Comment,
    Notification,
    Paper,
    Proposal,
    ProposalEvent,
    ProposalRevision,
    Release,
    ReleaseEntry,
    Review,
    Snippet,
    Task,
    TaskVersion,
)


@admin.register(Paper)
class PaperAdmin(admin.ModelAdmin):
    list_display = ("key", "title", "venue", "first_commit_date")
    search_fields = ("key", "title", "arxiv_id")


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ("key", "paper", "created_at")
    search_fields = ("key",)


@admin.register(TaskVersion)
class TaskVersionAdmin(admin.ModelAdmin):
    list_display = ("task", "number", "origin", "has_files", "content_hash", "created_at")
    list_filter = ("origin", "has_files")
    readonly_fields = [f.name for f in TaskVersion._meta.fields]


@admin.register(Snippet)
class SnippetAdmin(admin.ModelAdmin):
    list_display = ("name", "task_version", "file", "lines", "depth")
    search_fields = ("name",)
    list_select_related = ("task_version__task",)


class ReleaseEntryInline(admin.TabularInline):
    model = ReleaseEntry
    extra = 0


@admin.register(Release)
class ReleaseAdmin(admin.ModelAdmin):
    list_display = ("name", "title", "is_default", "created_at")
    inlines = [ReleaseEntryInline]


# Proposals move only through contributions.services (proposals, proposal_validation, review: each move
# records history and notifies),
# so the admin shows them read-only: a state edited here would skip both.
class _ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


class ProposalEventInline(admin.TabularInline):
    model = ProposalEvent
    extra = 0
    can_delete = False
    fields = ("created_at", "from_state", "to_state", "actor", "revision", "reason")
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Proposal)
class ProposalAdmin(_ReadOnlyAdmin):
    list_display = ("pk", "task_key", "title", "author", "state", "state_changed_at")
    list_filter = ("state",)
    search_fields = ("task_key", "title", "arxiv_id", "author__username")
    inlines = [ProposalEventInline]


@admin.register(ProposalRevision)
class ProposalRevisionAdmin(_ReadOnlyAdmin):
    list_display = (
        "proposal",
        "number",
        "source",
        "submitted_at",
        "validation_status",
        "validation_attempts",
    )
    list_filter = ("validation_status", "source")
    list_select_related = ("proposal",)


@admin.register(Review)
class ReviewAdmin(_ReadOnlyAdmin):
    list_display = ("proposal", "revision", "reviewer", "decision", "created_at")
    list_filter = ("decision",)


@admin.register(Comment)
class CommentAdmin(_ReadOnlyAdmin):
    list_display = ("proposal", "author", "file", "line", "created_at")


@admin.register(Notification)
class NotificationAdmin(_ReadOnlyAdmin):
    list_display = ("recipient", "proposal", "message", "created_at", "read_at")
