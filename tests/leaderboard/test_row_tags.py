"""Issue 21, item 3: the long row loops rendered in Python (``leaderboard/templatetags/leaderboard_rows.py``)
give byte for byte what the template loops they replaced gave, for the awkward values too: markup and
quotes in names and categories, one line or several, unchecked snippets, every verdict state, empty
labels and links. Issue 22 (words, not identifiers): states and categories are shown in words, so the
loops below name them with the filters the templates use (``state_words``, ``category_label``)."""

from __future__ import annotations

import pytest
from django.template import Context, Template

from leaderboard.selectors.compare import ComparedCell, ComparedSnippet
from leaderboard.selectors.models import FailedSnippet, SnippetVerdict, verdict_state

NAMES = ["plain", "<b>bold</b> & co", 'it\'s "quoted"', "naïve 🎉", "a/b c?d=e"]
CATEGORIES = ["", "logic", "x & <y>", "o'neil"]

# The loops as the templates had them before the tags (with states and categories in words).
GRID_LOOP = (
    "{% load evaluation_extras leaderboard_rows %}{% for paper_key, cells in grid.items %}\n"
    '    <div class="grid-row"><h3 id="grid-{{ forloop.counter }}"><a href="{% url \'leaderboard:paper\' '
    'paper_key %}">{{ paper_key }}</a></h3>\n'
    '    <ul class="verdict-grid" aria-labelledby="grid-{{ forloop.counter }}">\n'
    '      {% for c in cells %}<li><a class="v-{{ c.state }}{% if not c.v.checked_by_test %} unchecked{% endif %}"'
    ' href="{{ c.url }}" title="{{ c.v.name }} ({{ c.v.lines }} line{{ c.v.lines|pluralize }}): '
    "{{ c.state|state_words }}{% if c.v.category %}, {{ c.v.category|category_label }}{% endif %}"
    "{% if not c.v.checked_by_test %}; not checked by its"
    ' test{% endif %}" aria-label="{{ c.v.name }}: {{ c.state|state_words }}{% if not c.v.checked_by_test %}, not checked'
    ' by its test{% endif %}">{% if c.state == "pass" %}✓{% elif c.state == "fail" %}✗{% elif c.state =='
    ' "partial" %}~{% else %}·{% endif %}</a></li>{% endfor %}\n'
    "    </ul></div>\n"
    "  {% endfor %}"
)
FAILED_LOOP = (
    "{% for item in failed %}<tr>\n"
    '      <td><a href="{{ item.paper_url }}">{{ item.f.paper_key }}</a></td>\n'
    '      <td><a href="{{ item.url }}">{{ item.f.name }}</a></td>\n'
    '      <td>{{ item.f.label|default:"–" }}</td>\n'
    '      <td class="num">{{ item.f.failed }}/{{ item.f.tested }}</td><td class="num">{{ item.f.lines }}</td>\n'
    "    </tr>{% endfor %}"
)
COMPARED_LOOP = (
    "{% load evaluation_extras leaderboard_rows %}"
    '{% for row in snippets %}<tr{% if row.s.differs %} class="differs"{% endif %}>\n'
    '      <td>{{ row.s.paper_key }}</td><td><a href="{{ row.url }}">{{ row.s.name }}</a>{% if row.s.differs %}'
    ' <span class="badge warn">differs</span>{% endif %}</td><td class="num">{{ row.s.lines }}</td>\n'
    '      {% for cell in row.cells %}<td>{% if cell.url %}<a class="v-{{ cell.c.state }}" href="{{ cell.url }}">'
    "{{ cell.c.state|state_words }}</a>{% else %}{{ cell.c.state|state_words }}{% endif %}"
    '{% if cell.c.category and cell.c.state != "pass" %} <span class="muted">{{ cell.c.category|category_label }}'
    "</span>{% endif %}</td>{% endfor %}\n"
    "    </tr>{% endfor %}"
)


def _both(loop: str, tag: str, **context) -> tuple[str, str]:
    ctx = Context(context)
    return Template(loop).render(ctx), Template("{% load leaderboard_rows %}" + tag).render(ctx)


def _verdict(n: int) -> SnippetVerdict:
    return SnippetVerdict(
        snippet_id=n, paper_key=f"p-{n % 2}", task_key="t", name=NAMES[n % len(NAMES)], ordinal=n, depth=0,
        lines=1 + n % 3, verdicts=["PPP", "FFF", "PF-", "---"][n % 4], passed=0, tested=3,
        category=CATEGORIES[n % len(CATEGORIES)], checked_by_test=n % 3 != 0,
    )  # fmt: skip


def test_the_verdict_grid_tag_gives_what_the_loop_gave():
    grid: dict[str, list[dict]] = {}
    for n in range(24):
        v = _verdict(n)
        grid.setdefault(v.paper_key, []).append(
            {"v": v, "url": f"/s/{n}?id={n}&x=<'\">", "state": verdict_state(v.verdicts)}
        )
    loop, tag = _both(GRID_LOOP, "{% verdict_grid grid %}", grid=grid)
    assert tag == loop and "unchecked" in tag and "1 line)" in tag and "&amp; &lt;y&gt;" in tag
    assert "Logic Errors" in tag and "partly passed" in tag and ": partial" not in tag


@pytest.mark.parametrize("label", ["", "Name error", "<odd> & 'label'"])
def test_the_failed_rows_tag_gives_what_the_loop_gave(label):
    failed = [
        {
            "f": FailedSnippet(
                snippet_id=n, paper_key=f"p<{n}>", task_key="t", name=NAMES[n % len(NAMES)], lines=n,
                category="c", label=label, run_id=1, completion_idx=0, failed=n % 3, tested=3,
            ),
            "url": f"/s/{n}?id={n}&run=1#completion-1-0",
            "paper_url": f"/papers/p%3C{n}%3E/",
        }
        for n in range(8)
    ]  # fmt: skip
    loop, tag = _both(FAILED_LOOP, "{% failed_snippet_rows failed %}", failed=failed)
    assert tag == loop


def test_the_compared_rows_tag_gives_what_the_loop_gave():
    rows = []
    for n in range(12):
        cells = [
            ComparedCell(run_id=None if n % 5 == 0 else 1, state=verdict_state(["PPP", "FFF", "PF-", "---"][(n + i) % 4]),
                         verdicts="", category=CATEGORIES[(n + i) % len(CATEGORIES)], completion_idx=0)
            for i in range(2)
        ]  # fmt: skip
        s = ComparedSnippet(
            paper_key=f"p&{n}", task_key="t", name=NAMES[n % len(NAMES)], lines=n, snippet_ids=(n, n),
            cells=tuple(cells), differs=cells[0].state != cells[1].state,
        )  # fmt: skip
        rows.append(
            {
                "s": s,
                "url": f"/s/{n}?id={n}",
                "cells": [{"c": c, "url": "" if c.run_id is None else f"/c?a=1&b={n}"} for c in cells],
            }
        )
    loop, tag = _both(COMPARED_LOOP, "{% compared_snippet_rows snippets %}", snippets=rows)
    assert tag == loop and 'class="differs"' in tag
    assert ">partly passed</a>" in tag and "Logic Errors</span>" in tag and ">partial<" not in tag
