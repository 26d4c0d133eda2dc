"""Round releases (leaderboards/releases.py): files, hash, versions, dataset card, lineage, entry points."""

from __future__ import annotations

import hashlib
import json
import stat
import threading

import pytest
import yaml  # installed with datasets (a test requirement)
from django.core.management import call_command
from django.db import connection

from leaderboards.models import Release, TrainingJob
from leaderboards.releases import (
    ReleaseError,
    create_release,
    hub_licence_id,
    release_dir,
    size_category,
)
from models_registry.round_targets import set_round_targets
from tests.factories.accounts import UserFactory
from tests.factories.annotation import make_example
from tests.factories.models_registry import RegisteredModelFactory
from tests.factories.tasks import open_round
from tests.factories.validation import ValidationFactory

SETTLED = "validated_correct"


@pytest.fixture(autouse=True)
def releases_dir(settings, tmp_path):
    settings.DYNABENCH_RELEASES_DIR = tmp_path / "releases"
    return settings.DYNABENCH_RELEASES_DIR


@pytest.fixture
def released_round(hate_round, annotator, validator):
    """Round 1 with three released examples (two in train, one in test) and six that stay out."""
    a = make_example(hate_round, annotator, label="hateful", status=SETTLED, inputs={"statement": "first 🙂"})
    b = make_example(
        hate_round, annotator, label="not-hateful", status=SETTLED, inputs={"statement": "second"}
    )
    c = make_example(hate_round, annotator, label="hateful", status=SETTLED, split="test")
    ValidationFactory(example=a, validator=validator, verdict="correct")
    make_example(hate_round, annotator)  # pending
    make_example(hate_round, annotator, status="validated_incorrect")
    make_example(hate_round, annotator, status="flagged")
    make_example(hate_round, annotator, status=SETTLED, is_retracted=True)
    make_example(hate_round, None, status=SETTLED, source="imported", split="train")
    make_example(hate_round, annotator, status=SETTLED, source="replay")
    return {"round": hate_round, "train": [a.pk, b.pk], "test": [c.pk]}


def _manifest_sha(folder, names):
    manifest = "".join(f"{hashlib.sha256((folder / n).read_bytes()).hexdigest()}  {n}\n" for n in names)
    return hashlib.sha256(manifest.encode()).hexdigest()


def _card_header(text: str) -> dict:
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


def test_files_load_with_datasets_with_the_right_rows_per_split(released_round, owner, tmp_path):
    release, created = create_release(round_=released_round["round"], user=owner)
    assert created and release.version == 1 and release.created_by == owner
    folder = release_dir(release)
    assert folder == tmp_path / "releases" / "hate-speech" / "round-1" / "v1"
    assert sorted(p.name for p in folder.iterdir()) == [
        "README.md",
        "release.json",
        "test.jsonl",
        "train.jsonl",
    ]
    import datasets

    loaded = datasets.load_dataset(
        "json",
        data_files={"train": str(folder / "train.jsonl"), "test": str(folder / "test.jsonl")},
        cache_dir=str(tmp_path / "hf-cache"),
    )
    assert loaded["train"]["example_id"] == released_round["train"]
    assert loaded["test"]["example_id"] == released_round["test"]
    assert loaded["train"][0]["inputs"]["statement"] == "first 🙂"
    # A release row is an export row: pseudonymised, with its validations.
    assert loaded["train"][0]["annotator"].startswith("anon-")
    assert [v["verdict"] for v in json.loads(loaded["train"][0]["validations"])] == ["correct"]
    assert release.counts == {
        "total": 3,
        "splits": {
            "train": {"rows": 2, "labels": {"hateful": 1, "not-hateful": 1}},
            "test": {"rows": 1, "labels": {"hateful": 1}},
        },
    }
    assert release.licence == "CC BY 4.0 (HatemojiBuild, HateCheck, HatemojiCheck)"


def test_sha256_is_the_manifest_hash_and_stays_when_nothing_changed(released_round, owner):
    release, _ = create_release(round_=released_round["round"], user=owner)
    folder = release_dir(release)
    expected = _manifest_sha(folder, ["train.jsonl", "test.jsonl"])
    assert release.sha256 == expected
    info = json.loads((folder / "release.json").read_text())
    assert info["sha256"] == expected
    assert (
        info["files"]["train.jsonl"]["sha256"]
        == hashlib.sha256((folder / "train.jsonl").read_bytes()).hexdigest()
    )

    again, created = create_release(round_=released_round["round"], user=owner)
    assert (again.pk, created) == (release.pk, False)
    assert Release.objects.count() == 1
    assert sorted(p.name for p in folder.parent.iterdir()) == ["v1"]


