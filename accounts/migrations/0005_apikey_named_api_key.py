from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("accounts", "0004_encryption_salt")]

    operations = [
        migrations.AlterModelOptions(
            name="apikey",
            options={
                "ordering": ["-created_at"],
                "verbose_name": "API key",
                "verbose_name_plural": "API keys",
            },
        ),
    ]
