"""What the benchmark is: papers, tasks, immutable task versions with their files and snippets, releases.

Every result in the portal points at a ``TaskVersion``. A version never changes once created: fixing a task
creates a new version, and old results stay attached to the old one. A ``Release`` is a named set of task
versions (at most one version per task).

A version imported from the original paper's published results, whose task folder the portal does not have,
is *metadata-only* (``has_files`` false): its snippets carry names and line counts but no code.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Paper(models.Model):
    """A paper behind a task. ``key`` is the registry id (papers.yaml ``id``, e.g. "DyT")."""

    key = models.CharField(max_length=100, unique=True)
    title = models.CharField(max_length=500)
    arxiv_id = models.CharField(max_length=32, blank=True)
    arxiv_abs = models.URLField(blank=True)
    venue = models.CharField(max_length=100, blank=True)
    arxiv_date = models.DateField(null=True, blank=True)
    arxiv_v1_date = models.DateField(null=True, blank=True)
    github_url = models.URLField(blank=True)
    first_commit_date = models.DateField(null=True, blank=True)
    last_commit_date = models.DateField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["key"]

    def __str__(self) -> str:
        return f"{self.key}: {self.title}"


class Task(models.Model):
    """A benchmark task (one task folder of the original format); its content lives in versions."""

    key = models.CharField(max_length=100, unique=True)
    paper = models.ForeignKey(Paper, on_delete=models.PROTECT, related_name="tasks")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["key"]

    def __str__(self) -> str:
        return self.key


class FileBlob(models.Model):
    """Content-addressed file bytes shared by every version that holds the same file."""

    sha256 = models.CharField(max_length=64, primary_key=True)
    size = models.PositiveBigIntegerField()
    content = models.BinaryField()

    def __str__(self) -> str:
        return f"{self.sha256[:12]} ({self.size} B)"


class TaskVersion(models.Model):
    """An immutable snapshot of a task folder: files, registry entry, manifest and validation report."""

    class Origin(models.TextChoices):
        IMPORTED = "imported", "Imported from a pset folder"
        PUBLISHED = "published", "Metadata from the paper's published results"
        CONTRIBUTED = "contributed", "Approved contribution"

    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="versions")
    number = models.PositiveIntegerField()
    content_hash = models.CharField(max_length=64, db_index=True)
    origin = models.CharField(max_length=16, choices=Origin.choices)
    has_files = models.BooleanField(default=True)
    #: relpath -> sha256 of a FileBlob (every file of the task folder, byte-exact)
    files = models.JSONField(default=dict)
    #: the papers.yaml entry as PaperMeta.to_dict()
    meta = models.JSONField(default=dict)
    #: the task manifest as TaskManifest.to_dict()
    manifest = models.JSONField(default=dict)
    #: every validation issue as AnnotationIssue.to_dict()
    validation_report = models.JSONField(default=list)
    paper_file = models.CharField(max_length=255, blank=True)
    needs_gpu = models.BooleanField(default=False)
    total_lines = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        ordering = ["task__key", "number"]
        constraints = [
            models.UniqueConstraint(fields=["task", "number"], name="taskversion_unique_number"),
            models.UniqueConstraint(fields=["task", "content_hash"], name="taskversion_unique_content"),
        ]

    def __str__(self) -> str:
        return f"{self.task.key} v{self.number}"


class Snippet(models.Model):
    """One tag pair of a task version = one benchmark problem. ``lines`` is its line count N (docs/task-format.md)."""

    task_version = models.ForeignKey(TaskVersion, on_delete=models.CASCADE, related_name="snippets")
    name = models.CharField(max_length=500)
    ordinal = models.PositiveIntegerField(help_text="document order within the task version")
    file = models.CharField(max_length=500, blank=True)
    start_line = models.PositiveIntegerField(null=True, blank=True)
    end_line = models.PositiveIntegerField(null=True, blank=True)
    lines = models.PositiveIntegerField()
    indent = models.PositiveIntegerField(default=0)
    depth = models.PositiveIntegerField(null=True, blank=True)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="children"
    )
    code = models.TextField(blank=True)

    class Meta:
        ordering = ["task_version", "ordinal"]
        constraints = [
            models.UniqueConstraint(fields=["task_version", "name"], name="snippet_unique_name"),
            models.CheckConstraint(condition=models.Q(lines__gte=0), name="snippet_lines_nonnegative"),
        ]

    def __str__(self) -> str:
        return f"{self.task_version}: {self.name}"


class Release(models.Model):
    """A named, citable set of task versions (at most one version per task)."""

    name = models.SlugField(max_length=100, unique=True)
    title = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    is_default = models.BooleanField(default=False, help_text="the release the leaderboard shows first")
    task_versions = models.ManyToManyField(TaskVersion, through="ReleaseEntry", related_name="releases")
    git_tag = models.CharField(max_length=200, blank=True)
    #: the benchmark repository commit holding this release ("" until it is committed)
    git_commit = models.CharField(max_length=40, blank=True)
    #: why committing to the benchmark repository failed ("" when it did not); the import itself stands
    git_error = models.TextField(blank=True)
    #: relpath -> sha256 of a FileBlob: the imported pset's own top-level files (papers.yaml verbatim, a
    #: README), exported unchanged; empty for releases not imported from a folder
    pset_files = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["is_default"], condition=models.Q(is_default=True), name="release_single_default"
            )
        ]

    def __str__(self) -> str:
        return self.name


class ReleaseEntry(models.Model):
    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="entries")
    task_version = models.ForeignKey(TaskVersion, on_delete=models.PROTECT, related_name="release_entries")
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="+")
    #: order of the task in the release's papers.yaml (registry order of the imported pset)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["position", "task__key"]
        constraints = [
            models.UniqueConstraint(fields=["release", "task"], name="releaseentry_one_version_per_task"),
        ]

    def __str__(self) -> str:
        return f"{self.release.name}: {self.task_version}"
