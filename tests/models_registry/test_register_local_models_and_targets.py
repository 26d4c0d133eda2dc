"""Registering local model directories, round targets and the target selector."""

from __future__ import annotations

import shutil

import pytest

from engine.runtime.classifier import clear_cache
from engine.runtime.weights import count_parameters
from models_registry.models import RegisteredModel, RoundTarget
from models_registry.round_targets import set_round_targets
from models_registry.selectors import target_models_for_round
from models_registry.services import ModelRegistryError, register_local_model
from tests.helpers.tiny_models import build_tiny_classifier


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_cache()
    yield
    clear_cache()


def _register(task, path, name="m", **kwargs):
    return register_local_model(task=task, name=name, path=path, card={"licence": "MIT"}, **kwargs)


def test_register_ready_model(hate_task, tiny_model_dir, owner):
    model = _register(hate_task, tiny_model_dir, owner=owner)
    assert model.status == RegisteredModel.Status.READY
    assert model.error_message == ""
    assert model.owner == owner
    assert model.parameter_count == count_parameters(tiny_model_dir) > 0
    assert model.backbone == "tiny-random-bert"
    assert model.card["licence"] == "MIT"
    assert model.card["preprocessing"]["emoji"] == "names"
    assert model.card["labels"] == ["hateful", "not-hateful"]


def test_parameter_count_matches_the_weights(hate_task, tiny_model_dir):
    from engine.runtime.classifier import get_classifier

    model = _register(hate_task, tiny_model_dir)
    torch_count = sum(p.numel() for p in get_classifier(tiny_model_dir).model.parameters())
    assert model.parameter_count == torch_count


def test_label_order_does_not_matter(hate_task, tmp_path):
    path = build_tiny_classifier(tmp_path / "swapped", labels=("not-hateful", "hateful"))
    assert _register(hate_task, path).status == RegisteredModel.Status.READY


def test_missing_directory_fails_with_message(hate_task, tmp_path):
    model = _register(hate_task, tmp_path / "nowhere")
    assert model.status == RegisteredModel.Status.FAILED
    assert "does not exist" in model.error_message
    assert model.parameter_count is None


def test_wrong_label_set_fails_with_message(hate_task, tmp_path):
    path = build_tiny_classifier(tmp_path / "sentiment", labels=("positive", "negative"))
    model = _register(hate_task, path)
    assert model.status == RegisteredModel.Status.FAILED
    assert model.error_message == (
        "model labels ['positive', 'negative'] do not match task labels ['hateful', 'not-hateful']"
    )
    assert model.parameter_count > 0  # counted anyway: the owner sees what was uploaded


def test_corrupt_weights_fail_with_message(hate_task, tiny_model_dir):
    (tiny_model_dir / "model.safetensors").write_bytes(b"garbage")
    model = _register(hate_task, tiny_model_dir)
    assert model.status == RegisteredModel.Status.FAILED
    assert "could not load the model" in model.error_message


def test_no_weights_fail_with_message(hate_task, tiny_model_dir):
    (tiny_model_dir / "model.safetensors").unlink()
    model = _register(hate_task, tiny_model_dir)
    assert model.status == RegisteredModel.Status.FAILED
    assert "no weights" in model.error_message


def test_registration_is_idempotent_and_updates(hate_task, tiny_model_dir, tmp_path):
    first = _register(hate_task, tmp_path / "nowhere")
    assert first.status == RegisteredModel.Status.FAILED
    second = register_local_model(task=hate_task, name="m", path=tiny_model_dir, card={"v": 2})
    assert second.pk == first.pk
    assert RegisteredModel.objects.filter(task=hate_task, name="m").count() == 1
    assert second.status == RegisteredModel.Status.READY
    assert second.error_message == ""
    assert second.path == str(tiny_model_dir)
    assert second.card["v"] == 2 and "licence" not in second.card


def test_reregistering_a_retrained_directory_reloads_it(hate_task, tmp_path):
    from engine.runtime.classifier import get_classifier

    path = build_tiny_classifier(tmp_path / "m", seed=1)
    _register(hate_task, path)
    old = get_classifier(path)
    shutil.rmtree(path)
    build_tiny_classifier(path, seed=2)
    _register(hate_task, path)
    assert get_classifier(path) is not old


def test_round_targets_in_position_order(hate_task, hate_round, tmp_path):
    a = _register(hate_task, build_tiny_classifier(tmp_path / "a"), name="a")
    b = _register(hate_task, build_tiny_classifier(tmp_path / "b"), name="b")
    set_round_targets(round=hate_round, models=[b, a])
    assert target_models_for_round(hate_round) == [b, a]
    set_round_targets(round=hate_round, models=[a])
    assert target_models_for_round(hate_round) == [a]
    assert RoundTarget.objects.filter(round=hate_round).count() == 1


def test_selector_skips_models_that_are_not_ready(hate_task, hate_round, tmp_path):
    a = _register(hate_task, build_tiny_classifier(tmp_path / "a"), name="a")
    b = _register(hate_task, build_tiny_classifier(tmp_path / "b"), name="b")
    set_round_targets(round=hate_round, models=[a, b])
    RegisteredModel.objects.filter(pk=a.pk).update(status=RegisteredModel.Status.FAILED)
    assert target_models_for_round(hate_round) == [b]


def test_failed_model_cannot_become_a_target(hate_task, hate_round, tmp_path):
    failed = _register(hate_task, tmp_path / "nowhere")
    with pytest.raises(ModelRegistryError, match="not ready"):
        set_round_targets(round=hate_round, models=[failed])


def test_model_of_another_task_cannot_become_a_target(hate_task, hate_round, tiny_model_dir):
    from tasks.models import Task

    other = Task.objects.create(slug="other", name="Other", config=hate_task.config)
    model = _register(other, tiny_model_dir)
    with pytest.raises(ModelRegistryError, match="another task"):
        set_round_targets(round=hate_round, models=[model])


def test_tiny_registered_model_fixture(tiny_registered_model, hate_round):
    assert target_models_for_round(hate_round) == [tiny_registered_model]


def test_a_model_not_ready_without_an_error_is_refused_without_a_dangling_colon(
    hate_task, hate_round, tmp_path
):
    waiting = RegisteredModel.objects.create(
        task=hate_task, name="waiting", path=str(tmp_path), status=RegisteredModel.Status.UPLOADED
    )
    with pytest.raises(ModelRegistryError) as refused:
        set_round_targets(round=hate_round, models=[waiting])
    assert str(refused.value) == "model waiting is not ready (uploaded)"
