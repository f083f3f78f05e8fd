"""Pages of the benchmark catalogue and the contribution workflow."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from contributions import selectors


def paper_list(request: HttpRequest) -> HttpResponse:
    """Every paper with its tasks' size (latest versions), or an empty state before the first import."""
    rows = selectors.paper_list()
    totals = {
        "snippets": sum(r.snippet_count for r in rows),
        "lines": sum(r.total_lines for r in rows),
    }
    releases = list(selectors.release_list())
    return render(
        request, "contributions/paper_list.html", {"rows": rows, "totals": totals, "releases": releases}
    )


def contribute(request: HttpRequest) -> HttpResponse:
    return render(request, "contributions/contribute.html", {})


def review_queue(request: HttpRequest) -> HttpResponse:
    return render(request, "contributions/review_queue.html", {})
