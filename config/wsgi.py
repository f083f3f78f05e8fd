"""WSGI entry point (gunicorn config.wsgi, and what ``runserver`` serves)."""

import os

from django.core.wsgi import get_wsgi_application

from config.checks import require_static_manifest

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()
# After set-up (settings and apps loaded), before the first request: refuse to serve pages that would all fail.
require_static_manifest()
