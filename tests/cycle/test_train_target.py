"""train_target_for_rounds and the train_target_model command, on the tiny backbone."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Example
from cycle.training.planning import TargetTrainingError
from cycle.training.targets import train_target_for_rounds
from engine.runtime.classifier import clear_cache, get_classifier
from leaderboards.jobs import run_evaluation_job
from leaderboards.models import Dataset, DatasetItem, Score
from leaderboards.scheduling import pending_evaluations
from leaderboards.selectors import card_test_figures
from models_registry.models import RegisteredModel
from models_registry.selectors import target_models_for_round
from tasks.services import ensure_round
from tests.helpers.toy_data import LABELS, TEXTS


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_cache()
    yield
    clear_cache()


def _examples(round_, split, texts, labels, **extra):
    Example.objects.bulk_create(
        Example(
            round=round_,
            inputs={"statement": text},
            target=label,
            split=split,
            source=extra.get("source", Example.Source.IMPORTED),
            status=extra.get("status", Example.Status.VALIDATED_CORRECT),
            is_retracted=extra.get("is_retracted", False),
            external_id=f"{split}-{extra.get('prefix', '')}{i}",
        )
        for i, (text, label) in enumerate(zip(texts, labels, strict=True))
    )


@pytest.fixture
def hate_data(hate_task, hate_round):
    """Rounds 1 and 2 with train/dev/test splits, and a small 'hatecheck' dataset."""
    round2 = ensure_round(task=hate_task, number=2)
    for round_ in (hate_round, round2):
        _examples(round_, "train", TEXTS, LABELS)
        _examples(round_, "dev", TEXTS[::2], LABELS[::2])
        _examples(round_, "test", TEXTS[1::2], LABELS[1::2])
    # Not usable: pending, retracted, validated incorrect.
    _examples(hate_round, "train", TEXTS[:3], LABELS[:3], status=Example.Status.PENDING, prefix="p")
    _examples(hate_round, "train", TEXTS[:3], LABELS[:3], is_retracted=True, prefix="r")
    _examples(
        hate_round, "train", TEXTS[:3], LABELS[:3], status=Example.Status.VALIDATED_INCORRECT, prefix="i"
    )
    dataset = Dataset.objects.create(task=hate_task, slug="hatecheck", name="HateCheck", kind="static")
    DatasetItem.objects.bulk_create(
        DatasetItem(dataset=dataset, external_id=str(i), inputs={"statement": t}, target=y)
        for i, (t, y) in enumerate(zip(TEXTS, LABELS, strict=True))
    )
    return hate_round, round2


def test_train_register_and_measure(hate_task, hate_data, tiny_backbone_dir, settings):
    round1, round2 = hate_data
    messages = []
    model = train_target_for_rounds(
        task=hate_task,
        rounds=[1, 2],
        recipe="quick",
        backbone_path=tiny_backbone_dir,
        progress=messages.append,
    )
    assert model.status == RegisteredModel.Status.READY, model.error_message
    assert model.name == "minilm-quick-r1-2"
    assert Path(model.path) == Path(settings.DYNABENCH_MODEL_DIR) / "hate-speech" / "minilm-quick-r1-2"
    card = model.card
    assert card["training"]["rounds"] == [1, 2]
    assert card["training"]["n_train"] == 40  # pending, retracted and incorrect examples left out
    assert card["training"]["n_dev"] == 20
    assert card["training"]["per_round"]["1"] == {"train": 20, "dev": 10, "test": 10}
    assert card["recipe"] == "quick" and card["seed"] == 0
    assert card["parameter_count"] == model.parameter_count
    assert 0 <= card["dev_accuracy"] <= 1
    # Training measures no test split itself: the card names the datasets whose leaderboard
    # evaluations give its test figures, and the rounds' datasets were built for them.
    assert "test_accuracy" not in card
    assert card["test_datasets"] == ["round-1-test", "round-2-test", "hatecheck"]
    assert set(Dataset.objects.filter(task=hate_task).values_list("slug", flat=True)) >= {
        "round-1-train",
        "round-1-dev",
        "round-1-test",
        "round-2-test",
        "hatecheck",
    }
    assert card["preprocessing"]["emoji"] == "names"
    assert "target_round" not in card
    assert target_models_for_round(round1) == []
    assert not any("evaluating on" in m for m in messages), messages
    assert "registering minilm-quick-r1-2 (loading, checking and exporting it)…" in messages
    # Until the leaderboard evaluates the model, the card has no test figure; then they are its
    # Scores: by hand, the share of each test set the model labels right.
    assert card_test_figures(model) == {}
    for score_id in pending_evaluations(model=model):
        assert run_evaluation_job(score_id) == Score.Status.DONE
    figures = card_test_figures(model)
    assert list(figures) == ["round-1-test", "round-2-test", "hatecheck"]
    classifier = get_classifier(model.path)
    for slug, texts, labels in (
        ("round-1-test", TEXTS[1::2], LABELS[1::2]),
        ("round-2-test", TEXTS[1::2], LABELS[1::2]),
        ("hatecheck", TEXTS, LABELS),
    ):
        predicted = [p["label"] for p in classifier.predict_batch(texts)]
        right = sum(p == y for p, y in zip(predicted, labels, strict=True))
        assert figures[slug]["n"] == len(texts)
        assert figures[slug]["accuracy"] == pytest.approx(right / len(texts))
    assert figures["hatecheck"]["dataset"] == "HateCheck"
    # No leftover work directories.
    assert sorted(p.name for p in Path(model.path).parent.iterdir()) == ["minilm-quick-r1-2"]


def test_round_one_target_is_trained_on_its_own_round_and_marked(hate_task, hate_data, tiny_backbone_dir):
    round1, _ = hate_data
    model = train_target_for_rounds(
        task=hate_task,
        rounds=[1],
        recipe="quick",
        name="r1-target",
        target_round=1,
        backbone_path=tiny_backbone_dir,
    )
    assert target_models_for_round(round1) == [model]
    assert model.card["trained_on_target_round"] is True
    assert "round 1's own training split" in model.card["note"]


def test_an_existing_name_is_refused_and_the_model_left_alone(hate_task, hate_data, tiny_backbone_dir):
    first = train_target_for_rounds(task=hate_task, rounds=[1], name="m", backbone_path=tiny_backbone_dir)
    weights = Path(first.path) / "model.safetensors"
    before = (weights.read_bytes(), weights.stat().st_mtime_ns)
    with pytest.raises(
        TargetTrainingError,
        match=r"^a model named m already exists for task hate-speech; choose another name$",
    ):
        train_target_for_rounds(task=hate_task, rounds=[1, 2], name="m", backbone_path=tiny_backbone_dir)
    first_again = RegisteredModel.objects.get(pk=first.pk)
    assert first_again.card == first.card  # dev accuracy and the rest unchanged
    assert (weights.read_bytes(), weights.stat().st_mtime_ns) == before
    assert sorted(p.name for p in Path(first.path).parent.iterdir()) == ["m"]  # no work directory


def test_the_default_name_is_refused_when_taken(hate_task, hate_data, tiny_backbone_dir):
    train_target_for_rounds(task=hate_task, rounds=[1], backbone_path=tiny_backbone_dir)
    with pytest.raises(TargetTrainingError, match="a model named minilm-quick-r1 already exists"):
        train_target_for_rounds(task=hate_task, rounds=[1], backbone_path=tiny_backbone_dir)


def test_an_unregistered_directory_of_that_name_is_not_overwritten(
    hate_task, hate_data, tiny_backbone_dir, settings
):
    folder = Path(settings.DYNABENCH_MODEL_DIR) / "hate-speech" / "someone-elses"
    folder.mkdir(parents=True)
    (folder / "keep.txt").write_text("mine")
    with pytest.raises(TargetTrainingError, match="already exists"):
        train_target_for_rounds(
            task=hate_task, rounds=[1], name="someone-elses", backbone_path=tiny_backbone_dir
        )
    assert (folder / "keep.txt").read_text() == "mine"
    assert not RegisteredModel.objects.exists()


def test_replace_retrains_the_model_and_forgets_the_cached_weights(hate_task, hate_data, tiny_backbone_dir):
    from engine.runtime.classifier import get_classifier

    first = train_target_for_rounds(task=hate_task, rounds=[1], name="m", backbone_path=tiny_backbone_dir)
    cached = get_classifier(first.path)
    second = train_target_for_rounds(
        task=hate_task, rounds=[1, 2], name="m", backbone_path=tiny_backbone_dir, replace=True
    )
    assert second.pk == first.pk
    assert second.card["training"]["rounds"] == [1, 2]
    assert second.status == RegisteredModel.Status.READY
    assert get_classifier(second.path) is not cached  # the new weights are served, not the old ones
    assert sorted(p.name for p in Path(second.path).parent.iterdir()) == ["m"]


def test_replace_rebuilds_a_deleted_model_directory(hate_task, hate_data, tiny_backbone_dir):
    """The demo's case: the model is registered but its directory is gone."""
    import shutil

    first = train_target_for_rounds(task=hate_task, rounds=[1], name="m", backbone_path=tiny_backbone_dir)
    shutil.rmtree(first.path)
    second = train_target_for_rounds(
        task=hate_task, rounds=[1], name="m", backbone_path=tiny_backbone_dir, replace=True
    )
    assert second.pk == first.pk and second.status == RegisteredModel.Status.READY
    assert (Path(second.path) / "config.json").is_file()


