"""Every count from one source (issue 12, item 2): the papers, snippets and lines of a release agree on
the papers page, the releases page, the paper pages, the board and its exports, for a release of task
folders and for the published results' metadata-only release."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.urls import reverse

from contributions.models import Release
from leaderboard.services import leaderboard_refresh_run
from tests.factories import make_benchmark, make_run
from tests.leaderboard.test_pages import get

pytestmark = pytest.mark.django_db


def papers_page(client, **params) -> tuple[str, dict[str, tuple[int, int]]]:
    """The papers page and its main table: paper key -> (snippets, lines)."""
    html = get(client, reverse("leaderboard:papers"), **params)
    table = html[html.index('id="papers-table"') :].split("</table>")[0]
    rows = {}
    for row in _rows(table):
        rows[row[0]] = (int(row[5]), int(row[6]))
    return html, rows


def _rows(table_html: str) -> list[list[str]]:
    out = []
    for tr in re.findall(r"<tr>(.*?)</tr>", table_html, flags=re.S):
        cells = [
            re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", tr, flags=re.S)
        ]
        if cells:
            out.append(cells)
    return out


def totals(html: str) -> tuple[int, int, int]:
    text = re.sub(r"<[^>]+>", "", html)
    found = re.search(r"(\d+) papers?, (\d+) snippets? \(benchmark problems\), (\d+) lines", text)
    assert found, text
    return tuple(int(g) for g in found.groups())


def test_papers_page_counts_the_chosen_release_and_lists_other_papers_apart(client):
    rel, snippets = make_benchmark({"p1": (dt.date(2024, 1, 1), [2, 3]), "p2": (None, [4])}, release="r1")
    other, _ = make_benchmark({"p3": (None, [5, 1, 1])}, release="r2")
    Release.objects.update(is_default=False)
    Release.objects.filter(pk=rel.pk).update(is_default=True)
    leaderboard_refresh_run(run=make_run(snippets, {"p1": "P F", "p2": "P"}, release=rel))

    html, rows = papers_page(client)
    board = client.get("/api/v1/leaderboard/").json()["results"]
    assert rows == {"p1": (2, 5), "p2": (1, 4)}
    assert totals(html) == (2, board[0]["expected_snippets"], 9) and board[0]["lines"] == 9
    elsewhere = html[html.index('id="papers-elsewhere"') :].split("</table>")[0]
    assert [r[0] for r in _rows(elsewhere)] == ["p3"]

    html2, rows2 = papers_page(client, release="r2")
    assert rows2 == {"p3": (3, 7)} and totals(html2) == (1, 3, 7)
    html_all, rows_all = papers_page(client, release="*")
    assert set(rows_all) == {"p1", "p2", "p3"} and totals(html_all) == (3, 6, 16)
    missing = client.get(reverse("leaderboard:papers"), {"release": "nope"})
    assert missing.status_code == 404


# The published results stay loaded until the end of the module (module-scoped fixture): last.
def test_published_release_counts_agree_on_papers_page_board_paper_and_release_pages(client, published_board):
    html, rows = papers_page(client)
    board_top = client.get("/api/v1/leaderboard/").json()["results"][0]
    assert board_top["coverage"] == 1.0
    # Before: 0 lines for every paper of the paper's release, and totals of every task's latest version.
    assert totals(html) == (20, board_top["snippets"], board_top["lines"]) == (20, 212, 1449)
    model = client.get(f"/api/v1/models/{board_top['model']['key']}/").json()
    per_paper = {p["paper_key"]: (p["expected_snippets"], p["lines"]) for p in model["per_paper"]}
    assert rows == per_paper and all(lines > 0 for _n, lines in rows.values())
    key, (snippets, lines) = next(iter(rows.items()))
    paper = get(client, reverse("leaderboard:paper", args=[key]))
    assert f"<dd>{snippets} ({lines} lines" in paper
    releases = get(client, reverse("contributions:release_list"))
    assert re.search(r">212</td>\s*<td class=\"num\">1449</td>", releases), "release list sizes"
