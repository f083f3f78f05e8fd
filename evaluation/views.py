"""Pages of evaluation runs."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def run_list(request: HttpRequest) -> HttpResponse:
    return render(request, "evaluation/run_list.html", {})
