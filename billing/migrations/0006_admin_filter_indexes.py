"""Indexes for the admin's filters and search over every organization's generations, built
partition by partition without holding the recording's writes (billing.retention.partitions)."""

from __future__ import annotations

from django.db import migrations, models

from billing.retention.partitions import AddPartitionedIndex


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY runs outside a transaction

    dependencies = [
        ("billing", "0005_partitioned_records"),
    ]

    operations = [
        AddPartitionedIndex(
            model_name="generation",
            index=models.Index(fields=["provider", "-created_at"], name="generation_provider"),
        ),
        AddPartitionedIndex(
            model_name="generation",
            index=models.Index(fields=["model", "-created_at"], name="generation_model"),
        ),
        AddPartitionedIndex(
            model_name="generation",
            index=models.Index(
                fields=["status", "-created_at"],
                name="generation_unserved",
                condition=~models.Q(status="success"),
            ),
        ),
    ]
