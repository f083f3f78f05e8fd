"""Server-side SVG charts: well-formed, accessible, complete, escaped, and honest about empty data."""

from __future__ import annotations

import datetime as dt
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from leaderboard.charts import bars, dates, encoding, heatmap, scatter
from leaderboard.charts.svg import no_data_svg, skippable

SVG = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    return root


def texts(root: ET.Element) -> list[str]:
    """Every visible text node (not <title>/<desc>), in document order."""
    return ["".join(el.itertext()).strip() for el in root.iter(f"{SVG}text")]


def titles(root: ET.Element) -> list[str]:
    return [el.text or "" for el in root.iter(f"{SVG}title")]


def assert_accessible(root: ET.Element, chart_id: str, title: str) -> None:
    assert root.get("role") == "graphics-document"
    assert root.get("aria-labelledby") == f"{chart_id}-title {chart_id}-desc"
    assert root.find(f"{SVG}title").get("id") == f"{chart_id}-title"
    assert root.find(f"{SVG}title").text == title
    desc = root.find(f"{SVG}desc")
    assert desc.get("id") == f"{chart_id}-desc" and desc.text
    assert re.fullmatch(r"0 0 [\d.]+ [\d.]+", root.get("viewBox"))
    assert root.get("width") is None and root.get("height") is None


BARS = [
    bars.Bar("Gemini-2.5-Pro", 37.34, "Google", False, err=(35.0, 39.5), href="/models/G/"),
    bars.Bar("DeepSeek-R1", 21.05, "DeepSeek", True, href="/models/D/"),
    bars.Bar("Llama-3.3-70B", 5.31, "Meta", True),
    bars.Bar("Untested", None, "Meta"),
]


def test_bar_chart_is_valid_accessible_svg_with_every_label_and_value() -> None:
    root = parse(bars.bar_chart(BARS, chart_id="main", title="Scaled Pass@1", x_label="Scaled Pass@1 (%)"))
    assert_accessible(root, "main", "Scaled Pass@1")
    shown = texts(root)
    for bar in BARS:
        assert bar.label in shown
    assert "37.34" in shown and "21.05" in shown and "5.31" in shown
    assert "– no data" in shown
    # legend: one entry per developer, sorted
    assert [t for t in shown if t in {"DeepSeek", "Google", "Meta"}] == ["DeepSeek", "Google", "Meta"]
    assert "Scaled Pass@1 (%)" in shown


def test_bar_chart_outlines_open_weights_and_draws_error_bars() -> None:
    svg = bars.bar_chart(BARS, chart_id="m", title="t", x_label="x", error_label="95% interval")
    root = parse(svg)
    dashed = [r for r in root.iter(f"{SVG}rect") if r.get("stroke-dasharray") and r.get("fill") != "none"]
    assert len(dashed) == 2  # DeepSeek-R1 and Llama are open weights
    assert any("95% interval 35.00–39.50" in t for t in titles(root))
    assert "Error bars: 95% interval" in texts(root)
    assert "Open weights (dashed outline)" in texts(root)


def test_bar_links_are_kept_and_escaped() -> None:
    root = parse(
        bars.bar_chart([bars.Bar("a", 1.0, href="/m/?a=1&b=2")], chart_id="x", title="t", x_label="")
    )
    links = list(root.iter(f"{SVG}a"))
    assert [a.get("href") for a in links] == ["/m/?a=1&b=2"]


def test_same_developers_get_the_same_colours_in_every_chart() -> None:
    one = encoding.group_swatches(["OpenAI", "Google", "Meta"])
    two = encoding.group_swatches(["Meta", "OpenAI", "Google", "Meta"])
    assert one == two
    assert len({s.colour for s in one.values()}) == 3
    assert all(s.colour in encoding.OKABE_ITO for s in one.values())


def test_groups_beyond_the_palette_get_hatching_so_none_look_alike() -> None:
    names = [f"dev{i:02d}" for i in range(len(encoding.OKABE_ITO) + 3)]
    swatches = encoding.group_swatches(names)
    assert len(set(swatches.values())) == len(names)
    svg = bars.bar_chart([bars.Bar(n, 1.0, n) for n in names], chart_id="h", title="t", x_label="")
    root = parse(svg)
    assert len(list(root.iter(f"{SVG}pattern"))) == 3


