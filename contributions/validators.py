"""Validators of the public identifiers a contributor's profile may carry (ORCID iD, GitHub user name).

Each one accepts what people paste (an ORCID URL, ``@name``) through its ``*_normalise`` function, and the
validator checks the stored, normalised form, naming what is wrong.
"""

from __future__ import annotations

import re

from django.core.exceptions import ValidationError

_ORCID = re.compile(r"\d{4}-\d{4}-\d{4}-\d{3}[\dX]")
_ORCID_URL = re.compile(r"(?:https?://)?(?:www\.)?orcid\.org/", re.IGNORECASE)
# GitHub's sign-up rules: 1 to 39 letters, digits or single hyphens, neither first nor last.
_GITHUB = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}")
_GITHUB_URL = re.compile(r"(?:https?://)?(?:www\.)?github\.com/", re.IGNORECASE)


def orcid_checksum(base_digits: str) -> str:
    """The ORCID check character of the first 15 digits: ISO 7064 MOD 11-2 ("X" stands for 10)."""
    total = 0
    for digit in base_digits:
        total = (total + int(digit)) * 2
    check = (12 - total % 11) % 11
    return "X" if check == 10 else str(check)


def orcid_normalise(value: str) -> str:
    """``value`` without an ``https://orcid.org/`` prefix, surrounding spaces, and with an upper-case X."""
    return _ORCID_URL.sub("", value.strip(), count=1).strip().upper()


def validate_orcid(value: str) -> None:
    if not _ORCID.fullmatch(value):
        raise ValidationError(
            "Enter an ORCID iD as 0000-0000-0000-000X (16 digits in groups of four; the last may be X).",
            code="orcid_format",
        )
    digits = value.replace("-", "")
    expected = orcid_checksum(digits[:15])
    if digits[15] != expected:
        raise ValidationError(
            "This ORCID iD's check digit is wrong (expected %(expected)s): check for a typo.",
            code="orcid_checksum",
            params={"expected": expected},
        )


def github_normalise(value: str) -> str:
    """``value`` without a ``https://github.com/`` prefix, a leading ``@``, a trailing ``/`` or spaces."""
    value = _GITHUB_URL.sub("", value.strip(), count=1)
    return value.removeprefix("@").rstrip("/").strip()


def validate_github_username(value: str) -> None:
    if not _GITHUB.fullmatch(value):
        raise ValidationError(
            "Enter a GitHub user name: up to 39 letters, digits or single hyphens, not starting or ending "
            "with a hyphen.",
            code="github_username",
        )
