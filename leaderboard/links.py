"""URL builders of the leaderboard's pages: links to models, snippets, completions, comparisons and the
read API's data exports behind a chart. ``SnippetLinks`` resolves the snippet route once per page, so a
verdict grid or a comparison can link thousands of snippets."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from urllib.parse import quote

from django.conf import settings
from django.http import QueryDict
from django.urls import NoReverseMatch, get_script_prefix, get_urlconf, reverse
from django.utils.http import RFC3986_SUBDELIMS, urlencode

from leaderboard.selectors.compare import Setting


def query_with(query: QueryDict, **extra: str) -> str:
    """``?query`` with ``extra`` set (a link to the same page with one more parameter)."""
    q = query.copy()
    for k, v in extra.items():
        q[k] = v
    return f"?{q.urlencode()}"


def model_url(key: str) -> str:
    return reverse("leaderboard:model", args=[key])


#: stand-ins for a snippet route's arguments (``_snippet_route``): characters ``quote`` leaves alone
_KEY, _NAME = "__rcb_paper_key__", "__rcb_snippet_name__"
#: what ``reverse`` leaves unquoted in a path (RFC 3986 ``pchar``)
_PCHAR_SAFE = RFC3986_SUBDELIMS + "/~:@"
#: a path segment made only of what ``quote`` leaves unquoted with ``_PCHAR_SAFE`` (ASCII letters and
#: digits, ``_.-~`` and those): quoting it would give it back unchanged
_UNQUOTED = re.compile(r"[A-Za-z0-9_.~/:@!$&'()*+,;=-]*")


@functools.cache
def _snippet_route(prefix: str, urlconf: str) -> tuple[str, str, str]:
    """The snippet page's path around its two arguments, reversed once per script prefix and URLconf."""
    head, rest = reverse("leaderboard:snippet", args=[_KEY, _NAME], urlconf=urlconf).split(_KEY)
    mid, tail = rest.split(_NAME)
    return head, mid, tail


def _segment(text: str) -> str:
    return text if _UNQUOTED.fullmatch(text) else quote(text, safe=_PCHAR_SAFE)


class SnippetLinks:
    """Links to snippet pages for one page: the route resolved once (this request's script prefix and
    URLconf) and each paper key quoted once. ``path`` is the same string as ``reverse`` (which quotes each
    argument as a path segment), without resolving the route for every snippet: a verdict grid or a
    comparison links thousands. Arguments the route does not take (a key with a slash, a name with a line
    break, an empty one) go through ``reverse``, which refuses them."""

    def __init__(self) -> None:
        self._head, self._mid, self._tail = _snippet_route(
            get_script_prefix(), get_urlconf() or settings.ROOT_URLCONF
        )
        self._keys: dict[str, str] = {}

    def path(self, paper_key: str, name: str) -> str:
        """The snippet page of ``name`` in paper ``paper_key`` (no version pinned)."""
        if not paper_key or not name or "/" in paper_key or "\n" in name:
            return reverse("leaderboard:snippet", args=[paper_key, name])
        key = self._keys.get(paper_key)
        if key is None:
            key = self._keys[paper_key] = _segment(paper_key)
        return f"{self._head}{key}{self._mid}{_segment(name)}{self._tail}"

    @staticmethod
    def pinned(path: str, snippet_id: int | None) -> str:
        """``path`` pinned to the exact task version ``snippet_id`` (as is for None)."""
        return path if snippet_id is None else f"{path}?id={int(snippet_id)}"

    @staticmethod
    def at_completion(path: str, snippet_id: int, run_id: int, idx: int) -> str:
        """``path`` at one run's completion: ``run`` opens it, the fragment scrolls to it."""
        return f"{path}?id={int(snippet_id)}&run={int(run_id)}#completion-{run_id}-{idx}"


def snippet_url(paper_key: str, name: str, snippet_id: int | None = None) -> str:
    """The snippet page URL (``SnippetLinks.path``); ``snippet_id`` pins the exact task version."""
    return SnippetLinks.pinned(SnippetLinks().path(paper_key, name), snippet_id)


def completion_url(paper_key: str, name: str, snippet_id: int, run_id: int, idx: int) -> str:
    """The snippet page at one run's completion: ``run`` opens it, the fragment scrolls to it."""
    return SnippetLinks.at_completion(SnippetLinks().path(paper_key, name), snippet_id, run_id, idx)


#: the most rows one results export asks for (the API pages its results; a CSV link wants them all)
RESULTS_EXPORT_LIMIT = 100_000


def run_results_csv_url(run_id: int) -> str:
    """The run's completions and verdicts as CSV (every row: the link sets ``limit``)."""
    url = reverse("api-run-results", args=[run_id])
    return f"{url}?{urlencode({'format': 'csv', 'limit': RESULTS_EXPORT_LIMIT})}"


#: chart/table data exports of the read API (leaderboard/api_urls.py); they take the page's filter parameters
EXPORTS = {
    "leaderboard": "api-leaderboard",
    "errors": "api-leaderboard-errors",
    "papers": "api-leaderboard-papers",
    "snippets": "api-leaderboard-snippets",
}


def csv_url(name: str, params: QueryDict | None = None, fmt: str = "csv", **extra: str) -> str | None:
    """URL of the data export behind a chart, with the page's filters; None when the API lacks it."""
    try:
        url = reverse(EXPORTS[name])
    except NoReverseMatch:
        return None
    query = QueryDict(mutable=True)
    for key, value in (params or QueryDict()).items():
        # Empty form fields ("Any") mean no restriction; the API rejects empty values.
        if value and key not in ("sort", "cols"):
            query[key] = value
    query["format"] = fmt
    for k, v in extra.items():
        query[k] = v
    return f"{url}?{query.urlencode()}"


def compare_url(names: Sequence[str], setting: Setting | None = None) -> str:
    query = [("models", n) for n in names] + (list(setting.query.items()) if setting else [])
    return f"{reverse('leaderboard:compare')}?{urlencode(query)}"
