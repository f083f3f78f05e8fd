"""Start-up checks that refuse a production configuration which would fail later, or fail unsafely.

Two, both only with ``DEBUG`` off (production):

- the secret key must be strong (``secret_key_weakness``, called by the settings so that nothing starts
  with a key an attacker can guess: sessions, password resets and CSRF all rest on it);
- with manifest static storage, the manifest ``collectstatic`` writes must exist
  (``require_static_manifest``, called by the web entry points ``config/wsgi.py`` and ``config/asgi.py``,
  which is also what ``runserver`` loads). Without it every ``{% static %}`` raises, so every HTML page
  would be a 500. It is not a Django system check on purpose: those run before ``migrate`` and
  ``collectstatic`` too, and both must keep working before static files are collected.
"""

from __future__ import annotations

from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

#: Django's own threshold for a usable secret key (``django.core.checks.security.base``, W009)
SECRET_KEY_MIN_LENGTH = 50
#: stricter than Django's 5: a 50-character key of 5 letters has far less entropy than its length suggests
SECRET_KEY_MIN_DISTINCT = 10
#: keys Django generates for development (``startproject``) start with this
SECRET_KEY_INSECURE_PREFIX = "django-insecure-"
GENERATE_KEY_HINT = "generate one with: python -c 'import secrets; print(secrets.token_urlsafe(50))'"


def secret_key_weakness(key: str) -> str | None:
    """What makes ``key`` guessable (too short, too few distinct characters, a development key), or None."""
    if len(key) < SECRET_KEY_MIN_LENGTH:
        return f"too short ({len(key)} characters, at least {SECRET_KEY_MIN_LENGTH} needed)"
    distinct = len(set(key))
    if distinct < SECRET_KEY_MIN_DISTINCT:
        return f"too repetitive ({distinct} distinct characters, at least {SECRET_KEY_MIN_DISTINCT} needed)"
    if key.startswith(SECRET_KEY_INSECURE_PREFIX):
        return f"a development key (it starts with {SECRET_KEY_INSECURE_PREFIX!r})"
    return None


def require_static_manifest() -> None:
    """Raise ``ImproperlyConfigured`` when debug is off, static files are served from a manifest storage and
    the manifest is missing; the message names both ways out."""
    from django.conf import settings
    from django.contrib.staticfiles.storage import ManifestFilesMixin
    from django.core.files.storage import storages

    storage = storages["staticfiles"]
    if settings.DEBUG or not isinstance(storage, ManifestFilesMixin):
        return
    if storage.read_manifest() is not None:
        return
    raise ImproperlyConfigured(
        f"The static files manifest {Path(settings.STATIC_ROOT) / storage.manifest_name} is missing, "
        "so every page would fail with DEBUG off. Run `python manage.py collectstatic --noinput` first "
        "(DJANGO_STATIC_ROOT says where it writes), or set DJANGO_STATIC_MANIFEST=0 to serve static/ "
        "unhashed."
    )
