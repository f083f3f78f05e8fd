from django.apps import AppConfig


class ContributionsConfig(AppConfig):
    """What the benchmark is: papers, tasks, immutable task versions, snippets, releases, proposals."""

    name = "contributions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        post_migrate.connect(_ensure_maintainers_group, sender=self, dispatch_uid="contributions.maintainers")


def _ensure_maintainers_group(sender: AppConfig, using: str = "default", **kwargs: object) -> None:
    from contributions.services.accounts import maintainers_group_ensure

    maintainers_group_ensure(using=using)
