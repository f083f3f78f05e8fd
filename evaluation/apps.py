from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    """How models did: language models, runs, completions, test results, workers."""

    name = "evaluation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from evaluation import receivers, worker_signals

        worker_signals.connect()
        receivers.connect()
