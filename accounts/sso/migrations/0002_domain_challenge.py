"""Each claimed domain gets the challenge its organization publishes in DNS to verify it
itself; the claims made before get one each."""

import secrets

from django.db import migrations, models

import accounts.sso.models


def challenge_each(apps, schema_editor):
    EmailDomain = apps.get_model("sso", "EmailDomain")
    for claim in EmailDomain.objects.all():
        claim.challenge = secrets.token_urlsafe(24)
        claim.save(update_fields=["challenge"])


class Migration(migrations.Migration):
    dependencies = [("sso", "0001_initial")]

    operations = [
        migrations.AddField(
            model_name="emaildomain",
            name="challenge",
            field=models.CharField(default=accounts.sso.models.new_challenge, max_length=64),
        ),
        migrations.RunPython(challenge_each, migrations.RunPython.noop),
    ]
