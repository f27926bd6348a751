from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0005_i13_run_max_cost"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="idempotency_fingerprint",
            field=models.CharField(blank=True, editable=False, max_length=64),
        ),
    ]
