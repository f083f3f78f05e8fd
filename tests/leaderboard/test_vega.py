"""Interactive views (issue 12 item 6): Vega-Lite specs built on the server from the selectors the SVG
charts use, embedded as data (json_script) and drawn by static/js/charts.js with the vendored Vega-Lite.

The server-side SVG stays the baseline: the specs carry the same numbers and the same colours, pages load
only local static files and no inline script, and the browser journey checks the heatmap draws, re-sorts
by line count, logs no error, sends no request off this machine and needs no 'unsafe-eval'."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from collections.abc import Callable
from html import unescape
from pathlib import Path
from urllib.parse import urlsplit

import jsonschema
import pytest
from django.contrib.staticfiles import finders
from django.urls import reverse

from leaderboard import vega
from leaderboard.charts import encoding
from leaderboard.selectors.board import LeaderboardFilters, Row, leaderboard_rows
from leaderboard.selectors.common import ModelRef, Score
from leaderboard.selectors.compare import ComparedPaper, ModelComparison, Setting, model_compare
from leaderboard.selectors.models import ModelDetail
from leaderboard.selectors.papers import MatrixRow, PaperDetail, SnippetNode, paper_detail
from leaderboard.services import leaderboard_refresh_run
from tests.factories import LanguageModelFactory, make_benchmark, make_run

pytestmark = pytest.mark.django_db


def build_paper_board() -> None:
    """Paper "heat" with snippets s0 (3 lines), s1 (1 line), s2 (9 lines), so the three orders differ:
    document s0 s1 s2, line count s2 s0 s1, difficulty (solve rate 50, 0, 100) s1 s0 s2. A second paper
    "cool" gives the comparison a second row. Two models of different developers, one with open weights
    and a cost."""
    rel, snippets = make_benchmark({"heat": (None, [3, 1, 9]), "cool": (None, [2])})
    runs = [
        ("Alpha One", "alpha-1", "Acme", True, {"heat": "P F P", "cool": "P"}, None),
        ("Beta Two", "beta-2", "Bolt", False, {"heat": "F F P", "cool": "F"}, 1.25),
    ]
    for name, key, developer, open_weights, verdicts, cost in runs:
        model = LanguageModelFactory(key=key, name=name, developer=developer, open_weights=open_weights)
        run = make_run(snippets, verdicts, release=rel, model=model)
        if cost is not None:
            type(run).objects.filter(pk=run.pk).update(cost_usd=cost)
        leaderboard_refresh_run(run=run)


@pytest.fixture
def paper_board():
    build_paper_board()


def page(client, url: str, **params) -> str:
    response = client.get(url, params)
    assert response.status_code == 200, response.content[:500]
    return response.content.decode()


def embedded_spec(html: str, spec_id: str) -> dict:
    """The spec a page embeds with json_script under ``spec_id`` (and a container that names it)."""
    assert f'data-vega-spec="{spec_id}"' in html, spec_id
    match = re.search(
        rf'<script id="{re.escape(spec_id)}" type="application/json">(.*?)</script>', html, re.S
    )
    assert match, f"no json_script {spec_id}"
    return json.loads(match.group(1))


def heatmap_cells(spec: dict) -> list[dict]:
    """The heatmap's cells with the fields its lookup transforms join in (as Vega does before drawing)."""
    cells = [dict(c) for c in spec["data"]["values"]]
    for step in spec["transform"]:
        if "lookup" in step:
            table = {r[step["from"]["key"]]: r for r in step["from"]["data"]["values"]}
            for c in cells:
                c.update({f: table[c[step["lookup"]]][f] for f in step["from"]["fields"]})
    return cells


def svg(html: str, chart_id: str) -> str:
    match = re.search(rf'<svg [^>]*id="{chart_id}".*?</svg>', html, re.S)
    assert match, chart_id
    return match.group(0)


def legend_colours(svg_text: str) -> dict[str, str]:
    """Legend entry -> fill, read from a server-side SVG chart's legend."""
    legend = re.search(r'<g class="legend".*?</g>', svg_text, re.S).group(0)
    return {
        unescape(label): fill
        for fill, label in re.findall(r'<rect [^>]*fill="([^"]+)"[^>]*/><text [^>]*>([^<]*)</text>', legend)
    }


# --- the specs -----------------------------------------------------------------------------------------


