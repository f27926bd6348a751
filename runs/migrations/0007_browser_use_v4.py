import uuid

from django.db import migrations, models


def fill_uuids(apps, schema_editor):  # noqa: ANN001, ANN201  (a migration's RunPython signature)
    """Give every existing session and run a UUID of its own (a column default would give them all the same one)."""
    for model_name in ("Session", "Run"):
        model = apps.get_model("runs", model_name)
        for pk in model.objects.values_list("pk", flat=True).iterator():
            model.objects.filter(pk=pk).update(uuid=uuid.uuid4())


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0006_run_idempotency_fingerprint"),
    ]

    operations = [
        # Null first, filled row by row, then unique and required: the usual three steps for a unique new column.
        migrations.AddField(model_name="session", name="uuid", field=models.UUIDField(null=True, editable=False)),
        migrations.AddField(model_name="run", name="uuid", field=models.UUIDField(null=True, editable=False)),
        migrations.RunPython(fill_uuids, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="session",
            name="uuid",
            field=models.UUIDField(default=uuid.uuid4, editable=False, unique=True),
        ),
        migrations.AlterField(
            model_name="run",
            name="uuid",
            field=models.UUIDField(default=uuid.uuid4, editable=False, unique=True),
        ),
        migrations.AddField(model_name="session", name="title", field=models.CharField(blank=True, max_length=255)),
        migrations.AddField(
            model_name="session",
            name="max_cost_usd",
            field=models.DecimalField(blank=True, decimal_places=4, max_digits=10, null=True),
        ),
        migrations.AddField(model_name="run", name="secret_domains", field=models.JSONField(blank=True, default=dict)),
        migrations.AddField(
            model_name="run", name="viewport_width", field=models.PositiveIntegerField(blank=True, null=True)
        ),
        migrations.AddField(
            model_name="run", name="viewport_height", field=models.PositiveIntegerField(blank=True, null=True)
        ),
    ]
