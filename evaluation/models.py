"""How models did on the benchmark: language models, runs, completions, test results; and worker liveness.

Workers report liveness in the database, so that /healthz works with any broker.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from contributions.models import Release, Snippet, TaskVersion


class WorkerHeartbeat(models.Model):
    """The last sign of life of one Celery worker process (one row per worker hostname)."""

    class Status(models.TextChoices):
        ONLINE = "online", "Online"
        STOPPED = "stopped", "Stopped"

    hostname = models.CharField(max_length=255, unique=True)
    queues = models.JSONField(default=list)
    #: the GPUs the worker's host has, as ``researchcodebench.gpu.detect_gpus`` lists them ([] for none)
    devices = models.JSONField(default=list, blank=True)
    pid = models.PositiveIntegerField(null=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ONLINE)
    started_at = models.DateTimeField()
    last_seen_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["hostname"]

    def __str__(self) -> str:
        return f"{self.hostname} ({self.status})"


class BrokerProbe(models.Model):
    """A round trip through a queue: created by the sender, completed by whichever worker consumed it."""

    queue = models.CharField(max_length=32)
    token = models.CharField(max_length=64, unique=True)
    sent_at = models.DateTimeField(auto_now_add=True)
    received_at = models.DateTimeField(null=True)
    worker_hostname = models.CharField(max_length=255, blank=True)

    class Meta:
        ordering = ["-sent_at"]

    def __str__(self) -> str:
        return f"probe {self.token[:8]} via {self.queue}"


class LanguageModel(models.Model):
    """A model that can be evaluated. API keys are never stored: ``api_key_env`` names the variable.

    ``management`` says who answers for the model's results, and so who may upload predictions for it
    (``evaluation.services.language_models.language_model_upload_check``): nobody for a ``published``
    model, maintainers and granted ``uploaders`` for a ``maintainer`` one, its ``owner`` too for a
    ``self_reported`` one.
    """

    class Management(models.TextChoices):
        PUBLISHED = "published", "Published with the paper"
        MAINTAINER = "maintainer", "Managed by the maintainers"
        SELF_REPORTED = "self_reported", "Self-reported by a user"

    class Provider(models.TextChoices):
        OPENAI = "openai", "OpenAI"
        ANTHROPIC = "anthropic", "Anthropic (OpenAI-compatible endpoint)"
        GOOGLE = "google", "Google (OpenAI-compatible endpoint)"
        XAI = "xai", "xAI"
        DEEPSEEK = "deepseek", "DeepSeek"
        OPENROUTER = "openrouter", "OpenRouter"
        VLLM = "vllm", "Local vLLM server"
        OLLAMA = "ollama", "Local Ollama server"
        OTHER = "other", "Other OpenAI-compatible endpoint"

    key = models.CharField(max_length=100, unique=True)
    name = models.CharField(max_length=200, unique=True, help_text="display name")
    provider = models.CharField(max_length=16, choices=Provider.choices, default=Provider.OTHER)
    provider_model_id = models.CharField(max_length=200, blank=True)
    developer = models.CharField(max_length=100, blank=True)
    company = models.CharField(max_length=100, blank=True)
    open_weights = models.BooleanField(null=True)
    knowledge_cutoff = models.DateField(null=True, blank=True)
    knowledge_cutoff_raw = models.CharField(max_length=32, blank=True, help_text="as the source gave it")
    release_date = models.DateField(null=True, blank=True)
    input_cost_per_mtok = models.DecimalField(max_digits=10, decimal_places=4, null=True, blank=True)
    output_cost_per_mtok = models.DecimalField(max_digits=10, decimal_places=4, null=True, blank=True)
    base_url = models.URLField(
        blank=True, help_text="OpenAI-compatible endpoint; empty = the provider's default"
    )
    api_key_env = models.CharField(
        max_length=100, blank=True, help_text="environment variable with the API key"
    )
    request_options = models.JSONField(
        default=dict, blank=True, help_text="e.g. temperature, reasoning_effort"
    )
    max_concurrency = models.PositiveIntegerField(default=4)
    active = models.BooleanField(default=True, help_text="evaluate this model on newly approved tasks")
    # Locked unless a writer says otherwise: a model nobody classified must not accept anyone's uploads.
    management = models.CharField(
        max_length=16, choices=Management.choices, default=Management.MAINTAINER, db_index=True
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="owned_language_models",
        help_text="the user who created the model through an upload",
    )
    uploaders = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        blank=True,
        related_name="upload_granted_language_models",
        help_text="users a maintainer allowed to upload predictions for this model",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(max_concurrency__gte=1), name="model_concurrency_positive"
            ),
            models.CheckConstraint(
                condition=models.Q(management__in=["published", "maintainer", "self_reported"]),
                name="model_management_valid",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_self_reported(self) -> bool:
        return self.management == self.Management.SELF_REPORTED


class EvaluationRun(models.Model):
    """One model evaluated on a release (or an explicit set of task versions)."""

    class Source(models.TextChoices):
        IMPORTED = "imported", "Imported"
        UPLOADED = "uploaded", "Uploaded predictions"
        GENERATED = "generated", "Generated by the portal"

    class Verification(models.TextChoices):
        PUBLISHED = "published", "Published with the paper"
        UPLOADED = "uploaded", "Self-reported generations, tested by us"
        GENERATED = "generated", "Generated and tested by the portal"
        RERUN = "rerun", "Re-run by a maintainer"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        GENERATING = "generating", "Generating"
        TESTING = "testing", "Testing"
        FINISHED = "finished", "Finished"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    FINAL_STATUSES = (Status.FINISHED, Status.FAILED, Status.CANCELLED)

    model = models.ForeignKey(LanguageModel, on_delete=models.PROTECT, related_name="runs")
    release = models.ForeignKey(Release, null=True, blank=True, on_delete=models.PROTECT, related_name="runs")
    task_versions = models.ManyToManyField(TaskVersion, related_name="runs", blank=True)
    template = models.CharField(max_length=16, default="rcb-v2")
    with_paper = models.BooleanField(default=True)
    n_completions = models.PositiveIntegerField(default=1)
    temperature = models.FloatField(null=True, blank=True)
    source = models.CharField(max_length=16, choices=Source.choices)
    verification = models.CharField(max_length=16, choices=Verification.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED, db_index=True)
    status_reason = models.TextField(blank=True)
    #: per-outcome counts and progress, refreshed by the service that records results
    counts = models.JSONField(default=dict, blank=True)
    total_items = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    label = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    requester = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    #: an uploaded run: the submitter's idempotency key (a retry with it returns this run instead of a second
    #: one) and the SHA-256 of the file, which a retry must repeat
    upload_key = models.CharField(max_length=128, blank=True)
    upload_sha256 = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(n_completions__gte=1), name="run_n_completions_positive"
            ),
            models.UniqueConstraint(
                fields=["requester", "upload_key"],
                condition=~models.Q(upload_key=""),
                name="run_upload_key_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"run {self.pk} of {self.model}"

    @property
    def is_final(self) -> bool:
        return self.status in self.FINAL_STATUSES


class Completion(models.Model):
    """One completion of one snippet in a run: how it was produced and where its test stands.

    Generation and testing are leased work: a worker takes an item by a conditional update that sets
    ``lease_expires_at``; it renews the lease with heartbeats; a reaper re-queues items whose lease
    expired and fails an item for good after ``MAX_ATTEMPTS``.
    """

    class Stage(models.TextChoices):
        PENDING_GENERATION = "pending_generation", "Waiting for generation"
        GENERATING = "generating", "Generating"
        PENDING_TEST = "pending_test", "Waiting for a test worker"
        TESTING = "testing", "Testing"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    MAX_ATTEMPTS = 3

    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="completions")
    snippet = models.ForeignKey(Snippet, on_delete=models.PROTECT, related_name="completions")
    completion_idx = models.PositiveIntegerField(default=0)
    stage = models.CharField(
        max_length=24, choices=Stage.choices, default=Stage.PENDING_GENERATION, db_index=True
    )
    prompt_hash = models.CharField(max_length=64, blank=True)
    raw_response = models.TextField(blank=True)
    code = models.TextField(blank=True)
    code_extracted = models.BooleanField(default=True, help_text="false: no code could be extracted")
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    latency_s = models.FloatField(null=True, blank=True)
    error = models.TextField(blank=True, help_text="why generation or testing failed (never a silent gap)")
    attempts = models.PositiveIntegerField(default=0)
    lease_owner = models.CharField(max_length=255, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True, db_index=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # Memorisation (researchcodebench.memorisation, docs/scoring.md#memorisation): measured when the verdict
    # is recorded; all None when there was nothing to compare (no code, or no reference code)
    overlap_reference_tokens = models.PositiveIntegerField(
        null=True, blank=True, help_text="normalised tokens of the reference snippet"
    )
    overlap_longest_run = models.PositiveIntegerField(
        null=True, blank=True, help_text="longest run of normalised tokens shared with the reference"
    )
    overlap_ngram_share = models.FloatField(
        null=True, blank=True, help_text="share of the reference's distinct 5-token sequences in the code"
    )
    near_verbatim = models.BooleanField(
        null=True, blank=True, help_text="reproduces the reference nearly verbatim (None: too short to tell)"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["run", "snippet__task_version__task__key", "snippet__ordinal", "completion_idx"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "snippet", "completion_idx"], name="completion_unique_item"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.run_id}/{self.snippet.name}#{self.completion_idx}"

    @property
    def overlap_run_share(self) -> float | None:
        """The longest common run as a share of the reference's tokens (None: not measured)."""
        if not self.overlap_reference_tokens or self.overlap_longest_run is None:
            return None
        return self.overlap_longest_run / self.overlap_reference_tokens