def test_specs_name_the_schema_of_the_vendored_vega_lite():
    version = re.search(r"/vega-lite/v(\d+\.\d+\.\d+)\.json$", vega.SCHEMA).group(1)
    path = finders.find("vendor/vega/vega-lite.min.js")
    assert path, "Vega-Lite must be vendored under static/vendor/vega/"
    assert f'var n="{version}"' in Path(path).read_text(encoding="utf-8")[:400]
    readme = Path(finders.find("vendor/vega/README.md")).read_text(encoding="utf-8")
    assert f"vega-lite\n{version}" in readme or f"vega-lite {version}" in readme


@pytest.mark.parametrize("name", ["vega", "vega-lite", "vega-embed", "vega-interpreter"])
def test_each_vendored_package_ships_its_licence(name):
    path = finders.find(f"vendor/vega/LICENSE-{name}")
    assert path and "Redistribution and use" in Path(path).read_text(encoding="utf-8")


def test_paper_heatmap_spec_cells_equal_the_selector_output_and_the_svg(client, paper_board):
    html = page(client, reverse("leaderboard:paper", args=["heat"]))
    spec = embedded_spec(html, "paper-heatmap-spec")
    assert spec["$schema"] == vega.SCHEMA

    detail = paper_detail(key="heat", filters=LeaderboardFilters())
    expected = {
        (m.model.name, n.name): (
            vega.cell_pass_rate(m.verdicts.get(n.id, "")),
            n.lines,
            n.solve_rate,
        )
        for m in detail.matrix
        for n in detail.snippets
    }
    got = {(v["model"], v["snippet"]): (v["rate"], v["lines"], v["solve_rate"]) for v in heatmap_cells(spec)}
    assert got == expected
    # The numbers the fixture implies, so a wrong selector cannot agree with itself.
    assert {k: v[0] for k, v in got.items()} == {
        ("Alpha One", "s0"): 100.0, ("Alpha One", "s1"): 0.0, ("Alpha One", "s2"): 100.0,
        ("Beta Two", "s0"): 0.0, ("Beta Two", "s1"): 0.0, ("Beta Two", "s2"): 100.0,
    }  # fmt: skip
    assert {k[1]: v[2] for k, v in got.items()} == {"s0": 50.0, "s1": 0.0, "s2": 100.0}
    # Each snippet's link once in the page's spec (cells join it in), not once per cell.
    assert {c["href"] for c in heatmap_cells(spec)} == {
        f"{reverse('leaderboard:snippet', args=['heat', n.name])}?id={n.id}" for n in detail.snippets
    }
    assert json.dumps(spec).count('"href": "/') == len(detail.snippets)

    # Same colour scale as the SVG: its viridis stops, interpolated in RGB; the SVG's cells use them.
    scale = spec["layer"][1]["encoding"]["color"]["scale"]
    assert scale["domain"] == [0, 25, 50, 75, 100]
    assert scale["range"] == [encoding.scale_colour(k / 4) for k in range(5)]
    assert scale["interpolate"] == "rgb"
    heat_svg = svg(html, "paper-heatmap")
    assert (
        f'fill="{encoding.scale_colour(1.0)}"' in heat_svg
        and f'fill="{encoding.scale_colour(0.0)}"' in heat_svg
    )
    assert spec["layer"][0]["mark"]["fill"] == encoding.MISSING


def test_paper_heatmap_spec_follows_the_filters_like_the_svg(client, paper_board):
    html = page(client, reverse("leaderboard:paper", args=["heat"]), weights="closed")
    spec = embedded_spec(html, "paper-heatmap-spec")
    filtered = paper_detail(key="heat", filters=LeaderboardFilters(open_weights=False))
    assert [m.model.name for m in filtered.matrix] == ["Beta Two"]
    assert {v["model"] for v in heatmap_cells(spec)} == {"Beta Two"}
    assert "Alpha One" not in svg(html, "paper-heatmap")


def test_heatmap_controls_offer_every_order_model_and_snippet(client, paper_board):
    spec = embedded_spec(page(client, reverse("leaderboard:paper", args=["heat"])), "paper-heatmap-spec")
    params = {p["name"]: p for p in spec["params"]}
    assert params["sort_by"]["bind"]["input"] == "select"
    assert params["sort_by"]["bind"]["options"] == ["document", "difficulty", "lines"]
    assert params["highlight_model"]["bind"]["options"] == ["", "Alpha One", "Beta Two"]
    assert params["highlight_snippet"]["bind"]["options"] == ["", "s0", "s1", "s2"]
    assert spec["encoding"]["x"]["sort"] == {"field": "snippet_rank", "op": "min"}