@pytest.mark.parametrize(
    "render",
    [
        lambda name: bars.bar_chart([bars.Bar(name, 1.0, name)], chart_id="c", title=name, x_label=name),
        lambda name: bars.grouped_bar_chart(
            [name], [bars.Series(name, [1.0])], chart_id="c", title=name, x_label=name
        ),
        lambda name: heatmap.heatmap([name], [name], [[1.0]], chart_id="c", title=name, value_label=name),
        lambda name: dates.timeline(
            [dates.TimelineItem(name, dt.date(2024, 1, 1), "model")],
            chart_id="c",
            title=name,
            markers=[(name, dt.date(2024, 2, 1))],
        ),
        lambda name: scatter.scatter(
            [scatter.Point(name, 1.0, 2.0, name)], chart_id="c", title=name, x_label=name, y_label=name
        ),
        lambda name: bars.stacked_bar_chart(
            [name], [bars.Series(name, [3])], chart_id="c", title=name, x_label=name
        ),
        lambda name: no_data_svg(chart_id="c", title=name, message=name),
    ],
    ids=["bar", "grouped", "heatmap", "timeline", "scatter", "stacked", "nodata"],
)
def test_hostile_names_are_escaped_as_text(render) -> None:
    name = "<script>alert(\"x\")</script> & 'q'"
    svg = render(name)
    assert "<script>" not in svg
    root = parse(svg)
    assert not list(root.iter("script")) and not list(root.iter(f"{SVG}script"))
    assert any(name in t for t in texts(root) + titles(root))


@pytest.mark.parametrize(
    "render",
    [
        lambda: bars.bar_chart([], chart_id="e", title="Empty", x_label="x"),
        lambda: bars.grouped_bar_chart([], [], chart_id="e", title="Empty", x_label="x"),
        lambda: heatmap.heatmap([], [], [], chart_id="e", title="Empty", value_label="v"),
        lambda: dates.timeline([], chart_id="e", title="Empty"),
        lambda: scatter.scatter([], chart_id="e", title="Empty", x_label="x", y_label="y"),
        lambda: bars.stacked_bar_chart([], [], chart_id="e", title="Empty", x_label="x"),
        lambda: bars.stacked_bar_chart(
            ["m"], [bars.Series("s", [0])], chart_id="e", title="Empty", x_label="x"
        ),
    ],
    ids=["bar", "grouped", "heatmap", "timeline", "scatter", "stacked", "stacked-zero"],
)
def test_empty_data_gives_an_accessible_no_data_chart(render) -> None:
    root = parse(render())
    assert_accessible(root, "e", "Empty")
    assert "No data to chart yet." in texts(root)


def test_grouped_bars_show_each_series_value_and_a_legend() -> None:
    svg = bars.grouped_bar_chart(
        ["GPT-4.1", "O3 (High)"],
        [bars.Series("Full", [27.54, 32.16]), bars.Series("Contamination-free", [20.0, None])],
        chart_id="g",
        title="Full vs contamination-free",
        x_label="Scaled Pass@1 (%)",
    )
    root = parse(svg)
    assert_accessible(root, "g", "Full vs contamination-free")
    shown = texts(root)
    for value in ("27.54", "32.16", "20.00", "GPT-4.1", "O3 (High)", "Full", "Contamination-free"):
        assert value in shown
    assert "Contamination-free: no data" in shown
    assert "O3 (High) – Full: 32.16" in titles(root)


def test_grouped_bars_reject_series_of_the_wrong_length() -> None:
    with pytest.raises(ValueError, match="series 'a' has 1 values for 2 categories"):
        bars.grouped_bar_chart(["x", "y"], [bars.Series("a", [1.0])], chart_id="g", title="t", x_label="")


