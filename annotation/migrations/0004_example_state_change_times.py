"""The time of each state change of an example: settled, retracted, flagged by its author.

Examples changed before this migration have no recorded time (null): none is made up.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0003_reencode_json_text"),
    ]

    operations = [
        migrations.AddField(
            model_name="example",
            name="flagged_at",
            field=models.DateTimeField(blank=True, help_text="When its author flagged it.", null=True),
        ),
        migrations.AddField(
            model_name="example",
            name="retracted_at",
            field=models.DateTimeField(blank=True, help_text="When its author retracted it.", null=True),
        ),
        migrations.AddField(
            model_name="example",
            name="settled_at",
            field=models.DateTimeField(blank=True, help_text="When a verdict settled it.", null=True),
        ),
    ]
