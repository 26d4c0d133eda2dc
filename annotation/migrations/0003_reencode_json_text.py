"""Re-encode examples stored before 0002 so that admin search finds non-ASCII text (SQLite only).

On PostgreSQL jsonb keeps no encoding, so there is nothing to do there.
"""

from django.db import migrations

BATCH = 1000


def reencode(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    Example = apps.get_model("annotation", "Example")
    batch = []
    for example in Example.objects.only("id", "inputs", "metadata").iterator(chunk_size=BATCH):
        batch.append(example)
        if len(batch) == BATCH:
            Example.objects.bulk_update(batch, ["inputs", "metadata"])
            batch = []
    if batch:
        Example.objects.bulk_update(batch, ["inputs", "metadata"])


class Migration(migrations.Migration):
    dependencies = [("annotation", "0002_json_text_unescaped")]

    operations = [migrations.RunPython(reencode, migrations.RunPython.noop)]
