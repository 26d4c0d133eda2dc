"""A database created by the code before the folder move (kernel in ``dynabench/``, the registry flat)
upgrades with ``manage.py migrate`` alone.

The kernel app moved to ``core/`` keeping its label ``dynabench`` (``core.apps.CoreConfig``), so its
migration history, its table, its content type and its permissions are the old ones. This test makes the
database with the old code itself (``git archive`` of the last commit before the move, run in a
subprocess with this venv), writes rows there, then runs today's ``migrate`` and reads the rows back
through today's models. A renamed label or a model moved without ``SeparateDatabaseAndState`` fails it.
In a clone without that commit (a shallow one), the database is made by today's code migrated to the
migrations that were the leaves at that commit (``LEAVES_BEFORE_THE_MOVE``), which give the same schema.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
import uuid
from io import BytesIO
from pathlib import Path

import psycopg
import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
#: The last commit with the flat layout (docs/architecture.md, "Folders and layers").
BEFORE_THE_MOVE = "f2066c79daf178e9e4606516af4eacaf95fadedd"

#: The last migration of each project app at ``BEFORE_THE_MOVE`` (app label: migration).
LEAVES_BEFORE_THE_MOVE = {
    "accounts": "0002_display_name",
    "tasks": "0003_qualification",
    "models_registry": "0004_registeredmodel_recheck",
    "annotation": "0005_prediction_runtime",
    "validation": "0004_gold_items",
    "crowd": "0001_crowd_studies_and_ledger",
    "leaderboards": "0005_round_release",
    "dynabench": "0002_idempotency_response_headers",
}

#: Project apps added after the move: every one of their migrations runs on such a database.
APPS_SINCE_THE_MOVE = ("generative_bench", "cycle")

#: The installed apps that are not the project's, migrated in full in either case.
OTHER_APPS = ("contenttypes", "auth", "admin", "sessions", "account", "authtoken", "django_q", "auditlog")

WRITE_ROWS = """
from django.apps import apps
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
IdempotencyRecord = apps.get_model("dynabench", "IdempotencyRecord")
user = get_user_model().objects.create_user(username="before", password="x-x-x-x-x-1")
IdempotencyRecord.objects.create(user=user, key="k-1", method="POST", path="/api/examples/", fingerprint="f" * 64)
print(ContentType.objects.get_for_model(IdempotencyRecord).pk)
"""

READ_ROWS = """
import json
from django.contrib.contenttypes.models import ContentType
from core.models import IdempotencyRecord
record = IdempotencyRecord.objects.get(key="k-1")
print(json.dumps({"user": record.user.username, "path": record.path,
                  "content_type": ContentType.objects.get_for_model(IdempotencyRecord).pk,
                  "table": IdempotencyRecord._meta.db_table}))
"""


def _commit_available() -> bool:
    probe = subprocess.run(
        ["git", "cat-file", "-e", f"{BEFORE_THE_MOVE}^{{commit}}"], cwd=ROOT, capture_output=True
    )
    return probe.returncode == 0


def _manage(tree: Path, database_url: str, *args: str) -> str:
    env = {**os.environ, "DATABASE_URL": database_url, "DEBUG": "1", "PYTHONPATH": str(tree)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=tree, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.fixture
def empty_database():
    """A new, empty PostgreSQL database on the test server; its URL. Dropped afterwards."""
    if connection.vendor != "postgresql":
        pytest.skip("the upgrade is checked on PostgreSQL, the database of record")
    params = connection.get_connection_params()
    host, port, user = params.get("host") or "127.0.0.1", params.get("port") or 5432, params.get("user")
    name = f"upgrade_{uuid.uuid4().hex[:12]}"
    admin = psycopg.connect(host=host, port=port, user=user, dbname="postgres", autocommit=True)
    admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgres://{user}@{host}:{port}/{name}"
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


def _database_made_before_the_move(database_url: str, tmp_path: Path) -> int:
    """Make the database as the code before the move left it, with one user and one idempotency record;
    the record's content type id. Made by the commit's own ``migrate`` where the clone has the commit,
    else by today's code migrated to ``LEAVES_BEFORE_THE_MOVE`` (the same schema: the leaves are checked
    against the commit's where it is there, so building it both ways in a full clone would test nothing
    more)."""
    if _commit_available():
        archive = subprocess.run(
            ["git", "archive", BEFORE_THE_MOVE], cwd=ROOT, capture_output=True, check=True
        )
        tree = tmp_path / "before"
        with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
            tar.extractall(tree, filter="data")
        _manage(tree, database_url, "migrate", "-v0")
    else:
        tree = ROOT
        steps = [[app, leaf] for app, leaf in LEAVES_BEFORE_THE_MOVE.items()] + [[app] for app in OTHER_APPS]
        migrate = f"from django.core.management import call_command\nfor s in {steps!r}: call_command('migrate', *s, verbosity=0)"
        _manage(tree, database_url, "shell", "-v0", "-c", migrate)
    return int(_manage(tree, database_url, "shell", "-v0", "-c", WRITE_ROWS).strip())


def test_a_database_made_before_the_move_migrates_with_migrate_alone(empty_database, tmp_path):
    old_content_type = _database_made_before_the_move(empty_database, tmp_path)

    applied = re.findall(r"Applying (\w+)\.(\w+)\.\.\.", _manage(ROOT, empty_database, "migrate"))
    # Only migrations written after the move run: none recreates what the old code made (a relabelled app
    # would apply its 0001 again), and each comes after its app's leaf at the move.
    assert all(
        app in APPS_SINCE_THE_MOVE or (app in LEAVES_BEFORE_THE_MOVE and name > LEAVES_BEFORE_THE_MOVE[app])
        for app, name in applied
    ), applied
    plan = _manage(ROOT, empty_database, "showmigrations", "--plan")
    assert "[ ]" not in plan and "[X]  dynabench.0002_idempotency_response_headers" in plan
    _manage(ROOT, empty_database, "makemigrations", "--check", "--dry-run")

    rows = json.loads(_manage(ROOT, empty_database, "shell", "-v0", "-c", READ_ROWS).strip())
    assert rows == {
        "user": "before",
        "path": "/api/examples/",
        "content_type": old_content_type,
        "table": "dynabench_idempotencyrecord",
    }


def test_the_pinned_leaves_are_the_leaves_of_the_commit_before_the_move():
    """The fallback's leaf set is the one the commit had (checked where the commit is there)."""
    if not _commit_available():
        return
    listing = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", BEFORE_THE_MOVE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for label, leaf in LEAVES_BEFORE_THE_MOVE.items():
        # Before the move every app's folder was named for its label, the kernel's too (dynabench/).
        names = sorted(
            Path(name).stem
            for name in listing
            if name.startswith(f"{label}/migrations/0") and name.endswith(".py")
        )
        assert names[-1] == leaf
