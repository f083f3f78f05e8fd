"""Template context shared by every page."""

from __future__ import annotations

from django.http import HttpRequest

NAV = (
    ("leaderboard:board", "Leaderboard"),
    ("contributions:paper_list", "Papers"),
    ("contributions:contribute", "Contribute"),
    ("contributions:review_queue", "Review"),
    ("evaluation:run_list", "Runs"),
    ("api-docs", "API"),
    ("status", "Status"),
)


def site(request: HttpRequest) -> dict:
    return {"nav_items": NAV}
