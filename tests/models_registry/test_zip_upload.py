"""Registering a model from an uploaded zip: the happy path, and every refusal kept on a failed model."""

from __future__ import annotations

import stat
import zipfile
from pathlib import Path

import pytest

from engine.runtime.weights import count_parameters
from models_registry.models import RegisteredModel
from models_registry.services import ModelRegistryError, register_uploaded_model
from tests.helpers.tiny_models import build_tiny_classifier
from tests.helpers.zips import files_under, zip_bytes, zip_dir

CARD = {
    "backbone": "tiny-random-bert",
    "licence": "CC-BY-4.0",
    "training_data": "nothing: random weights",
    "paper_link": "https://example.org/paper",
    "description": "A tiny model for tests.",
}


def upload(task, owner, fileobj, name="uploaded", **kwargs) -> RegisteredModel:
    model = register_uploaded_model(task=task, name=name, owner=owner, fileobj=fileobj, card=CARD, **kwargs)
    model.refresh_from_db()
    return model


@pytest.mark.parametrize("prefix", ["", "tiny-model/"])
def test_zip_upload_becomes_ready_with_counted_parameters(
    hate_task, owner, tiny_model_dir, model_root, prefix, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        model = upload(hate_task, owner, zip_dir(tiny_model_dir, prefix=prefix))
    model.refresh_from_db()
    assert model.status == RegisteredModel.Status.READY, model.error_message
    assert model.error_message == ""
    assert model.source == RegisteredModel.Source.UPLOAD
    assert model.parameter_count == count_parameters(tiny_model_dir)
    assert model.card["parameter_count"] == model.parameter_count
    assert model.card["licence"] == "CC-BY-4.0"
    assert model.backbone == "tiny-random-bert"
    folder = Path(model.path)
    assert folder.parent.parent == model_root and folder.parent.name == hate_task.slug
    assert {p.name for p in folder.iterdir()} == {p.name for p in tiny_model_dir.iterdir()}


def test_typed_parameter_count_is_ignored(
    hate_task, owner, tiny_model_dir, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        model = register_uploaded_model(
            task=hate_task,
            name="typed",
            owner=owner,
            fileobj=zip_dir(tiny_model_dir),
            card={**CARD, "parameter_count": 7},
        )
    model.refresh_from_db()
    assert model.parameter_count == count_parameters(tiny_model_dir) != 7


def test_status_is_uploaded_until_the_transaction_commits(hate_task, owner, tiny_model_dir):
    model = upload(hate_task, owner, zip_dir(tiny_model_dir))
    assert model.status == RegisteredModel.Status.UPLOADED


def test_same_name_twice_is_refused_without_a_second_model(hate_task, owner, tiny_model_dir):
    upload(hate_task, owner, zip_dir(tiny_model_dir))
    with pytest.raises(ModelRegistryError, match="already has a model named 'uploaded'"):
        upload(hate_task, owner, zip_dir(tiny_model_dir))
    assert RegisteredModel.objects.filter(task=hate_task).count() == 1


def _symlink(name: str, target: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info


def _refused(hate_task, owner, fileobj, tmp_path, **kwargs) -> RegisteredModel:
    before = files_under(tmp_path)
    model = upload(hate_task, owner, fileobj, **kwargs)
    assert model.status == RegisteredModel.Status.FAILED
    assert model.error_message.startswith("upload refused: ")
    assert not Path(model.path).exists()
    assert files_under(tmp_path) == before  # nothing written anywhere
    return model


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([("config.json", b"{}"), ("../x", b"evil")], "points outside the model folder"),
        ([("config.json", b"{}"), ("a/../../x", b"evil")], "points outside the model folder"),
        ([("config.json", b"{}"), ("/tmp/x", b"evil")], "absolute path"),
        ([("config.json", b"{}"), ("C:/x", b"evil")], "absolute path"),
        ([("config.json", b"{}"), ("..\\x", b"evil")], "points outside the model folder"),
        ([("config.json", b"{}"), (_symlink("link", "/etc/passwd"), b"/etc/passwd")], "symbolic link"),
        ([("m/config.json", b"{}"), ("m/sub/x", b"deep")], "nested folder"),
        ([("config.json", b"{}"), ("m/x", b"mixed")], "mixes folders"),
        ([("a/config.json", b"{}"), ("b/x", b"two folders")], "mixes folders"),
        ([("config.json", b"{}"), ("CONFIG.json", b"{}")], "twice"),
        ([], "no files"),
    ],
)
def test_bad_entries_are_refused(hate_task, owner, tmp_path, entries, message):
    model = _refused(hate_task, owner, zip_bytes(entries), tmp_path)
    assert message in model.error_message


def test_not_a_zip(hate_task, owner, tmp_path):
    import io

    model = _refused(hate_task, owner, io.BytesIO(b"this is not a zip"), tmp_path)
    assert "not a readable zip" in model.error_message


def test_oversized_upload_is_refused(settings, hate_task, owner, tiny_model_dir, tmp_path):
    settings.DYNABENCH_MODEL_UPLOAD_MAX_BYTES = 1000
    model = _refused(hate_task, owner, zip_dir(tiny_model_dir), tmp_path)
    assert "the limit is 1,000 bytes" in model.error_message


def test_zip_bomb_is_refused(settings, hate_task, owner, tmp_path):
    settings.DYNABENCH_MODEL_UPLOAD_MAX_BYTES = 100_000
    bomb = zip_bytes([("config.json", b"{}"), ("model.safetensors", b"\0" * 5_000_000)])
    assert len(bomb.getvalue()) < 100_000  # small upload, huge content
    model = _refused(hate_task, owner, bomb, tmp_path)
    assert "unpacks to 5,000,002 bytes" in model.error_message


def test_too_many_files_are_refused(hate_task, owner, tmp_path):
    entries = [(f"f{i}.txt", b"") for i in range(1001)]
    model = _refused(hate_task, owner, zip_bytes(entries), tmp_path)
    assert "1001 entries" in model.error_message


def _pickle_only_zip(tiny_model_dir: Path):
    entries = [(p.name, p.read_bytes()) for p in tiny_model_dir.iterdir() if p.name != "model.safetensors"]
    return zip_bytes([*entries, ("pytorch_model.bin", b"pickle bytes")])


def test_pickle_only_without_allow_pickle_is_refused(hate_task, owner, tiny_model_dir, tmp_path):
    model = _refused(hate_task, owner, _pickle_only_zip(tiny_model_dir), tmp_path)
    assert "only pickle weights (pytorch_model.bin)" in model.error_message


def test_pickle_beside_safetensors_is_not_written(
    hate_task, owner, tiny_model_dir, django_capture_on_commit_callbacks
):
    fileobj = zip_bytes(
        [*((p.name, p.read_bytes()) for p in tiny_model_dir.iterdir()), ("pytorch_model.bin", b"x")]
    )
    with django_capture_on_commit_callbacks(execute=True):
        model = upload(hate_task, owner, fileobj)
    model.refresh_from_db()
    assert model.status == RegisteredModel.Status.READY, model.error_message
    assert not (Path(model.path) / "pytorch_model.bin").exists()
    assert model.card["skipped_files"] == ["pytorch_model.bin"]


def test_pickle_only_with_allow_pickle_is_extracted_and_checked(
    hate_task, owner, tiny_model_dir, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        model = upload(hate_task, owner, _pickle_only_zip(tiny_model_dir), allow_pickle=True)
    model.refresh_from_db()
    assert (Path(model.path) / "pytorch_model.bin").is_file()
    assert model.status == RegisteredModel.Status.FAILED  # the bytes are no checkpoint: loading fails
    assert "could not load the model" in model.error_message


def _checked(hate_task, owner, fileobj, captured) -> RegisteredModel:
    with captured(execute=True):
        model = upload(hate_task, owner, fileobj)
    model.refresh_from_db()
    assert model.status == RegisteredModel.Status.FAILED
    return model


@pytest.mark.parametrize(
    ("missing", "message"),
    [
        ("config.json", "has no config.json"),
        ("model.safetensors", "has no weights"),
        ("vocab.txt tokenizer_config.json tokenizer.json", "has no tokenizer files"),
    ],
)
def test_missing_file_fails_the_check_with_its_message(
    hate_task, owner, tiny_model_dir, missing, message, django_capture_on_commit_callbacks
):
    fileobj = zip_dir(tiny_model_dir, skip=tuple(missing.split()))
    model = _checked(hate_task, owner, fileobj, django_capture_on_commit_callbacks)
    assert message in model.error_message
    assert model.parameter_count is None


def test_wrong_labels_fail_the_check(hate_task, owner, tmp_path, django_capture_on_commit_callbacks):
    directory = build_tiny_classifier(tmp_path / "wrong", labels=("positive", "negative"))
    model = _checked(hate_task, owner, zip_dir(directory), django_capture_on_commit_callbacks)
    assert "do not match task labels" in model.error_message
    assert "positive" in model.error_message
    assert model.parameter_count == count_parameters(directory)


def test_crash_on_probe_input_fails_the_check(hate_task, owner, tmp_path, django_capture_on_commit_callbacks):
    directory = build_tiny_classifier(tmp_path / "crash", preprocessing={"emoji": "bogus"})
    model = _checked(hate_task, owner, zip_dir(directory), django_capture_on_commit_callbacks)
    assert model.error_message.startswith("probe input failed:")
    assert "unknown emoji step" in model.error_message
