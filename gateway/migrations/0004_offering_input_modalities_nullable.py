from django.db import migrations, models


def _empty_as_unset(apps, schema_editor):
    # An empty list was what a catalog without input_modalities loaded as: it now reads as
    # unset (the provider's API decides), and [] is kept for offerings that take text alone.
    Offering = apps.get_model("gateway", "Offering")
    Offering.objects.filter(input_modalities=[]).update(input_modalities=None)


def _unset_as_empty(apps, schema_editor):
    Offering = apps.get_model("gateway", "Offering")
    Offering.objects.filter(input_modalities__isnull=True).update(input_modalities=[])


class Migration(migrations.Migration):
    dependencies = [
        ("gateway", "0003_offering_filter_fields"),
    ]

    operations = [
        migrations.AlterField(
            model_name="offering",
            name="input_modalities",
            field=models.JSONField(
                blank=True,
                default=None,
                help_text="Beyond text: image, audio, file; [] for text alone. "
                "Left blank: what the provider's API carries.",
                null=True,
            ),
        ),
        migrations.RunPython(_empty_as_unset, _unset_as_empty),
    ]
