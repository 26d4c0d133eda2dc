"""A database made while the loop's models lived in ``leaderboards`` upgrades with ``manage.py migrate``
alone, keeping their rows, their content types and the permissions given on them.

``TrainingJob``, ``Release`` and ``ArtefactProbe`` moved to the ``cycle`` app keeping their tables
(``db_table``); ``cycle/migrations/0001_initial.py`` creates them in the migration state only and relabels
their content types, ``leaderboards/migrations/0008_loop_models_moved_to_cycle.py`` drops them from
leaderboards' state. This test makes the database with the code before the move (``git archive`` of its
last commit, run in a subprocess with this venv), writes a row of each model and a group permission there,
then runs today's ``migrate`` and reads them back through today's models. In a clone without that commit
(a shallow one) the database is made by today's code migrated to the leaves of that commit, with the old
content types put back by hand, which gives the same tables and rows.
"""

from __future__ import annotations

import json
import re
import subprocess
import tarfile
from io import BytesIO
from pathlib import Path

import pytest

from tests.core.test_upgrade_from_flat_layout import OTHER_APPS, _manage
from tests.core.test_upgrade_from_flat_layout import empty_database as empty_database  # the fixture

ROOT = Path(__file__).resolve().parents[2]
#: The last commit with the loop's models in ``leaderboards``.
BEFORE_THE_MOVE = "5c81cf9c95be3a3436c135d331cc3759ebefc2b6"

#: The last migration of each project app at ``BEFORE_THE_MOVE``.
LEAVES_BEFORE_THE_MOVE = {
    "dynabench": "0002_idempotency_response_headers",
    "accounts": "0002_display_name",
    "tasks": "0003_qualification",
    "models_registry": "0005_generative_models",
    "annotation": "0008_cut_short_finish_reason",
    "validation": "0005_rubric_answers",
    "crowd": "0002_ended_with_the_round",
    "generative_bench": "0001_initial",
    "leaderboards": "0007_artefact_probes",
}

MOVED = ("trainingjob", "release", "artefactprobe")

# Run by the old code (label "leaderboards") or, in a shallow clone, by today's (label "cycle", the
# content types put back as the old code left them). Prints the ids to check after the upgrade.
WRITE_ROWS = """
import json
from django.apps import apps
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from tasks.builtin_configs import HATE_SPEECH_CONFIG
from tasks.models import Round, Task
LABEL = {label!r}
user = get_user_model().objects.create_user(username="owner-before", password="x-x-x-x-x-1")
task = Task.objects.create(slug="before", name="Before", config=HATE_SPEECH_CONFIG)
round_ = Round.objects.create(task=task, number=1)
job = apps.get_model(LABEL, "TrainingJob").objects.create(task=task, rounds=[1], requested_by=user, status="done")
release = apps.get_model(LABEL, "Release").objects.create(
    task=task, round=round_, version=1, created_by=user, sha256="a" * 64, format_version="1", path="before/round-1/v1")
probe = apps.get_model(LABEL, "ArtefactProbe").objects.create(round=round_, kind="author", status="done", accuracy=0.25)
if LABEL == "cycle":  # today's code: the old content types stand in for any new ones made meanwhile
    ContentType.objects.filter(app_label="cycle", model__in={moved!r}).delete()
types = {{m: ContentType.objects.get_or_create(app_label="leaderboards", model=m)[0].pk for m in {moved!r}}}
permission, _ = Permission.objects.get_or_create(
    content_type_id=types["trainingjob"], codename="change_trainingjob", defaults={{"name": "Can change training job"}})
group = Group.objects.create(name="trainers")
group.permissions.add(permission)
print(json.dumps({{"job": job.pk, "release": release.pk, "probe": probe.pk, "types": types}}))
"""

