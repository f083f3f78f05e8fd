"""Memorisation figures for the completions tested before they existed (evaluation/services/memorisation.py)."""

from django.db import migrations


def backfill(apps, schema_editor):
    from evaluation.services.memorisation import overlap_backfill

    overlap_backfill(apps.get_model("evaluation", "Completion"))


class Migration(migrations.Migration):
    dependencies = [
        ("evaluation", "0009_completion_overlap"),
    ]

    operations = [
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
