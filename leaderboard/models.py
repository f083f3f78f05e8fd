"""Read models: scores aggregated from test results, so that no page aggregates raw results per request.

Granularity and what stays exact:

- ``RunSnippetScore`` (run, snippet): the verdict of every completion index as a string (``P`` passed,
  ``F`` failed, ``-`` no result of record or an infrastructure failure, which never counts against a model).
  It holds everything the core scoring needs, so every other row can be recomputed from it without raw
  results (the global contamination rows are, when the set of shown models changes the global cutoff).
- ``RunPaperScore`` (run, paper): per completion index the sums ``sum N*P``, ``sum N``, ``sum P`` and the
  number of results; summing them over any subset of papers gives that subset's line and task rates
  (means, population stds, per-index rates) *exactly* as ``researchcodebench.scoring`` computes them,
  because the sums are integers. Only the bootstrap interval cannot be recombined (it resamples snippets
  across the whole selection).
- ``RunScore`` (run, mode): the full score of one run for ``none`` (all papers), ``global``
  (the original's rule over the cutoffs of every model with a scored run), ``per-model`` (papers after
  the model's own cutoff) and ``before-cutoff`` (dated papers on or before it: the contamination page's other
  side), computed by ``scoring.score_model`` itself, bootstrap interval included.
- ``RunErrorCount`` (run, category, tier): failures by category, model tier apart from infrastructure.
- Confirmations against impossible variants (docs/scoring.md#forging-rate): per index in
  ``RunSnippetScore.confirmations``, summed per paper and per selection like every count
  (``passes_confirmed``, ``passes_unconfirmed``, ``passes_forged`` of ``RunPaperScore`` and ``RunScore``).
- ``SnippetStat`` (snippet): solve rate across runs, with and without the paper in the prompt.
- ``RunAggregation`` (run): the debounce marker of the whole-run aggregation task, when it last ran, and
  whether the run's rows take per-verdict deltas (``incremental``) and whether its intervals wait for the
  per-release step (``intervals_changes`` behind ``changes``).
- ``ReleaseAggregation`` (release): the debounce marker of the per-release background step (bootstrap
  intervals, contamination selections) and when it last ran.

How the rows stay current (docs/scoring.md#how-aggregation-runs): a recorded verdict updates the rows it
touches in place (``leaderboard.services.increments``); what cannot be updated by a delta is recomputed per
release in the background (``leaderboard.services.release_step.leaderboard_refresh_release``); a whole-run
rebuild (``leaderboard_refresh_run``) gives the same rows and stays the repair path.
"""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Coalesce

from contributions.models import Paper, Release, Snippet
from evaluation.models import EvaluationRun


class Contamination(models.TextChoices):
    """Which papers count (docs/scoring.md#contamination)."""

    NONE = "none", "All papers"
    GLOBAL = "global", "Original global rule (papers after the latest cutoff, compared as text)"
    PER_MODEL = "per-model", "Papers after the model's own cutoff"


class ScoreMode(models.TextChoices):
    """The selections a ``RunScore`` row is stored for: every contamination rule of the board, and the
    papers on or before the model's own cutoff, which only the contamination page shows."""

    NONE = Contamination.NONE.value, Contamination.NONE.label
    GLOBAL = Contamination.GLOBAL.value, Contamination.GLOBAL.label
    PER_MODEL = Contamination.PER_MODEL.value, Contamination.PER_MODEL.label
    BEFORE_CUTOFF = "before-cutoff", "Dated papers on or before the model's own cutoff"


