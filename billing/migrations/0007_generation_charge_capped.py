"""A generation says when its charge was capped at the call's reservation."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("billing", "0006_admin_filter_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="generation",
            name="charge_capped",
            field=models.BooleanField(
                default=False,
                db_default=False,
                help_text="An attempt's reported usage cost more than the call's reservation: "
                "it was charged the reservation, its usage kept as reported.",
            ),
        ),
    ]