READ_ROWS = """
import json
from django.contrib.auth.models import Group
from django.contrib.contenttypes.models import ContentType
from cycle.models import ArtefactProbe, Release, TrainingJob
job, release, probe = TrainingJob.objects.get(), Release.objects.get(), ArtefactProbe.objects.get()
print(json.dumps({
    "job": [job.pk, job.task.slug, job.rounds, job.requested_by.username, job.status],
    "release": [release.pk, release.round.number, release.version, release.path],
    "probe": [probe.pk, probe.round.number, probe.accuracy],
    "types": {m._meta.model_name: ContentType.objects.get_for_model(m).pk for m in (TrainingJob, Release, ArtefactProbe)},
    "labels": sorted(ContentType.objects.filter(model__in=["trainingjob", "release", "artefactprobe"]).values_list("app_label", "model")),
    "group": sorted(p.content_type.app_label + "." + p.codename for p in Group.objects.get(name="trainers").permissions.all()),
    "tables": [m._meta.db_table for m in (TrainingJob, Release, ArtefactProbe)],
}))
"""


def _commit_available() -> bool:
    probe = subprocess.run(
        ["git", "cat-file", "-e", f"{BEFORE_THE_MOVE}^{{commit}}"], cwd=ROOT, capture_output=True
    )
    return probe.returncode == 0


def _database_made_before_the_move(database_url: str, tmp_path: Path) -> dict:
    """The database as the code before the move left it, with a row of each moved model; their ids and
    the old content types' ids."""
    if _commit_available():
        archive = subprocess.run(
            ["git", "archive", BEFORE_THE_MOVE], cwd=ROOT, capture_output=True, check=True
        )
        tree = tmp_path / "before"
        with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
            tar.extractall(tree, filter="data")
        _manage(tree, database_url, "migrate", "-v0")
        label = "leaderboards"
    else:
        tree, label = ROOT, "cycle"
        steps = [[app, leaf] for app, leaf in LEAVES_BEFORE_THE_MOVE.items()] + [[app] for app in OTHER_APPS]
        migrate = f"from django.core.management import call_command\nfor s in {steps!r}: call_command('migrate', *s, verbosity=0)"
        _manage(tree, database_url, "shell", "-v0", "-c", migrate)
    script = WRITE_ROWS.format(label=label, moved=MOVED)
    return json.loads(_manage(tree, database_url, "shell", "-v0", "-c", script).strip().splitlines()[-1])


def test_a_database_made_with_the_loop_in_leaderboards_migrates_with_migrate_alone(empty_database, tmp_path):
    before = _database_made_before_the_move(empty_database, tmp_path)

    applied = re.findall(r"Applying (\w+)\.(\w+)\.\.\.", _manage(ROOT, empty_database, "migrate"))
    # The move's two migrations run, then only migrations written after it: nothing made before is made
    # again (a relabelled app would apply its 0001 again).
    assert {("cycle", "0001_initial"), ("leaderboards", "0008_loop_models_moved_to_cycle")} <= set(applied)
    assert all(
        app == "cycle" or (app in LEAVES_BEFORE_THE_MOVE and name > LEAVES_BEFORE_THE_MOVE[app])
        for app, name in applied
    ), applied
    assert "[ ]" not in _manage(ROOT, empty_database, "showmigrations", "--plan")
    _manage(ROOT, empty_database, "makemigrations", "--check", "--dry-run")

    after = json.loads(
        _manage(ROOT, empty_database, "shell", "-v0", "-c", READ_ROWS).strip().splitlines()[-1]
    )
    assert after == {
        "job": [before["job"], "before", [1], "owner-before", "done"],
        "release": [before["release"], 1, 1, "before/round-1/v1"],
        "probe": [before["probe"], 1, 0.25],
        # The same content type rows, relabelled: permissions, admin history and audit entries follow.
        "types": before["types"],
        "labels": [["cycle", "artefactprobe"], ["cycle", "release"], ["cycle", "trainingjob"]],
        "group": ["cycle.change_trainingjob"],
        "tables": ["leaderboards_trainingjob", "leaderboards_release", "leaderboards_artefactprobe"],
    }


def test_the_pinned_leaves_are_the_leaves_of_the_commit_before_the_move():
    """The fallback's leaf set is the one the commit had (checked where the commit is there)."""
    if not _commit_available():
        pytest.skip("a shallow clone: the commit before the move is not here")
    listing = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", BEFORE_THE_MOVE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    folders = {"dynabench": "core"}
    for label, leaf in LEAVES_BEFORE_THE_MOVE.items():
        folder = folders.get(label, label)
        names = sorted(
            Path(name).stem
            for name in listing
            if name.startswith(f"{folder}/migrations/0") and name.endswith(".py")
        )
        assert names[-1] == leaf, label
