"""What the SVG charts and the interactive views (``leaderboard.vega``) draw alike: the palette and text
colours, each group's swatch, the pass-rate colour scale, the score's title and formats."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from researchcodebench import errors as error_catalogue

#: Okabe & Ito (2008) colour-blind-safe palette, black last (it is used for outlines and text).
OKABE_ITO: tuple[str, ...] = (
    "#E69F00",  # orange
    "#56B4E9",  # sky blue
    "#009E73",  # bluish green
    "#F0E442",  # yellow
    "#0072B2",  # blue
    "#D55E00",  # vermillion
    "#CC79A7",  # reddish purple
    "#999999",  # grey
)
TEXT = "#1b1f24"
MUTED = "#57606a"
GRID = "#d0d7de"
MISSING = "#eeeeee"

# Sequential colour scale for heatmaps: stops sampled from viridis (perceptually uniform and readable in
# greyscale and with colour-vision deficiencies). 0 -> dark purple, 1 -> yellow.
VIRIDIS: tuple[tuple[int, int, int], ...] = (
    (68, 1, 84),
    (59, 82, 139),
    (33, 145, 140),
    (94, 201, 98),
    (253, 231, 37),
)

FONT = 12
#: the smallest font size any chart text uses (user units = CSS px at natural size)


@dataclass(frozen=True)
class Swatch:
    """How one group is drawn: a fill colour and, past the palette's length, a hatch pattern."""

    colour: str
    hatch: int  # 0: none; 1, 2, ...: which hatch pattern


def palette_swatches(ordered: Sequence[str]) -> dict[str, Swatch]:
    """Group -> swatch by position in ``ordered`` (duplicates keep their first position)."""
    out: dict[str, Swatch] = {}
    for group in ordered:
        if group not in out:
            i = len(out)
            out[group] = Swatch(OKABE_ITO[i % len(OKABE_ITO)], i // len(OKABE_ITO))
    return out


def group_swatches(groups: Sequence[str]) -> dict[str, Swatch]:
    """Stable group -> swatch: groups sorted by name get palette colours in order (same set, same colours).
    Pass every group that exists (all developers), not the ones a filter left, to keep colours fixed."""
    return palette_swatches(sorted(set(groups), key=str.casefold))


def category_swatches() -> dict[str, Swatch]:
    """Error category label -> swatch in the catalogue's order (``researchcodebench.errors``), so a
    category has the same colour in every error chart whatever else is shown."""
    # Model-tier categories first, in the catalogue's order: the eight commonest (syntax ... logic) get
    # plain colours, the rarer ones hatches; the infrastructure tier (charted apart) comes last.
    ordered = sorted(
        (slug for slug, (_label, tier) in error_catalogue.CATEGORIES.items() if slug != "passed"),
        key=lambda slug: error_catalogue.tier_of(slug) != error_catalogue.MODEL,
    )
    return palette_swatches([error_catalogue.LABELS[slug] for slug in ordered])


def series_swatches(count: int) -> list[Swatch]:
    """The swatches of ``count`` series in order (grouped bars, the interactive views): two series get
    orange and blue, the most distinct pair; more take the palette in order, hatched past its length."""
    return [
        Swatch(OKABE_ITO[(i * 4) % len(OKABE_ITO)] if count == 2 else OKABE_ITO[i % 8], i // 8)
        for i in range(count)
    ]


def scale_colour(t: float) -> str:
    """Viridis-like colour for ``t`` in [0, 1] (clamped)."""
    t = min(max(t, 0.0), 1.0) * (len(VIRIDIS) - 1)
    i = min(int(t), len(VIRIDIS) - 2)
    f = t - i
    a, b = VIRIDIS[i], VIRIDIS[i + 1]
    return "#" + "".join(f"{round(a[k] + (b[k] - a[k]) * f):02x}" for k in range(3))


def ink_on(t: float) -> str:
    """Black text on the light (high) end of the scale, white on the dark end."""
    return "#000000" if t >= 0.55 else "#ffffff"


#: pass rates 0..100 map onto the heatmap's viridis stops at these rates, linearly in RGB between them
#: (the SVG heatmap through ``scale_colour``, the interactive views through ``rate_colours``)
RATE_STOPS: tuple[float, ...] = (0.0, 25.0, 50.0, 75.0, 100.0)


def rate_colours() -> list[str]:
    """The colour of each of ``RATE_STOPS`` (a Vega-Lite scale's range over those stops)."""
    return [scale_colour(stop / 100) for stop in RATE_STOPS]


#: the stroke between a heatmap's cells and between a stacked bar's parts
CELL_STROKE = "#ffffff"
#: the group of a model whose developer is not known (charts, legends and tooltips)
UNKNOWN_DEVELOPER = "Unknown"
#: the title of every axis and tooltip of the board's score
SCORE_TITLE = "Scaled Pass@1 (%)"
#: how many decimals a score is shown with, and the same as a d3 format (Vega-Lite tooltips)
SCORE_DIGITS = 2
SCORE_FORMAT = f".{SCORE_DIGITS}f"
#: how a date is written on an axis or in a tooltip (ISO 8601), as a d3 time format
DATE_FORMAT = "%Y-%m-%d"
