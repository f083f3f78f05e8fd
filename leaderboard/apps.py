from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    """How results are shown: aggregated read models, pages, charts, exports and the read API."""

    name = "leaderboard"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from leaderboard import receivers

        receivers.connect()
