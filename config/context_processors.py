"""Template context shared by every page."""

from __future__ import annotations

from django.http import HttpRequest

from config.mail import mail_stays_local
from contributions.roles import can_maintain

#: (url name, label, shown to maintainers only): a link that answers everyone else with 403 is not offered
NAV = (
    ("leaderboard:board", "Leaderboard", False),
    ("leaderboard:papers", "Papers", False),
    ("contributions:release_list", "Releases", False),
    ("contributions:contribute", "Contribute", False),
    ("contributions:review_queue", "Review", True),
    ("evaluation:run_list", "Runs", False),
    ("api-home", "API", False),
    ("status", "Status", False),
)


def site(request: HttpRequest) -> dict:
    user = getattr(request, "user", None)
    return {
        "nav_items": NAV,
        # contributions.roles.can_maintain (maintainers or staff), for showing maintainer actions. A callable,
        # so that the permission query runs only on pages that ask.
        "user_is_maintainer": lambda: can_maintain(user),
        # config.mail.mail_stays_local: no inbox to look in (the pages after sign-up and a reset say so)
        "mail_stays_local": mail_stays_local,
    }
