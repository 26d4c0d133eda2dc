"""Token attributions by integrated gradients (engine/explain/attributions.py).

Completeness (sum of attributions = F(x) - F(x')) is checked on a real MiniLM classifier against logits
this test computes itself with a plain forward pass; the exactness of the method on a hand-checked
linear model; special tokens and padding get 0; an emoji's attribution lands on the emoji's own
characters; a 10,000-character text is truncated like prediction; remote and span models say there is
no explanation.
"""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn

from engine.explain import attributions
from engine.explain.attributions import (
    REMOTE,
    SPAN,
    aligned_preprocess,
    attribute,
    forward_for,
    integrated_gradients,
    tolerance,
)
from engine.runtime.classifier import Classifier
from engine.runtime.modeling import MeanPoolClassifier, MeanPoolClassifierConfig
from engine.runtime.preprocessing import preprocess
from engine.training.classifier import train_classifier
from models_registry.explanations import explain
from tests.factories.models_registry import RegisteredModelFactory
from tests.helpers.tiny_models import build_tiny_classifier

HATEFUL = [
    "they are rats 🐀",
    "women should stay in the kitchen",
    "immigrants are vermin",
    "go back to your own country",
    "gay people are disgusting",
    "muslims are all terrorists 💣",
    "black people are animals 🐒",
    "trans people are freaks",
]
NOT_HATEFUL = [
    "i love my neighbours 🌈",
    "women are great engineers",
    "immigrants make our city better",
    "welcome to our country",
    "gay people deserve respect",
    "muslims are my friends",
    "black people are wonderful ❤️",
    "trans people are valid",
]


@pytest.fixture(scope="module")
def minilm(tmp_path_factory) -> Classifier:
    """A real MiniLM classifier (frozen backbone, quick head) on 16 statements, loaded once."""
    out = tmp_path_factory.mktemp("minilm") / "model"
    train_classifier(
        train_texts=HATEFUL + NOT_HATEFUL,
        train_labels=["hateful"] * 8 + ["not-hateful"] * 8,
        dev_texts=HATEFUL[:2] + NOT_HATEFUL[:2],
        dev_labels=["hateful"] * 2 + ["not-hateful"] * 2,
        labels=["hateful", "not-hateful"],
        output_dir=out,
        recipe="quick",
    )
    return Classifier(out)


def plain_logits(
    classifier: Classifier, text: str, *, pad: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """This test's own logits at the input and at the [PAD] baseline (non-special tokens replaced)."""
    encoded = classifier.tokenizer(
        preprocess(text, classifier.preprocessing),
        truncation=True,
        max_length=classifier.max_length,
        padding="max_length" if pad else False,
        return_special_tokens_mask=True,
        return_tensors="pt",
    )
    ids = encoded["input_ids"]
    keep = encoded["special_tokens_mask"].bool()
    baseline = torch.where(keep, ids, torch.full_like(ids, classifier.tokenizer.pad_token_id))
    with torch.no_grad():
        at_input = classifier.model(input_ids=ids, attention_mask=encoded["attention_mask"]).logits[0]
        at_baseline = classifier.model(input_ids=baseline, attention_mask=encoded["attention_mask"]).logits[0]
    return at_input.double(), at_baseline.double()


# --- the real MiniLM target -----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "text",
    ["They are rats 🐀 and should go back", "I love my neighbours 🌈", "Muslims are my friends, honestly."],
)
def test_completeness_on_minilm(minilm, text):
    explanation = attribute(minilm, text)
    at_input, at_baseline = plain_logits(minilm, text)
    index = minilm.labels.index(explanation.target_label)
    assert index == int(at_input.argmax())  # the predicted label is the target
    difference = float(at_input[index] - at_baseline[index])
    total = sum(p.score for p in explanation.positions)
    assert abs(total - difference) <= tolerance(difference)
    # the numbers it reports are the ones recomputed here
    assert explanation.logit_input == pytest.approx(float(at_input[index]), abs=1e-4)
    assert explanation.logit_baseline == pytest.approx(float(at_baseline[index]), abs=1e-4)
    assert explanation.attribution_sum == pytest.approx(total, abs=1e-9)
    assert explanation.within_tolerance is True and explanation.n_steps == attributions.N_STEPS
    # not vacuous: the input is not its baseline, and the tokens carry the difference
    assert abs(difference) > 0.05
    assert sum(t.score for t in explanation.tokens) == pytest.approx(total, abs=1e-9)


@pytest.mark.slow
def test_a_label_asked_for_is_attributed_and_its_completeness_holds(minilm):
    text = "They are rats 🐀"
    predicted = attribute(minilm, text).target_label
    other = next(label for label in minilm.labels if label != predicted)
    explanation = attribute(minilm, text, target=other)
    at_input, at_baseline = plain_logits(minilm, text)
    index = minilm.labels.index(other)
    difference = float(at_input[index] - at_baseline[index])
    assert explanation.target_label == other
    assert abs(explanation.attribution_sum - difference) <= tolerance(difference)
    with pytest.raises(attributions.UnknownLabel):
        attribute(minilm, text, target="sarcastic")


