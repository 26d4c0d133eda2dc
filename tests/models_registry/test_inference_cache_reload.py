"""The per-process classifier cache reloads when a model's files change on disk, whoever changed them.

Retraining with ``replace=True`` in one process (the job cluster) must not leave another (the web
server) serving the old weights: the cache is keyed by the files' identity (engine/runtime/classifier.py,
"Cache").
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine.runtime import classifier as runtime_classifier
from engine.runtime.classifier import clear_cache, get_classifier
from engine.runtime.model_files import files_identity
from tests.helpers.tiny_models import build_tiny_classifier

TEXTS = ["I hate 🐷 people", "what a nice day 🌹", "they should go back home"]


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_cache()
    yield
    clear_cache()


@pytest.fixture
def loads(monkeypatch):
    """Paths loaded by ``Classifier`` during the test, in order."""
    seen = []
    real_init = runtime_classifier.Classifier.__init__

    def counting_init(self, path, *args, **kwargs):
        seen.append(str(path))
        real_init(self, path, *args, **kwargs)

    monkeypatch.setattr(runtime_classifier.Classifier, "__init__", counting_init)
    return seen


def _probabilities(classifier):
    return [out["probabilities"] for out in classifier.predict_batch(TEXTS)]


def _reference(tmp_path, seed):
    """The probabilities of a tiny model of ``seed`` loaded from a directory of its own."""
    path = build_tiny_classifier(tmp_path / f"reference-{seed}", seed=seed)
    return _probabilities(get_classifier(path))


def test_weights_rewritten_in_place_are_loaded_again(tmp_path, tiny_model_dir, loads):
    first = get_classifier(tiny_model_dir)
    before = _probabilities(first)
    assert get_classifier(tiny_model_dir) is first  # unchanged files: the cached instance
    expected_after = _reference(tmp_path, seed=1)
    assert expected_after != before  # the two seeds predict differently, so the test can fail

    # Another seed's weights written over model.safetensors (same size, same inode; new mtime_ns).
    other = build_tiny_classifier(tmp_path / "other", seed=1)
    old_identity = files_identity(tiny_model_dir)
    with open(tiny_model_dir / "model.safetensors", "r+b") as handle:  # noqa: PTH123 - rewrite in place
        handle.write((other / "model.safetensors").read_bytes())
    st = (tiny_model_dir / "model.safetensors").stat()
    os.utime(tiny_model_dir / "model.safetensors", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert files_identity(tiny_model_dir) != old_identity

    second = get_classifier(tiny_model_dir)
    assert second is not first
    assert _probabilities(second) == expected_after
    assert get_classifier(tiny_model_dir) is second
    assert loads.count(str(tiny_model_dir)) == 2  # loaded once per version of the weights


def test_a_directory_swapped_into_place_is_loaded_again(tmp_path, tiny_model_dir):
    """What ``train_target_for_rounds(replace=True)`` does: a new directory renamed over the old one."""
    first = get_classifier(tiny_model_dir)
    fresh = build_tiny_classifier(tmp_path / ".tiny-model.training-1234", seed=2)
    tiny_model_dir.rename(tmp_path / "old")
    fresh.rename(tiny_model_dir)
    second = get_classifier(tiny_model_dir)
    assert second is not first
    assert _probabilities(second) == _reference(tmp_path, seed=2)


def test_weights_replaced_by_another_process_are_picked_up(tmp_path, tiny_model_dir):
    """Two loads in this process around a rewrite of the weights by a separate Python process."""
    first = get_classifier(tiny_model_dir)
    before = _probabilities(first)
    code = (
        "import sys; from tests.helpers.tiny_models import build_tiny_classifier; "
        "build_tiny_classifier(sys.argv[1], seed=3)"
    )
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", code, str(tiny_model_dir)], cwd=root, check=True, timeout=300)
    second = get_classifier(tiny_model_dir)
    assert second is not first
    after = _probabilities(second)
    assert after != before and after == _reference(tmp_path, seed=3)


def test_files_identity(tmp_path, tiny_model_dir):
    assert files_identity(tmp_path / "nowhere") == ()
    identity = files_identity(tiny_model_dir)
    names = [entry[0] for entry in identity]
    assert names[0] == "." and "config.json" in names and "model.safetensors" in names
    assert files_identity(tiny_model_dir) == identity  # reading does not change it
    shutil.copy(tiny_model_dir / "config.json", tmp_path / "config.json")
    (tmp_path / "config.json").replace(tiny_model_dir / "config.json")  # same bytes, new inode
    assert files_identity(tiny_model_dir) != identity