def test_a_new_validated_example_makes_version_2_and_leaves_version_1_as_it_was(
    released_round, owner, annotator
):
    v1, _ = create_release(round_=released_round["round"], user=owner)
    folder1 = release_dir(v1)
    before = {p.name: p.read_bytes() for p in folder1.iterdir()}
    assert all(
        not (p.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)) for p in folder1.iterdir()
    )

    new = make_example(released_round["round"], annotator, label="not-hateful", status=SETTLED)
    v2, created = create_release(round_=released_round["round"], user=owner)
    assert created and v2.version == 2 and v2.sha256 != v1.sha256
    assert v2.counts["total"] == 4
    train2 = [
        json.loads(line)["example_id"] for line in (release_dir(v2) / "train.jsonl").read_text().splitlines()
    ]
    assert train2 == [*released_round["train"], new.pk]
    assert {p.name: p.read_bytes() for p in folder1.iterdir()} == before
    with pytest.raises(ValueError):
        v1.save()
    with pytest.raises(ValueError):
        v1.delete()


def test_readme_yaml_header_has_licence_and_configs(released_round, owner):
    release, _ = create_release(round_=released_round["round"], user=owner)
    header = _card_header((release_dir(release) / "README.md").read_text())
    assert header["license"] == "cc-by-4.0"
    assert header["task_categories"] == "text-classification"
    assert header["size_categories"] == "n<1K"
    assert header["pretty_name"].startswith("Hate")
    assert header["configs"] == [
        {
            "config_name": "default",
            "data_files": [
                {"split": "train", "path": "train.jsonl"},
                {"split": "test", "path": "test.jsonl"},
            ],
        }
    ]


def test_licence_ids_and_size_categories():
    assert hub_licence_id("CC BY-NC 4.0 (ANLI, Nie et al. 2020): non-commercial use only") == "cc-by-nc-4.0"
    assert hub_licence_id("CC BY-SA 4.0 (SQuAD v1.1)") == "cc-by-sa-4.0"
    assert hub_licence_id("") == "other"
    assert [size_category(n) for n in (999, 1000, 99_999, 2_000_000)] == [
        "n<1K",
        "1K<n<10K",
        "10K<n<100K",
        "n>1M",
    ]


def test_lineage_names_the_targets_and_their_training_rounds(hate_task, hate_round, owner, annotator):
    round2 = open_round(hate_task, 2)
    trained = RegisteredModelFactory(task=hate_task, name="minilm-quick-r1")
    TrainingJob.objects.create(task=hate_task, rounds=[1], status="done", model=trained)
    carded = RegisteredModelFactory(task=hate_task, name="carded", card={"training": {"rounds": [1, 2]}})
    uploaded = RegisteredModelFactory(task=hate_task, name="uploaded")
    targets = set_round_targets(round=round2, models=[trained, carded, uploaded])
    make_example(round2, annotator, status=SETTLED)

    release, _ = create_release(round_=round2, user=owner)
    assert release.lineage == {
        "round": 2,
        "targets": [
            {"model_id": trained.pk, "name": "minilm-quick-r1", "round_target_id": targets[0].pk, "position": 0,
             "trained_on_rounds": [1], "trained_on_source": "training_job"},
            {"model_id": carded.pk, "name": "carded", "round_target_id": targets[1].pk, "position": 1,
             "trained_on_rounds": [1, 2], "trained_on_source": "model_card"},
            {"model_id": uploaded.pk, "name": "uploaded", "round_target_id": targets[2].pk, "position": 2,
             "trained_on_rounds": None, "trained_on_source": "unknown"},
        ],
    }  # fmt: skip
    info = json.loads((release_dir(release) / "release.json").read_text())
    assert info["lineage"] == release.lineage
    assert "minilm-quick-r1 (model" in (release_dir(release) / "README.md").read_text()


