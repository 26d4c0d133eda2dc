"""Data: an answer cut short by its reader leaving gets finish reason ``cut_short`` (docs/generative.md).

Before, the runner stored it as ``"finish_reason": "stop"`` with ``extra["cut_short"]: true``, though
``stop`` means the model ended its turn. This rewrites those records to ``"finish_reason": "cut_short"``
(the ``extra`` flag removed: the reason says it) wherever the annotation app stores generation records: a
turn's ``generation`` and an example's ``metadata["generations"]`` (the answers of a judged
conversation). Other keys are kept as they are. Backwards, the old shape is restored.

The generative_bench app stores none: its arena, replay and judge answers are always read to their end.
"""

from django.db import migrations

BATCH = 500


def _forward(record):
    """The record rewritten, or None when it is not an old cut-short one."""
    if not isinstance(record, dict) or record.get("finish_reason") != "stop":
        return None
    extra = record.get("extra")
    if not isinstance(extra, dict) or extra.get("cut_short") is not True:
        return None
    return {
        **record,
        "finish_reason": "cut_short",
        "extra": {k: v for k, v in extra.items() if k != "cut_short"},
    }


def _backward(record):
    if not isinstance(record, dict) or record.get("finish_reason") != "cut_short":
        return None
    extra = record.get("extra") if isinstance(record.get("extra"), dict) else {}
    return {**record, "finish_reason": "stop", "extra": {**extra, "cut_short": True}}


def _rewrite(apps, change):
    Turn = apps.get_model("annotation", "Turn")
    Example = apps.get_model("annotation", "Example")
    turns = []
    for turn in Turn.objects.exclude(generation={}).only("id", "generation").iterator(chunk_size=BATCH):
        new = change(turn.generation)
        if new is not None:
            turn.generation = new
            turns.append(turn)
        if len(turns) == BATCH:
            Turn.objects.bulk_update(turns, ["generation"])
            turns = []
    Turn.objects.bulk_update(turns, ["generation"])
    examples = []
    rows = Example.objects.filter(metadata__has_key="generations").only("id", "metadata")
    for example in rows.iterator(chunk_size=BATCH):
        records = example.metadata.get("generations")
        if not isinstance(records, list):
            continue
        rewritten = [change(record) for record in records]
        if any(new is not None for new in rewritten):
            generations = [
                new if new is not None else old for new, old in zip(rewritten, records, strict=True)
            ]
            example.metadata = {**example.metadata, "generations": generations}
            examples.append(example)
        if len(examples) == BATCH:
            Example.objects.bulk_update(examples, ["metadata"])
            examples = []
    Example.objects.bulk_update(examples, ["metadata"])


def forwards(apps, schema_editor):
    _rewrite(apps, _forward)


def backwards(apps, schema_editor):
    _rewrite(apps, _backward)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0007_example_source_rating"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
