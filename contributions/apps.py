from django.apps import AppConfig


class ContributionsConfig(AppConfig):
    """What the benchmark is: papers, tasks, immutable task versions, snippets, releases, proposals."""

    name = "contributions"
    default_auto_field = "django.db.models.BigAutoField"
