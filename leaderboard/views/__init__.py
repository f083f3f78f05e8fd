"""Leaderboard pages, one module per page family: thin views that parse the URL, call one selector and
render (``pages.cached_page``: the filters, the one cache layer, the htmx partial). Links are built by
``leaderboard.links``, charts by ``leaderboard.presenters``."""