BAD_NAMES = ["../../evil", "/etc/passwd", "a/b", ".hidden", "😀 model", "-dash", "x" * 101, "a\\b", "ok\n"]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_invalid_names_are_refused_before_anything_is_written(
    hate_task, hate_data, tiny_backbone_dir, settings, tmp_path, name
):
    with pytest.raises(TargetTrainingError, match="invalid model name"):
        train_target_for_rounds(task=hate_task, rounds=[1], name=name, backbone_path=tiny_backbone_dir)
    assert not Path(settings.DYNABENCH_MODEL_DIR).exists()
    assert not (tmp_path / "evil").exists()
    assert not RegisteredModel.objects.exists()


@pytest.mark.parametrize("name", ["m", "minilm-quick-r1-2", "A.b_c-9", "9" * 100])
def test_valid_names(name):
    from cycle.training.planning import check_model_name_syntax

    assert check_model_name_syntax(name) == name


def test_created_examples_count_once_settled(hate_task, hate_round, tiny_backbone_dir):
    from leaderboards.services import hash_split

    _examples(hate_round, "", TEXTS, LABELS, source=Example.Source.CREATED, prefix="c")
    splits = [hash_split(pk) for pk in Example.objects.values_list("pk", flat=True)]
    model = train_target_for_rounds(task=hate_task, rounds=[1], backbone_path=tiny_backbone_dir)
    # Written examples go to the split their round dataset gives them (sha256 of the id): only the
    # train ones train the target, the test ones score it.
    assert len(splits) == 20
    assert model.card["training"]["n_train"] == splits.count("train")
    assert model.card["training"]["n_dev"] == splits.count("dev")
    n_test = splits.count("test")
    assert model.card["test_datasets"] == (["round-1-test"] if n_test else [])
    for score_id in pending_evaluations(model=model):
        run_evaluation_job(score_id)
    assert card_test_figures(model).get("round-1-test", {}).get("n", 0) == n_test


