from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("billing", "0002_deadletter"),
    ]

    operations = [
        migrations.AddField(
            model_name="generation",
            name="client_request_id",
            field=models.CharField(
                blank=True, help_text="The caller's X-Request-Id.", max_length=128
            ),
        ),
        migrations.AddField(
            model_name="generation",
            name="session_id",
            field=models.CharField(
                blank=True, help_text="X-Session-Id, or the body's session_id.", max_length=256
            ),
        ),
        migrations.AddField(
            model_name="generation",
            name="app",
            field=models.CharField(
                blank=True,
                help_text="The calling app: X-Title, else HTTP-Referer.",
                max_length=2048,
            ),
        ),
        migrations.AddField(
            model_name="generation",
            name="referer",
            field=models.CharField(blank=True, help_text="HTTP-Referer.", max_length=2048),
        ),
        migrations.AddField(
            model_name="generation",
            name="routing",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="The provider filters and order the call set, and why each offering "
                "left out was.",
            ),
        ),
        migrations.AddIndex(
            model_name="generation",
            index=models.Index(
                condition=models.Q(("client_request_id", ""), _negated=True),
                fields=["organization", "client_request_id"],
                name="generation_client_request_id",
            ),
        ),
        migrations.AddIndex(
            model_name="generation",
            index=models.Index(
                condition=models.Q(("session_id", ""), _negated=True),
                fields=["organization", "session_id", "-created_at"],
                name="generation_session",
            ),
        ),
    ]