def test_heatmap_colours_cells_by_value_and_titles_every_cell() -> None:
    svg = heatmap.heatmap(
        ["m1", "m2"],
        ["DyT", "minp"],
        [[0.0, 100.0], [50.0, None]],
        chart_id="hm",
        title="Per-paper scores",
        value_label="Scaled Pass@1 (%)",
        row_hrefs=["/models/m1/", None],
    )
    root = parse(svg)
    assert_accessible(root, "hm", "Per-paper scores")
    cell_titles = [t for t in titles(root) if " – " in t]
    assert cell_titles == [
        "m1 – DyT: 0.0 Scaled Pass@1 (%)",
        "m1 – minp: 100.0 Scaled Pass@1 (%)",
        "m2 – DyT: 50.0 Scaled Pass@1 (%)",
        "m2 – minp: no data",
    ]
    fills = [r.get("fill") for r in root.iter(f"{SVG}rect")]
    assert encoding.scale_colour(0.0) in fills and encoding.scale_colour(1.0) in fills
    assert encoding.scale_colour(0.5) in fills and encoding.MISSING in fills
    assert root.find(f".//{SVG}linearGradient") is not None
    shown = texts(root)
    assert {"0", "100", "50", "DyT", "minp", "m1", "m2", "no data"} <= set(shown)
    assert [a.get("href") for a in root.iter(f"{SVG}a")] == ["/models/m1/"]


def test_heatmap_rejects_a_ragged_grid() -> None:
    with pytest.raises(ValueError, match="2 rows of 2 columns"):
        heatmap.heatmap(["a", "b"], ["x", "y"], [[1.0, 2.0], [1.0]], chart_id="h", title="t", value_label="v")


def test_scale_colour_runs_from_dark_to_light() -> None:
    def luminance(hex_colour: str) -> float:
        r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    lum = [luminance(encoding.scale_colour(t / 10)) for t in range(11)]
    assert lum == sorted(lum)
    assert encoding.scale_colour(-1) == encoding.scale_colour(0) and encoding.scale_colour(
        2
    ) == encoding.scale_colour(1)


def test_dated_scores_puts_papers_either_side_of_the_cutoff_and_names_those_it_cannot_place() -> None:
    points = [
        dates.DatedScore("early", dt.date(2023, 5, 1), 80.0, "/papers/early/"),
        dates.DatedScore("late", dt.date(2025, 2, 1), 20.0),
        dates.DatedScore("undated", None, 50.0),
    ]
    svg = dates.dated_scores(
        points, chart_id="dated", title="Per paper", cutoff=dt.date(2024, 6, 1), before=80.0, after=20.0
    )
    root = parse(svg)
    assert_accessible(root, "dated", "Per paper")
    desc = root.find(f"{SVG}desc").text
    assert "not placed (no date or no score): undated" in desc and "score before it 80.00" in desc
    assert "Knowledge cutoff (2024-06-01)" in texts(root)
    assert {"On or before the cutoff", "After the cutoff"} <= set(texts(root))
    circles = {
        g.find(f"{SVG}title").text.split(":")[0]: g.find(f"{SVG}circle")
        for g in root.iter(f"{SVG}g")
        if g.get("class") == "point"
    }
    assert set(circles) == {"early", "late"}
    assert float(circles["late"].get("cx")) > float(circles["early"].get("cx"))
    assert float(circles["late"].get("cy")) > float(circles["early"].get("cy"))  # lower score, lower down
    assert circles["early"].get("fill") != circles["late"].get("fill")
    assert "Score before the cutoff: 80.00" in titles(root)
    assert 'href="/papers/early/"' in svg
    empty = dates.dated_scores(
        [points[2]], chart_id="e", title="None", cutoff=dt.date(2024, 1, 1), before=None, after=None
    )
    assert "No dated paper with a score to chart." in texts(parse(empty))


