"""The one parser of arXiv identifiers, used wherever a registry entry's ``arxiv_abs`` becomes an id.

The rule, decided once:

- Accepted inputs: an abstract, PDF or HTML URL (``https://arxiv.org/abs/<id>``, ``/pdf/<id>``,
  ``/pdf/<id>.pdf``, ``/html/<id>``), with or without a scheme, on ``arxiv.org`` or any of its subdomains
  (``www.``, ``export.``); a bare id (``2502.10927``); an id prefixed ``arXiv:``.
- Host, scheme, the ``abs``/``pdf``/``html`` segment and the ``arXiv:`` prefix are case-insensitive.
- A query (``?...``), a fragment (``#...``), one trailing slash, a ``.pdf`` suffix and a version suffix
  (``v2``) are dropped: the id names the paper, not one of its versions.
- Only real arXiv ids are returned: new-style ``YYMM.NNNN`` / ``YYMM.NNNNN`` and old-style
  ``archive/YYMMNNN`` with an optional subject class (``hep-th/9901001``, ``math.GT/0309136``). Old-style
  ids are given in arXiv's own spelling: archive lower case, subject class upper case.
- Anything else (another site, an arXiv listing page, an empty value) gives ``""``, never an exception.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

_NEW_STYLE = r"\d{4}\.\d{4,5}"
_OLD_STYLE = r"[a-z]+(?:-[a-z]+)*(?:\.[a-z]{2})?/\d{7}"
_ID = re.compile(rf"(?P<id>{_NEW_STYLE}|{_OLD_STYLE})(?:v\d+)?", re.IGNORECASE)
_PREFIX = re.compile(r"arxiv:\s*", re.IGNORECASE)
_HOST = re.compile(r"(?:[a-z0-9-]+\.)*arxiv\.org", re.IGNORECASE)
_PATH = re.compile(r"/(?:abs|pdf|html)/(?P<rest>.+)", re.IGNORECASE)


def _canonical(text: str) -> str:
    match = _ID.fullmatch(text)
    if match is None:
        return ""
    ident = match.group("id")
    if "/" not in ident:
        return ident
    archive, number = ident.split("/")
    name, _, subject = archive.partition(".")
    return f"{name.lower()}.{subject.upper()}/{number}" if subject else f"{name.lower()}/{number}"


def arxiv_id(value: str | None) -> str:
    """The canonical arXiv id of a URL or bare id without its version (``"2502.10927"``); ``""`` if none.

    See the module docstring for the accepted forms.
    """
    text = (value or "").strip()
    if not text:
        return ""
    prefixed = _PREFIX.match(text)
    if prefixed:
        return _canonical(text[prefixed.end() :])
    if _ID.fullmatch(text):
        return _canonical(text)
    # urlsplit only finds the host after a "//"; a scheme-less "arxiv.org/abs/..." gets one.
    url = text if "//" in text else "//" + text
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. an unbalanced IPv6 bracket: not an arXiv URL
        return ""
    if not _HOST.fullmatch(parts.hostname or ""):
        return ""
    path = _PATH.fullmatch(parts.path)
    if path is None:
        return ""
    rest = path.group("rest").removesuffix("/")
    if rest.lower().endswith(".pdf"):
        rest = rest[: -len(".pdf")]
    return _canonical(rest)
