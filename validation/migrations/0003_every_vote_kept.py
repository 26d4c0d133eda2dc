"""Every vote is kept: an owner verdict is a row of its own beside the owner's ordinary vote.

One ordinary vote per example and validator, one owner verdict per example (both partial unique
constraints); ``created_at`` is set by the service from its ``now`` instead of ``auto_now_add``.
"""

import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0004_example_state_change_times"),
        ("validation", "0002_validation_claim"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="validation",
            name="validation_one_per_example_and_validator",
        ),
        migrations.AlterField(
            model_name="validation",
            name="created_at",
            field=models.DateTimeField(default=django.utils.timezone.now),
        ),
        migrations.AddConstraint(
            model_name="validation",
            constraint=models.UniqueConstraint(
                condition=models.Q(("is_owner_verdict", False)),
                fields=("example", "validator"),
                name="validation_one_vote_per_example_and_validator",
            ),
        ),
        migrations.AddConstraint(
            model_name="validation",
            constraint=models.UniqueConstraint(
                condition=models.Q(("is_owner_verdict", True)),
                fields=("example",),
                name="validation_one_owner_verdict_per_example",
            ),
        ),
    ]
