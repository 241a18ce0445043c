from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("gateway", "0002_model_max_output_tokens"),
    ]

    operations = [
        migrations.AddField(
            model_name="provider",
            name="collects_data",
            field=models.BooleanField(
                default=True,
                help_text="Unticked: the agreement keeps and trains on nothing "
                "(provider.data_collection: deny).",
            ),
        ),
        migrations.AddField(
            model_name="provider",
            name="locations",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text='Where it serves, such as ["US"] (provider.regions).',
            ),
        ),
        migrations.AddField(
            model_name="region",
            name="collects_data",
            field=models.BooleanField(
                blank=True, help_text="Left empty, as its provider says.", null=True
            ),
        ),
        migrations.AddField(
            model_name="region",
            name="locations",
            field=models.JSONField(
                blank=True, default=list, help_text='Where it serves, such as ["EU", "DE"].'
            ),
        ),
        migrations.AddField(
            model_name="offering",
            name="parameters",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text="The request parameters it takes (provider.require_parameters); "
                "empty: the OpenAI common set.",
            ),
        ),
        migrations.AddField(
            model_name="offering",
            name="quantization",
            field=models.CharField(blank=True, help_text="Such as fp8 or int4.", max_length=40),
        ),
    ]
