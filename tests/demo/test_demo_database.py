"""The demo's SQLite database (the settings' OPTIONS for an ``sqlite:///`` DATABASE_URL): write-ahead
logging, so readers and the one writer do not wait for each other, a 20 s busy timeout and ``BEGIN
IMMEDIATE`` transactions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, django
django.setup()
from django.db import connection
with connection.cursor() as cursor:
    pragmas = {name: cursor.execute(f"PRAGMA {name}").fetchone()[0] for name in ("journal_mode", "synchronous")}
options = connection.settings_dict["OPTIONS"]
print(json.dumps({**pragmas, "timeout": options["timeout"], "transaction_mode": connection.transaction_mode}))
"""


def test_an_sqlite_database_is_opened_in_wal_mode_with_immediate_transactions(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env={
            **os.environ,
            "DEBUG": "1",
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
            "DJANGO_SETTINGS_MODULE": "dynabench.settings",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == {
        "journal_mode": "wal",
        "synchronous": 1,  # NORMAL
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
    }
