from django.db import migrations, models


class Migration(migrations.Migration):
    # The name it was first applied under: a database that recorded it counts this one as applied.
    replaces = [("runs", "0006_i14_run_idempotency_fingerprint")]

    dependencies = [
        ("runs", "0005_run_max_cost"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="idempotency_fingerprint",
            field=models.CharField(blank=True, editable=False, max_length=64),
        ),
    ]