@pytest.mark.slow
def test_special_tokens_and_padding_get_exactly_zero_and_are_not_shown(minilm):
    text = "women are great engineers"
    explanation = attribute(minilm, text, pad=True)
    kinds = [p.kind for p in explanation.positions]
    assert len(kinds) == minilm.max_length  # padded to 128
    assert kinds[0] == "special" and kinds.count("special") == 2  # [CLS] ... [SEP]
    assert kinds.count("token") == 4 and kinds.count("padding") == minilm.max_length - 6
    for position in explanation.positions:
        if position.kind != "token":
            assert position.score == 0.0
    assert all(p.score != 0.0 for p in explanation.positions if p.kind == "token")
    assert [t.token for t in explanation.tokens] == ["women", "are", "great", "engineers"]
    assert not {"[CLS]", "[SEP]", "[PAD]"} & {piece for t in explanation.tokens for piece in t.pieces}
    # padding changes nothing: completeness against the padded plain forward
    at_input, at_baseline = plain_logits(minilm, text, pad=True)
    index = minilm.labels.index(explanation.target_label)
    difference = float(at_input[index] - at_baseline[index])
    assert abs(explanation.attribution_sum - difference) <= tolerance(difference)


@pytest.mark.slow
def test_an_emoji_name_is_attributed_to_the_emoji_itself(minilm):
    text = "I hate 🐷 and 👨‍👩‍👧 pigs"
    explanation = attribute(minilm, text)
    by_token = {t.token: t for t in explanation.tokens}
    pig = by_token["🐷"]
    assert (pig.start, pig.end) == (7, 8) and text[pig.start : pig.end] == "🐷"
    assert pig.pieces == ("pig", "face")
    family = by_token["👨‍👩‍👧"]
    assert text[family.start : family.end] == "👨‍👩‍👧" and (family.start, family.end) == (13, 18)
    assert family.pieces == ("family", "man", "woman", "girl")
    # the emoji's score is the sum of its name's tokens
    pieces = [p for p in explanation.positions if p.kind == "token"]
    assert [p.piece for p in pieces] == [
        "i",
        "hate",
        "pig",
        "face",
        "and",
        "family",
        "man",
        "woman",
        "girl",
        "pigs",
    ]
    assert pig.score == pytest.approx(pieces[2].score + pieces[3].score, abs=1e-12)
    # every span points into the original string, and no name word is shown as text
    for token in explanation.tokens:
        assert text[token.start : token.end] == token.token
    assert [t.token for t in explanation.tokens] == ["I", "hate", "🐷", "and", "👨‍👩‍👧", "pigs"]


@pytest.mark.slow
def test_ten_thousand_characters_are_truncated_like_prediction(minilm):
    text = ("the weather is nice today and " * 400)[:10_000]
    explanation = attribute(minilm, text)
    assert explanation.truncated is True
    assert len(explanation.positions) == minilm.max_length == 128
    assert len(explanation.tokens) == 126
    assert explanation.tokens[-1].end < 1_000
    assert explanation.target_label == minilm.predict_batch([text])[0]["label"]
    at_input, at_baseline = plain_logits(minilm, text)
    index = minilm.labels.index(explanation.target_label)
    difference = float(at_input[index] - at_baseline[index])
    assert abs(explanation.attribution_sum - difference) <= tolerance(difference)


# --- exactness on a linear model (by hand) --------------------------------------------------------------


class SumLinear(nn.Module):
    """logits = W · sum_i E[id_i] + b over attended tokens: IG on E is exact, attr_i = W_t · (E[x_i] - E[x'_i])."""

    def __init__(self) -> None:
        super().__init__()
        self.embeddings = nn.Embedding(4, 2)
        self.head = nn.Linear(2, 2)
        with torch.no_grad():
            self.embeddings.weight.copy_(torch.tensor([[0.0, 0.0], [1.0, 2.0], [3.0, -1.0], [5.0, 5.0]]))
            self.head.weight.copy_(torch.tensor([[2.0, 1.0], [-1.0, 4.0]]))
            self.head.bias.copy_(torch.tensor([0.5, -0.5]))

    def forward(self, input_ids, attention_mask, token_type_ids):
        return self.head((self.embeddings(input_ids) * attention_mask.unsqueeze(-1)).sum(dim=1))


@pytest.mark.parametrize(("target", "expected"), [(0, [0.0, 4.0, 5.0, 0.0]), (1, [0.0, 7.0, -7.0, 0.0])])
def test_integrated_gradients_on_a_linear_model_is_w_times_the_embedding_difference(target, expected):
    # ids: 3 = a kept "special" token, 1 and 2 real tokens, 0 the pad baseline.
    # target 0: token 1 -> 2*1 + 1*2 = 4, token 2 -> 2*3 + 1*(-1) = 5; target 1: -1*1 + 4*2 = 7, -1*3 + 4*(-1) = -7.
    model = SumLinear()
    ids = torch.tensor([[3, 1, 2, 3]])
    baseline = torch.tensor([[3, 0, 0, 3]])
    args = (torch.ones_like(ids), torch.zeros_like(ids))
    scores, delta = integrated_gradients(model, model.embeddings, ids, baseline, args, target)
    assert scores[0].tolist() == pytest.approx(expected, abs=1e-5)
    assert abs(delta) < 1e-5


