"""Leaderboard pages: values equal the selectors' (and so the core library's), every filter changes the rows,
htmx gets fragments while plain requests get pages, charts carry their data, and pages are accessible."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.template.defaultfilters import floatformat
from django.urls import reverse

from contributions.models import Snippet
from leaderboard.selectors.analyses import contamination_overview, error_breakdown
from leaderboard.selectors.board import LeaderboardFilters, leaderboard_rows
from leaderboard.selectors.models import model_detail
from leaderboard.selectors.papers import paper_detail

pytestmark = pytest.mark.django_db
REPO = Path(__file__).resolve().parents[2]


# --- a small HTML reader for structure checks ---------------------------------------------------------


class Page(HTMLParser):
    """Collects headings, tables, form controls with their labels, svgs and the board's rows."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.h1: list[str] = []
        self.tables: list[dict] = []
        self.controls: list[dict] = []
        self.label_for: set[str] = set()
        self.label_depth = 0
        self.rows: list[dict] = []
        self._text_target: list | None = None
        self._row: dict | None = None
        self._cell: list[str] | None = None
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "h1":
            self.h1.append("")
            self._text_target = self.h1
        elif tag == "table":
            self.tables.append({"caption": False, "th": 0, "th_scoped": 0, "id": a.get("id")})
        elif tag == "caption" and self.tables:
            self.tables[-1]["caption"] = True
        elif tag == "th" and self.tables:
            self.tables[-1]["th"] += 1
            self.tables[-1]["th_scoped"] += a.get("scope") in ("col", "row", "colgroup", "rowgroup")
        elif tag == "label":
            self.label_depth += 1
            if a.get("for"):
                self.label_for.add(a["for"])
        elif tag in ("select", "input", "textarea") and a.get("type") != "hidden":
            self.controls.append({"id": a.get("id"), "in_label": self.label_depth > 0, "name": a.get("name")})
        elif tag == "tr" and a.get("data-model"):
            self._row = {"key": a["data-model"], "cells": []}
        elif tag == "td" and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "h1":
            self._text_target = None
        elif tag == "label":
            self.label_depth -= 1
        elif tag == "td" and self._row is not None and self._cell is not None:
            self._row["cells"].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._text_target is not None:
            self._text_target[-1] += data
        if self._cell is not None:
            self._cell.append(data)


def assert_accessible(html: str) -> Page:
    page = Page(html)
    assert len(page.h1) == 1, f"expected one h1, found {page.h1}"
    for table in page.tables:
        assert table["caption"], f"table {table['id']} has no caption"
        assert table["th"] and table["th"] == table["th_scoped"], f"table {table['id']}: th without scope"
    for control in page.controls:
        assert control["in_label"] or control["id"] in page.label_for, f"control {control} has no label"
    for svg in re.findall(r"<svg\b.*?</svg>", html, flags=re.S):
        root = ET.fromstring(svg)
        assert root.get("role") == "graphics-document" and root.get("aria-labelledby")
    return page


def get(client, url: str, **params) -> str:
    response = client.get(url, params)
    assert response.status_code == 200, response.content[:500]
    return response.content.decode()


def board_rows(client, **params) -> list[dict]:
    return Page(get(client, "/", **params)).rows


# --- the published board ------------------------------------------------------------------------------


def test_board_shows_the_published_numbers_in_selector_order(client, published_board):
    html = get(client, "/")
    page = assert_accessible(html)
    rows = page.rows
    expected = leaderboard_rows(filters=LeaderboardFilters())
    assert len(rows) == len(expected) == 32
    assert [r["key"] for r in rows] == [r.model.key for r in expected]
    top = rows[0]
    # The rank cell: the rank, then the range the bootstrap intervals allow and the tied neighbour.
    assert top["key"] == "GEMINI_2_5_PRO_PREVIEW_05_06" and top["cells"][0].startswith("11–")
    assert top["cells"][5].startswith("37.34") and top["cells"][6] == "64.15"
    for shown, row in zip(rows, expected, strict=True):
        assert shown["cells"][5].startswith(f"{row.scaled_pass_at_1:.2f}")
        assert shown["cells"][6] == f"{row.pass_at_1:.2f}"
        lo, hi = row.score.ci95
        assert f"95%: {lo:.1f}–{hi:.1f}" in shown["cells"][5]
        assert shown["cells"][7] == "212/212"
    by_key = {r["key"]: r for r in rows}
    assert by_key["O3_HIGH"]["cells"][5].startswith("32.16")
    assert by_key["OPENROUTER_O4_MINI_HIGH"]["cells"][5].startswith("30.78")
    assert "open" in by_key["DEEPSEEK_R1"]["cells"][3] and "closed" in by_key["O3_HIGH"]["cells"][3]


