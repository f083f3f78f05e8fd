"""Server-side SVG charts for the leaderboard pages: pure functions from plain data to an SVG string.

One module per kind of chart (``bars``: horizontal, grouped and stacked bars; ``heatmap``; ``dates``: the
timeline and scores by date; ``scatter``), over ``svg`` (the shared primitives: escaping, frames, axes,
legends) and ``encoding`` (colours, swatches, the pass-rate scale and the formats that the interactive
views of ``leaderboard.vega`` share). Callers import the module of the chart they draw; this package
re-exports nothing.

No JavaScript library and no network: every chart is a self-contained ``<svg>`` element that the templates
inline (``{{ svg|safe }}``; every piece of text inside is escaped here). Contracts shared by all charts:

- the root carries ``role="graphics-document"`` (not ``img``, whose children are presentational: bars and
  labels link to model and paper pages), a ``<title>`` and a ``<desc>`` referenced by ``aria-labelledby``,
  and a ``viewBox`` (no fixed pixel size), so it scales with its container;
- every label, name and URL given by the caller is XML-escaped, so a model called ``<script>`` is text;
- colours come from the Okabe-Ito palette (distinguishable with the common colour-vision deficiencies);
  when there are more groups than colours, the extra groups also get a hatch pattern; every coloured mark
  has a legend entry and a ``<title>`` with its exact value, so colour is never the only channel;
- a group keeps its colour across pages and filters when the caller passes ``swatches`` built from every
  group that exists (``group_swatches`` of all developers, ``category_swatches``), not only those shown;
- text is never smaller than ``MIN_FONT`` user units and the root carries its natural width
  (``--chart-w``), so a narrow screen scrolls the chart at full size instead of shrinking its text;
- empty input gives a "no data" chart (same accessibility contract) instead of an empty or broken SVG;
- ``chart_id`` (letters, digits, ``-``, ``_``) prefixes every id inside the chart, so several charts can be
  inlined in one page without id clashes.
"""
