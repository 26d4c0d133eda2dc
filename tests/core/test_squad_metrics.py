"""SQuAD v1.1 F1 / EM and the string_f1 model-wrong rule, on hand-checked pairs.

Each expected value is worked out by hand from the official algorithm (evaluate-v1.1.py): normalise
(lower, drop ASCII punctuation, drop a/an/the, collapse spaces), then token-overlap F1 / equality, max
over gold answers. A verbatim copy of the official functions cross-checks a batch of real SQuAD pairs.
"""

from __future__ import annotations

import gzip
import json
import re
import string
from collections import Counter

import pytest

from core.metrics import (
    perf_function,
    squad_answer_texts,
    squad_exact_match,
    squad_exact_match_score,
    squad_f1,
    squad_f1_score,
    squad_normalize_answer,
)
from tasks.config import TaskConfig
from tasks.rules import model_wrong, span_model_wrong
from tests.helpers.data import data_path


@pytest.mark.parametrize(
    ("prediction", "gold", "f1", "em"),
    [
        ("Denver Broncos", "Denver Broncos", 1.0, 1.0),
        ("the Denver Broncos", "Denver Broncos", 1.0, 1.0),  # article dropped
        ("Broncos", "Denver Broncos", 2 / 3, 0.0),  # P 1, R 1/2 -> 2*(1/2)/(3/2)
        ("Denver Broncos won", "Broncos", 0.5, 0.0),  # P 1/3, R 1 -> (2/3)/(4/3)
        ("Levis Stadium", "Levi's Stadium", 1.0, 1.0),  # apostrophe removed, not split
        ("the the cat cat cat", "cat cat dog", 2 / 3, 0.0),  # common = min(3,2) = 2 -> P = R = 2/3
        ("\u201cBroncos\u201d", "Broncos", 0.0, 0.0),  # curly quotes are not ASCII punctuation
        ("a", "the", 0.0, 1.0),  # both empty after normalising: v1.1 F1 is 0, EM is 1
        ("An-apple", "anapple", 1.0, 1.0),  # hyphen dropped first, so 'an' is no longer a word
        ("Santa Clara, California.", "santa clara california", 1.0, 1.0),
        ("1,000 km", "1000 kilometres", 1 / 2, 0.0),  # '1000' shared: P 1/2, R 1/2
    ],
)
def test_pairs(prediction, gold, f1, em):
    assert squad_f1_score(prediction, gold) == pytest.approx(f1)
    assert squad_exact_match_score(prediction, gold) == em


def test_normalize_answer():
    assert squad_normalize_answer("  The  Broncos!\n") == "broncos"
    assert squad_normalize_answer("An apple, a day") == "apple day"
    assert squad_normalize_answer("THEORY") == "theory"  # 'the' only as a whole word


def test_max_over_gold_answers_and_dataset_mean():
    gold = [
        {
            "answer": "Levi's Stadium",
            "answer_start": 0,
            "answers": ["Levi's Stadium", "Santa Clara, California"],
        },
        {"answer": "Denver Broncos", "answer_start": 3},
        "1",
    ]
    predicted = ["Santa Clara, California", "Broncos", "one"]
    # item F1s: 1, 2/3, 0 -> mean 5/9; EM: 1, 0, 0 -> 1/3
    assert squad_f1(gold, predicted) == pytest.approx(5 / 9)
    assert squad_exact_match(gold, predicted) == pytest.approx(1 / 3)
    assert squad_f1([], []) is None
    with pytest.raises(ValueError):
        squad_f1(gold, predicted[:2])
    assert perf_function("squad_f1", []) is squad_f1
    assert perf_function("exact_match", []) is squad_exact_match


def test_answer_texts_of_targets():
    assert squad_answer_texts({"answer": "x", "answer_start": 0}) == ["x"]
    assert squad_answer_texts({"answer": "x", "answers": [{"text": "y", "answer_start": 1}]}) == ["y"]
    assert squad_answer_texts(["a", "b"]) == ["a", "b"]
    with pytest.raises(ValueError):
        squad_answer_texts({"label": "x"})


QA_CFG = TaskConfig(
    {
        "context_fields": [{"name": "context", "type": "string"}],
        "input_fields": [{"name": "question", "type": "string"}],
        "target_field": {"name": "answer", "type": "context_span", "context_field": "context"},
        "model_wrong_rule": {"type": "string_f1", "threshold": 0.4},
        "perf_metric": "squad_f1",
    }
)


@pytest.mark.parametrize(
    ("model_answer", "wrong"),
    [
        ("Denver Broncos", False),  # F1 1
        ("the Broncos", False),  # F1 2/3
        (
            "Broncos defeated the Panthers 24-10",
            True,
        ),  # tokens broncos defeated panthers 2410: P 1/4 R 1/2 -> 1/3 < 0.4
        ("Denver", False),  # P 1, R 1/2 -> 2/3
        ("Carolina Panthers", True),  # F1 0
    ],
)
def test_string_f1_rule(model_answer, wrong):
    target = {"answer": "Denver Broncos", "answer_start": 10}
    assert model_wrong(QA_CFG, target=target, output={"answer": model_answer, "answer_start": 0}) is wrong


def test_string_f1_threshold_is_strict_below():
    # F1 exactly 0.4: P 1/4 (1 of 4 tokens), R 1 -> 2*(1/4)/(5/4) = 0.4 -> not wrong at threshold 0.4
    target = {"answer": "Broncos", "answer_start": 0}
    output = {"answer": "Broncos beat Carolina Panthers"}
    assert squad_f1_score(output["answer"], "Broncos") == pytest.approx(0.4)
    assert span_model_wrong(target=target, output=output, threshold=0.4) is False
    assert span_model_wrong(target=target, output=output, threshold=0.41) is True
    with pytest.raises(ValueError):
        span_model_wrong(target=target, output={"label": "x"}, threshold=0.4)


# --- the official script, verbatim (SQuAD v1.1 evaluate-v1.1.py), as an independent reference ----------


def _official_normalize_answer(s):
    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text):
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def _official_f1_score(prediction, ground_truth):
    prediction_tokens = _official_normalize_answer(prediction).split()
    ground_truth_tokens = _official_normalize_answer(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def test_matches_the_official_script_on_real_answer_pairs(settings):
    squad = data_path(settings, "squad", "squad_v1.1_dev_shared.json.gz")
    data = json.loads(gzip.decompress(squad.read_bytes()))
    pairs = []
    for article in data["data"][:6]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                texts = [a["text"] for a in qa["answers"]]
                # predictions: each other reference, and a window of the context around the answer
                start = qa["answers"][0]["answer_start"]
                window = paragraph["context"][max(0, start - 15) : start + len(texts[0]) + 5]
                for prediction in [*texts, window]:
                    pairs.append((prediction, texts))
    assert len(pairs) > 1000
    gold = [{"answer": t[0], "answer_start": 0, "answers": t} for _, t in pairs]
    predicted = [p for p, _ in pairs]
    official_f1 = sum(max(_official_f1_score(p, g) for g in t) for p, t in pairs) / len(pairs)
    official_em = sum(
        max(_official_normalize_answer(p) == _official_normalize_answer(g) for g in t) for p, t in pairs
    ) / len(pairs)
    assert squad_f1(gold, predicted) == pytest.approx(official_f1, abs=1e-12)
    assert squad_exact_match(gold, predicted) == pytest.approx(official_em, abs=1e-12)
