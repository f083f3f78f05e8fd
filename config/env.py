"""Typed readers for environment variables that fail loudly on bad values.

Every setting the portal reads from the environment goes through one of these helpers, so that a typo in a
deployment is an ``ImproperlyConfigured`` error naming the variable, not a silently different behaviour.
``config/settings.py`` is where they are called (tests/config/test_env_reads.py holds that rule and checks
that README's table lists each variable); other modules read ``django.conf.settings``, and the benchmark core
(``researchcodebench``) takes its configuration as arguments, reading the environment only in its CLI.
"""

from __future__ import annotations

import math
import os

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str | None = None, *, required: bool = False) -> str | None:
    value = os.environ.get(name)
    if value is None or value == "":
        if required:
            raise ImproperlyConfigured(f"The environment variable {name} must be set.")
        return default
    return value


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean; use 1/0, true/false, yes/no or on/off.")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer.") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}.")
    return value


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number.") from None
    if not math.isfinite(value):
        raise ImproperlyConfigured(f"{name}={raw!r} is not a finite number.")
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}.")
    return value


def env_secret(name: str) -> str:
    """The value of the variable ``name``, "" when unset: a secret whose variable is named at run time (the
    API key variable a language model's configuration names), so it is neither a setting nor in the README."""
    return os.environ.get(name, "")


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]
