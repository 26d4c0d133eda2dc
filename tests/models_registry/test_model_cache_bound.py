"""The per-process model cache is bounded by the bytes of the models' weight files: under the bound every
model stays, over it the least recently used are dropped first, and a model larger than the bound is
still served, alone (engine/runtime/classifier.py, "Cache")."""

from __future__ import annotations

import pytest

from engine.runtime.classifier import cached_paths, get_classifier
from engine.runtime.model_files import weights_bytes
from tests.helpers.tiny_models import build_tiny_classifier


@pytest.fixture
def three_dirs(tmp_path):
    return [str(build_tiny_classifier(tmp_path / name, seed=n)) for n, name in enumerate("abc")]


def test_weights_bytes_is_the_size_of_the_weight_files(three_dirs):
    from pathlib import Path

    expected = (Path(three_dirs[0]) / "model.safetensors").stat().st_size
    assert expected > 0
    assert weights_bytes(three_dirs[0]) == expected
    assert weights_bytes("/nonexistent/model") == 0


def test_under_the_bound_every_model_stays_in_use_order(settings, three_dirs):
    settings.DYNABENCH_MODEL_CACHE_BYTES = 10 * weights_bytes(three_dirs[0])
    a, b, c = three_dirs
    for path in (a, b, c):
        get_classifier(path)
    get_classifier(a)  # a is the most recently used now
    assert cached_paths() == [b, c, a]


def test_over_the_bound_the_least_recently_used_are_dropped(settings, three_dirs):
    a, b, c = three_dirs
    size = weights_bytes(a)
    assert weights_bytes(b) == weights_bytes(c) == size  # same architecture, same bytes
    settings.DYNABENCH_MODEL_CACHE_BYTES = 2 * size  # room for two
    first_a = get_classifier(a)
    get_classifier(b)
    get_classifier(a)  # a used again: b is now the least recently used
    get_classifier(c)
    assert cached_paths() == [a, c]
    assert get_classifier(a) is first_a  # kept, not reloaded


def test_a_model_larger_than_the_bound_is_still_served_alone(settings, three_dirs):
    a, b, _ = three_dirs
    settings.DYNABENCH_MODEL_CACHE_BYTES = 1
    get_classifier(a)
    classifier_b = get_classifier(b)
    assert cached_paths() == [b]
    assert get_classifier(b) is classifier_b
