"""The "Train the next round's target" page says how many settled examples each round adds, by split and,
for label tasks, by label in the train split."""

from __future__ import annotations

import pytest
from django.contrib.admin import helpers
from django.urls import reverse

from cycle.training.owner_facts import training_data_by_round
from leaderboards.services import hash_split
from tasks.services import ensure_round
from tests.factories.annotation import make_example


@pytest.fixture
def owner_client(client, owner, password):
    client.login(username=owner.username, password=password)
    return client


@pytest.fixture
def settled(hate_round, annotator):
    """Round 1: imported train 2 hateful + 1 not-hateful, imported dev 1, imported test 1, one settled
    example written here (split by its id's hash), and a pending, a rejected and a retracted one that
    train nothing. Round 2 exists with nothing settled. Returns the example written here."""
    imported = {"source": "imported", "status": "validated_correct"}
    make_example(hate_round, annotator, split="train", **imported)
    make_example(hate_round, annotator, split="train", **imported)
    make_example(hate_round, annotator, split="train", label="not-hateful", **imported)
    make_example(hate_round, annotator, split="dev", **imported)
    make_example(hate_round, annotator, split="test", label="not-hateful", **imported)
    written = make_example(hate_round, annotator, status="validated_correct")
    make_example(hate_round, annotator)  # pending
    make_example(hate_round, annotator, status="validated_incorrect")
    make_example(hate_round, annotator, status="validated_correct", is_retracted=True)
    ensure_round(task=hate_round.task, number=2)
    return written


def test_counts_by_hand(hate_task, settled):
    one, two = training_data_by_round(hate_task)
    hashed = hash_split(settled.pk)  # the example written here has no split of its own
    expected = {"train": 3, "dev": 1, "test": 1}
    expected[hashed] += 1
    assert (one.number, one.total, one.written, one.splits) == (1, 6, 1, expected)
    labels = {"hateful": 2 + (hashed == "train"), "not-hateful": 1}
    assert one.train_labels == labels
    assert (two.number, two.total, two.written, two.splits, two.train_labels) == (
        2, 0, 0, {"train": 0, "dev": 0, "test": 0}, {}
    )  # fmt: skip


def test_the_train_page_shows_them(owner_client, hate_task, settled):
    response = owner_client.post(
        reverse("admin:tasks_task_changelist"),
        {"action": "train_next_round_target", helpers.ACTION_CHECKBOX_NAME: [hate_task.pk]},
    )
    assert response.status_code == 200
    row = response.text.split('<tr data-round="1">')[1].split("</tr>")[0]
    assert '<td class="total">6</td>' in row and '<td class="written">1</td>' in row
    train = 3 + (hash_split(settled.pk) == "train")
    assert f'<td class="train">{train}</td>' in row
    assert "hateful " in row and "not-hateful 1" in row
    row_two = response.text.split('<tr data-round="2">')[1].split("</tr>")[0]
    assert '<td class="total">0</td>' in row_two
