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

from contributions.validators import validate_github_username, validate_orcid


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
    #: what the task needs beyond the shared base (its requirements file, task.yaml, or the inferred imports
    #: confirmed at import), resolved into ``environment_lock`` (docs/environments.md); set once
    environment_requirements = models.JSONField(default=list, blank=True)
    #: the uv lock (exact versions and hashes) the task's tests run in; "" = the worker's default interpreter
    environment_lock = models.TextField(blank=True)
    #: sha256 of ``environment_lock``: names the built environment
    environment_hash = models.CharField(max_length=64, blank=True, db_index=True)
    #: snippet name -> its impossible variants (``researchcodebench.variants.SnippetVariants.to_dict()``),
    #: which every pass on it is confirmed against (docs/integrity.md); set once, by the validation of the
    #: contribution or ``import_pset --variants``; {} when never derived (workers then derive them)
    variants = models.JSONField(default=dict, blank=True)
    #: the ``Environment.id`` the variants were derived in (a worker seeds them only into that environment)
    variants_environment = models.CharField(max_length=200, blank=True)
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


class UncheckedReason(models.TextChoices):
    """Why a maintainer accepted a snippet its test does not check (issue 18 item 5): picked from this list,
    with a written explanation of at least ``UNCHECKED_EXPLANATION_MIN`` characters."""

    SETUP = "setup", "It only prepares state that the test of another snippet checks"
    COVERED = "covered", "It is checked through an enclosing or a later snippet"
    EQUIVALENT = "equivalent", "The wrong code that passed computes the same result (an equivalent mutant)"
    UNOBSERVABLE = "unobservable", "Its effect cannot be observed by a unit test (logging, speed, memory)"
    OTHER = "other", "Another reason, explained below"


#: The shortest written explanation a maintainer may give for accepting a snippet its test does not check.
UNCHECKED_EXPLANATION_MIN = 40


class Snippet(models.Model):
    """One tag pair of a task version = one benchmark problem. ``lines`` is its line count N (docs/task-format.md).

    ``checked_by_test`` is false when the validation found that the test does not check it and a maintainer
    accepted that (``unchecked_reason``, ``unchecked_explanation``): it is marked "not checked by its test"
    wherever it is shown, and left out of the scores of releases that do not count such snippets
    (``Release.counts_unchecked_snippets``)."""

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
    checked_by_test = models.BooleanField(default=True)
    unchecked_reason = models.CharField(max_length=20, choices=UncheckedReason.choices, blank=True)
    unchecked_explanation = models.TextField(blank=True)

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
    #: whether the lines of snippets not checked by their test count in this release's scores: false for
    #: releases cut now, true for the published benchmark (it keeps the paper's scoring) and older releases
    counts_unchecked_snippets = models.BooleanField(default=False)
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


# ------------------------------------------------------------------------------------------- contributions
#
# A contribution is a ``Proposal``: a state machine (``contributions/services/proposal_state.py``;
# docs/architecture.md#the-apps-and-what-each-owns) whose every move is one service of
# ``contributions/services/`` (``proposals``, ``revisions``, ``proposal_validation``, ``review``), made
# through ``proposal_state.proposal_transition``: a conditional update plus a ``ProposalEvent``.
# Its code arrives as ``ProposalRevision``s: a revision is immutable once submitted, and a new upload after
# that is a new revision. Maintainers are the users with the ``contributions.review_proposal`` permission.