def test_a_models_runs_with_and_without_the_paper_get_distinct_rows_in_both_charts(client):
    rel, snippets = make_benchmark({"heat": (None, [3])})
    model = LanguageModelFactory(key="gamma-3", name="Gamma")
    for with_paper in (True, False):
        leaderboard_refresh_run(
            run=make_run(snippets, {"heat": "P"}, release=rel, model=model, with_paper=with_paper)
        )
    html = page(client, reverse("leaderboard:paper", args=["heat"]), paper="any")
    rows = {v["model"] for v in heatmap_cells(embedded_spec(html, "paper-heatmap-spec"))}
    assert rows == {"Gamma (with paper)", "Gamma (without paper)"}
    assert "Gamma (with paper)" in svg(html, "paper-heatmap")


def test_compare_spec_scores_equal_the_selector_and_colours_equal_the_svg(client, paper_board):
    html = page(client, reverse("leaderboard:compare"), models=["alpha-1", "beta-2"])
    spec = embedded_spec(html, "compare-papers-spec")
    assert spec["$schema"] == vega.SCHEMA
    _choice, data = model_compare(keys=["alpha-1", "beta-2"])
    names = [d.model.name for d in data.models]
    expected = {(p.paper_key, names[i]): (s, p.spread) for p in data.papers for i, s in enumerate(p.scores)}
    got = {(v["paper"], v["model"]): (v["score"], v["spread"]) for v in spec["data"]["values"]}
    assert got == expected
    assert got[("cool", "Alpha One")][0] == 100.0 and got[("cool", "Beta Two")][0] == 0.0

    colour = spec["encoding"]["color"]["scale"]
    assert dict(zip(colour["domain"], colour["range"], strict=True)) == legend_colours(
        svg(html, "compare-papers")
    )
    options = {p["name"]: p["bind"]["options"] for p in spec["params"]}
    assert options["sort_papers"] == ["paper", "spread", "model-0", "model-1"]
    assert options["highlight"] == ["", "Alpha One", "Beta Two"]


def test_board_scatters_plot_the_board_rows_with_the_board_charts_developer_colours(client, paper_board):
    html = page(client, "/")
    rows = [r for r in leaderboard_rows(filters=LeaderboardFilters()) if not r.incomplete]

    by_date = embedded_spec(html, "board-scatter-date-spec")
    assert by_date["$schema"] == vega.SCHEMA
    assert sorted((v["model"], v["score"], v["date"]) for v in by_date["data"]["values"]) == sorted(
        (r.model.name, r.scaled_pass_at_1, r.finished_at.isoformat()) for r in rows
    )
    by_cost = embedded_spec(html, "board-scatter-cost-spec")
    assert [(v["model"], v["cost"]) for v in by_cost["data"]["values"]] == [("Beta Two", 1.25)]

    board_legend = legend_colours(svg(html, "board-chart"))
    colour = by_date["encoding"]["color"]["scale"]
    assert dict(zip(colour["domain"], colour["range"], strict=True)) == {
        d: board_legend[d] for d in ("Acme", "Bolt")
    }
    # Fixed by every developer that exists, not by the rows a filter leaves.
    filtered = embedded_spec(page(client, "/", weights="closed"), "board-scatter-date-spec")
    scale = filtered["encoding"]["color"]["scale"]
    assert scale["domain"] == ["Bolt"] and scale["range"] == [board_legend["Bolt"]]


def test_every_spec_the_pages_embed_is_valid_against_the_vendored_vega_lite_schema(client, paper_board):
    schema = json.loads(Path(finders.find("vendor/vega/vega-lite-schema.json")).read_text(encoding="utf-8"))
    validator = jsonschema.Draft7Validator(schema)
    pages = {
        "/": ["board-scatter-date-spec", "board-scatter-cost-spec"],
        reverse("leaderboard:paper", args=["heat"]): ["paper-heatmap-spec"],
        f"{reverse('leaderboard:compare')}?models=alpha-1&models=beta-2": ["compare-papers-spec"],
    }
    for url, ids in pages.items():
        html = client.get(url).content.decode()
        for spec_id in ids:
            errors = [e.message[:300] for e in validator.iter_errors(embedded_spec(html, spec_id))]
            assert errors == [], (spec_id, errors)
    assert list(
        validator.iter_errors({"data": {"values": []}, "mark": "bar", "encoding": {"x": {"type": "x"}}})
    )


