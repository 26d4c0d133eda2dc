"""Stand-in target models for tests that need a deterministic label or a crash.

The real tiny model (``tests.tiny_models``) is used wherever any label will do; these stand-ins
replace ``models_registry.inference.predict`` through monkeypatch when a test needs to know the
label in advance (model-wrong, MER by hand) or needs the model to fail.
"""

from __future__ import annotations

import pytest

from models_registry import inference
from models_registry.models import RegisteredModel
from models_registry.round_targets import set_round_targets


def rule_label(text: str) -> str:
    """The stand-in's rule: 'hateful' when the statement contains 'hate', else 'not-hateful'."""
    return "hateful" if "hate" in text.lower() else "not-hateful"


def rule_predict(model, inputs: list[dict]) -> list[dict]:
    """Deterministic ``predict`` following ``rule_label`` on the statement."""
    outputs = []
    for item in inputs:
        label = rule_label(item["statement"])
        other = "not-hateful" if label == "hateful" else "hateful"
        outputs.append({"label": label, "probabilities": {label: 0.875, other: 0.125}})
    return outputs


def crashing_predict(model, inputs: list[dict]) -> list[dict]:
    """A model that always fails, as a broken checkpoint would."""
    raise inference.InferenceError(f"model {model.name}: simulated crash (weights could not be read)")


def make_stand_in(task, round_, name: str = "stand-in", *, published: bool = True) -> RegisteredModel:
    """A ready registered model with no weights, made the round's only target; published unless told
    (a round target is on the leaderboard; the field's default is unpublished)."""
    model = RegisteredModel.objects.create(
        task=task,
        name=name,
        path="/nonexistent/stand-in",
        status=RegisteredModel.Status.READY,
        is_published=published,
    )
    set_round_targets(round=round_, models=[model])
    return model


@pytest.fixture
def rule_model(hate_task, hate_round, monkeypatch):
    """hate_round's target answers by ``rule_label`` (monkeypatched predict)."""
    monkeypatch.setattr(inference, "predict", rule_predict)
    return make_stand_in(hate_task, hate_round)


@pytest.fixture
def crashing_model(hate_task, hate_round, monkeypatch):
    """hate_round's target crashes on every input (monkeypatched predict)."""
    monkeypatch.setattr(inference, "predict", crashing_predict)
    return make_stand_in(hate_task, hate_round, name="crashing")
