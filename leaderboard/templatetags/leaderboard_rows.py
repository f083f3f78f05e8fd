"""The long row loops of the board's pages, rendered in Python: a verdict grid, a run's failed snippets and
a comparison's snippets have a row per snippet (2,000 at the benchmark's size), and the template engine's
per-variable work (lookup, localisation, escaping) made them most of a cold page's time.

Each tag gives exactly what the template loop it replaces gave, byte for byte: strings escaped as Django's
autoescape does (``django.utils.html.escape`` is ``html.escape``), integers as the template prints them
(the site does not group thousands), ``pluralize`` and ``default`` as those filters. Their callers' tests
compare whole pages (``tests/leaderboard``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from html import escape

from django import template
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from researchcodebench.errors import LABELS

register = template.Library()

_GRID_MARKS = {"pass": "✓", "fail": "✗", "partial": "~"}
#: a verdict state in words (``selectors.models.verdict_state``: every, none or some completions passed)
_STATE_WORDS = {"pass": "passed", "fail": "failed", "partial": "partly passed", "none": "not tested"}


@register.filter
def state_words(state: str) -> str:
    """A verdict state in words, for templates (``partial`` -> "partly passed")."""
    return _STATE_WORDS.get(state, state)


def _category_words(category: str) -> str:
    """An error category as the pages name it (``value_runtime`` -> "Value/Runtime Errors")."""
    return LABELS.get(category, category.replace("_", " "))


def _grid_cell(c: Mapping) -> str:
    v, state = c["v"], c["state"]
    name = escape(v.name)
    unchecked = not v.checked_by_test
    words = escape(_STATE_WORDS.get(state, state))
    title = (
        f"{name} ({v.lines} line{'' if v.lines == 1 else 's'}): {words}"
        f"{', ' + escape(_category_words(v.category)) if v.category else ''}"
        f"{'; not checked by its test' if unchecked else ''}"
    )
    return (
        f'<li><a class="v-{escape(state)}{" unchecked" if unchecked else ""}" href="{escape(c["url"])}" '
        f'title="{title}" aria-label="{name}: {words}{", not checked by its test" if unchecked else ""}">'
        f"{_GRID_MARKS.get(state, '·')}</a></li>"
    )


@register.simple_tag
def verdict_grid(grid: Mapping[str, Iterable[Mapping]]) -> SafeString:
    """A model's verdict grid, one block per paper: ``grid`` maps a paper key to its cells (``v``: the
    ``SnippetVerdict``, ``url``: its snippet page, ``state``: ``verdict_state``), in document order."""
    out = []
    for n, (paper_key, cells) in enumerate(grid.items(), start=1):
        out.append(
            f'\n    <div class="grid-row"><h3 id="grid-{n}"><a href="{escape(reverse("leaderboard:paper", args=[paper_key]))}">'
            f"{escape(paper_key)}</a></h3>\n"
            f'    <ul class="verdict-grid" aria-labelledby="grid-{n}">\n      '
            f"{''.join(_grid_cell(c) for c in cells)}\n    </ul></div>\n  "
        )
    return mark_safe("".join(out))  # every value above is escaped


@register.simple_tag
def failed_snippet_rows(failed: Iterable[Mapping]) -> SafeString:
    """The rows of a run's failed snippets: ``f`` (a ``FailedSnippet``), ``url`` (its failed completion)
    and ``paper_url``."""
    return mark_safe(  # every value is escaped
        "".join(
            f'<tr>\n      <td><a href="{escape(item["paper_url"])}">{escape(item["f"].paper_key)}</a></td>\n'
            f'      <td><a href="{escape(item["url"])}">{escape(item["f"].name)}</a></td>\n'
            f"      <td>{escape(item['f'].label) if item['f'].label else '–'}</td>\n"
            f'      <td class="num">{item["f"].failed}/{item["f"].tested}</td><td class="num">{item["f"].lines}</td>\n'
            "    </tr>"
            for item in failed
        )
    )


def _compared_cell(cell: Mapping) -> str:
    c = cell["c"]
    state, words = escape(c.state), escape(_STATE_WORDS.get(c.state, c.state))
    shown = f'<a class="v-{state}" href="{escape(cell["url"])}">{words}</a>' if cell["url"] else words
    category = (
        f' <span class="muted">{escape(_category_words(c.category))}</span>'
        if c.category and c.state != "pass"
        else ""
    )
    return f"<td>{shown}{category}</td>"


_DIFFERS_ROW = ' class="differs"'
_DIFFERS_BADGE = ' <span class="badge warn">differs</span>'


@register.simple_tag
def compared_snippet_rows(rows: Iterable[Mapping]) -> SafeString:
    """The comparison's per-snippet rows: ``s`` (a ``ComparedSnippet``), ``url`` (its snippet page) and
    ``cells`` (``c``: a ``ComparedCell``, ``url``: that model's completion, or "")."""
    out = []
    for row in rows:
        s = row["s"]
        out.append(
            f"<tr{_DIFFERS_ROW if s.differs else ''}>\n"
            f'      <td>{escape(s.paper_key)}</td><td><a href="{escape(row["url"])}">{escape(s.name)}</a>'
            f'{_DIFFERS_BADGE if s.differs else ""}</td><td class="num">{s.lines}</td>\n'
            f"      {''.join(_compared_cell(cell) for cell in row['cells'])}\n    </tr>"
        )
    return mark_safe("".join(out))  # every value above is escaped
