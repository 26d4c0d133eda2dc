import pytest

from tasks.builtin_configs import HATE_SPEECH_CONFIG
from tasks.config import TaskConfig
from tasks.rules import ensemble_model_wrong, model_wrong

CFG = TaskConfig(HATE_SPEECH_CONFIG)


@pytest.mark.parametrize(
    ("target", "model_label", "expected"),
    [("hateful", "hateful", False), ("hateful", "not-hateful", True), ("not-hateful", "hateful", True)],
)
def test_exact_match_rule(target, model_label, expected):
    output = {"label": model_label, "probabilities": {"hateful": 0.5, "not-hateful": 0.5}}
    assert model_wrong(CFG, target=target, output=output) is expected


def test_ask_user_leaves_the_decision_to_the_annotator():
    cfg = TaskConfig({**HATE_SPEECH_CONFIG, "model_wrong_rule": {"type": "ask_user"}})
    assert model_wrong(cfg, target="hateful", output={"label": "not-hateful"}) is None


@pytest.mark.parametrize(
    ("rule", "verdicts", "expected"),
    [
        ("any", [False, False, True], True),
        ("any", [False, False, False], False),
        ("all", [True, True, False], False),
        ("all", [True, True, True], True),
        ("majority", [True, True, False], True),
        ("majority", [True, False], False),  # a tie is not a majority
        ("majority", [True, False, False, True], False),
        ("any", [], None),
    ],
)
def test_ensemble_rules(rule, verdicts, expected):
    assert ensemble_model_wrong(rule, verdicts) is expected


def test_unknown_ensemble_rule():
    with pytest.raises(ValueError, match="unknown ensemble rule 'most'"):
        ensemble_model_wrong("most", [True])