def test_timeline_places_models_and_papers_by_date_and_lists_unknown_dates() -> None:
    items = [
        dates.TimelineItem("GPT-4.1", dt.date(2023, 12, 1), "model", "/models/G/"),
        dates.TimelineItem("Mystery", None, "model"),
        dates.TimelineItem("DyT", dt.date(2025, 3, 1), "paper"),
        dates.TimelineItem("minp", dt.date(2024, 7, 20), "paper"),
    ]
    svg = dates.timeline(
        items, chart_id="tl", title="Cutoffs and papers", markers=[("Global cutoff", dt.date(2024, 7, 1))]
    )
    root = parse(svg)
    assert_accessible(root, "tl", "Cutoffs and papers")
    shown = texts(root)
    for label in ("GPT-4.1", "Mystery", "DyT", "minp", "2023-12-01", "2025-03-01", "date unknown"):
        assert label in shown
    assert "Global cutoff (2024-07-01)" in shown
    assert {"2023", "2024", "2025", "2026"} <= set(shown)
    # the later paper is further right than the earlier one
    diamonds = {
        g.find(f"{SVG}title").text.split(":")[0]: g.find(f"{SVG}path").get("d")
        for g in root.iter(f"{SVG}g")
        if g.get("class") == "item" and g.find(f"{SVG}path") is not None
    }
    x_of = {k: float(d.split(",")[0][1:]) for k, d in diamonds.items()}
    assert x_of["DyT"] > x_of["minp"]


def test_scatter_draws_the_diagonal_and_counts_points_above_it() -> None:
    svg = scatter.scatter(
        [scatter.Point("A", 10.0, 20.0, "OpenAI"), scatter.Point("B", 30.0, 25.0, "Google")],
        chart_id="sc",
        title="With vs without paper",
        x_label="Without paper",
        y_label="With paper",
        max_value=50,
    )
    root = parse(svg)
    assert_accessible(root, "sc", "With vs without paper")
    assert "1 above the diagonal" in root.find(f"{SVG}desc").text
    assert "y = x" in titles(root)
    assert "A: Without paper 10.00, With paper 20.00" in titles(root)
    circles = {c.get("cx"): c.get("cy") for c in root.iter(f"{SVG}circle")}
    assert len(circles) == 2
    shown = texts(root)
    assert {"A", "B", "Without paper", "With paper", "OpenAI", "Google"} <= set(shown)


def test_stacked_bars_give_counts_shares_and_totals() -> None:
    svg = bars.stacked_bar_chart(
        ["GPT-4.1", "O3"],
        [bars.Series("Syntax Errors", [1, 0]), bars.Series("Logic Errors", [3, 2])],
        chart_id="st",
        title="Errors per model",
        x_label="Failures",
    )
    root = parse(svg)
    assert_accessible(root, "st", "Errors per model")
    assert "GPT-4.1 – Syntax Errors: 1 (25.0%)" in titles(root)
    assert "GPT-4.1 – Logic Errors: 3 (75.0%)" in titles(root)
    assert "O3 – Logic Errors: 2 (100.0%)" in titles(root)
    assert not any("O3 – Syntax" in t for t in titles(root))  # zero segments are not drawn
    shown = texts(root)
    assert {"4", "2", "Syntax Errors", "Logic Errors", "GPT-4.1", "O3"} <= set(shown)


def test_normalised_stacked_bars_all_reach_one_hundred_percent() -> None:
    svg = bars.stacked_bar_chart(
        ["a", "b"],
        [bars.Series("x", [1, 10]), bars.Series("y", [1, 30])],
        chart_id="n",
        title="t",
        x_label="share",
        normalise=True,
    )
    root = parse(svg)
    ends = []
    for g in root.iter(f"{SVG}g"):
        if g.get("class") == "stack":
            rects = g.findall(f"{SVG}rect")
            ends.append(round(float(rects[-1].get("x")) + float(rects[-1].get("width")), 1))
    assert len(ends) == 2 and ends[0] == ends[1]


def test_negative_values_extend_left_of_zero() -> None:
    root = parse(
        bars.bar_chart(
            [bars.Bar("up", 5.0), bars.Bar("down", -3.5)],
            chart_id="d",
            title="t",
            x_label="",
            legend=False,
        )
    )
    rects = [r for r in root.iter(f"{SVG}rect") if r.get("height") == "16"]
    up, down = rects
    assert float(down.get("x")) < float(up.get("x"))
    assert "-3.50" in texts(root)


def test_rejects_unsafe_chart_ids() -> None:
    with pytest.raises(ValueError, match="chart_id"):
        bars.bar_chart([bars.Bar("a", 1.0)], chart_id='x" onload="alert(1)', title="t", x_label="")