def test_unknown_round(hate_task, hate_round, tiny_backbone_dir):
    with pytest.raises(TargetTrainingError, match=r"no round\(s\) \[7\]"):
        train_target_for_rounds(task=hate_task, rounds=[1, 7], backbone_path=tiny_backbone_dir)


def test_no_examples(hate_task, hate_round, tiny_backbone_dir):
    with pytest.raises(TargetTrainingError, match="import_hate_data"):
        train_target_for_rounds(task=hate_task, rounds=[1], backbone_path=tiny_backbone_dir)


def test_command(hate_task, hate_data, tiny_backbone_dir, monkeypatch):
    import engine.training.classifier as training

    monkeypatch.setattr(training, "default_backbone_path", lambda: tiny_backbone_dir)
    out = StringIO()
    call_command(
        "train_target_model",
        "--task",
        "hate-speech",
        "--rounds",
        "1",
        "--recipe",
        "finetune",
        "--epochs",
        "1",
        "--name",
        "cmd-model",
        "--target-round",
        "2",
        stdout=out,
    )
    text = out.getvalue()
    assert "dev accuracy:" in text
    assert "test accuracy round-1-test:" in text
    assert "test accuracy hatecheck:" in text
    assert "epoch 1/1" in text
    model = RegisteredModel.objects.get(name="cmd-model")
    assert model.card["recipe"] == "finetune"
    assert model.card["trained_on_target_round"] is False
    assert target_models_for_round(hate_data[1]) == [model]


