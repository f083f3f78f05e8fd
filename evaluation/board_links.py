"""Where a run appears on the leaderboard: the board of its release, prompt template and paper setting.

The leaderboard app owns the board and its parameters (``release``, ``template``, ``paper``); evaluation
sits below it and never imports it, so the board is named by its URL name and reversed, not imported.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from django.urls import reverse

from evaluation.models import EvaluationRun

BOARD_URL_NAME = "leaderboard:board"


@dataclass(frozen=True)
class BoardPlace:
    """The board a run is ranked on: the values of its ``release``, ``template`` and ``paper`` parameters."""

    release: str
    template: str
    paper: str
    url: str


def run_board_place(run: EvaluationRun) -> BoardPlace | None:
    """The board ``run`` appears on, or None for a run of no release (explicit task versions only)."""
    if run.release is None:
        return None
    params = {"release": run.release.name, "template": run.template, "paper": _paper(run.with_paper)}
    return BoardPlace(**params, url=f"{reverse(BOARD_URL_NAME)}?{urlencode(params)}")


def run_board_url(run: EvaluationRun) -> str:
    """The path of the board ``run`` appears on (the whole board for a run of no release)."""
    place = run_board_place(run)
    return place.url if place else reverse(BOARD_URL_NAME)


def _paper(with_paper: bool) -> str:
    return "with" if with_paper else "without"