class Proposal(models.Model):
    """One contribution of a task: its paper metadata, its revisions, its state and its history.

    Moves between states only through the services of ``contributions.services`` (``proposals``,
    ``revisions``, ``proposal_validation``, ``review``), each by ``proposal_state.proposal_transition``
    (``proposal_state.TRANSITIONS`` is the full picture)::

        draft -> submitted -> validating -> changes_requested | ready_for_review -> approved -> published
        (changes_requested -> submitted again with a new revision; ready_for_review -> rejected;
        any non-final state -> withdrawn by the author)
    """

    class State(models.TextChoices):
        DRAFT = "draft", "Draft"
        SUBMITTED = "submitted", "Submitted"
        VALIDATING = "validating", "Validating"
        CHANGES_REQUESTED = "changes_requested", "Changes requested"
        READY_FOR_REVIEW = "ready_for_review", "Ready for review"
        APPROVED = "approved", "Approved"
        PUBLISHED = "published", "Published"
        REJECTED = "rejected", "Rejected"
        WITHDRAWN = "withdrawn", "Withdrawn"

    #: states no transition leaves
    FINAL_STATES = (State.PUBLISHED, State.REJECTED, State.WITHDRAWN)
    #: states whose proposal no longer holds its ``task_key`` (another proposal may use it)
    RELEASED_KEY_STATES = (State.PUBLISHED, State.REJECTED, State.WITHDRAWN)

    #: the contributor; only they edit, submit and withdraw it
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="proposals")
    state = models.CharField(max_length=20, choices=State.choices, default=State.DRAFT, db_index=True)
    #: the proposed task (and paper) key: the papers.yaml ``id`` it will be published under
    task_key = models.SlugField(max_length=100)
    #: the papers.yaml entry as ``contributions.task_meta.meta_to_json`` (the form fills it step by step)
    meta = models.JSONField(default=dict, blank=True)
    #: the paper title, copied from ``meta`` for the review queue's filters and sorting
    title = models.CharField(max_length=500, blank=True)
    #: the arXiv identifier (``researchcodebench.arxiv.arxiv_id``), "" when the paper has none
    arxiv_id = models.CharField(max_length=32, blank=True)
    #: the contribution form's answers so far, step name -> that step's cleaned data (a draft is resumable)
    draft = models.JSONField(default=dict, blank=True)
    #: the last form step the author completed (0 before the first)
    step = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    #: when ``state`` last changed (the review queue's waiting time counts from here)
    state_changed_at = models.DateTimeField(auto_now_add=True, db_index=True)
    #: the task version publishing created (null until published)
    published_version = models.ForeignKey(
        TaskVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="proposals"
    )

    class Meta:
        ordering = ["-created_at"]
        permissions = [
            ("review_proposal", "Can review proposals"),
            ("cut_release", "Can cut releases"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["task_key"],
                condition=~models.Q(state__in=["published", "rejected", "withdrawn"]),
                name="proposal_unique_open_task_key",
                violation_error_message="another open proposal already uses this task key",
            ),
        ]

    def __str__(self) -> str:
        return f"proposal {self.pk} ({self.task_key}, {self.state})"

    @property
    def is_final(self) -> bool:
        return self.state in self.FINAL_STATES


class ProposalRevision(models.Model):
    """One upload of a proposal's code: its files, manifest and validation. Immutable once submitted.

    The services refuse to change a revision whose ``submitted_at`` is set (only its validation fields move
    afterwards); a new upload after submission is a new revision with the next ``number``.
    """

    class Source(models.TextChoices):
        ARCHIVE = "archive", "Archive upload"
        GIT = "git", "Git repository"
        #: the previous revision's files with the snippets the author marked in the browser written as tags
        MARKS = "marks", "Snippets marked in the browser"

    class ValidationStatus(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        PASSED = "passed", "Passed"
        FAILED = "failed", "Failed"
        ERROR = "error", "Could not run"

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="revisions")
    #: 1, 2, ... per proposal, in upload order
    number = models.PositiveIntegerField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    source = models.CharField(max_length=10, choices=Source.choices)
    #: the uploaded file's name, or the git URL the code was fetched from
    origin = models.CharField(max_length=2000)
    #: the git commit sha the code was fetched at ("" for an archive)
    commit = models.CharField(max_length=64, blank=True)
    #: relpath -> sha256 of a FileBlob (every file of the upload, byte-exact)
    files = models.JSONField(default=dict)
    #: the author's declarations: annotated_files, context_files, oracle_files, test_entry
    #: (default paper2code_test.py), paper_file, requirements_file, needs_gpu
    manifest = models.JSONField(default=dict)
    #: sha256 over the sorted (relpath, sha256) pairs and the manifest: equal uploads hash equal
    content_hash = models.CharField(max_length=64, db_index=True)
    #: when the author submitted it (null while it is the editable draft revision)
    submitted_at = models.DateTimeField(null=True, blank=True)
    validation_status = models.CharField(
        max_length=10, choices=ValidationStatus.choices, default=ValidationStatus.PENDING
    )
    #: ``researchcodebench.validation.ValidationReport.to_dict()`` of the finished battery, or
    #: ``{"error": reason}`` when it could not run
    validation_report = models.JSONField(default=dict, blank=True)
    #: the stages reported so far while the battery runs: a list of {"stage", "at", "data"}
    validation_progress = models.JSONField(default=list, blank=True)
    validation_started_at = models.DateTimeField(null=True, blank=True)
    validation_finished_at = models.DateTimeField(null=True, blank=True)
    #: after this instant the watchdog fails the validation and stops its job (its time limit plus the job's
    #: grace after it started)
    validation_deadline = models.DateTimeField(null=True, blank=True, db_index=True)
    #: the Celery task id of the job running the validation ("" before it starts), for the watchdog to stop
    validation_job_id = models.CharField(max_length=255, blank=True, default="")
    #: how many times a validation of this revision has started (infrastructure retries count)
    validation_attempts = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["proposal", "number"]
        constraints = [
            models.UniqueConstraint(fields=["proposal", "number"], name="proposalrevision_unique_number"),
        ]

    def __str__(self) -> str:
        return f"proposal {self.proposal_id} r{self.number}"

    @property
    def needs_gpu(self) -> bool:
        return bool((self.manifest or {}).get("needs_gpu"))


