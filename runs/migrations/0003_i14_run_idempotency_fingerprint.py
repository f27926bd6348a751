from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0002_run_secrets"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="idempotency_fingerprint",
            field=models.CharField(blank=True, editable=False, max_length=64),
        ),
    ]
