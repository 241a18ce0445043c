from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("billing", "0003_generation_request_id_session_app_routing"),
    ]

    operations = [
        migrations.AddField(
            model_name="generation",
            name="trace_id",
            field=models.CharField(blank=True, max_length=32),
        ),
    ]
