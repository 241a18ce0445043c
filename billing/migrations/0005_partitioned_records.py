"""Generations and attempts partitioned by month on PostgreSQL (billing.retention.partitions), and the
daily usage they roll up into, filled from the generations already stored."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import Case, CharField, Count, Sum, Value, When
from django.db.models.fields.json import KT
from django.db.models.functions import Coalesce, Substr, TruncDate

APP_CHARS = 200


def _attempt_moments(apps: Any, schema_editor: Any) -> None:
    Attempt = apps.get_model("billing", "Attempt")
    Generation = apps.get_model("billing", "Generation")
    moment = Generation.objects.filter(pk=models.OuterRef("generation_id")).values("created_at")
    Attempt.objects.update(created_at=models.Subquery(moment))


def _partition(apps: Any, schema_editor: Any) -> None:
    from billing.retention.partitions import table_partition

    if schema_editor.connection.vendor == "postgresql":
        for table in ("billing_generation", "billing_attempt"):
            table_partition(schema_editor, table)


def _slotted(generations: Any) -> Any:
    """The generations' daily-usage slots as this migration made them (billing.usage.rollups
    has since grown the slot by the API called, a column these generations do not have yet)."""
    first = Coalesce(KT("selectors__0"), Value(""))
    return generations.annotate(
        day=TruncDate("created_at"),
        key=Coalesce("api_key_id", 0),
        app_=Substr("app", 1, APP_CHARS),
        requested=Case(
            When(model="", then=Substr(first, 1, APP_CHARS)),
            default=Value(""),
            output_field=CharField(),
        ),
    ).values("organization_id", "day", "model", "provider", "key", "app_", "requested")


def _daily_rollups(apps: Any, schema_editor: Any) -> None:
    Generation = apps.get_model("billing", "Generation")
    DailyRollup = apps.get_model("billing", "DailyRollup")
    grouped = (
        _slotted(Generation.objects.order_by())
        .annotate(
            n=Count("pk"),
            prompt=Sum("prompt_tokens"),
            completion=Sum("completion_tokens"),
            spent=Coalesce(Sum("cost"), Value(Decimal(0))),
        )
    )
    DailyRollup.objects.bulk_create(
        (
            DailyRollup(
                organization_id=row["organization_id"], day=row["day"], model=row["model"],
                provider=row["provider"], api_key_id=row["key"], app=row["app_"],
                requested=row["requested"], calls=row["n"],
                prompt_tokens=row["prompt"], completion_tokens=row["completion"],
                cost=row["spent"],
            )
            for row in grouped.iterator()
        ),
        batch_size=5000,
    )  # fmt: skip


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_initial"),
        ("billing", "0004_generation_trace_id"),
    ]

    operations = [
        migrations.AlterField(
            model_name="attempt",
            name="generation",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="attempts",
                to="billing.generation",
            ),
        ),
        migrations.AlterField(
            model_name="ledgerentry",
            name="generation",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="ledger",
                to="billing.generation",
            ),
        ),
        migrations.AlterField(
            model_name="generation",
            name="request_id",
            field=models.CharField(max_length=64),
        ),
        migrations.AlterField(
            model_name="generation",
            name="organization",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="generations",
                to="accounts.organization",
            ),
        ),
        migrations.AlterField(
            model_name="generation",
            name="model",
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.AlterField(
            model_name="generation",
            name="provider",
            field=models.CharField(blank=True, max_length=120),
        ),
        migrations.AddField(
            model_name="attempt",
            name="created_at",
            field=models.DateTimeField(null=True),
        ),
        migrations.RunPython(_attempt_moments, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="attempt",
            name="created_at",
            field=models.DateTimeField(),
        ),
        migrations.RemoveConstraint(model_name="attempt", name="one_attempt_per_slot"),
        migrations.AddConstraint(
            model_name="attempt",
            constraint=models.UniqueConstraint(
                fields=("generation", "position", "created_at"), name="one_attempt_per_slot"
            ),
        ),
        migrations.AddConstraint(
            model_name="generation",
            constraint=models.UniqueConstraint(
                fields=("request_id", "created_at"), name="one_generation_per_call"
            ),
        ),
        migrations.RunPython(_partition, migrations.RunPython.noop),
        migrations.CreateModel(
            name="DailyRollup",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("day", models.DateField()),
                ("model", models.CharField(blank=True, max_length=200)),
                ("provider", models.CharField(blank=True, max_length=120)),
                ("api_key_id", models.BigIntegerField(default=0)),
                ("app", models.CharField(blank=True, default="", max_length=200)),
                ("requested", models.CharField(blank=True, default="", max_length=200)),
                ("calls", models.BigIntegerField(default=0)),
                ("prompt_tokens", models.BigIntegerField(default=0)),
                ("completion_tokens", models.BigIntegerField(default=0)),
                ("cost", models.DecimalField(decimal_places=9, default=Decimal("0"), max_digits=24)),
                (
                    "organization",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="daily_rollups",
                        to="accounts.organization",
                    ),
                ),
            ],
            options={
                                "indexes": [models.Index(fields=["api_key_id", "day"], name="billing_dai_api_key_b13055_idx")],
                "constraints": [
                    models.UniqueConstraint(
                        fields=(
                            "organization", "day", "model", "provider", "api_key_id", "app",
                            "requested",
                        ),
                        name="one_daily_rollup_per_slot",
                    )
                ],
            },
        ),
        migrations.RunPython(_daily_rollups, migrations.RunPython.noop),
    ]
