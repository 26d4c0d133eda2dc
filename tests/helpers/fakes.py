"""Stand-in target models for tests that need a deterministic label or a crash.

The real tiny model (``tests.helpers.tiny_models``) is used wherever any label will do; these stand-ins
replace ``models_registry.inference.predict`` through monkeypatch when a test needs to know the
label in advance (model-wrong, MER by hand) or needs the model to fail. The fixtures ``rule_model`` and
``crashing_model`` of tests/conftest.py do so for ``hate_round``'s target, a weightless model made by
``tests.factories.models_registry.make_stand_in``.
"""

from __future__ import annotations

from models_registry import inference


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


def probability_predict(model, inputs: list[dict]) -> list[dict]:
    """A stand-in whose top probability is written at the start of the statement: "p=0.55 ..." is
    hateful at 0.55 (not-hateful 0.45); any other statement hateful at 0.9. For uncertainty mode."""
    outputs = []
    for item in inputs:
        text = item["statement"]
        p = float(text.split()[0][2:]) if text.startswith("p=") else 0.9
        outputs.append({"label": "hateful", "probabilities": {"hateful": p, "not-hateful": round(1 - p, 6)}})
    return outputs
