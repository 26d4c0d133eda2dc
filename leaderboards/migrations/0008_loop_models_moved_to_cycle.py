"""TrainingJob, Release and ArtefactProbe moved to the ``cycle`` app (cycle/migrations/0001_initial.py).

State only: the tables keep their names (``leaderboards_trainingjob``, ...; the models' ``db_table``) and
their rows; nothing in the database changes here."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboards", "0007_artefact_probes"),
        ("cycle", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(
                    model_name="release",
                    name="created_by",
                ),
                migrations.RemoveField(
                    model_name="release",
                    name="round",
                ),
                migrations.RemoveField(
                    model_name="release",
                    name="task",
                ),
                migrations.RemoveField(
                    model_name="trainingjob",
                    name="model",
                ),
                migrations.RemoveField(
                    model_name="trainingjob",
                    name="requested_by",
                ),
                migrations.RemoveField(
                    model_name="trainingjob",
                    name="task",
                ),
                migrations.DeleteModel(
                    name="ArtefactProbe",
                ),
                migrations.DeleteModel(
                    name="Release",
                ),
                migrations.DeleteModel(
                    name="TrainingJob",
                ),
            ],
            database_operations=[],
        ),
    ]