def test_a_round_with_nothing_validated_is_refused(hate_round, annotator, owner):
    make_example(hate_round, annotator)
    with pytest.raises(ReleaseError, match="no validated-correct example"):
        create_release(round_=hate_round, user=owner)
    assert not Release.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_two_owners_at_once_get_one_version(released_round, owner):
    second = UserFactory(username="second-owner", is_staff=True)
    released_round["round"].task.owners.add(second)
    results, errors = [], []
    barrier = threading.Barrier(2)

    def release_as(user):
        try:
            barrier.wait()
            results.append(create_release(round_=released_round["round"], user=user))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=release_as, args=(u,)) for u in (owner, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(created for _, created in results) == [False, True]
    assert {release.pk for release, _ in results} == {Release.objects.get().pk}


def test_release_round_command(released_round, owner, capsys):
    call_command("release_round", "hate-speech", "1", actor="owner")
    release = Release.objects.get()
    assert (release.version, release.created_by) == (1, owner)
    assert "Released hate-speech round 1 v1: 3 example(s)" in capsys.readouterr().out
    call_command("release_round", "hate-speech", "1")
    assert "Unchanged since hate-speech round 1 v1" in capsys.readouterr().out
    assert Release.objects.count() == 1


# --- the API --------------------------------------------------------------------------------------

URL = "/api/tasks/hate-speech/rounds/1/releases/"


def test_api_owners_release_and_anyone_reads_and_downloads(released_round, owner, outsider, api):
    assert api(outsider).post(URL).status_code == 403
    assert api(None).post(URL).status_code in (401, 403)
    created = api(owner).post(URL)
    assert created.status_code == 201, created.content
    assert created.json()["version"] == 1 and created.json()["licence"].startswith("CC BY 4.0")
    assert api(owner).post(URL).status_code == 200

    listing = api(None).get(URL)
    assert listing.status_code == 200
    assert [r["version"] for r in listing.json()] == [1]
    detail = api(None).get(f"{URL}1/").json()
    assert sorted(detail["files"]) == ["README.md", "release.json", "test.jsonl", "train.jsonl"]

    download = api(None).get(f"{URL}1/files/train.jsonl")
    assert download.status_code == 200
    release = Release.objects.get()
    assert b"".join(download.streaming_content) == (release_dir(release) / "train.jsonl").read_bytes()
    assert download["X-Dataset-Licence"].startswith("CC BY 4.0")
    assert api(None).get(f"{URL}1/files/dev.jsonl").status_code == 404  # no dev split in this release
    assert api(None).get(f"{URL}1/files/..%2Frelease.json").status_code == 404
    assert api(None).get(f"{URL}2/").status_code == 404


def test_api_hides_an_inactive_tasks_releases_from_all_but_its_owners(released_round, owner, outsider, api):
    create_release(round_=released_round["round"], user=owner)
    task = released_round["round"].task
    task.is_active = False
    task.save(update_fields=["is_active"])
    assert api(outsider).get(URL).status_code == 404
    assert api(None).get(f"{URL}1/files/train.jsonl").status_code == 404
    assert api(owner).get(URL).status_code == 200


def test_api_refuses_an_empty_round_with_409(hate_round, owner, api):
    response = api(owner).post(URL)
    assert response.status_code == 409
    assert "no validated-correct example" in response.json()["detail"]


def test_the_round_admin_action_releases_and_the_release_admin_is_read_only(
    client, released_round, owner, password
):
    from django.urls import reverse

    assert client.login(username=owner.username, password=password)
    changelist = reverse("admin:tasks_round_changelist")
    response = client.post(
        changelist, {"action": "release_rounds", "_selected_action": [released_round["round"].pk]}
    )
    assert response.status_code == 302
    release = Release.objects.get()
    assert (release.version, release.created_by) == (1, owner)
    client.post(changelist, {"action": "release_rounds", "_selected_action": [released_round["round"].pk]})
    assert Release.objects.count() == 1
    page = client.get(reverse("admin:leaderboards_release_change", args=[release.pk]))
    assert page.status_code == 200 and release.sha256 in page.text
    assert not page.context["has_change_permission"] and not page.context["has_delete_permission"]
    assert (
        client.post(
            reverse("admin:leaderboards_release_delete", args=[release.pk]), {"post": "yes"}
        ).status_code
        == 403
    )
    assert Release.objects.filter(pk=release.pk).exists()


def test_a_non_commercial_licence_is_carried_by_the_card(nli_task, annotator, owner):
    round_ = open_round(nli_task)
    make_example(
        round_,
        annotator,
        label="neutral",
        status=SETTLED,
        inputs={"premise": "It rained.", "hypothesis": "Wet."},
    )
    release, _ = create_release(round_=round_, user=owner)
    text = (release_dir(release) / "README.md").read_text()
    assert _card_header(text)["license"] == "cc-by-nc-4.0"
    assert "**Non-commercial use only**" in text
    assert 'data_files={"train": "train.jsonl"}' in text
