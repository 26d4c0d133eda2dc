# Each example's place in the validation queue among those with as many validations: a random key, drawn
# once, with an index on (round, status, key), so a validator's next example is found from a random key
# (validation.selectors.fresh_queue_for) instead of ordering the whole round.

import annotation.models
from django.db import migrations, models

# One random draw per row (AddField's default would give every existing row the same one).
DRAW = {
    "postgresql": "UPDATE annotation_example SET queue_key = random()",
    # SQLite's random() is a signed 64-bit integer.
    "sqlite": "UPDATE annotation_example SET queue_key = random() / 18446744073709551616.0 + 0.5",
}


def draw_keys(apps, schema_editor):
    statement = DRAW.get(schema_editor.connection.vendor)
    if statement is None:
        Example = apps.get_model("annotation", "Example")
        for pk in Example.objects.values_list("pk", flat=True).iterator():
            Example.objects.filter(pk=pk).update(queue_key=annotation.models.queue_key())
        return
    schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0013_side_by_side"),
    ]

    operations = [
        migrations.AddField(
            model_name="example",
            name="queue_key",
            field=models.FloatField(default=annotation.models.queue_key, editable=False),
        ),
        migrations.RunPython(draw_keys, migrations.RunPython.noop),
        migrations.RemoveIndex(
            model_name="example",
            name="annotation__round_i_c1310a_idx",
        ),
        migrations.AddIndex(
            model_name="example",
            index=models.Index(fields=["round", "status", "queue_key"], name="example_round_status_key"),
        ),
    ]
