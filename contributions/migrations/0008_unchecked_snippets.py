"""Snippets not checked by their test (issue 18 item 5): the maintainer's reason on the snippet, and whether a
release counts such snippets in its scores. Releases that exist keep their scoring (they count them)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("contributions", "0007_task_version_environment")]

    operations = [
        migrations.AddField(
            model_name="snippet",
            name="checked_by_test",
            field=models.BooleanField(default=True),
        ),
        migrations.AddField(
            model_name="snippet",
            name="unchecked_reason",
            field=models.CharField(
                blank=True,
                choices=[
                    ("setup", "It only prepares state that the test of another snippet checks"),
                    ("covered", "It is checked through an enclosing or a later snippet"),
                    (
                        "equivalent",
                        "The wrong code that passed computes the same result (an equivalent mutant)",
                    ),
                    ("unobservable", "Its effect cannot be observed by a unit test (logging, speed, memory)"),
                    ("other", "Another reason, explained below"),
                ],
                max_length=20,
            ),
        ),
        migrations.AddField(
            model_name="snippet",
            name="unchecked_explanation",
            field=models.TextField(blank=True),
        ),
        migrations.AddField(
            model_name="release",
            name="counts_unchecked_snippets",
            field=models.BooleanField(default=True),
        ),
        migrations.AlterField(
            model_name="release",
            name="counts_unchecked_snippets",
            field=models.BooleanField(default=False),
        ),
    ]
