"""Round releases (cycle/releases/services.py): files, hash, versions, dataset card, lineage, entry points."""

from __future__ import annotations

import hashlib
import json
import stat
import threading

import pytest
import yaml  # installed with datasets (a test requirement)
from django.core.management import call_command
from django.db import connection

from cycle.models import Release, TrainingJob
from cycle.releases.services import (
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
    """Round 1 with three released examples (two in train, one in test) and six that stay out.

    a and b are written here (no split of their own): their ids are chosen so that the trainer's rule
    puts them in train (sha256("900002")[:8] % 10 = 7, sha256("900003")[:8] % 10 = 6; ``hash_bucket``).
    """
    a = make_example(
        hate_round, annotator, label="hateful", status=SETTLED, inputs={"statement": "first 🙂"}, pk=900002
    )
    b = make_example(
        hate_round, annotator, label="not-hateful", status=SETTLED, inputs={"statement": "second"}, pk=900003
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


def hash_bucket(example_id: int) -> int:
    """The trainer's bucket of an example written here, by hand (docs/datasets.md, "the split rule"):
    the first 8 bytes of sha256 of the decimal id, big-endian, modulo 10 (0-7 train, 8 dev, 9 test)."""
    return int.from_bytes(hashlib.sha256(str(example_id).encode()).digest()[:8], "big") % 10


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
    assert [v["verdict"] for v in loaded["train"][0]["validations"]] == ["correct"]
    assert release.counts == {
        "total": 3,
        "splits": {
            "train": {"rows": 2, "labels": {"hateful": 1, "not-hateful": 1}},
            "test": {"rows": 1, "labels": {"hateful": 1}},
        },
        "duplicates": {"groups": 0, "rows": 0, "across_splits": 0},
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

    # sha256("900005")[:8] % 10 = 0: train, as the trainer puts it.
    new = make_example(released_round["round"], annotator, label="not-hateful", status=SETTLED, pk=900005)
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


# --- issue 29: the trainer's splits, nested JSON as objects, exact duplicates -----------------------


def _rows(release, name: str) -> list[dict]:
    return [json.loads(line) for line in (release_dir(release) / name).read_text().splitlines()]


def test_each_example_is_in_the_split_the_trainer_uses(hate_task, hate_round, annotator, owner):
    # Written here, no split of their own; buckets by hand (hash_bucket): 900005 -> 0 (train),
    # 900001 -> 8 (dev), 900010 -> 9 (test). 900002 hashes to train (7) but has its own split, test.
    assert [hash_bucket(i) for i in (900005, 900001, 900010, 900002)] == [0, 8, 9, 7]
    for pk, own in [(900005, ""), (900001, ""), (900010, ""), (900002, "test")]:
        make_example(hate_round, annotator, status=SETTLED, pk=pk, split=own)
    expected = {"train": [900005], "dev": [900001], "test": [900002, 900010]}

    release, _ = create_release(round_=hate_round, user=owner)
    got = {
        split: [r["example_id"] for r in _rows(release, f"{split}.jsonl")]
        for split in ("train", "dev", "test")
    }
    assert got == expected
    # Each row says the split it is released in, whether its own or the trainer's hash.
    assert {r["example_id"]: r["split"] for r in _rows(release, "dev.jsonl")} == {900001: "dev"}
    assert release.counts["splits"] == {
        "train": {"rows": 1, "labels": {"hateful": 1}},
        "dev": {"rows": 1, "labels": {"hateful": 1}},
        "test": {"rows": 2, "labels": {"hateful": 2}},
    }
    # The same assignment as the round datasets the training loop builds and reads.
    from cycle.training.examples import split_examples
    from leaderboards.services import build_round_datasets

    datasets = build_round_datasets(hate_round).datasets
    for split, ids in expected.items():
        assert sorted(datasets[split].items.values_list("example_id", flat=True)) == ids
        assert sorted(split_examples(hate_task, [hate_round], split).values_list("pk", flat=True)) == ids


def test_nested_json_fields_are_objects_not_strings(
    hate_task, hate_round, annotator, validator, owner, tmp_path
):
    from annotation.models import Prediction

    model = RegisteredModelFactory(task=hate_task, name="target-1")
    example = make_example(
        hate_round,
        annotator,
        status=SETTLED,
        pk=900002,  # train
        inputs={"statement": '{"looks": "like JSON"}'},
        tags=["emoji", "negation"],
        metadata={"source": {"round": 5, "set": "a"}, "targets": ["women"]},
    )
    output = {"label": "not-hateful", "probabilities": {"hateful": 0.125, "not-hateful": 0.875}}
    Prediction.objects.create(
        example=example, model=model, label="not-hateful", output=output, model_wrong=True
    )
    ValidationFactory(example=example, validator=validator, verdict="correct")

    release, _ = create_release(round_=hate_round, user=owner)
    line = (release_dir(release) / "train.jsonl").read_text().splitlines()[0]
    row = json.loads(line)
    assert row["predictions"] == [
        {
            "model": "target-1",
            "model_id": model.pk,
            "status": "ok",
            "label": "not-hateful",
            "output": output,
            "model_wrong": True,
            "error": "",
        }
    ]
    assert row["predictions"][0]["output"]["probabilities"]["not-hateful"] == 0.875
    assert [(v["verdict"], v["is_owner_verdict"]) for v in row["validations"]] == [("correct", False)]
    assert row["validations"][0]["validator"].startswith("anon-")
    assert row["tags"] == ["emoji", "negation"]
    assert row["metadata"] == {"source": {"round": 5, "set": "a"}, "targets": ["women"]}
    # The input dict is an object of texts; a text that looks like JSON stays the text it is.
    assert row["inputs"] == {"statement": '{"looks": "like JSON"}'}
    assert '"predictions":[{' in line and '"metadata":{' in line and '"tags":["emoji"' in line
    import datasets

    loaded = datasets.load_dataset(
        "json",
        data_files={"train": str(release_dir(release) / "train.jsonl")},
        cache_dir=str(tmp_path / "hf-cache"),
    )["train"][0]
    assert loaded["metadata"] == row["metadata"] and loaded["tags"] == ["emoji", "negation"]
    assert loaded["predictions"][0]["output"]["probabilities"]["hateful"] == 0.125


def test_exact_duplicates_are_flagged_and_counted(hate_round, annotator, validator, owner):
    # 900002 and 900003 hash to train, 900010 to test (hash_bucket). The three share one text exactly;
    # a change of case or a trailing space is another text.
    same = "they should all go back"
    first = make_example(hate_round, annotator, status=SETTLED, pk=900002, inputs={"statement": same})
    second = make_example(hate_round, validator, status=SETTLED, pk=900003, inputs={"statement": same})
    third = make_example(hate_round, annotator, status=SETTLED, pk=900010, inputs={"statement": same})
    others = [
        make_example(hate_round, annotator, status=SETTLED, pk=pk, inputs={"statement": text})
        for pk, text in [
            (900005, "They should all go back"),
            (900006, same + " "),
            (900007, "something else"),
        ]
    ]
    # Out of the release (pending), so no duplicate of anything released.
    make_example(hate_round, annotator, inputs={"statement": "something else"})

    release, _ = create_release(round_=hate_round, user=owner)
    rows = {
        r["example_id"]: r
        for name in ("train.jsonl", "dev.jsonl", "test.jsonl")
        if (release_dir(release) / name).exists()
        for r in _rows(release, name)
    }
    flags = {pk: (r["is_duplicate"], r["duplicate_of"]) for pk, r in rows.items()}
    assert flags == {
        first.pk: (True, 0),  # the first of its text (lowest id): kept by duplicate_of == 0
        second.pk: (True, first.pk),
        third.pk: (True, first.pk),
        **{o.pk: (False, 0) for o in others},
    }
    # One text written three times: two rows to drop for one of each; it is in train and test.
    assert release.counts["duplicates"] == {"groups": 1, "rows": 2, "across_splits": 1}
    info = json.loads((release_dir(release) / "release.json").read_text())
    assert info["counts"]["duplicates"] == release.counts["duplicates"]
    readme = (release_dir(release) / "README.md").read_text()
    assert "1 text is written more than once (2 rows are copies" in readme


def test_duplicates_compare_the_whole_model_input(nli_task, annotator, owner):
    from tests.factories.tasks import ContextFactory

    round_ = open_round(nli_task)
    rain, sun = (ContextFactory(round=round_, data={"premise": p}) for p in ("It rained.", "It was sunny."))
    settled = {"status": SETTLED, "label": "neutral"}
    a = make_example(round_, annotator, context=rain, inputs={"hypothesis": "Wet."}, pk=900002, **settled)
    b = make_example(round_, annotator, context=sun, inputs={"hypothesis": "Wet."}, pk=900003, **settled)
    c = make_example(round_, annotator, context=rain, inputs={"hypothesis": "Wet."}, pk=900005, **settled)
    release, _ = create_release(round_=round_, user=owner)
    flags = {r["example_id"]: r["duplicate_of"] for r in _rows(release, "train.jsonl")}
    # The model reads (premise, hypothesis): b's pair differs from a's, c's is a's.
    assert flags == {a.pk: 0, b.pk: 0, c.pk: a.pk}
    assert release.counts["duplicates"] == {"groups": 1, "rows": 1, "across_splits": 0}


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
    page = client.get(reverse("admin:cycle_release_change", args=[release.pk]))
    assert page.status_code == 200 and release.sha256 in page.text
    assert not page.context["has_change_permission"] and not page.context["has_delete_permission"]
    assert (
        client.post(reverse("admin:cycle_release_delete", args=[release.pk]), {"post": "yes"}).status_code
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
        pk=900006,  # sha256("900006")[:8] % 10 = 7: train
    )
    release, _ = create_release(round_=round_, user=owner)
    text = (release_dir(release) / "README.md").read_text()
    assert _card_header(text)["license"] == "cc-by-nc-4.0"
    assert "**Non-commercial use only**" in text
    assert 'data_files={"train": "train.jsonl"}' in text