def test_scatter_spec_refuses_an_unknown_axis():
    with pytest.raises(ValueError, match="x must be 'date' or 'cost'"):
        vega.board_scatter_spec([], x="tokens", swatches={}, model_hrefs={}, title="t")


def test_names_with_markup_stay_data_in_the_embedded_spec(client):
    rel, snippets = make_benchmark({"heat": (None, [2])})
    model = LanguageModelFactory(key="evil", name="</script><script>alert(1)</script>")
    leaderboard_refresh_run(run=make_run(snippets, {"heat": "P"}, release=rel, model=model))
    html = page(client, reverse("leaderboard:paper", args=["heat"]))
    assert "<script>alert(1)" not in html
    spec = embedded_spec(html, "paper-heatmap-spec")
    assert heatmap_cells(spec)[0]["model"] == "</script><script>alert(1)</script>"


# --- recorded output: identical specs ------------------------------------------------------------------

RECORDED_SPECS = Path(__file__).parent / "recorded" / "vega"
RECORD_SPECS = os.environ.get("RCB_VEGA_RECORD") == "1"


def ref(key: str, name: str, developer: str = "") -> ModelRef:
    return ModelRef(
        key=key, name=name, developer=developer, company="", open_weights=None, knowledge_cutoff=None,
        knowledge_cutoff_raw="", provider_model_id="",
    )  # fmt: skip


def fixed_paper() -> PaperDetail:
    """Two tasks; a model with runs with and without the paper, and twice without (the run id tells)."""
    snippets = tuple(
        SnippetNode(
            id=10 + j, task_key=task, task_version=1, name=name, ordinal=j, depth=0, parent_id=None,
            lines=lines, runs=2, results=4, passed=1, solve_rate=rate,
        )
        for j, (task, name, lines, rate) in enumerate(
            [("t1", "s0", 3, 50.0), ("t1", "s<1>", 1, None), ("t2", "s2", 9, 12.5)]
        )
    )  # fmt: skip
    rows = [
        (1, "Gamma", True, 40.0, {10: "PF", 12: "FF"}),
        (2, "Gamma", False, None, {11: "--"}),
        (3, "Gamma", False, 10.0, {10: "P"}),
        (4, "Delta & co", True, 5.0, {}),
    ]
    matrix = tuple(
        MatrixRow(run_id, ref(f"m{run_id}", name), with_paper, score, None, verdicts)
        for run_id, name, with_paper, score, verdicts in rows
    )
    return PaperDetail(
        key="heat", title="Heat", venue="", arxiv_id="", arxiv_abs="", arxiv_date=None, arxiv_v1_date=None,
        github_url="", first_commit_date=None, last_commit_date=None, tasks=("t1", "t2"), snippets=snippets,
        matrix=matrix,
    )  # fmt: skip


def fixed_comparison(names: list[str]) -> ModelComparison:
    models = tuple(
        ModelDetail(
            model=ref(f"k{i}", name), runs=(), run=None, scores={}, per_paper=(), errors=(),
            infrastructure_errors=(), verdict_grid=(), before_cutoff=None, after_cutoff=None,
            undated_papers=(),
        )
        for i, name in enumerate(names)
    )  # fmt: skip
    scores = [tuple(float(10 * i + p) for i in range(len(names))) for p in range(2)]
    papers = (
        ComparedPaper("a", "Paper A", scores[0], 10.0 * (len(names) - 1)),
        ComparedPaper("b", "Paper <B>", (None, *scores[1][1:]), None),
    )
    setting = Setting("r1", "rcb-v2", True)
    return ModelComparison(setting=setting, models=models, papers=papers, snippets=(), differing=0)


def fixed_rows() -> list[Row]:
    """Runs of two groups: scored, unscored, below full coverage, without a date or a cost."""
    when = dt.datetime(2025, 3, 4, 5, 6, 7, tzinfo=dt.UTC)

    def row(
        run_id: int,
        name: str,
        developer: str,
        score: float | None,
        *,
        finished_at: dt.datetime | None = when,
        cost: float | None = None,
        snippets: int = 4,
        release: str | None = "r1",
    ) -> Row:
        return Row(
            rank=None, run_id=run_id, model=ref(f"m{run_id}", name, developer), release=release,
            template="rcb-2025", with_paper=run_id != 5, verification="generated", source="generated",
            status="finished", n_completions=1, finished_at=finished_at, cost_usd=cost, contamination="none",
            selection=None,
            score=Score(
                scaled_pass_at_1=score, scaled_pass_at_1_std=None, line_rates=(), pass_at_1=score,
                pass_at_1_std=None, task_rates=(), ci95=None, snippets=snippets, expected_snippets=4,
                lines=10, coverage=snippets / 4, papers=1,
            ),
        )  # fmt: skip

    return [
        row(1, "Alpha", "Acme", 40.5, cost=1.25),
        row(2, "Beta", "", 20.0, finished_at=None, cost=0.5),
        row(3, "Gamma", "Zed", None),
        row(4, "Delta", "Bolt", 30.0, snippets=2),
        row(5, "Eps", "Bolt", 12.0, cost=3.0, release=None),
    ]