# ------------------------------------------------------------------ recorded output: byte-identical SVG

RECORDED_CHARTS = Path(__file__).parent / "recorded" / "charts"
RECORD_CHARTS = os.environ.get("RCB_CHARTS_RECORD") == "1"
HOSTILE = "<b>&'\"</b>"
DEVELOPERS = [f"Dev {chr(65 + i)}" for i in range(11)]  # more than the palette: hatched swatches too

RECORDED_CASES: dict[str, Callable[[], str]] = {
    "bar_chart": lambda: bars.bar_chart(
        [
            bars.Bar("Gemini-2.5-Pro", 37.345, "Dev A", err=(35.0, 39.5), href="/models/g/?a=1&b=2"),
            bars.Bar("A model with a name far longer than any axis label can hold", 21.0, "Dev B", True),
            bars.Bar(HOSTILE, 5.31, "Dev J", True, err=(4.0, 99.0), note="partial"),
            bars.Bar("Untested", None, "Dev K"),
            bars.Bar("Ungrouped", 0.0),
        ],
        chart_id="bars",
        title="Scaled Pass@1",
        x_label="Scaled Pass@1 (%)",
        desc="Every model.",
        error_label="95% interval",
        unit="%",
        swatches=encoding.group_swatches(DEVELOPERS[:9]),
    ),
    "bar_chart_deltas": lambda: bars.bar_chart(
        [
            bars.Bar("up", 12.5, "Dev A", href="/m/up/"),
            bars.Bar("down", -7.25, "Dev B", err=(-30.0, -2.0)),
            bars.Bar("flat", None, "Dev A"),
            bars.Bar("dip", -1.0, "Dev B", note="(one run)"),
        ],
        chart_id="deltas",
        title="Gain",
        x_label="",
        legend=False,
        max_value=20,
        digits=1,
        width=600,
    ),
    "bar_chart_many_groups": lambda: bars.bar_chart(
        [bars.Bar(name, float(i), name) for i, name in enumerate(DEVELOPERS)],
        chart_id="many",
        title="Hatched",
        x_label="x",
    ),
    "grouped_bar_chart": lambda: bars.grouped_bar_chart(
        ["GPT-4.1", HOSTILE, "O3 (High)"],
        [bars.Series("Full", [27.54, -3.0, 32.16]), bars.Series("Contamination-free", [20.0, None, 1.5])],
        chart_id="grouped",
        title="Full vs contamination-free",
        x_label="Scaled Pass@1 (%)",
        unit="%",
        hrefs=["/models/a/", None, "/models/c/?x=1&y=2"],
    ),
    "grouped_bar_chart_many_series": lambda: bars.grouped_bar_chart(
        ["a", "b"],
        [bars.Series(f"s{i}", [float(i), float(10 - i)]) for i in range(10)],
        chart_id="grouped-many",
        title="Ten series",
        x_label="",
        desc="Ten series of two.",
        max_value=100,
        digits=0,
        width=700,
    ),
    "heatmap": lambda: heatmap.heatmap(
        ["m1", HOSTILE, "a row label longer than the forty-two characters an axis shows"],
        ["DyT", "minp", "col & <3>"],
        [[0.0, 100.0, 55.5], [50.0, None, 12.25], [None, 99.0, 1.0]],
        chart_id="heat",
        title="Per-paper scores",
        value_label="Scaled Pass@1 (%)",
        row_hrefs=["/models/m1/", None, "/models/long/"],
        col_hrefs=[None, "/papers/minp/", "/papers/x/?a=1&b=2"],
    ),
    "heatmap_wide": lambda: heatmap.heatmap(
        ["r1", "r2"],
        [f"snippet {j}" for j in range(45)],
        [[(i * 45 + j) % 7 / 6 if (i + j) % 5 else None for j in range(45)] for i in range(2)],
        chart_id="heat-wide",
        title="Wide",
        value_label="Pass rate",
        desc="Forty-five columns.",
        vmin=0.0,
        vmax=1.0,
        digits=2,
    ),
    "heatmap_values_forced": lambda: heatmap.heatmap(
        ["r"],
        [f"c{j}" for j in range(31)],
        [[float(j) for j in range(31)]],
        chart_id="heat-forced",
        title="Forced values",
        value_label="v",
        vmin=-10.0,
        vmax=40.0,
        show_values=True,
    ),
    "timeline": lambda: dates.timeline(
        [
            dates.TimelineItem("GPT-4.1", dt.date(2023, 12, 1), "model", "/models/G/"),
            dates.TimelineItem("Mystery", None, "model"),
            dates.TimelineItem(HOSTILE, dt.date(2025, 3, 1), "paper", "/papers/x/?a=1&b=2"),
            dates.TimelineItem("minp", dt.date(2024, 7, 20), "paper"),
            dates.TimelineItem("undated paper", None, "paper"),
        ],
        chart_id="timeline",
        title="Cutoffs and papers",
        markers=[("Global cutoff", dt.date(2024, 7, 1)), ("Fixed <cutoff>", dt.date(2024, 10, 1))],
    ),
    "timeline_one_kind": lambda: dates.timeline(
        [dates.TimelineItem("only", dt.date(2022, 2, 2), "paper")],
        chart_id="timeline-one",
        title="One",
        desc="A paper.",
        kinds=(("model", "Models"), ("paper", "Papers")),
        width=500,
    ),
    "scatter": lambda: scatter.scatter(
        [
            scatter.Point("A", 10.0, 20.0, "Dev A", "/models/a/"),
            scatter.Point(HOSTILE, 30.0, 25.5, "Dev J"),
            scatter.Point("a point label longer than the forty-two characters", 0.0, 3.0),
        ],
        chart_id="scatter",
        title="With vs without paper",
        x_label="Without paper",
        y_label="With paper",
        desc="Every pair.",
        unit="%",
        swatches=encoding.group_swatches(DEVELOPERS[:9]),
    ),
    "scatter_no_diagonal": lambda: scatter.scatter(
        [scatter.Point("p", 0.5, 0.25), scatter.Point("q", 0.75, 1.0)],
        chart_id="scatter-plain",
        title="Plain",
        x_label="x",
        y_label="y",
        max_value=1.0,
        diagonal=False,
        digits=3,
        size=300,
    ),
    "stacked_bar_chart": lambda: bars.stacked_bar_chart(
        ["GPT-4.1", HOSTILE, "O3", "nothing"],
        [
            bars.Series("Syntax Errors", [1, 0, None, 0]),
            bars.Series("Logic Errors", [3, 2, 7, 0]),
            bars.Series("Something new", [0.5, 1, 2, None]),
        ],
        chart_id="stacked",
        title="Errors per model",
        x_label="Failures",
        row_hrefs=["/models/a/", None, "/models/o3/?x=1&y=2", None],
        swatches=encoding.category_swatches(),
    ),
    "stacked_bar_chart_normalised": lambda: bars.stacked_bar_chart(
        ["a", "b"],
        [bars.Series(f"s{i}", [i, 10 - i]) for i in range(10)],
        chart_id="stacked-share",
        title="Shares",
        x_label="share",
        desc="Ten segments.",
        normalise=True,
        width=640,
    ),
    "no_data_svg": lambda: no_data_svg(chart_id="empty", title=HOSTILE, message="Nothing & <none>"),
    "skippable": lambda: skippable(no_data_svg(chart_id="skip-me", title="t"), label="Skip <it>"),
}


@pytest.mark.parametrize("case", sorted(RECORDED_CASES))
def test_every_chart_draws_the_recorded_svg_byte_for_byte(case: str) -> None:
    """The SVG of each chart type on fixed data equals the recorded bytes (``recorded/charts/``), so a
    refactoring of the drawing code cannot change a page. After a deliberate change of a chart, record the
    new drawings with ``RCB_CHARTS_RECORD=1`` and review the diff."""
    svg = RECORDED_CASES[case]()
    path = RECORDED_CHARTS / f"{case}.svg"
    if RECORD_CHARTS:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(svg, encoding="utf-8")
    assert svg == path.read_text(encoding="utf-8")
