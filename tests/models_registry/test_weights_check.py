"""A model whose weights do not fill its architecture, or whose id2label has gaps, fails its check.

transformers 5 fills missing weights with random numbers and only prints a "MISSING" load report; the
registry reads the same report (``output_loading_info=True``) and refuses such a model (a tester
found both kinds accepted).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from engine.runtime.classifier import InferenceError, clear_cache, get_classifier
from engine.runtime.model_files import check_loading_info, labels_from_id2label
from models_registry.models import RegisteredModel
from models_registry.services import register_local_model, register_uploaded_model
from tests.helpers.tiny_models import build_tiny_classifier
from tests.helpers.zips import zip_dir


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_cache()
    yield
    clear_cache()


def _rewrite_weights(directory: Path, transform) -> Path:
    weights = directory / "model.safetensors"
    save_file(transform(load_file(weights)), weights)
    return directory


def _upload_and_check(task, owner, directory: Path, captured, name="broken") -> RegisteredModel:
    with captured(execute=True):
        model = register_uploaded_model(task=task, name=name, owner=owner, fileobj=zip_dir(directory))
    model.refresh_from_db()
    return model


def test_a_zip_whose_weights_hold_only_a_dummy_tensor_fails(
    hate_task, owner, tiny_model_dir, django_capture_on_commit_callbacks
):
    _rewrite_weights(tiny_model_dir, lambda _: {"dummy": torch.zeros(1)})
    model = _upload_and_check(hate_task, owner, tiny_model_dir, django_capture_on_commit_callbacks)
    assert model.status == RegisteredModel.Status.FAILED
    # The tiny classifier has 39 tensors (2 layers x 16 + 5 embedding + 2 head); none is in the file.
    assert "missing 39 weight(s) (they would be random)" in model.error_message
    assert "and 34 more" in model.error_message  # five named, the rest counted
    assert "unexpected weight(s) the architecture does not use: dummy" in model.error_message
    assert "(MeanPoolClassifier)" in model.error_message


def test_a_zip_without_the_classifier_head_fails_naming_the_head(
    hate_task, owner, tiny_model_dir, django_capture_on_commit_callbacks
):
    _rewrite_weights(
        tiny_model_dir, lambda sd: {k: v for k, v in sd.items() if not k.startswith("classifier.")}
    )
    model = _upload_and_check(hate_task, owner, tiny_model_dir, django_capture_on_commit_callbacks)
    assert model.status == RegisteredModel.Status.FAILED
    assert model.error_message == (
        "model.safetensors does not match the architecture in config.json (MeanPoolClassifier): "
        "missing 2 weight(s) (they would be random): classifier.bias, classifier.weight"
    )
    assert not model.is_published


def test_an_extra_tensor_fails_but_an_unused_pooler_does_not(hate_task, tmp_path):
    extra = _rewrite_weights(
        build_tiny_classifier(tmp_path / "extra"), lambda sd: {**sd, "other_head.weight": torch.zeros(2, 32)}
    )
    model = register_local_model(task=hate_task, name="extra", path=extra, card={})
    assert model.status == RegisteredModel.Status.FAILED
    assert model.error_message.endswith(
        "unexpected weight(s) the architecture does not use: other_head.weight"
    )

    pooler = _rewrite_weights(
        build_tiny_classifier(tmp_path / "pooler"),
        lambda sd: {
            **sd,
            "bert.pooler.dense.weight": torch.zeros(32, 32),
            "bert.pooler.dense.bias": torch.zeros(32),
        },
    )
    model = register_local_model(task=hate_task, name="pooler", path=pooler, card={})
    assert model.status == RegisteredModel.Status.READY, model.error_message


def test_a_complete_model_still_loads(tiny_model_dir):
    assert get_classifier(tiny_model_dir).labels == ["hateful", "not-hateful"]


def test_a_qa_model_without_its_span_head_fails(qa_task, tiny_qa_model_dir):
    _rewrite_weights(
        tiny_qa_model_dir, lambda sd: {k: v for k, v in sd.items() if not k.startswith("qa_outputs.")}
    )
    model = register_local_model(task=qa_task, name="headless-qa", path=tiny_qa_model_dir, card={})
    assert model.status == RegisteredModel.Status.FAILED
    assert model.error_message == (
        "model.safetensors does not match the architecture in config.json (BertForQuestionAnswering): "
        "missing 2 weight(s) (they would be random): qa_outputs.bias, qa_outputs.weight"
    )


@pytest.mark.parametrize(
    ("info", "expected"),
    [
        ({"missing_keys": set(), "unexpected_keys": set(), "mismatched_keys": set(), "error_msgs": []}, None),
        ({"unexpected_keys": {"bert.pooler.dense.bias", "pooler.dense.weight"}}, None),
        (
            {"mismatched_keys": {("classifier.weight", (3, 32), (2, 32))}},
            "weight(s) of the wrong shape: classifier.weight",
        ),
        ({"error_msgs": ["size mismatch"]}, "loader errors: size mismatch"),
        (
            {"missing_keys": {f"k{i}" for i in range(7)}},
            "missing 7 weight(s) (they would be random): k0, k1, k2, k3, k4 and 2 more",
        ),
    ],
)
def test_check_loading_info(info, expected):
    if expected is None:
        check_loading_info(info, "Arch")
    else:
        with pytest.raises(InferenceError) as caught:
            check_loading_info(info, "Arch")
        assert str(caught.value).endswith(expected)


# --- id2label -------------------------------------------------------------------------------------


def _set_id2label(directory: Path, id2label: dict) -> Path:
    config_file = directory / "config.json"
    config = json.loads(config_file.read_text())
    config["id2label"] = id2label
    config["label2id"] = {v: int(k) for k, v in id2label.items()}
    config_file.write_text(json.dumps(config))
    return directory


def test_non_contiguous_id2label_fails_with_a_clear_message(
    hate_task, owner, tiny_model_dir, django_capture_on_commit_callbacks
):
    _set_id2label(tiny_model_dir, {"0": "hateful", "5": "not-hateful"})
    model = _upload_and_check(hate_task, owner, tiny_model_dir, django_capture_on_commit_callbacks)
    assert model.status == RegisteredModel.Status.FAILED
    assert model.error_message == "id2label must map 0..n-1 to the task's labels; got ids 0, 5"
    assert "crashed" not in model.error_message


@pytest.mark.parametrize(
    ("id2label", "expected"),
    [
        ({"1": "b", "0": "a"}, ["a", "b"]),
        ({0: "a", 1: "b", 2: "c"}, ["a", "b", "c"]),
    ],
)
def test_labels_in_output_index_order(id2label, expected):
    assert labels_from_id2label(id2label) == expected


@pytest.mark.parametrize(
    ("id2label", "ids"),
    [({"1": "a", "2": "b"}, "1, 2"), ({"0": "a", "x": "b"}, "0, x"), ({"-1": "a", "0": "b"}, "-1, 0")],
)
def test_ids_other_than_0_to_n_minus_1_are_refused(id2label, ids):
    with pytest.raises(
        InferenceError, match=f"^id2label must map 0..n-1 to the task's labels; got ids {ids}$"
    ):
        labels_from_id2label(id2label)