class ProposalEvent(models.Model):
    """The history of a proposal: one row per state change, with who, when, why and the status it gave."""

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="events")
    #: the revision the change concerns (null for changes that concern none, e.g. a withdrawal of a draft)
    revision = models.ForeignKey(
        ProposalRevision, null=True, blank=True, on_delete=models.CASCADE, related_name="events"
    )
    #: who made the change; null for the system (validation, the watchdog)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    #: "" for the creation of the proposal
    from_state = models.CharField(max_length=20, blank=True)
    to_state = models.CharField(max_length=20)
    #: the status the change gave the proposal (a ``proposal_status.STATUS_WORDS`` key) and its badge's words
    #: then; "" for rows written without one (a creation, an import: their state says it)
    status = models.CharField(max_length=40, blank=True)
    status_label = models.CharField(max_length=200, blank=True)
    reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["created_at", "pk"]

    def __str__(self) -> str:
        return f"proposal {self.proposal_id}: {self.from_state or '-'} -> {self.to_state}"


class Review(models.Model):
    """A maintainer's review of one revision: a decision, the rubric checklist, a Markdown body."""

    class Decision(models.TextChoices):
        APPROVE = "approve", "Approve"
        REQUEST_CHANGES = "request_changes", "Request changes"
        REJECT = "reject", "Reject"
        COMMENT = "comment", "Comment"

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="reviews")
    revision = models.ForeignKey(ProposalRevision, on_delete=models.CASCADE, related_name="reviews")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    decision = models.CharField(max_length=20, choices=Decision.choices)
    #: rubric item key (``contributions.services.proposals.RUBRIC``) -> checked
    rubric = models.JSONField(default=dict, blank=True)
    #: Markdown source (rendered safely by the pages)
    body = models.TextField(blank=True)
    #: snippet name -> the reviewer's written reason for accepting a "not checked by the test" finding
    snippet_overrides = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "pk"]

    def __str__(self) -> str:
        return f"review of {self.revision}: {self.decision}"


class Comment(models.Model):
    """A comment on a proposal: anchored to a file and line of a revision, or in the general thread."""

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="comments")
    #: the revision whose code the comment is anchored to (null for the general thread)
    revision = models.ForeignKey(
        ProposalRevision, null=True, blank=True, on_delete=models.CASCADE, related_name="comments"
    )
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    #: relpath in the revision ("" for the general thread)
    file = models.CharField(max_length=500, blank=True)
    #: 1-based line in ``file`` (null for a comment on the whole file or the thread)
    line = models.PositiveIntegerField(null=True, blank=True)
    #: Markdown source (rendered safely by the pages)
    body = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "pk"]

    def __str__(self) -> str:
        where = f" at {self.file}:{self.line or ''}" if self.file else ""
        return f"comment on proposal {self.proposal_id}{where}"


class Notification(models.Model):
    """An in-app notification of a proposal's event for one user (the author or a maintainer)."""

    recipient = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications"
    )
    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="notifications")
    event = models.ForeignKey(
        ProposalEvent, null=True, blank=True, on_delete=models.CASCADE, related_name="notifications"
    )
    message = models.CharField(max_length=1000)
    #: the page to open (the proposal's page)
    url = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    #: when the recipient marked it read (null while unread)
    read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["recipient", "read_at"], name="notification_unread")]

    def __str__(self) -> str:
        return f"to {self.recipient_id}: {self.message[:40]}"


# Accounts: users are contributors. Sign-up, sign-in and email addresses are django-allauth's; the portal adds
# a public profile and personal API tokens (contributions/views/accounts.py, contributions/services/accounts.py).


class Profile(models.Model):
    """What a contributor shows about themselves; created on first edit (``profile_get_or_create``)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile")
    #: the name credited on papers and proposals ("" falls back to the user name)
    display_name = models.CharField(max_length=150, blank=True)
    affiliation = models.CharField(max_length=200, blank=True)
    #: 0000-0000-0000-000X, checksum verified (ISO 7064 MOD 11-2)
    orcid = models.CharField("ORCID iD", max_length=19, blank=True, validators=[validate_orcid])
    github = models.CharField("GitHub user", max_length=39, blank=True, validators=[validate_github_username])
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"profile of {self.user_id}"


class ApiToken(models.Model):
    """A personal, named API token (``Authorization: Token <secret>``) for the upload API.

    Only the SHA-256 digest of the secret is stored: the secret is shown once, when it is created, and a
    database leak gives no usable token. A plain (unsalted, fast) hash suffices because the secret is 256
    random bits, not a password; it lets a request find its token with one indexed lookup.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    #: the secret's first characters, shown in the token list so that its owner can tell tokens apart
    prefix = models.CharField(max_length=16)
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "name"],
                name="api_token_unique_name_per_user",
                violation_error_message="you already have a token with this name",
            )
        ]

    def __str__(self) -> str:
        return f"token {self.name!r} of {self.user_id} ({self.prefix}...)"
