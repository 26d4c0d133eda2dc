"""What a validator's two requests read from the database: each row once.

A crowd's requests are mostly the ORM's work, about a millisecond of CPU a query on a 2-core machine
(docs/serving.md, "Many streams per worker"), so a row read twice is a cost every request pays.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.factories.annotation import make_example

pytestmark = pytest.mark.django_db


def _selects(queries, table: str) -> int:
    return sum(1 for q in queries if q["sql"].startswith(f'SELECT "{table}"."id"'))


def test_asking_for_the_next_example_reads_the_task_once(api, hate_round, annotator, validator):
    make_example(hate_round, annotator)
    client = api(validator)
    with CaptureQueriesContext(connection) as queries:
        served = client.get("/api/tasks/hate-speech/validations/next/")
    assert served.status_code == 200 and served.json()["example"] is not None
    assert _selects(queries, "tasks_task") == 1


def test_a_verdict_reads_its_example_once_before_locking_it(api, hate_round, annotator, validator):
    example = make_example(hate_round, annotator)
    client = api(validator)
    assert client.get("/api/tasks/hate-speech/validations/next/").json()["example"]["id"] == example.pk
    with CaptureQueriesContext(connection) as queries:
        voted = client.post(f"/api/examples/{example.pk}/validations/", {"verdict": "correct"}, format="json")
    assert voted.status_code == 201, voted.content
    # The verdict rule's lookup (with its round and task), then the row lock of the service: no third
    # read for the task, nor for the round the crowd ledger pays the verdict in.
    assert _selects(queries, "annotation_example") == 2
    assert not any('SELECT "annotation_example"."round_id"' in q["sql"] for q in queries)