class RunScore(models.Model):
    """One run's score over one selection of papers; NaN scores (nothing tested) are stored as null."""

    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="scores")
    mode = models.CharField(max_length=16, choices=ScoreMode.choices)
    #: the paper keys the score is restricted to; null = every paper (mode ``none``)
    selection = models.JSONField(null=True, blank=True)
    line_mean = models.FloatField(null=True)
    line_std = models.FloatField(null=True)
    line_rates = models.JSONField(default=list)
    task_mean = models.FloatField(null=True)
    task_std = models.FloatField(null=True)
    task_rates = models.JSONField(default=list)
    ci_low = models.FloatField(null=True)
    ci_high = models.FloatField(null=True)
    snippets = models.PositiveIntegerField(default=0, help_text="tested snippets")
    lines = models.PositiveIntegerField(default=0, help_text="lines of the tested snippets")
    expected_snippets = models.PositiveIntegerField(default=0)
    coverage = models.FloatField(default=0.0)
    papers = models.PositiveIntegerField(default=0, help_text="papers with at least one result")
    #: the selection's passes confirmed against an impossible variant, unconfirmed (no variant), and its
    #: forged verdicts: the forging rate's counts (the sums of the selected ``RunPaperScore`` rows)
    passes_confirmed = models.PositiveIntegerField(default=0)
    passes_unconfirmed = models.PositiveIntegerField(default=0)
    passes_forged = models.PositiveIntegerField(default=0)
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["run", "mode"]
        constraints = [models.UniqueConstraint(fields=["run", "mode"], name="runscore_unique_mode")]
        indexes = [models.Index(fields=["mode", "-line_mean"], name="runscore_mode_line")]

    def __str__(self) -> str:
        return f"run {self.run_id} [{self.mode}]: {self.line_mean}"


class RunPaperScore(models.Model):
    """One run on one paper: integer sums per completion index (list position = index) and the paper's
    own line rate (``problem_scores``)."""

    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="paper_scores")
    paper = models.ForeignKey(Paper, on_delete=models.CASCADE, related_name="run_scores")
    #: sum over snippets with a result for index c of N_s * P_sc
    line_num = models.JSONField(default=list)
    #: sum over snippets with a result for index c of N_s
    line_den = models.JSONField(default=list)
    #: number of passed results for index c
    task_num = models.JSONField(default=list)
    #: number of results for index c (0 = no result for that index on this paper)
    task_den = models.JSONField(default=list)
    line_mean = models.FloatField(null=True)
    line_std = models.FloatField(null=True)
    snippets = models.PositiveIntegerField(default=0, help_text="tested snippets")
    expected_snippets = models.PositiveIntegerField(default=0)
    lines = models.PositiveIntegerField(default=0, help_text="lines of the tested snippets")
    passed = models.PositiveIntegerField(default=0, help_text="passed results, all indices")
    results = models.PositiveIntegerField(default=0, help_text="results of record, all indices")
    #: tested snippets among the expected ones and their lines: what a run's coverage and ``lines`` sum
    #: (``snippets``/``lines`` above also count a tested snippet the run was not expected to answer)
    expected_tested = models.PositiveIntegerField(default=0)
    expected_lines = models.PositiveIntegerField(default=0)
    #: the paper's passes confirmed, unconfirmed and forged verdicts, all indices (``RunSnippetScore``)
    passes_confirmed = models.PositiveIntegerField(default=0)
    passes_unconfirmed = models.PositiveIntegerField(default=0)
    passes_forged = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["run", "paper__key"]
        constraints = [models.UniqueConstraint(fields=["run", "paper"], name="runpaperscore_unique")]

    def __str__(self) -> str:
        return f"run {self.run_id} on {self.paper_id}: {self.line_mean}"


class RunSnippetScore(models.Model):
    """The verdicts of one run on one snippet. ``verdicts[c]`` is ``P``, ``F`` or ``-`` for index c."""

    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="snippet_scores")
    snippet = models.ForeignKey(Snippet, on_delete=models.CASCADE, related_name="run_scores")
    paper = models.ForeignKey(Paper, on_delete=models.CASCADE, related_name="+")
    lines = models.PositiveIntegerField()
    verdicts = models.CharField(max_length=64)
    passed = models.PositiveIntegerField(default=0)
    tested = models.PositiveIntegerField(default=0)
    #: the category of the first failed index (empty when none failed)
    category = models.CharField(max_length=64, blank=True)
    #: per index, ``[category, tier]`` of a failed result (either tier) or null: what a verdict's delta
    #: subtracts from ``RunErrorCount`` when it replaces this row
    failures = models.JSONField(default=list)
    #: per index, ``C`` a pass confirmed against an impossible variant, ``U`` unconfirmed (no variant), ``X``
    #: a forged verdict, ``-`` none of these; trailing ``-`` left out ("" for none at all)
    confirmations = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["run", "snippet"]
        constraints = [models.UniqueConstraint(fields=["run", "snippet"], name="runsnippetscore_unique")]
        indexes = [models.Index(fields=["snippet", "run"], name="runsnippet_snippet_run")]

    def __str__(self) -> str:
        return f"run {self.run_id} on snippet {self.snippet_id}: {self.verdicts}"


