"""Load the demo data that ships with the repository (idempotent; `make demo` runs it)."""

from __future__ import annotations

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Load the demo data shipped with the repository. Safe to run repeatedly."

    def handle(self, *args, **options) -> None:
        self.stdout.write("No demo data ships with this version yet; the portal starts empty.")
