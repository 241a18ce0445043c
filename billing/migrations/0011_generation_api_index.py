"""An index for the admin's filter by API over every organization's generations: the calls of
an API other than Chat Completions only (those of Chat Completions are found by the time
column's), built partition by partition without holding the recording's writes
(billing.retention.partitions)."""

from __future__ import annotations

from django.db import migrations, models

from billing.retention.partitions import AddPartitionedIndex


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY runs outside a transaction

    dependencies = [
        ("billing", "0010_generation_api"),
    ]

    operations = [
        AddPartitionedIndex(
            model_name="generation",
            index=models.Index(
                fields=["api", "-created_at"],
                name="generation_api",
                condition=~models.Q(api="chat"),
            ),
        ),
    ]