def test_board_chart_has_every_model_and_value(client, published_board):
    html = get(client, "/")
    svg = re.search(r'<svg[^>]*id="board-chart".*?</svg>', html, flags=re.S).group(0)
    root = ET.fromstring(svg)
    texts = {"".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")}
    for row in leaderboard_rows(filters=LeaderboardFilters()):
        assert row.model.name in texts
        assert f"{row.scaled_pass_at_1:.2f}" in texts
    links = [a.get("href") for a in root.iter("{http://www.w3.org/2000/svg}a")]
    assert reverse("leaderboard:model", args=["O3_HIGH"]) in links


@pytest.mark.parametrize(
    ("params", "check"),
    [
        ({"developer": "OpenAI"}, lambda rows: {r["cells"][2] for r in rows} == {"OpenAI"}),
        ({"weights": "open"}, lambda rows: all("open" in r["cells"][3] for r in rows)),
        ({"weights": "closed"}, lambda rows: all(r["cells"][3] == "closed" for r in rows)),
        ({"sort": "name"}, lambda rows: [r["cells"][1] for r in rows] == sorted((r["cells"][1] for r in rows), key=str.lower)),
        ({"sort": "pass_at_1"}, lambda rows: [float(r["cells"][6]) for r in rows] == sorted(float(r["cells"][6]) for r in rows)),
    ],
    ids=["developer", "open", "closed", "sort-name", "sort-pass-ascending"],
)  # fmt: skip
def test_each_filter_and_sort_changes_the_rows(client, published_board, params, check):
    everything = board_rows(client)
    rows = board_rows(client, **params)
    assert rows and check(rows)
    assert [r["key"] for r in rows] != [r["key"] for r in everything]
    developer = params.get("developer")
    weights = {"open": True, "closed": False}.get(params.get("weights", ""))
    expected = leaderboard_rows(
        filters=LeaderboardFilters(developer=developer, open_weights=weights, sort=params.get("sort", "-scaled_pass_at_1"))
    )  # fmt: skip
    assert [r["key"] for r in rows] == [r.model.key for r in expected]


def test_global_contamination_rule_reproduces_the_papers_numbers(client, published_board):
    html = get(client, "/", contamination="global")
    rows = Page(html).rows
    top = rows[0]
    assert top["key"] == "GEMINI_2_5_PRO_PREVIEW_05_06"
    assert top["cells"][5].startswith("33.30") and top["cells"][6] == "58.74"
    assert top["cells"][7] == "143/143"
    assert "13 papers kept" in html


def test_per_model_contamination_scores_each_model_on_its_own_papers(client, published_board):
    rows = board_rows(client, contamination="per-model")
    expected = {
        r.model.key: r for r in leaderboard_rows(filters=LeaderboardFilters(contamination="per-model"))
    }
    assert len(rows) == 32
    for shown in rows:
        row = expected[shown["key"]]
        value = f"{row.scaled_pass_at_1:.2f}" if row.scaled_pass_at_1 is not None else "–"
        assert shown["cells"][5].startswith(value)
        assert shown["cells"][7] == f"{row.score.snippets}/{row.score.expected_snippets}"
    assert rows != board_rows(client)


def test_filters_without_matches_show_an_honest_empty_state(client, published_board):
    html = get(client, "/", paper="without")
    assert "No model matches these filters" in html and not Page(html).rows
    html = get(client, "/", verification="uploaded")
    assert "No model matches these filters" in html


def test_unknown_filter_values_are_reported_not_crashed_on(client, published_board):
    html = get(client, "/", weights="maybe", contamination="sometimes", sort="shoe_size")
    assert "Unknown weights &#x27;maybe&#x27;" in html
    assert "Unknown contamination &#x27;sometimes&#x27;" in html
    assert "Unknown sort &#x27;shoe_size&#x27;" in html
    assert len(Page(html).rows) == 32


def test_htmx_requests_get_only_the_results_fragment(client, published_board):
    response = client.get("/", {"developer": "Google"}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<div id="results"') and "<html" not in html and "<h1" not in html
    assert {r["cells"][2] for r in Page(html).rows} == {"Google"}
    assert 'id="board-chart"' in html


def test_sort_headers_are_real_links_that_keep_the_filters(client, published_board):
    html = get(client, "/", developer="OpenAI", sort="-pass_at_1")
    assert 'aria-sort="descending"' in html
    links = re.findall(r'<a class="sort" href="([^"]+)" hx-get="\1"', html)
    assert links and all("developer=OpenAI" in link for link in links)
    assert "?developer=OpenAI&amp;sort=pass_at_1" in html  # the current column toggles direction


def test_every_page_is_accessible(client, published_board):
    snippet = Snippet.objects.filter(task_version__task__paper__key="DyT").order_by("ordinal").first()
    urls = [
        "/",
        "/?contamination=global",
        reverse("leaderboard:model", args=["O3_HIGH"]),
        reverse("leaderboard:paper", args=["DyT"]),
        reverse("leaderboard:snippet", args=["DyT", snippet.name]),
        reverse("leaderboard:errors"),
        reverse("leaderboard:contamination"),
        reverse("leaderboard:ablation"),
    ]
    for url in urls:
        assert_accessible(get(client, url))


def test_model_page_shows_its_per_paper_scores_and_verdict_grid(client, published_board):
    html = get(client, reverse("leaderboard:model", args=["O3_HIGH"]))
    detail = model_detail(key="O3_HIGH")
    assert "<h1>O3 (High)</h1>" in html
    assert len(detail.per_paper) == 20
    for p in detail.per_paper:
        assert f"{p.scaled_pass_at_1:.2f}" in html
        assert reverse("leaderboard:paper", args=[p.paper_key]) in html
    assert html.count('class="v-pass"') == sum(1 for v in detail.verdict_grid if v.verdicts == "P")
    assert html.count('class="v-fail"') == sum(1 for v in detail.verdict_grid if v.verdicts == "F")
    assert 'id="model-heatmap"' in html and "32.16" in html and "25.90" in html  # full and global rule
    assert client.get(reverse("leaderboard:model", args=["NO_SUCH_MODEL"])).status_code == 404


def test_paper_page_shows_metadata_tree_difficulty_and_heatmap(client, published_board):
    html = get(client, reverse("leaderboard:paper", args=["DyT"]))
    detail = paper_detail(key="DyT")
    assert "Transformers without Normalization" in html and "https://github.com/jiachenzhu/DyT" in html
    assert "2025-03-09" in html  # first commit
    for node in detail.snippets:
        assert f"N={node.lines}" in html
        assert f"{floatformat(node.solve_rate, 1)}% ({node.passed}/{node.results})" in html
    svg = re.search(r'<svg[^>]*id="paper-heatmap".*?</svg>', html, flags=re.S).group(0)
    cells = [
        t.text
        for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}title")
        if " – " in (t.text or "")
    ]
    assert len(cells) == len(detail.matrix) * len(detail.snippets) == 32 * 9
    assert client.get(reverse("leaderboard:paper", args=["nope"])).status_code == 404


def test_snippet_page_of_a_metadata_only_version_explains_what_is_missing(client, published_board):
    snippet = Snippet.objects.filter(task_version__task__paper__key="DyT", name="forward").get()
    html = get(client, reverse("leaderboard:snippet", args=["DyT", "forward"]))
    assert "holds only metadata" in html
    assert html.count('class="completion"') == 32
    assert "code is not stored" in html
    assert f"N</dt><dd>{snippet.lines}" in html.replace("Line count N", "N")
    assert client.get(reverse("leaderboard:snippet", args=["DyT", "no such snippet"])).status_code == 404


def test_errors_page_shares_and_per_model_counts_match_the_breakdown(client, published_board):
    html = get(client, reverse("leaderboard:errors"))
    data = error_breakdown()
    for c in data.categories:
        assert f'<td class="num">{c.count}</td><td class="num">{c.share:.1f}%</td>' in html
    assert 'id="error-shares"' in html and 'id="error-per-model"' in html
    assert "No infrastructure failures recorded" in html


def test_contamination_page_shows_the_global_cutoff_and_timeline(client, published_board):
    html = get(client, reverse("leaderboard:contamination"))
    data = contamination_overview()
    assert f"keeps 13 of {len(data.papers)} papers" in html
    svg = re.search(r'<svg[^>]*id="contamination-timeline".*?</svg>', html, flags=re.S).group(0)
    root = ET.fromstring(svg)
    texts = {"".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")}
    assert {p.key for p in data.papers} <= texts and {m.model.name for m in data.models} <= texts
    assert f"Original global cutoff ({data.global_cutoff.isoformat()})" in texts


def test_ablation_page_is_honest_when_no_pairs_exist(client, published_board):
    html = get(client, reverse("leaderboard:ablation"))
    assert "No with/without-paper pairs yet" in html
    assert "No snippet has results both with and without the paper yet" in html


def test_chart_data_links_return_csv_of_the_filtered_rows(client, published_board):
    import csv
    import io

    html = get(client, "/", developer="OpenAI", weights="", contamination="global")
    link = re.search(r'<a href="([^"]+)">Chart data \(CSV\)</a>', html).group(1).replace("&amp;", "&")
    assert "weights=" not in link and "contamination=global" in link
    response = client.get(link)
    assert response.status_code == 200
    records = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [r["model.key"] for r in records] == [r["key"] for r in Page(html).rows]
    for page_name in ("errors", "contamination", "ablation"):
        page_html = get(client, reverse(f"leaderboard:{page_name}"))
        match = re.search(r'<a href="([^"]+)">Chart data \(CSV\)</a>', page_html)
        if match:
            assert client.get(match.group(1).replace("&amp;", "&")).status_code == 200
