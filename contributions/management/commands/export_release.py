"""``manage.py export_release NAME OUT_DIR``: write a release back as an original-format pset folder."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from contributions import services
from contributions.models import Release
from contributions.selectors.release_export import release_export
from contributions.selectors.releases import release_get


class Command(BaseCommand):
    help = "Write a release as an original-format pset (papers.yaml + task folders, files byte-identical)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="the release's name")
        parser.add_argument("out_dir", help="a new or empty folder to write the pset into")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            release = release_get(name=options["name"])
            out = release_export(release=release, out_dir=options["out_dir"])
        except Release.DoesNotExist as exc:
            raise CommandError(str(exc)) from exc
        except services.CatalogueError as exc:
            raise CommandError(str(exc)) from exc
        except OSError as exc:
            raise CommandError(f"{exc.filename or options['out_dir']}: cannot write: {exc.strerror}") from exc
        self.stdout.write(self.style.SUCCESS(f"release {release.name!r} written to {out}"))