def test_command_refuses_invalid_and_taken_names(hate_task, hate_data, settings):
    RegisteredModel.objects.create(task=hate_task, name="taken", path="/nowhere", status="ready")
    for name, message in (
        ("../../evil", "invalid model name"),
        ("taken", "a model named taken already exists"),
    ):
        for extra in ([], ["--queue"]):
            with pytest.raises(CommandError, match=message):
                call_command(
                    "train_target_model",
                    "--task",
                    "hate-speech",
                    "--rounds",
                    "1",
                    "--name",
                    name,
                    *extra,
                    stdout=StringIO(),
                )
    assert not Path(settings.DYNABENCH_MODEL_DIR).exists()


def test_command_unknown_task(db):
    with pytest.raises(CommandError, match="No task 'nope'"):
        call_command("train_target_model", "--task", "nope", "--rounds", "1", stdout=StringIO())


def test_command_without_examples(hate_task, hate_round):
    with pytest.raises(CommandError, match="no validated training examples"):
        call_command("train_target_model", "--task", "hate-speech", "--rounds", "1", stdout=StringIO())


def test_recipes_agree_and_the_command_module_loads_no_torch():
    import subprocess
    import sys

    from cycle.training import planning as services_training
    from engine.training import classifier as training

    assert services_training.RECIPES == training.RECIPES
    code = (
        "import django, os, sys; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'dynabench.settings'); "
        "django.setup(); import cycle.management.commands.train_target_model, models_registry.admin; "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"


@pytest.mark.onnx
def test_a_trained_target_is_exported_and_judged_on_its_dev_and_test_examples(
    hate_task, hate_data, tiny_backbone_dir, settings
):
    settings.DYNABENCH_ONNX_INT8_MAX_ACCURACY_DROP = 1.0  # any drop: int8 is chosen
    model = train_target_for_rounds(
        task=hate_task, rounds=[1], recipe="quick", backbone_path=tiny_backbone_dir
    )
    assert model.status == RegisteredModel.Status.READY, model.error_message
    assert model.runtime == "onnx-int8", model.card["runtime"]
    int8 = model.card["runtime"]["checks"]["onnx-int8"]
    n_held_apart = Example.objects.filter(round=hate_data[0], split__in=["dev", "test"]).count()
    assert int8["n"] == n_held_apart == len(TEXTS)  # dev (every other text) + test (the rest)
    assert int8["rule"] == "accuracy" and 0.0 <= int8["accuracy"] <= 1.0
    assert model.card["runtime"]["checks"]["onnx-fp32"]["rule"] == "agreement"


def test_the_demos_targets_embed_round_one_once(hate_task, hate_data, tiny_backbone_dir):
    """Targets of rounds (1) then (1, 2), as the demo trains them in one process: the second embeds
    nothing round 1 already gave (round 2's texts here are round 1's), through the shared cache."""
    from engine.runtime.embeddings import EMBEDDING_CACHE

    EMBEDDING_CACHE.clear()
    train_target_for_rounds(task=hate_task, rounds=[1], name="r1", backbone_path=tiny_backbone_dir)
    misses = EMBEDDING_CACHE.misses
    hits = EMBEDDING_CACHE.hits
    train_target_for_rounds(task=hate_task, rounds=[1, 2], name="r1-2", backbone_path=tiny_backbone_dir)
    # 40 training and 20 dev texts, every one already embedded for r1: all hits, no new vector.
    assert (EMBEDDING_CACHE.hits - hits, EMBEDDING_CACHE.misses - misses) == (60, 0)
    EMBEDDING_CACHE.clear()
