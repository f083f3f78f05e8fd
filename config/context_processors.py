"""Template context shared by every page."""

from __future__ import annotations

from django.http import HttpRequest

from contributions.roles import can_maintain

NAV = (
    ("leaderboard:board", "Leaderboard"),
    ("contributions:paper_list", "Papers"),
    ("contributions:release_list", "Releases"),
    ("contributions:contribute", "Contribute"),
    ("contributions:review_queue", "Review"),
    ("evaluation:run_list", "Runs"),
    ("api-docs", "API"),
    ("status", "Status"),
)


def site(request: HttpRequest) -> dict:
    user = getattr(request, "user", None)
    return {
        "nav_items": NAV,
        # contributions.roles.can_maintain (maintainers or staff), for showing maintainer actions. A callable,
        # so that the permission query runs only on pages that ask.
        "user_is_maintainer": lambda: can_maintain(user),
    }