class PredictionsUpload(models.Model):
    """A predictions file the API received for a worker to check and start (``Prefer: respond-async``).

    The request stores the file and answers ``202 Accepted`` at once; a worker checks it exactly as a
    synchronous upload is checked (``evaluation.services.uploads.predictions_upload``) and records either
    the run it started or every error. ``data`` is emptied once the file is checked (the run's items hold the
    answers). ``idempotency_key``: a retry with it and the same file is this upload, never a second one."""

    class Status(models.TextChoices):
        RECEIVED = "received", "Received, waiting for a worker"
        STARTED = "started", "Checked: its run started"
        REFUSED = "refused", "Refused: nothing was created"
        FAILED = "failed", "Failed: the portal could not check it"

    requester = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="predictions_uploads"
    )
    release = models.ForeignKey(Release, on_delete=models.PROTECT, related_name="+")
    model_key = models.CharField(max_length=100)
    model_name = models.CharField(max_length=200, blank=True)
    #: empty / None: the release's default
    template = models.CharField(max_length=16, blank=True)
    with_paper = models.BooleanField(null=True, blank=True)
    idempotency_key = models.CharField(max_length=128, blank=True)
    sha256 = models.CharField(max_length=64)
    data = models.BinaryField(blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RECEIVED)
    #: what a refusal says, one line each ("field: message", "line N: message")
    errors = models.JSONField(default=list, blank=True)
    run = models.ForeignKey(EvaluationRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    received_at = models.DateTimeField(auto_now_add=True)
    #: when its message was last sent to a worker (the reaper sends it again when it waits too long)
    sent_at = models.DateTimeField(null=True, blank=True)
    checked_at = models.DateTimeField(null=True, blank=True)
    #: checks begun by a worker; past ``RCB_UPLOAD_MAX_CHECKS`` (each ended by an error of the portal's own)
    #: the upload fails instead of being sent again for ever
    attempts = models.PositiveSmallIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["requester", "idempotency_key"],
                condition=~models.Q(idempotency_key=""),
                name="predictionsupload_key_unique",
            ),
        ]
        indexes = [
            models.Index(
                fields=["sent_at"],
                condition=models.Q(status="received"),
                name="predictionsupload_waiting",
            )
        ]

    def __str__(self) -> str:
        return f"upload {self.pk} ({self.status})"


