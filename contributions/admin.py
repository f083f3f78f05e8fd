from django.contrib import admin

from contributions.models import Paper, Release, ReleaseEntry, Snippet, Task, TaskVersion


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
