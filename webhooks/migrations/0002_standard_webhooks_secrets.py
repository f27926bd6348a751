"""Standard Webhooks secrets: endpoints that exist keep their secret, marked legacy (it signs Pilothouse-Signature
until rotated); endpoints added from now on get a Standard Webhooks secret; a rotated secret retires with a grace."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("webhooks", "0001_webhooks"),
    ]

    operations = [
        # Added as legacy, so every endpoint that exists now keeps signing as its receiver verifies today...
        migrations.AddField(
            model_name="endpoint",
            name="secret_scheme",
            field=models.CharField(
                choices=[("standard", "Standard"), ("legacy", "Legacy")], default="legacy", max_length=10
            ),
        ),
        # ...then standard for the endpoints added from now on.
        migrations.AlterField(
            model_name="endpoint",
            name="secret_scheme",
            field=models.CharField(
                choices=[("standard", "Standard"), ("legacy", "Legacy")], default="standard", max_length=10
            ),
        ),
        migrations.AddField(
            model_name="endpoint",
            name="retiring_secret",
            field=models.CharField(blank=True, editable=False, max_length=100),
        ),
        migrations.AddField(
            model_name="endpoint",
            name="retiring_secret_scheme",
            field=models.CharField(blank=True, choices=[("standard", "Standard"), ("legacy", "Legacy")], max_length=10),
        ),
        migrations.AddField(
            model_name="endpoint",
            name="retiring_until",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
