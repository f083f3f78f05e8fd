"""User Markdown (review bodies, comments) as safe HTML: markdown-it-py parses, nh3 sanitises.

Two layers, because either alone is not enough: the CommonMark parser runs with raw HTML disabled (so
``<script>`` in a comment is text, not a tag), and its output still goes through nh3 with a short
allow-list, because Markdown itself makes links and images whose URLs the parser does not judge. Only
``http``, ``https`` and ``mailto`` URLs survive (no ``javascript:`` or ``data:``), every link gets
``rel="nofollow noopener noreferrer"``, and images are dropped (a reviewer's comment has no reason to load a
third-party resource in a maintainer's browser).
"""

from __future__ import annotations

from functools import cache

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

#: the tags the rendered Markdown may keep (CommonMark's output, minus images and raw HTML)
ALLOWED_TAGS = frozenset(
    {
        "a",
        "blockquote",
        "br",
        "code",
        "del",
        "em",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "hr",
        "li",
        "ol",
        "p",
        "pre",
        "strong",
        "table",
        "tbody",
        "td",
        "th",
        "thead",
        "tr",
        "ul",
    }
)
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "th": {"align"}, "td": {"align"}}
URL_SCHEMES = frozenset({"http", "https", "mailto"})
LINK_REL = "nofollow noopener noreferrer"
#: longer sources are cut before parsing: the services bound bodies, this bounds the work of a page
MAX_SOURCE = 100_000


@cache
def _parser() -> MarkdownIt:
    # "commonmark" with html off: raw HTML blocks and inline tags are escaped as text.
    return MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")


def render_markdown(source: str | None) -> SafeString:
    """``source`` (Markdown, any user's) as sanitised HTML, safe to put in a page unescaped."""
    text = (source or "")[:MAX_SOURCE]
    if not text.strip():
        return mark_safe("")  # noqa: S308 - empty
    html = _parser().render(text)
    clean = nh3.clean(
        html,
        tags=set(ALLOWED_TAGS),
        attributes={tag: set(attrs) for tag, attrs in ALLOWED_ATTRIBUTES.items()},
        url_schemes=set(URL_SCHEMES),
        link_rel=LINK_REL,
        strip_comments=True,
        clean_content_tags={"script", "style"},
    )
    return mark_safe(clean)  # noqa: S308 - sanitised by nh3 with the allow-list above