RECORDED_SPEC_CASES: dict[str, Callable[[], vega.Spec | None]] = {
    "paper_heatmap_spec": lambda: vega.paper_heatmap_spec(
        fixed_paper(), snippet_hrefs=["/s/0/", "/s/1/?a=1&b=2", "/s/2/"], title="Heat: pass rate"
    ),
    "compare_papers_spec": lambda: vega.compare_papers_spec(fixed_comparison(["One", "Two"]), title="Two"),
    "compare_papers_spec_three": lambda: vega.compare_papers_spec(
        fixed_comparison(["One", "Two", "Three & co"]), title="Three"
    ),
    "board_scatter_spec_date": lambda: vega.board_scatter_spec(
        fixed_rows(),
        x="date",
        swatches=encoding.group_swatches(["Acme", "Unknown"]),
        model_hrefs={"m1": "/models/m1/"},
        title="By date",
    ),
    "board_scatter_spec_cost": lambda: vega.board_scatter_spec(
        fixed_rows(),
        x="cost",
        swatches=encoding.group_swatches(["Acme", "Bolt", "Unknown", "Zed"]),
        model_hrefs={"m1": "/models/m1/", "m5": "/models/m5/"},
        title="By cost",
    ),
    "board_scatter_spec_one_group": lambda: vega.board_scatter_spec(
        fixed_rows()[:1], x="cost", swatches={}, model_hrefs={}, title="One"
    ),
    "board_scatter_spec_none_left": lambda: vega.board_scatter_spec(
        fixed_rows()[2:4], x="date", swatches={}, model_hrefs={}, title="None"
    ),
}


@pytest.mark.parametrize("case", sorted(RECORDED_SPEC_CASES))
def test_every_spec_equals_the_recorded_one_key_for_key(case: str) -> None:
    """Each spec on fixed selector output, as JSON in key order, equals the recorded one
    (``recorded/vega/``), so a refactoring of the spec builders cannot change a page. After a deliberate
    change of a spec, record the new ones with ``RCB_VEGA_RECORD=1`` and review the diff."""
    text = json.dumps(RECORDED_SPEC_CASES[case](), indent=1, ensure_ascii=False) + "\n"
    path = RECORDED_SPECS / f"{case}.json"
    if RECORD_SPECS:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


# --- the pages -----------------------------------------------------------------------------------------


def test_chart_pages_load_only_local_static_files_and_no_inline_script(client, paper_board):
    urls = [
        "/",
        reverse("leaderboard:paper", args=["heat"]),
        f"{reverse('leaderboard:compare')}?models=alpha-1&models=beta-2",
    ]
    for url in urls:
        html = client.get(url).content.decode()
        assert 'data-vega-spec="' in html, url
        for tag in re.findall(r"<(?:script|link)\b[^>]*>", html):
            for ref in re.findall(r'\b(?:src|href)="([^"]*)"', tag):
                assert ref.startswith("/static/"), (url, tag)
        for tag in re.findall(r"<script\b[^>]*>", html):
            assert "src=" in tag or 'type="application/json"' in tag, (url, tag)
        assert not re.search(r"<[a-z][^>]*\son[a-z]+\s*=", html), url
        charts_js = re.search(r'<script src="/static/js/charts.js"[^>]*>', html).group(0)
        for name in ("vega", "vega-lite", "vega-embed"):
            assert f'="/static/vendor/vega/{name}.min.js"' in charts_js
            assert finders.find(f"vendor/vega/{name}.min.js")


def test_without_javascript_the_svg_stays_and_the_interactive_view_is_hidden(client, paper_board):
    html = page(client, reverse("leaderboard:paper", args=["heat"]))
    assert '<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="paper-heatmap"' in html
    details = re.search(r"<details [^>]*data-vega-details[^>]*>", html).group(0)
    assert " hidden" in details
    assert html.index('id="paper-heatmap"') < html.index("data-vega-details")