class RunEvent(models.Model):
    """Something the engine did to a run on its own, shown on the run page: the reaper's recoveries.

    A worker that dies, loses its database connection or its broker leaves its item leased; the reaper
    re-queues it when the lease expires (or fails it after ``Completion.MAX_ATTEMPTS``), re-sends the
    message of an item that waited too long, and finishes a run with nothing left to do. Each of those is
    one row, so what happened to a run is never a guess.
    """

    class Kind(models.TextChoices):
        REQUEUED = "requeued", "Lease expired, re-queued"
        FAILED = "failed", "Lease expired too often, failed"
        RESENT = "resent", "Waiting messages sent again"
        FINISHED = "finished", "Finished by the reaper"

    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="events")
    completion = models.ForeignKey(
        Completion, null=True, blank=True, on_delete=models.CASCADE, related_name="events"
    )
    kind = models.CharField(max_length=16, choices=Kind.choices)
    #: how many items the event is about (a re-send covers many)
    items = models.PositiveIntegerField(default=1)
    detail = models.TextField(blank=True)
    #: the lease owner (worker host, process, message) whose lease expired; shown to maintainers only
    worker = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["run", "-created_at"], name="runevent_run_recent")]

    def __str__(self) -> str:
        return f"run {self.run_id}: {self.kind}"


class ResultsPerMinute(models.Model):
    """How many verdicts were recorded in one minute for one test queue: the status page's throughput, read
    from at most an hour of these small rows instead of counting the hour's results.

    ``shard`` spreads one minute of one queue over several rows (the run's id modulo
    ``evaluation.services.verdicts.THROUGHPUT_SHARDS``), so that concurrent verdicts of different runs rarely
    wait on the same row; a run's own verdicts already wait on its row lock. Written only by
    ``test_result_record``; rows older than a few windows are deleted as new minutes begin."""

    minute = models.DateTimeField(help_text="the start of the minute (UTC, seconds and below zero)")
    queue = models.CharField(max_length=16)
    shard = models.PositiveSmallIntegerField()
    results = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["minute", "queue", "shard"], name="resultsperminute_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.minute:%Y-%m-%d %H:%M} {self.queue}/{self.shard}: {self.results}"


