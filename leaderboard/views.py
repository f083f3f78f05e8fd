"""Leaderboard pages."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def board(request: HttpRequest) -> HttpResponse:
    return render(request, "leaderboard/board.html", {})
