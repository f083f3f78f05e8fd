"""The API under /api/v1/. Each app contributes its routes here as they are built."""

from django.urls import URLPattern, URLResolver

urlpatterns: list[URLPattern | URLResolver] = []