class TestResult(models.Model):
    """The verdict of record for one completion (one per completion: a duplicate delivery is harmless)."""

    class Outcome(models.TextChoices):
        PASSED = "passed", "Passed"
        FAILED = "failed", "Failed"
        TIMEOUT = "timeout", "Timeout"
        OOM = "oom", "Out of memory"
        NO_CODE = "no_code", "No code extracted"
        INFRA_ERROR = "infra_error", "Infrastructure error"

    class Tier(models.TextChoices):
        NONE = "none", "None (passed)"
        MODEL = "model", "Model"
        INFRASTRUCTURE = "infrastructure", "Infrastructure"

    class Confirmation(models.TextChoices):
        """How a pass stood up to an impossible variant of its test (``researchcodebench.runner.Verdict``,
        docs/integrity.md); empty for every other verdict and for results without code (imported).
        Unconfirmed: the snippet has no variant (its test does not check it)."""

        CONFIRMED = "confirmed", "Confirmed"
        UNCONFIRMED = "unconfirmed", "Unconfirmed"
        FORGED = "forged", "Forged"

    __test__ = False  # not a pytest test class

    completion = models.OneToOneField(Completion, on_delete=models.CASCADE, related_name="result")
    outcome = models.CharField(max_length=16, choices=Outcome.choices, db_index=True)
    passed = models.BooleanField()
    category = models.CharField(max_length=64, blank=True)
    tier = models.CharField(max_length=16, choices=Tier.choices, default=Tier.MODEL)
    exception_type = models.CharField(max_length=200, blank=True)
    exception_message = models.TextField(blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    duration_s = models.FloatField(null=True, blank=True)
    stdout_tail = models.TextField(blank=True)
    stderr_tail = models.TextField(blank=True)
    tests_run = models.PositiveIntegerField(null=True, blank=True)
    tests_failed = models.PositiveIntegerField(null=True, blank=True)
    tests_skipped = models.PositiveIntegerField(null=True, blank=True)
    environment = models.CharField(max_length=200, blank=True)
    worker_host = models.CharField(max_length=255, blank=True)
    attempt = models.PositiveIntegerField(default=1)
    cached = models.BooleanField(default=False)
    #: the confirmation of a pass against an impossible variant of its test: "confirmed", "unconfirmed"
    #: (its snippet has no variant), "forged" (it passed one: the verdict is then failed, category
    #: ``verdict_forged``); empty for anything else. ``variant`` and ``variant_slate`` name the variant run
    #: and its slate ("fresh", "container", ...), empty when none ran. Who may see the variant of a forged
    #: verdict: ``evaluation.selectors.integrity.run_confirmation``.
    confirmation = models.CharField(max_length=16, choices=Confirmation.choices, blank=True)
    variant = models.CharField(max_length=200, blank=True)
    variant_slate = models.CharField(max_length=32, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    # A maintainer's cold, independent re-judge of a pass (evaluation/services/rejudge.py,
    # docs/integrity.md#re-judging). Only passes are re-judged, so a verdict the re-judge changed was
    # "passed" before; its fields above then hold the re-judged verdict.
    rejudge_requested_at = models.DateTimeField(null=True, blank=True)
    rejudged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="rejudged_results",
        help_text="the maintainer who asked for the re-judge",
    )
    rejudged_at = models.DateTimeField(null=True, blank=True, help_text="when the re-judge's verdict came")
    rejudge_outcome = models.CharField(max_length=16, choices=Outcome.choices, blank=True)
    rejudge_category = models.CharField(max_length=64, blank=True)
    rejudge_reason = models.TextField(blank=True)
    rejudge_worker_host = models.CharField(max_length=255, blank=True)
    rejudge_confirmation = models.CharField(max_length=16, choices=Confirmation.choices, blank=True)
    rejudge_variant = models.CharField(max_length=200, blank=True)
    rejudge_variant_slate = models.CharField(max_length=32, blank=True)
    #: True: the re-judge passed too; False: it failed and became the verdict of record; None: not
    #: re-judged, still waiting, or the re-judge hit an infrastructure error (inconclusive)
    rejudge_agreed = models.BooleanField(null=True, blank=True)

    class Meta:
        ordering = ["completion"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(passed=False) | models.Q(outcome="passed"),
                name="testresult_passed_matches_outcome",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.completion}: {self.outcome}"

    @property
    def rejudge_pending(self) -> bool:
        """A re-judge was asked for and its verdict has not come yet."""
        return self.rejudge_requested_at is not None and self.rejudged_at is None
