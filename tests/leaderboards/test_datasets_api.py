"""Datasets through the API: hidden ones for task owners only, each describing itself, filters (the export of
examples: tests/annotation/test_export_api.py)."""

from __future__ import annotations

import pytest

from leaderboards.models import Dataset, DatasetItem
from tests.helpers.api import forced_client as api

DATASETS = "/api/datasets/"


@pytest.fixture
def datasets(hate_task, hate_round):
    """A scoring round dataset with 2 items, a static standard set, a hidden training split."""
    scoring = Dataset.objects.create(
        task=hate_task,
        slug="r1-test",
        name="Round 1 test",
        kind=Dataset.Kind.ROUND,
        access=Dataset.Access.SCORING,
        round=hate_round,
        split="test",
        licence="CC BY 4.0",
    )
    for n in range(2):
        DatasetItem.objects.create(
            dataset=scoring, external_id=str(n), inputs={"statement": "x"}, target="hateful"
        )
    static = Dataset.objects.create(
        task=hate_task,
        slug="hatecheck",
        name="HateCheck",
        kind=Dataset.Kind.STATIC,
        access=Dataset.Access.STANDARD,
    )
    hidden = Dataset.objects.create(
        task=hate_task,
        slug="r1-train",
        name="Round 1 train",
        kind=Dataset.Kind.ROUND,
        access=Dataset.Access.HIDDEN,
        round=hate_round,
        split="train",
    )
    return {"scoring": scoring, "static": static, "hidden": hidden}


def slugs(response) -> list[str]:
    return [d["slug"] for d in response.json()["results"]]


def test_hidden_datasets_are_for_task_owners_only(datasets, owner, outsider):
    # Round datasets by round and name, then static sets.
    assert slugs(api().get(DATASETS)) == ["r1-test", "hatecheck"]
    assert slugs(api(outsider).get(DATASETS)) == ["r1-test", "hatecheck"]
    assert slugs(api(owner).get(DATASETS)) == ["r1-test", "r1-train", "hatecheck"]
    hidden = f"{DATASETS}{datasets['hidden'].pk}/"
    assert api().get(hidden).status_code == 404
    assert api(outsider).get(hidden).status_code == 404
    assert api(owner).get(hidden).json()["access"] == "hidden"


def test_a_dataset_describes_itself(datasets):
    body = api().get(f"{DATASETS}{datasets['scoring'].pk}/").json()
    assert body == {
        "id": datasets["scoring"].pk,
        "slug": "r1-test",
        "name": "Round 1 test",
        "task": "hate-speech",
        "kind": "round",
        "access": "scoring",
        "round": 1,
        "split": "test",
        "description": "",
        "licence": "CC BY 4.0",
        "source": "",
        "n_items": 2,
        "created_at": body["created_at"],
    }
    assert api().get(f"{DATASETS}{datasets['static'].pk}/").json()["round"] is None
    assert api().get(f"{DATASETS}99999999/").status_code == 404


def test_dataset_filters(datasets, owner):
    assert slugs(api().get(DATASETS, {"access": "scoring"})) == ["r1-test"]
    assert slugs(api().get(DATASETS, {"kind": "static"})) == ["hatecheck"]
    assert slugs(api(owner).get(DATASETS, {"round": 1})) == ["r1-test", "r1-train"]
    assert slugs(api().get(DATASETS, {"task": "other"})) == []
    assert api().get(DATASETS, {"round": "1.5"}).status_code == 400
    assert api().get(DATASETS, {"round": "99999999999999"}).status_code == 400
    assert api().get(DATASETS, {"access": "secret"}).status_code == 400
    assert api().get(DATASETS, {"round": "١"}).json() == {
        "round": ["A whole number from 1 to 2147483647, written with the digits 0-9."]
    }
    assert api().get(DATASETS, {"tsak": "hate-speech"}).json() == {
        "tsak": ["Unknown parameter; this list takes: task, access, kind, round, page, page_size, format."]
    }