# --- pair models (NLI) ----------------------------------------------------------------------------------


@pytest.fixture
def tiny_pair_classifier(tmp_path) -> Classifier:
    path = build_tiny_classifier(tmp_path / "pair", labels=("entailment", "neutral", "contradiction"))
    config = json.loads((path / "config.json").read_text())
    config.pop("model_type", None)
    config.pop("transformers_version", None)
    config["pooling"] = "pair"
    torch.manual_seed(1)
    MeanPoolClassifier(MeanPoolClassifierConfig(**config)).save_pretrained(path)
    return Classifier(path)


def test_the_pair_forward_looks_embeddings_up_once_and_equals_the_model(tiny_pair_classifier):
    model = tiny_pair_classifier.model
    encoded = tiny_pair_classifier.tokenizer(
        ["a cat is on the mat", "they go home"],
        ["a dog", "we are all happy people here"],
        padding=True,
        return_tensors="pt",
    )
    calls = []
    hook = model.get_input_embeddings().register_forward_hook(lambda *a: calls.append(1))
    with torch.no_grad():
        mine = forward_for(model)(encoded["input_ids"], encoded["attention_mask"], encoded["token_type_ids"])
        calls_mine = len(calls)
        theirs = model(**encoded).logits
    hook.remove()
    assert calls_mine == 1  # LayerIntegratedGradients hooks this one call
    assert torch.allclose(mine, theirs, atol=1e-5)


def test_a_pair_is_explained_on_both_texts_with_completeness(tiny_pair_classifier):
    explanation = attribute(tiny_pair_classifier, ("a cat is on the mat 🐱", "the cat is happy"))
    sides = {t.side for t in explanation.tokens}
    assert sides == {0, 1}
    assert [t.token for t in explanation.tokens if t.side == 1] == ["the", "cat", "is", "happy"]
    assert [t.token for t in explanation.tokens if t.side == 0][-1] == "🐱"
    assert [p.kind for p in explanation.positions].count("special") == 3  # [CLS] a [SEP] b [SEP]
    assert abs(explanation.convergence_delta) <= explanation.tolerance
    assert explanation.attribution_sum == pytest.approx(
        explanation.logit_input - explanation.logit_baseline, abs=explanation.tolerance
    )


# --- alignment of the preprocessing ---------------------------------------------------------------------


def test_the_preprocessed_text_maps_back_to_the_original_characters():
    text = "ｆｕｌｌ  width 👍🏽 ok\u200d"
    out, spans = aligned_preprocess(text, None)
    assert out == preprocess(text) == "full width thumbs up medium skin tone ok"
    assert [text[s:e] for s, e in spans[:4]] == ["ｆ", "ｕ", "ｌ", "ｌ"]
    assert text[slice(*spans[4])] == "  "  # the collapsed run of spaces
    assert {text[s:e] for s, e in spans[11:37]} == {"👍🏽"}  # the name of the emoji and its modifier


# --- registered models ----------------------------------------------------------------------------------


def test_a_remote_model_says_no_explanation_is_available(hate_task):
    model = RegisteredModelFactory(
        task=hate_task, name="remote", source="endpoint", endpoint_url="http://127.0.0.1:9/predict", path=""
    )
    [explanation] = explain(model, [{"statement": "They are rats."}])
    assert not explanation.available and explanation.unavailable == REMOTE
    assert explanation.as_api() == {"attributions": None, "explanation_unavailable": REMOTE}


def test_a_span_model_says_no_explanation_is_available(tiny_qa_registered_model):
    [explanation] = explain(
        tiny_qa_registered_model, [{"context": "Paris is in France.", "question": "Where?"}]
    )
    assert explanation.unavailable == SPAN


def test_explanations_are_cached_by_model_text_and_target(tiny_registered_model, monkeypatch):
    first = explain(tiny_registered_model, [{"statement": "they hate 🐷"}])[0]
    assert first.available and first.fields == ("statement",)
    assert first.as_api()["attributions"][1] == {
        "token": "hate",
        "start": 5,
        "end": 9,
        "score": first.tokens[1].score,
        "field": "statement",
    }

    def refuse(*args, **kwargs):
        raise AssertionError("computed again")

    monkeypatch.setattr(attributions, "attribute", refuse)
    again = explain(tiny_registered_model, [{"statement": "they hate 🐷"}])[0]
    assert again == first
    [other] = explain(tiny_registered_model, [{"statement": "they love 🐷"}])  # another text: computed
    assert "computed again" in other.unavailable
