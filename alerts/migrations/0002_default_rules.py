"""Organizations made before alerts existed get the default rules new ones get: 50 %, 80 % and
100 % of any budget."""

from decimal import Decimal

from django.db import migrations

SHARES = (Decimal(50), Decimal(80), Decimal(100))


def add_defaults(apps, schema_editor):
    Organization = apps.get_model("accounts", "Organization")
    AlertRule = apps.get_model("alerts", "AlertRule")
    AlertRule.objects.bulk_create(
        [
            AlertRule(organization_id=pk, kind="budget", threshold=share)
            for pk in Organization.objects.values_list("pk", flat=True)
            for share in SHARES
        ],
        ignore_conflicts=True,
    )


class Migration(migrations.Migration):
    dependencies = [("alerts", "0001_initial"), ("accounts", "0006_budgets")]

    operations = [migrations.RunPython(add_defaults, migrations.RunPython.noop)]
