"""ASGI entry point."""

import os

from django.core.asgi import get_asgi_application

from config.checks import require_static_manifest

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_asgi_application()
# As in config/wsgi.py: refuse to serve pages that would all fail.
require_static_manifest()
