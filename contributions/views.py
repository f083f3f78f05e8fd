"""Pages of the benchmark catalogue and the contribution workflow."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def paper_list(request: HttpRequest) -> HttpResponse:
    return render(request, "contributions/paper_list.html", {})


def contribute(request: HttpRequest) -> HttpResponse:
    return render(request, "contributions/contribute.html", {})


def review_queue(request: HttpRequest) -> HttpResponse:
    return render(request, "contributions/review_queue.html", {})
