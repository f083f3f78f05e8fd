"""Site-wide views: health check, status page, the API's front page."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache

from config.health import health_report, status_report


@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    """Machine-readable health: 200 when the database and the broker answer, 503 otherwise."""
    report = health_report()
    return JsonResponse(report, status=200 if report["ok"] else 503)


@never_cache
def status_page(request: HttpRequest) -> HttpResponse:
    """The same checks for people, with queue depths and work in progress (cached: ``status_report``)."""
    return render(request, "status.html", {"report": status_report()})


def api_home(request: HttpRequest) -> HttpResponse:
    """``/api/`` and ``/api/v1/``: what the API offers, with links to its schema and its Swagger reference."""
    return render(request, "api_home.html")


def api_not_found(request: HttpRequest, path: str) -> JsonResponse:
    """Any path under /api/v1/ that names no operation (an id past the database's range included): a JSON
    404 with DRF's body, as the schema documents, rather than the site's HTML page."""
    return JsonResponse({"detail": "Not found."}, status=404)
