"""A generation keeps which API was called (Chat Completions, Messages, Responses or
embeddings), and the daily usage is summed per API as well: its unique slot holds it. Every
record and rollup from before was a Chat Completions call, which the column's default says.

The column is added to the partitioned parent with a database default (PostgreSQL adds it to
every month partition without rewriting them, as for `charge_capped` in 0007), so rows written
without it (by a process not yet restarted on this code) are Chat Completions calls too."""

from __future__ import annotations

from django.db import migrations, models

API_CHOICES = [
    ("chat", "Chat Completions"),
    ("messages", "Messages"),
    ("responses", "Responses"),
    ("embeddings", "Embeddings"),
]


class Migration(migrations.Migration):
    dependencies = [
        ("billing", "0009_dropped_calls"),
    ]

    operations = [
        migrations.AddField(
            model_name="generation",
            name="api",
            field=models.CharField(
                "API",
                max_length=12,
                choices=API_CHOICES,
                default="chat",
                db_default="chat",
                help_text="The API called: Chat Completions, Messages, Responses or embeddings.",
            ),
        ),
        migrations.AddField(
            model_name="dailyrollup",
            name="api",
            field=models.CharField(
                max_length=12, choices=API_CHOICES, default="chat", db_default="chat"
            ),
        ),
        migrations.RemoveConstraint(model_name="dailyrollup", name="one_daily_rollup_per_slot"),
        migrations.AddConstraint(
            model_name="dailyrollup",
            constraint=models.UniqueConstraint(
                fields=(
                    "organization",
                    "day",
                    "model",
                    "provider",
                    "api_key_id",
                    "app",
                    "requested",
                    "api",
                ),
                name="one_daily_rollup_per_slot",
            ),
        ),
    ]
