"""The round-to-round loop's models, moved here from ``leaderboards`` with their tables and rows.

The tables were made by leaderboards' migrations 0002, 0005 and 0007 and keep their names (``db_table``),
so the models are created in the migration state only. The content types move too (their app label
becomes ``cycle``): permissions given on them, the admin's history and the audit log keep pointing at
the same rows. A database made before the move upgrades with ``migrate`` alone
(tests/cycle/test_upgrade_from_leaderboards.py)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

MOVED = ("trainingjob", "release", "artefactprobe")


def relabel_content_types(apps, schema_editor):
    """``leaderboards.<model>`` content types become ``cycle.<model>`` (none exists on a new database;
    a ``cycle`` one already there, which nothing refers to yet, gives way to the old one)."""
    ContentType = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    for model in MOVED:
        old = ContentType.objects.using(db).filter(app_label="leaderboards", model=model).first()
        if old is None:
            continue
        ContentType.objects.using(db).filter(app_label="cycle", model=model).delete()
        old.app_label = "cycle"
        old.save(update_fields=["app_label"])


def restore_content_types(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    ContentType.objects.using(schema_editor.connection.alias).filter(
        app_label="cycle", model__in=MOVED
    ).update(app_label="leaderboards")


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('leaderboards', '0007_artefact_probes'),
        ('contenttypes', '0002_remove_content_type_name'),
        ('models_registry', '0005_generative_models'),
        ('tasks', '0003_qualification'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='ArtefactProbe',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('kind', models.CharField(choices=[('input_only', 'Input-only baseline'), ('author', 'Annotator-identity probe')], max_length=20)),
                        ('status', models.CharField(choices=[('done', 'Measured'), ('not_measurable', 'Not measurable'), ('not_applicable', 'Not applicable'), ('failed', 'Failed')], max_length=20)),
                        ('accuracy', models.FloatField(blank=True, help_text='Cross-validated accuracy, in [0, 1].', null=True)),
                        ('chance', models.FloatField(blank=True, help_text="The majority class's share, in [0, 1].", null=True)),
                        ('n', models.PositiveIntegerField(default=0, help_text='Examples the probe was trained and tested on.')),
                        ('n_classes', models.PositiveIntegerField(default=0, help_text='Labels, or authors, among them.')),
                        ('folds', models.PositiveSmallIntegerField(default=0, help_text='Cross-validation folds (k).')),
                        ('details', models.JSONField(blank=True, default=dict)),
                        ('error', models.TextField(blank=True, help_text='Why the probe was not measured.')),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('round', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='artefact_probes', to='tasks.round')),
                    ],
                    options={
                        'db_table': 'leaderboards_artefactprobe',
                        'ordering': ['round', 'kind'],
                        'constraints': [models.UniqueConstraint(fields=('round', 'kind'), name='artefact_probe_one_per_round_and_kind'), models.CheckConstraint(condition=models.Q(('accuracy__isnull', True), models.Q(('accuracy__gte', 0), ('accuracy__lte', 1)), _connector='OR'), name='artefact_probe_accuracy_in_range'), models.CheckConstraint(condition=models.Q(('chance__isnull', True), models.Q(('chance__gte', 0), ('chance__lte', 1)), _connector='OR'), name='artefact_probe_chance_in_range')],
                    },
                ),
                migrations.CreateModel(
                    name='Release',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('version', models.PositiveIntegerField()),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('sha256', models.CharField(max_length=64)),
                        ('licence', models.CharField(blank=True, max_length=200)),
                        ('format_version', models.CharField(max_length=20)),
                        ('counts', models.JSONField(default=dict)),
                        ('lineage', models.JSONField(default=dict)),
                        ('path', models.CharField(help_text='Folder of the files, relative to DYNABENCH_RELEASES_DIR.', max_length=500)),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='releases', to=settings.AUTH_USER_MODEL)),
                        ('round', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='releases', to='tasks.round')),
                        ('task', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='releases', to='tasks.task')),
                    ],
                    options={
                        'db_table': 'leaderboards_release',
                        'ordering': ['task', 'round__number', 'version'],
                        'constraints': [models.UniqueConstraint(fields=('round', 'version'), name='release_version_unique_per_round'), models.CheckConstraint(condition=models.Q(('version__gte', 1)), name='release_version_at_least_one')],
                    },
                ),
                migrations.CreateModel(
                    name='TrainingJob',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('rounds', models.JSONField(help_text='Round numbers whose settled examples train the model.')),
                        ('recipe', models.CharField(default='quick', max_length=20)),
                        ('name', models.CharField(blank=True, help_text='Registered model name; blank: minilm-<recipe>-r<rounds>.', max_length=200)),
                        ('target_round', models.PositiveIntegerField(blank=True, help_text="Make the trained model this round's target when done.", null=True)),
                        ('seed', models.IntegerField(default=0)),
                        ('epochs', models.PositiveSmallIntegerField(default=3)),
                        ('backbone', models.CharField(default='minilm', help_text='The encoder: minilm (all-MiniLM-L6-v2) or mpnet (all-mpnet-base-v2, opt-in: make mpnet).', max_length=20)),
                        ('backbone_path', models.CharField(blank=True, help_text="Encoder directory; blank: the backbone's installed one.", max_length=1000)),
                        ('natural_dataset', models.CharField(blank=True, help_text='Slug of a natural dataset of the task to mix in; blank: none.', max_length=100)),
                        ('natural_share', models.FloatField(default=0.0, help_text='Share of the training set made of natural texts, 0 to 0.9.')),
                        ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('done', 'Done'), ('failed', 'Failed')], db_index=True, default='queued', max_length=10)),
                        ('progress', models.CharField(blank=True, help_text='The last progress message.', max_length=500)),
                        ('log', models.TextField(blank=True, help_text='Every progress message, one a line.')),
                        ('error_message', models.TextField(blank=True)),
                        ('dev_accuracy', models.FloatField(blank=True, null=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('started_at', models.DateTimeField(blank=True, null=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('model', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='training_jobs', to='models_registry.registeredmodel')),
                        ('requested_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='training_jobs', to=settings.AUTH_USER_MODEL)),
                        ('task', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='training_jobs', to='tasks.task')),
                    ],
                    options={
                        'db_table': 'leaderboards_trainingjob',
                        'ordering': ['-created_at', '-id'],
                        'constraints': [models.CheckConstraint(condition=models.Q(('status__in', ['queued', 'running', 'done', 'failed'])), name='training_job_status_valid')],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(relabel_content_types, restore_content_types),
    ]
