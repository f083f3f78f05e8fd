"""Every cached page and API table is rebuilt once the memorisation figures are backfilled: a new shard of the
catalogue's scope (``scopes.META``, part of every body's version) moves every key (leaderboard/scopes.py)."""

from django.db import migrations


def bump_catalogue(apps, schema_editor):
    apps.get_model("leaderboard", "CacheScope").objects.create(key="meta", n=1)


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0003_cache_scopes"),
        ("evaluation", "0010_completion_overlap_backfill"),
    ]

    operations = [
        migrations.RunPython(bump_catalogue, migrations.RunPython.noop),
    ]