class RunErrorCount(models.Model):
    """How many failed results of a run fall in one category; ``tier`` keeps infrastructure apart."""

    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="error_counts")
    category = models.CharField(max_length=64)
    tier = models.CharField(max_length=16)
    count = models.PositiveIntegerField()

    class Meta:
        ordering = ["run", "tier", "category"]
        constraints = [
            models.UniqueConstraint(fields=["run", "category", "tier"], name="runerrorcount_unique")
        ]

    def __str__(self) -> str:
        return f"run {self.run_id}: {self.category} ({self.tier}) x{self.count}"


class SnippetStat(models.Model):
    """Difficulty of a snippet: results and passes across every scored run, split by paper context."""

    snippet = models.OneToOneField(Snippet, on_delete=models.CASCADE, related_name="stat")
    runs = models.PositiveIntegerField(default=0, help_text="runs with at least one result")
    results = models.PositiveIntegerField(default=0)
    passed = models.PositiveIntegerField(default=0)
    solve_rate = models.FloatField(null=True, help_text="100 * passed / results over every scored run")
    with_paper_results = models.PositiveIntegerField(default=0)
    with_paper_passed = models.PositiveIntegerField(default=0)
    without_paper_results = models.PositiveIntegerField(default=0)
    without_paper_passed = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["snippet"]

    def __str__(self) -> str:
        return f"snippet {self.snippet_id}: {self.solve_rate}"


class RunAggregation(models.Model):
    """Debounce state of one run's aggregation: ``scheduled`` while a whole-run refresh task is queued.

    ``incremental``: the run's rows were built by a whole-run refresh of this schema, so a verdict may be
    applied as a delta (false: the next verdict rebuilds the run first). ``changes`` counts the deltas
    that moved the run's scores; ``intervals_changes`` is the value of ``changes`` the stored bootstrap
    intervals reflect: while it is behind, the per-release step has intervals to recompute."""

    run = models.OneToOneField(EvaluationRun, on_delete=models.CASCADE, related_name="aggregation")
    scheduled = models.BooleanField(default=False)
    requested_at = models.DateTimeField(null=True, blank=True)
    refreshed_at = models.DateTimeField(null=True, blank=True)
    #: results of record seen by the last refresh (a sweep re-aggregates a run whose count moved)
    results_seen = models.PositiveIntegerField(default=0)
    refreshes = models.PositiveIntegerField(default=0)
    incremental = models.BooleanField(default=False)
    changes = models.PositiveBigIntegerField(default=0)
    intervals_changes = models.PositiveBigIntegerField(default=0)

    def __str__(self) -> str:
        return f"aggregation of run {self.run_id}"


class ReleaseAggregation(models.Model):
    """The per-release background step (``leaderboard_refresh_release``): ``scheduled`` while its task is
    queued, ``computed_at`` when it last ran (the board says so). ``release`` null: the runs of no release."""

    release = models.ForeignKey(Release, null=True, on_delete=models.CASCADE, related_name="+")
    scheduled = models.BooleanField(default=False)
    requested_at = models.DateTimeField(null=True, blank=True)
    computed_at = models.DateTimeField(null=True, blank=True)
    #: runs whose intervals the last step recomputed
    runs_recomputed = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            # One row per release, and one for the runs of no release (NULL is not equal to NULL).
            models.UniqueConstraint(
                Coalesce("release", models.Value(0)), name="releaseaggregation_one_per_release"
            )
        ]

    def __str__(self) -> str:
        return f"aggregation of release {self.release_id}"


class CacheScope(models.Model):
    """One shard of the version counter of a cache scope (``leaderboard.scopes``): what a set of pages
    shows, e.g. ``release:<id>`` (the scores of one release's runs), ``model:<id>`` (one model's runs) or
    ``meta``. A scope's version is the sum of its shards' ``n``; a write that changes what the scope shows
    adds one to a shard no other transaction holds, so bumps never wait on each other."""

    key = models.CharField(max_length=64, db_index=True)
    n = models.PositiveBigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.key} +{self.n}"