def test_a_lazy_heatmap_brings_its_interactive_view_with_it(client, paper_board, monkeypatch):
    monkeypatch.setattr("leaderboard.views.pages.LAZY_CELLS", 1)
    url = reverse("leaderboard:paper", args=["heat"])
    assert "paper-heatmap-spec" not in page(client, url)
    response = client.get(url, {"heatmap": "all"}, headers={"HX-Request": "true"})
    fragment = response.content.decode()
    assert "<html" not in fragment
    assert embedded_spec(fragment, "paper-heatmap-spec")["data"]["values"]


def test_charts_script_has_no_eval_and_uses_the_expression_interpreter():
    source = Path(finders.find("js/charts.js")).read_text(encoding="utf-8")
    assert "ast: true" in source
    assert not re.search(r"\beval\(|new Function|innerHTML", source)


# --- the browser journey -------------------------------------------------------------------------------

#: a strict policy (issue 14): no inline script, no eval; the journey runs under it
CSP = "default-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; style-src 'self' 'unsafe-inline'"


#: the heatmap's snippet labels in drawing order (left to right); Vega's axis aria label keeps its first order
X_LABELS = """() => Array.from(document.querySelectorAll(
    "[data-vega-spec] svg g[aria-label^='X-axis'] .role-axis-label text"))
  .map(t => [parseFloat(/translate\\(([-\\d.]+)/.exec(t.getAttribute('transform'))[1]), t.textContent])
  .sort((a, b) => a[0] - b[0]).map(p => p[1]).join(' ')"""


def wait_for_order(tab, order: str) -> None:
    tab.wait_for_function(f"() => ({X_LABELS})() === {json.dumps(order)}", timeout=20_000)


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_interactive_heatmap_draws_and_sorts_by_line_count_locally_under_a_strict_csp(live_server, browser):
    build_paper_board()
    errors: list[str] = []
    hosts: set[str] = set()
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    tab = context.new_page()
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.on("request", lambda r: hosts.add(urlsplit(r.url).hostname or r.url))

    def with_csp(route):
        response = route.fetch()
        headers = {**response.headers, "content-security-policy": CSP}
        route.fulfill(response=response, headers=headers)

    tab.route("**/*", with_csp)
    tab.goto(f"{live_server.url}{reverse('leaderboard:paper', args=['heat'])}")
    summary = tab.locator("#results details[data-vega-details] > summary")
    summary.wait_for(state="visible")
    assert tab.locator("#paper-heatmap").is_visible()

    summary.focus()
    tab.keyboard.press("Enter")  # opens the <details> from the keyboard
    wait_for_order(tab, "s0 s1 s2")

    tab.locator("[data-vega-spec] select[name='sort_by']").select_option("lines")
    wait_for_order(tab, "s2 s0 s1")
    tab.locator("[data-vega-spec] select[name='sort_by']").select_option("difficulty")
    wait_for_order(tab, "s1 s0 s2")
    tab.locator("[data-vega-spec] select[name='highlight_model']").select_option("Beta Two")
    tab.screenshot(path="/tmp/rcb-vega-heatmap.png", full_page=True)

    # The comparison and the board's scatters draw too (each spec compiles and renders in Vega).
    compare = f"{live_server.url}{reverse('leaderboard:compare')}?models=alpha-1&models=beta-2"
    for url, count in ((compare, 1), (f"{live_server.url}/", 2)):
        tab.goto(url)
        for summary in tab.locator("details[data-vega-details] > summary").all():
            summary.click()
        tab.wait_for_function(
            f"() => document.querySelectorAll('[data-vega-spec] svg.marks').length === {count}",
            timeout=20_000,
        )
    tab.screenshot(path="/tmp/rcb-vega-board.png", full_page=True)

    assert errors == []
    assert hosts <= {"localhost", "127.0.0.1"}, hosts
    context.close()


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_paper_page_without_javascript_shows_the_svg_heatmap_only(live_server, browser):
    build_paper_board()
    context = browser.new_context(java_script_enabled=False)
    tab = context.new_page()
    tab.goto(f"{live_server.url}{reverse('leaderboard:paper', args=['heat'])}")
    assert tab.locator("#paper-heatmap").is_visible()
    assert tab.locator("#paper-heatmap g.row").count() == 2
    assert not tab.locator("details[data-vega-details]").is_visible()
    context.close()
